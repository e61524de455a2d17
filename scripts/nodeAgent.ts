// The node agent of the reference cluster's real nodes: for the pods bound to its nodes it does
// what a kubelet would, for this purpose. The kube-proxy pod of a node starts the real
// `kube-proxy` binary in that node's network namespace, with the configuration the pod mounts
// (the ConfigMap its spec names, as the pod would see it) and --hostname-override; when the pod
// goes, the process stops, as a kubelet stops a container: SIGTERM, the pod's grace period
// (terminationGracePeriodSeconds, or the deletion's), then SIGKILL, so an old and a new kube-proxy
// overlap on a node as they do on a real one. A probe pod runs as a kubelet would run its spec
// (hostNetwork, privileged, hostPath / at /host): in the node's network namespace, in a mount
// namespace of its own whose root is the image's and whose /host is the node's root, so the
// probe's `chroot /host` path runs. STAND-IN: the image is Debian's busybox-static (a real
// busybox), not the probe image the pod names; no image is pulled.
// The process's output is the pod's log (served to the API server as a kubelet serves logs), its
// life is the pod's status (a crash is a restart, an exit is the phase). Pods configured for
// ipvs run the clearly named stand-in instead (scripts/ipvsStandin.ts): IPVS is not in this kernel.
//
// Two host paths are localized, nothing else: the kubeconfig kube-proxy reads (server address
// as seen from the namespace, the pod's own service-account token and the cluster CA) and the
// directory the ConfigMap is mounted at.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import {
    appendFileSync,
    chmodSync,
    copyFileSync,
    existsSync,
    mkdirSync,
    readdirSync,
    readFileSync,
    renameSync,
    symlinkSync,
    writeFileSync,
} from "node:fs";
import { createServer } from "node:https";
import { release } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import * as YAML from "yaml";
import type { ClusterState } from "./referenceCluster.js";
import type { RealNetwork } from "./realNodes.js";

const MERGE = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);
import { PAUSE_TOOLS_LABEL, pauseDir, WITHOUT_TOOLS_LABEL } from "./nodeAgent.constants.js";

interface Run {
    pod: k8s.V1Pod;
    node: string;
    dir: string;
    kind: "kube-proxy" | "probe" | "other";
    proc?: ChildProcess;
    restarts: number;
    stopping: boolean;
    startedAt?: string;
    lastExit?: { code: number | null; at: string };
}

/** The cluster's state.json (written by referenceCluster.ts); the agent serves only real-nodes clusters. */
function readRealCluster(dir: string): ClusterState & { network: RealNetwork } {
    const parsed = JSON.parse(readFileSync(join(dir, "state.json"), "utf8")) as ClusterState;
    const network = parsed.network;
    if (!network) throw new Error(`${join(dir, "state.json")}: no network: the node agent runs only with --nodes real`);
    return { ...parsed, network };
}

const state = readRealCluster(process.argv[2]);
const kc = new k8s.KubeConfig();
kc.loadFromFile(state.kubeconfig);
const core = kc.makeApiClient(k8s.CoreV1Api);
const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
const nodes = new Map<string, { netns: string; ip: string }>(
    state.network.nodes.map((n) => [n.name, { netns: n.netns, ip: n.ip }]),
);
const runs = new Map<string, Run>();
const agentDir = join(state.dir, "agent");
const ca = readFileSync(join(state.dir, "pki", "apiserver.crt"), "utf8");
const log = (l: string) => process.stdout.write(`${new Date().toISOString()} ${l}\n`);
const kernel = release();
const osImage =
    (/PRETTY_NAME="([^"]+)"/.exec(existsSync("/etc/os-release") ? readFileSync("/etc/os-release", "utf8") : "") ??
        [])[1] ?? "Linux";

function now(): string {
    return new Date().toISOString().replace(/\.\d+Z$/, "Z");
}

// ---- nodes: status and leases, as a kubelet keeps them -------------------------------------

/**
 * Renews the node's Lease as a kubelet does (created on the first beat). renewTime is a MicroTime:
 * the API server takes only RFC 3339 with microseconds (V1MicroTime serialises so); a merge patch
 * needs no resourceVersion, which a replace would.
 */
async function renewLease(name: string): Promise<void> {
    const namespace = "kube-node-lease";
    const spec = { holderIdentity: name, leaseDurationSeconds: 40, renewTime: new k8s.V1MicroTime() };
    await coordination
        .patchNamespacedLease({ name, namespace, body: { spec } }, MERGE)
        .catch(() => coordination.createNamespacedLease({ namespace, body: { metadata: { name, namespace }, spec } }))
        .catch((e) => log(`lease ${name}: ${(e as Error).message}`));
}

async function heartbeat(): Promise<void> {
    for (const [name, n] of nodes) {
        const t = now();
        await core
            .patchNodeStatus(
                {
                    name,
                    body: {
                        status: {
                            conditions: [
                                {
                                    type: "Ready",
                                    status: "True",
                                    reason: "KubeletReady",
                                    message: "kube-proxy-mode node agent is posting ready status",
                                    lastHeartbeatTime: t,
                                    lastTransitionTime: t,
                                },
                            ],
                            // the API server reaches the agent's log server through the Hostname address
                            addresses: [
                                { type: "InternalIP", address: n.ip },
                                { type: "Hostname", address: "localhost" },
                            ],
                            daemonEndpoints: { kubeletEndpoint: { Port: state.ports.agent } },
                            nodeInfo: {
                                kernelVersion: kernel,
                                osImage,
                                operatingSystem: "linux",
                                architecture: "amd64",
                                kubeletVersion: "v1.37.2",
                                kubeProxyVersion: "",
                                containerRuntimeVersion: "kube-proxy-mode-agent://netns",
                                bootID: "",
                                machineID: "",
                                systemUUID: "",
                            },
                            capacity: { cpu: "8", memory: "16Gi", pods: "110" },
                            allocatable: { cpu: "8", memory: "16Gi", pods: "110" },
                        },
                    },
                },
                MERGE,
            )
            .catch((e) => log(`heartbeat ${name}: ${(e as Error).message}`));
        await renewLease(name);
    }
}

// ---- a node's PATH -------------------------------------------------------------------------

const STANDARD_PATH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];

function nodePath(node: string, labels: Record<string, string>): string {
    const tools = (label: string) =>
        (labels[label] ?? "").split(".").filter((t) => /^[A-Za-z0-9][A-Za-z0-9_-]*$/.test(t));
    const without = tools(WITHOUT_TOOLS_LABEL);
    const paused = tools(PAUSE_TOOLS_LABEL);
    const standard = STANDARD_PATH;
    if (without.length === 0 && paused.length === 0) return standard.join(":");
    const dir = join(
        agentDir,
        "nodes",
        node,
        `bin${without.map((t) => `-without-${t}`).join("")}${paused.map((t) => `-paused-${t}`).join("")}`,
    );
    if (!existsSync(dir)) {
        mkdirSync(dir, { recursive: true });
        if (paused.length) {
            mkdirSync(pauseDir(state.dir, node), { recursive: true });
            writeFileSync(join(dir, PAUSE_WRAPPER), PAUSE_WRAPPER_SCRIPT, { mode: 0o755 });
        }
        for (const t of paused) symlinkSync(PAUSE_WRAPPER, join(dir, t));
        for (const d of standard) {
            if (!existsSync(d)) continue;
            for (const f of readdirSync(d)) {
                if (without.includes(f) || existsSync(join(dir, f))) continue;
                symlinkSync(join(d, f), join(dir, f));
            }
        }
    }
    return dir;
}

/**
 * TEST HOOK (PAUSE_TOOLS_LABEL): a fixed script every paused tool of a node links to. It learns
 * the tool from its own name and the pause directory from its own place (<node>/bin-.../tool ->
 * <node>/pause), so no value is spliced into it; it signals, waits for the test (60 s at most),
 * then runs the real tool from the standard PATH.
 */
const PAUSE_WRAPPER = "kpm-test-hook-pause";
const PAUSE_WRAPPER_SCRIPT = `#!/bin/sh
# TEST HOOK of the kube-proxy-mode reference cluster (${PAUSE_TOOLS_LABEL}); never on a real node
t=\${0##*/}
d=$(dirname "$(dirname "$0")")/pause
: > "$d/paused-$t"
i=0
while [ ! -e "$d/resume-$t" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
for p in ${STANDARD_PATH.join(" ")}; do [ -x "$p/$t" ] && exec "$p/$t" "$@"; done
echo "$t: not found" >&2
exit 127
`;

// ---- a probe pod's sandbox ---------------------------------------------------------------------

/** STAND-IN for the probe image: a root holding Debian's busybox-static (/bin/busybox) and its applets. */
function imageRoot(): string {
    const root = join(agentDir, "image-busybox");
    if (existsSync(join(root, "bin", "sh"))) return root;
    if (!existsSync(BUSYBOX))
        throw new Error(
            `${BUSYBOX} is missing: install Debian's busybox-static (scripts/toolchain.versions APT_PACKAGES), which stands in for the probe image`,
        );
    const tmp = `${root}.${process.pid}`;
    for (const d of ["bin", "host", "proc", "dev", "sys", "tmp"]) mkdirSync(join(tmp, d), { recursive: true });
    copyFileSync(BUSYBOX, join(tmp, "bin", "busybox"));
    chmodSync(join(tmp, "bin", "busybox"), 0o755);
    for (const applet of execFileSync(BUSYBOX, ["--list"], { encoding: "utf8" })
        .split("\n")
        .filter((a) => /^[\w.[-]+$/.test(a) && a !== "busybox")) {
        symlinkSync("busybox", join(tmp, "bin", applet));
    }
    renameSync(tmp, root);
    return root;
}
const BUSYBOX = "/bin/busybox";

/**
 * The argv that runs a container's command as a kubelet would for the probe pod's spec: in a
 * private mount namespace (unshare -m), the node's root bind-mounted at /host (the `hostPath: /`
 * volume), the host's /proc, /dev and /sys, a /tmp of its own, then chroot into the image's root.
 * Every value is an argv element; the fixed setup script takes them as "$@".
 */
function podSandbox(pod: k8s.V1Pod, command: string[]): string[] {
    const c = pod.spec!.containers[0];
    const hostMount = c.volumeMounts?.find(
        (m) => pod.spec!.volumes?.find((v) => v.name === m.name)?.hostPath?.path === "/",
    );
    if (hostMount?.mountPath !== "/host") throw new Error("the probe pod mounts no hostPath / at /host");
    const setup =
        'set -e; r=$1; shift; mount --rbind / "$r/host"; mount --rbind /proc "$r/proc"; mount --rbind /dev "$r/dev"; mount --rbind /sys "$r/sys"; mount -t tmpfs tmpfs "$r/tmp"; exec chroot "$r" "$@"';
    return [
        "unshare",
        "-m",
        "--propagation",
        "private",
        "/bin/sh",
        "-c",
        setup,
        "kpm-pod-sandbox",
        imageRoot(),
        ...command,
    ];
}

// ---- pods ----------------------------------------------------------------------------------

function classify(pod: k8s.V1Pod): Run["kind"] {
    if (pod.metadata?.labels?.["kube-proxy-mode.io/probe"]) return "probe";
    const c = pod.spec?.containers?.[0];
    if ((c?.command ?? []).some((x) => x.endsWith("kube-proxy"))) return "kube-proxy";
    return "other";
}

/**
 * A container's state as the status patch sends it (the wire format: times as RFC 3339 strings,
 * which the merge-patch body passes through as they are).
 */
interface ContainerStatePatch {
    running?: { startedAt?: string };
    terminated?: { exitCode: number; reason: string; finishedAt: string };
    waiting?: { reason: string; message: string };
}

async function setStatus(
    run: Run,
    state: { phase: string; ready: boolean; container: ContainerStatePatch; lastState?: ContainerStatePatch },
): Promise<void> {
    const t = now();
    const cond = (type: string, ok: boolean) => ({ type, status: ok ? "True" : "False", lastTransitionTime: t });
    const n = nodes.get(run.node)!;
    await core
        .patchNamespacedPodStatus(
            {
                name: run.pod.metadata!.name!,
                namespace: run.pod.metadata!.namespace!,
                body: {
                    status: {
                        phase: state.phase,
                        hostIP: n.ip,
                        podIP: n.ip,
                        podIPs: [{ ip: n.ip }],
                        startTime: run.startedAt ?? t,
                        conditions: [
                            cond("PodScheduled", true),
                            cond("Initialized", true),
                            cond("ContainersReady", state.ready),
                            cond("Ready", state.ready),
                        ],
                        containerStatuses: [
                            {
                                name: run.pod.spec!.containers[0].name,
                                image: run.pod.spec!.containers[0].image ?? "",
                                imageID: "",
                                containerID: run.proc?.pid ? `kpm-agent://${run.proc.pid}` : undefined,
                                ready: state.ready,
                                started: state.phase === "Running",
                                restartCount: run.restarts,
                                state: state.container,
                                lastState: state.lastState ?? {},
                            },
                        ],
                    },
                },
            },
            MERGE,
        )
        .catch((e) => log(`status of ${run.pod.metadata!.name}: ${(e as Error).message}`));
}

function logFile(run: Run, previous = false): string {
    return join(run.dir, previous ? "container.previous.log" : "container.log");
}

/** Writes what the pod mounts from its ConfigMap, with the two host paths localized. */
async function materializeKubeProxy(run: Run): Promise<{ argv: string[]; mode: string }> {
    const pod = run.pod;
    const c = pod.spec!.containers[0];
    const mount = c.volumeMounts?.find((m) => m.mountPath === "/var/lib/kube-proxy");
    const volume = pod.spec!.volumes?.find((v) => v.name === mount?.name);
    const cmName = volume?.configMap?.name;
    if (!cmName) throw new Error("the kube-proxy pod mounts no ConfigMap at /var/lib/kube-proxy");
    const cm = await core.readNamespacedConfigMap({ name: cmName, namespace: pod.metadata!.namespace! });
    const cfgDir = join(run.dir, "kube-proxy");
    const saDir = join(run.dir, "serviceaccount");
    mkdirSync(cfgDir, { recursive: true });
    mkdirSync(saDir, { recursive: true });
    const token = await core.createNamespacedServiceAccountToken({
        name: pod.spec!.serviceAccountName ?? "default",
        namespace: pod.metadata!.namespace!,
        body: {
            spec: {
                audiences: [],
                expirationSeconds: 86400,
                boundObjectRef: { kind: "Pod", apiVersion: "v1", name: pod.metadata!.name, uid: pod.metadata!.uid },
            },
        },
    });
    writeFileSync(join(saDir, "token"), token.status!.token, { mode: 0o600 });
    writeFileSync(join(saDir, "ca.crt"), ca);
    for (const [key, value] of Object.entries(cm.data ?? {})) writeFileSync(join(cfgDir, key), value);
    const kubeconfigKey = Object.keys(cm.data ?? {}).find((k) => k.startsWith("kubeconfig"));
    if (kubeconfigKey) {
        const kcfg = YAML.parse(cm.data![kubeconfigKey]);
        for (const cl of kcfg.clusters ?? []) {
            cl.cluster.server = `https://${state.network.gateway}:${state.ports.apiserver}`;
            cl.cluster["certificate-authority"] = join(saDir, "ca.crt");
            cl.cluster["tls-server-name"] = "localhost";
        }
        for (const u of kcfg.users ?? []) if (u.user?.tokenFile) u.user.tokenFile = join(saDir, "token");
        writeFileSync(join(cfgDir, kubeconfigKey), YAML.stringify(kcfg));
    }
    const configKey = Object.keys(cm.data ?? {}).find((k) => k === "config.conf" || k === "config")!;
    const doc = YAML.parseDocument(cm.data![configKey]);
    if (kubeconfigKey) doc.setIn(["clientConnection", "kubeconfig"], join(cfgDir, kubeconfigKey));
    writeFileSync(join(cfgDir, configKey), doc.toString());
    const written = doc.get("mode");
    const mode = (typeof written === "string" && written) || "iptables";
    if (mode === "ipvs")
        return { argv: [process.execPath, join(__dirname, "ipvsStandin.js"), join(cfgDir, configKey)], mode };
    const nodeName = run.node;
    const args = [...(c.command ?? []).slice(1), ...(c.args ?? [])].map((a) =>
        a.replaceAll("$(NODE_NAME)", nodeName).replaceAll("/var/lib/kube-proxy", cfgDir),
    );
    return { argv: [join(state.bin, "kube-proxy"), ...args], mode };
}

async function start(run: Run): Promise<void> {
    const n = nodes.get(run.node)!;
    const nodeObj = await core.readNode({ name: run.node });
    const PATH = nodePath(run.node, nodeObj.metadata?.labels ?? {});
    let argv: string[];
    let env: Record<string, string> = { PATH };
    if (run.kind === "kube-proxy") {
        const m = await materializeKubeProxy(run);
        argv = m.argv;
        log(
            `${run.node}: starting ${run.pod.metadata!.name} (${m.mode} mode${m.mode === "ipvs" ? ", SIMULATED stand-in" : ", real kube-proxy"})`,
        );
    } else {
        const c = run.pod.spec!.containers[0];
        // the image's PATH; a node left without some tools (WITHOUT_TOOLS_LABEL) keeps them off it, also under chroot /host
        env = { PATH: PATH === STANDARD_PATH.join(":") ? PATH : `${PATH}:/bin`, HOME: "/root" };
        for (const e of c.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
        argv = podSandbox(run.pod, [...(c.command ?? []), ...(c.args ?? [])]);
        log(
            `${run.node}: running probe ${run.pod.metadata!.name} (busybox-static standing in for image ${c.image}; /host is the node's root)`,
        );
    }
    writeFileSync(logFile(run), "");
    const proc = spawn("ip", ["netns", "exec", n.netns, ...argv], { env, stdio: ["ignore", "pipe", "pipe"] });
    run.proc = proc;
    run.startedAt ??= now();
    const append = (b: Buffer) => appendFileSync(logFile(run), b);
    proc.stdout.on("data", append);
    proc.stderr.on("data", append);
    const startedAt = now();
    await setStatus(run, {
        phase: "Running",
        ready: true,
        container: { running: { startedAt } },
        lastState: run.lastExit
            ? { terminated: { exitCode: run.lastExit.code ?? 137, reason: "Error", finishedAt: run.lastExit.at } }
            : undefined,
    });
    proc.on("exit", (code, signal) => void exited(run, proc, code ?? (signal ? 128 + 15 : 1)));
}

async function exited(run: Run, proc: ChildProcess, code: number): Promise<void> {
    if (run.proc !== proc) return;
    run.proc = undefined;
    const at = now();
    if (run.stopping) return;
    if (run.kind === "probe" || run.pod.spec?.restartPolicy === "Never") {
        await setStatus(run, {
            phase: code === 0 ? "Succeeded" : "Failed",
            ready: false,
            container: { terminated: { exitCode: code, reason: code === 0 ? "Completed" : "Error", finishedAt: at } },
        });
        return;
    }
    run.restarts++;
    run.lastExit = { code, at };
    // as a kubelet does: from the crash on, the exited container's log is the "previous" one
    // (kubectl logs --previous during CrashLoopBackOff), and the next start begins an empty one
    if (existsSync(logFile(run))) renameSync(logFile(run), logFile(run, true));
    const backoff = Math.min(1000 * 2 ** Math.min(run.restarts - 1, 5), 30_000);
    log(`${run.node}: ${run.pod.metadata!.name} exited with ${code}; restart ${run.restarts} in ${backoff / 1000}s`);
    await setStatus(run, {
        phase: "Running",
        ready: false,
        container: {
            waiting: { reason: "CrashLoopBackOff", message: `back-off ${backoff / 1000}s restarting failed container` },
        },
        lastState: { terminated: { exitCode: code, reason: "Error", finishedAt: at } },
    });
    setTimeout(() => {
        if (!run.stopping && runs.get(run.pod.metadata!.uid!) === run)
            void start(run).catch((e) => log(`restart failed: ${(e as Error).message}`));
    }, backoff);
}

/** As a kubelet stops a container: SIGTERM, the grace period (the deletion's, else the pod's terminationGracePeriodSeconds, default 30 s; at least 2 s, the kubelet's minimum), then SIGKILL. */
async function stop(run: Run): Promise<void> {
    run.stopping = true;
    const proc = run.proc;
    if (proc && proc.exitCode === null) {
        const grace = Math.max(
            run.pod.metadata?.deletionGracePeriodSeconds ?? run.pod.spec?.terminationGracePeriodSeconds ?? 30,
            2,
        );
        proc.kill("SIGTERM");
        const gone = await Promise.race([
            new Promise((r) => proc.once("exit", () => r(true))),
            new Promise((r) => setTimeout(() => r(false), grace * 1000)),
        ]);
        if (!gone) {
            log(`${run.node}: ${run.pod.metadata!.name} did not stop within its ${grace}s grace period: SIGKILL`);
            proc.kill("SIGKILL");
        }
    }
}

async function onPod(type: string, pod: k8s.V1Pod): Promise<void> {
    const node = pod.spec?.nodeName;
    if (!node || !nodes.has(node)) return;
    const uid = pod.metadata!.uid!;
    let run = runs.get(uid);
    if (type === "DELETED") {
        if (run) await stop(run);
        runs.delete(uid);
        return;
    }
    if (pod.metadata?.deletionTimestamp) {
        if (run) run.pod = pod; // its deletionGracePeriodSeconds
        if (run && !run.stopping) {
            await stop(run);
            log(`${node}: stopped ${pod.metadata.name}`);
        }
        await core
            .deleteNamespacedPod({
                name: pod.metadata.name!,
                namespace: pod.metadata.namespace!,
                gracePeriodSeconds: 0,
            })
            .catch(() => undefined);
        return;
    }
    if (run) {
        run.pod = pod;
        return;
    }
    run = {
        pod,
        node,
        dir: join(agentDir, "pods", `${pod.metadata!.namespace}_${pod.metadata!.name}`),
        kind: classify(pod),
        restarts: 0,
        stopping: false,
    };
    mkdirSync(run.dir, { recursive: true });
    runs.set(uid, run);
    if (run.kind === "other") {
        run.startedAt = now();
        await setStatus(run, { phase: "Running", ready: true, container: { running: { startedAt: run.startedAt } } });
        return;
    }
    await start(run).catch(async (e) => {
        log(`${node}: cannot start ${pod.metadata!.name}: ${(e as Error).message}`);
        appendFileSync(logFile(run), `kube-proxy-mode node agent: cannot start: ${(e as Error).message}\n`);
        await setStatus(run, {
            phase: "Running",
            ready: false,
            container: { waiting: { reason: "CreateContainerConfigError", message: (e as Error).message } },
        });
    });
}

// ---- the log endpoint the API server calls (GET /containerLogs/<ns>/<pod>/<container>) -----

function serveLogs(): void {
    const server = createServer(
        {
            key: readFileSync(join(state.dir, "pki", "agent.key")),
            cert: readFileSync(join(state.dir, "pki", "agent.crt")),
        },
        (req, res) => {
            const url = new URL(req.url ?? "/", "https://localhost");
            const m = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(url.pathname);
            const run =
                m &&
                [...runs.values()].find((r) => r.pod.metadata!.namespace === m[1] && r.pod.metadata!.name === m[2]);
            if (!run) {
                res.statusCode = 404;
                return res.end("no such container on this node\n");
            }
            const file = logFile(run, url.searchParams.get("previous") === "true");
            let text = existsSync(file) ? readFileSync(file, "utf8") : "";
            const tail = Number(url.searchParams.get("tailLines") ?? 0);
            if (tail > 0)
                text = text
                    .split("\n")
                    .slice(-tail - 1)
                    .join("\n");
            res.setHeader("content-type", "text/plain");
            res.end(text);
        },
    );
    server.listen(state.ports.agent, "127.0.0.1");
}

/** Lists and watches again in a second, and again after every failure (the API server may still be down), as a kubelet does. */
function watchAgain(): void {
    setTimeout(
        () =>
            void watchPods().catch((e) => {
                log(`watch: ${(e as Error).message}; again in 1s`);
                watchAgain();
            }),
        1000,
    );
}

async function watchPods(): Promise<void> {
    const list = await core.listPodForAllNamespaces();
    // a pod deleted while the watch was down (the API server restarting) is gone from the list
    const listed = new Set(list.items.map((p) => p.metadata!.uid!));
    for (const [uid, run] of [...runs]) if (!listed.has(uid)) await onPod("DELETED", run.pod);
    for (const p of list.items) await onPod("ADDED", p);
    const watch = new k8s.Watch(kc);
    const again = () => watchAgain();
    await watch.watch(
        "/api/v1/pods",
        { resourceVersion: list.metadata?.resourceVersion },
        (type, pod: k8s.V1Pod) =>
            void onPod(type, pod).catch((e) => log(`pod ${pod.metadata?.name}: ${(e as Error).message}`)),
        () => again(),
    );
}

async function main(): Promise<void> {
    mkdirSync(agentDir, { recursive: true });
    serveLogs();
    await heartbeat();
    setInterval(() => void heartbeat(), 10_000);
    await watchPods();
    log(`node agent up for ${[...nodes.keys()].join(", ")} (kernel ${kernel})`);
}

process.on("SIGTERM", () => {
    void Promise.all([...runs.values()].map(stop)).then(() => process.exit(0));
});
main().catch((e) => {
    log(`node agent failed: ${(e as Error).stack}`);
    process.exit(1);
});
