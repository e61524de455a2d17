// The reference cluster: etcd, kube-apiserver, kube-controller-manager and kube-scheduler on
// loopback, kwok standing in for kubelets, seeded with kube-proxy exactly as kubeadm 1.37
// creates it (objects cut from kubeadm's own dry-run output), nodes in labelled pools with
// chosen kernels, a Deployment with a PodDisruptionBudget and a Service.
//
//   node dist/scripts/referenceCluster.js up [--name N] [--pools canary=1,workers=3,batch=2]
//        [--mode ipvs|iptables|nftables] [--kernel 6.8.0-51-generic] [--node-kernel NODE=KERNEL]...
//        [--services 10000 [--endpoints-per-service 10]]
//   node dist/scripts/referenceCluster.js down [--name N]
//
// Several clusters run side by side: each has its own ports and state directory.
import { spawn, spawnSync } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { homedir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import * as YAML from "yaml";
import * as k8s from "@kubernetes/client-node";
import { parseCurrentConfig } from "../components/core/config.js";
import { renderConfiguration } from "../components/core/render.js";
import type { ProxyMode } from "../components/core/types.js";
import { AUDIT_POLICY } from "./auditLog.js";
import { checkServiceLoad, nodePortRangeFlag, seedServiceLoad, type ServiceLoad } from "./serviceLoad.js";
import {
    createNetwork,
    destroyNetwork,
    freeIndex,
    planNetwork,
    realNodesSupported,
    type RealNetwork,
} from "./realNodes.js";

export const ROOT = join(__dirname, "..", "..");
const KUBEADM = join(ROOT, "tests", "fixtures", "kubeadm");

export interface ClusterOptions {
    name?: string;
    /** pool name -> node count, in order */
    pools?: [string, number][];
    mode?: ProxyMode;
    /** kernel for every node, unless nodeKernels names it */
    kernel?: string;
    nodeKernels?: Record<string, string>;
    /** bin dir with etcd, kube-apiserver, ... (default: scripts/toolchain.sh --print-bin) */
    bin?: string;
    /** real: each node a network namespace running the real kube-proxy (needs root); kwok: fake kubelets */
    nodes?: "real" | "kwok";
    /** extra labels per node, e.g. { "workers-2": { "reference.kube-proxy-mode.io/without-tools": "nft" } } */
    nodeLabels?: Record<string, Record<string, string>>;
    /** kube-apiserver writes an audit log (one line per request, leases left out; scripts/auditLog.ts) */
    audit?: boolean;
    /** selectorless Services with EndpointSlices for kube-proxy to program (scripts/serviceLoad.ts) */
    services?: ServiceLoad;
    log?: (line: string) => void;
}

export interface ClusterState {
    name: string;
    dir: string;
    kubeconfig: string;
    ports: Record<string, number>;
    pids: Record<string, number>;
    nodes: { name: string; pool: string; kernel: string }[];
    mode: ProxyMode;
    kind: "real" | "kwok";
    bin: string;
    network?: RealNetwork;
    /** the audit log kube-apiserver writes, when the cluster was started with `audit` */
    auditLog?: string;
    /** how each daemon was started, so a test can kill and restart one (restartDaemon) */
    daemons?: Record<string, { bin: string; args: string[] }>;
    /** the Service load seeded, when asked for */
    services?: ServiceLoad;
}

export const DEFAULT_POOLS: [string, number][] = [
    ["canary", 1],
    ["workers", 3],
    ["batch", 2],
];

export function clustersDir(): string {
    return process.env.KPM_CLUSTERS_DIR ?? join(homedir(), ".cache", "kube-proxy-mode", "clusters");
}

export function toolchainBin(): string {
    if (process.env.KPM_BIN) return process.env.KPM_BIN;
    const r = spawnSync("bash", [join(ROOT, "scripts", "toolchain.sh"), "--print-bin"], { encoding: "utf8" });
    const bin = r.stdout.trim().split("\n").pop();
    if (r.status !== 0 || !bin) {
        throw new Error(
            `the toolchain is not built: run bash scripts/toolchain.sh (it builds etcd, Kubernetes, kwok and Pulumi once and caches them)\n${r.stderr.trim()}`,
        );
    }
    return bin;
}

/** The directory of the SIMULATED pulumi-resource-command launcher (scripts/commandStandin.ts). */
export const COMMAND_STANDIN_DIR = join(ROOT, "scripts", "plugins");

/**
 * The PATH the Pulumi engine runs with in tests and the demo: the toolchain's bin dir, the Node.js
 * SDK (its dynamic-provider and policy plugins), and the command provider's plugin. A real
 * pulumi-resource-command found on PATH (or in the toolchain) is used; only without one is the
 * SIMULATED stand-in's directory added, last, so it can never shadow a real plugin.
 */
export function enginePath(
    bin: string,
    path: string = process.env.PATH ?? "",
): { path: string; commandPlugin: string; simulated: boolean } {
    const dirs = [
        bin,
        join(ROOT, "node_modules", "@pulumi", "pulumi"),
        ...path.split(":").filter((d) => d !== "" && d !== COMMAND_STANDIN_DIR),
    ];
    const real = dirs.map((d) => join(d, "pulumi-resource-command")).find((f) => existsSync(f));
    if (real) return { path: dirs.join(":"), commandPlugin: real, simulated: false };
    return {
        path: [...dirs, COMMAND_STANDIN_DIR].join(":"),
        commandPlugin: join(COMMAND_STANDIN_DIR, "pulumi-resource-command"),
        simulated: true,
    };
}

/**
 * The environment that keeps the engine's own temporary files inside `dir` (tests, the bench and
 * the demo): the Kubernetes provider writes a copy of the kubeconfig it is given to a new file in
 * its temporary directory each time it starts and never removes it (pulumi-kubernetes,
 * `writeKubeconfigToFile`; docs/rbac.md, "Credentials"), so a run with the system's temporary
 * directory leaves a credential there per provider start.
 */
export function engineTemp(dir: string): { TMPDIR: string } {
    const tmp = join(dir, ".tmp");
    mkdirSync(tmp, { recursive: true });
    return { TMPDIR: tmp };
}

/**
 * A port for one of the cluster's daemons: free now, and BELOW the kernel's ephemeral range
 * (ip_local_port_range, 32768-60999 by default). A port the kernel handed out (listen on 0) is
 * an ephemeral one, and an outgoing connection of any process can take it before the daemon
 * binds it ("bind: address already in use", seen in CI); ports below the range are only ever
 * taken by a listener. Each port is handed out once per process.
 */
const handedOut = new Set<number>();
export async function freePort(): Promise<number> {
    for (let attempt = 0; attempt < 200; attempt++) {
        const port = 20000 + Math.floor(Math.random() * 12000);
        if (handedOut.has(port)) continue;
        const free = await new Promise<boolean>((resolve) => {
            const s = createServer();
            s.once("error", () => resolve(false));
            // the API server of a real-nodes cluster listens on every address: check the same
            s.listen(port, "0.0.0.0", () => s.close(() => resolve(true)));
        });
        if (free) {
            handedOut.add(port);
            return port;
        }
    }
    throw new Error("no free port in 20000-31999 after 200 tries");
}

/** The objects kubeadm would create, cut out of its own `--dry-run` output. */
export function kubeadmObjects(dir: string): KubeadmObject[] {
    const text = readFileSync(join(KUBEADM, dir, "dry-run.stdout.txt"), "utf8");
    const parts = text.split("[dryrun] Attached object:\n").slice(1);
    return parts.map((p, i) => {
        const obj: unknown = YAML.parse(p.split(/\n\[(dryrun|addons)\]/)[0]);
        if (!isKubeadmObject(obj))
            throw new Error(`tests/fixtures/kubeadm/${dir}/dry-run.stdout.txt: object ${i + 1} has no apiVersion/kind`);
        return obj;
    });
}

function isKubeadmObject(v: unknown): v is KubeadmObject {
    if (typeof v !== "object" || v === null) return false;
    const o = v as Record<string, unknown>;
    return typeof o.apiVersion === "string" && typeof o.kind === "string";
}

function seedConfigMap(mode: ProxyMode): { objects: KubeadmObject[] } {
    const source = mode === "ipvs" ? "1.37-ipvs" : "1.37";
    const objects = kubeadmObjects(source);
    const base = objects.find((o) => o.kind === "DaemonSet")
        ? objects
        : [...objects, ...kubeadmObjects("1.37").filter((o) => o.kind === "DaemonSet")];
    if (mode === "nftables") {
        const cm = base.find((o) => o.kind === "ConfigMap");
        if (!cm?.data) throw new Error(`tests/fixtures/kubeadm/${source}: no kube-proxy ConfigMap with data`);
        const r = renderConfiguration(parseCurrentConfig(YAML.stringify(cm)), {
            mode: "nftables",
            kubernetesVersion: "1.37",
        });
        cm.data["config.conf"] = r.config;
    }
    return { objects: base };
}

/**
 * kwok's own stage definitions (how a fake kubelet moves nodes and pods along), read from the
 * kwok module the toolchain built kwok from: nodes become Ready and keep a Lease; pods go
 * Running and Ready, and go away when deleted.
 */
export function kwokStages(version = "v0.8.0"): string {
    const r = spawnSync("go", ["mod", "download", "-json", `sigs.k8s.io/kwok@${version}`], {
        encoding: "utf8",
        env: { ...process.env, GOFLAGS: "-mod=mod" },
    });
    const moduleDir = r.status === 0 ? JSON.parse(r.stdout).Dir : undefined;
    if (!moduleDir)
        throw new Error(`cannot find the kwok ${version} module (go mod download failed): ${r.stderr.trim()}`);
    const files = [
        "node/fast/node-initialize.yaml",
        "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
        "pod/fast/pod-ready.yaml",
        "pod/fast/pod-complete.yaml",
        "pod/fast/pod-delete.yaml",
    ];
    return (
        files
            .map((f) => readFileSync(join(moduleDir, "kustomize", "stage", f), "utf8").trim())
            .map((text) => (text.includes("name: pod-delete") ? oneDeletePerPod(text) : text))
            .join("\n---\n") + "\n"
    );
}

/**
 * kwok's pod-delete stage, finalizing a deleted pod (a DELETE with grace period 0) once, as a
 * kubelet does. As kwok ships it, the stage matches any pod with a deletionTimestamp, so the
 * update its own DELETE makes (the grace period set to 0, just before the pod is removed) matches
 * again and it sends a second DELETE, answered 404: two requests per deleted pod that a kubelet
 * does not make, counted by apiserver_request_total (before 2026-12-03 the bench's figures
 * included them). The stage here also requires a grace period other than 0. A pod deleted with
 * grace period 0 and no finalizers (kube-proxy's pods have none) is removed by the API server itself.
 */
export function oneDeletePerPod(stage: string): string {
    const doc = YAML.parseDocument(stage);
    const expressions = doc.getIn(["spec", "selector", "matchExpressions"]);
    if (
        doc.getIn(["metadata", "name"]) !== "pod-delete" ||
        doc.getIn(["spec", "next", "delete"]) !== true ||
        !YAML.isSeq(expressions)
    )
        throw new Error(
            "kwok's pod-delete stage is not the one this cluster knows (metadata.name pod-delete, spec.next.delete true, spec.selector.matchExpressions): check scripts/referenceCluster.ts oneDeletePerPod against the kwok version in scripts/toolchain.versions",
        );
    expressions.add(
        doc.createNode({
            key: ".metadata.deletionGracePeriodSeconds | tostring",
            operator: "NotIn",
            values: ["0"],
        }),
    );
    return doc.toString().trim();
}

function spawnDaemon(state: ClusterState, name: string, bin: string, args: string[]): void {
    const out = openSync(join(state.dir, "logs", `${name}.log`), "a");
    const child = spawn(bin, args, { detached: true, stdio: ["ignore", out, out] });
    closeSync(out);
    child.unref();
    state.pids[name] = child.pid!;
    state.daemons = { ...(state.daemons ?? {}), [name]: { bin, args } };
    writeFileSync(join(state.dir, "state.json"), JSON.stringify(state, null, 2));
}

/** A daemon that will not stay up: waiting on longer cannot help. */
class DaemonGone extends Error {}

function exited(pid: number): boolean {
    try {
        process.kill(pid, 0);
    } catch {
        return true;
    }
    // a child not yet reaped still answers signal 0
    const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, "utf8") : "";
    return / Z /.test(stat.slice(stat.lastIndexOf(")")));
}

/** The lines a daemon's log ends with, led by its first panic or fatal error when that scrolled out of them. */
export function logEnding(text: string, lines = 15): string {
    const all = text.trim().split("\n");
    const tail = all.slice(-lines);
    const cause = all.findIndex((l) => /^(panic: |fatal error: )/.test(l));
    return cause >= 0 && cause < all.length - lines ? [all[cause], "...", ...tail].join("\n") : tail.join("\n");
}

/**
 * Starts a daemon again, with its own arguments, when it has exited: kwok 0.8.0 can panic in its
 * first stage match (a race in its lazy CEL set-up, once in CI); a fake kubelet that died once is
 * not a fault of the product under test. Past `limit` restarts it is an error, with the cause.
 */
export function reviveDaemon(
    state: ClusterState,
    name: string,
    log: Log,
    restarts: { count: number },
    limit = 2,
): void {
    const pid = state.pids[name];
    const how = state.daemons?.[name];
    if (!pid || !how || !exited(pid)) return;
    const file = join(state.dir, "logs", `${name}.log`);
    const cause = logEnding(existsSync(file) ? readFileSync(file, "utf8") : "", 1).split("\n")[0] || "no log";
    if (restarts.count >= limit)
        throw new DaemonGone(`${name} exited ${restarts.count + 1} times; the last: ${cause} (see ${file})`);
    restarts.count++;
    log(`${name} exited (${cause}); starting it again (${restarts.count} of ${limit})`);
    spawnDaemon(state, name, how.bin, how.args);
}

async function waitFor(
    what: string,
    timeoutMs: number,
    check: () => Promise<boolean>,
    state?: ClusterState,
    logName?: string,
): Promise<void> {
    const until = Date.now() + timeoutMs;
    let last: unknown;
    while (Date.now() < until) {
        try {
            if (await check()) return;
        } catch (e) {
            if (e instanceof DaemonGone) throw e;
            last = e;
        }
        await new Promise((r) => setTimeout(r, 300));
    }
    const tail = state && logName ? logEnding(readFileSync(join(state.dir, "logs", `${logName}.log`), "utf8")) : "";
    throw new Error(
        `${what} did not become ready within ${timeoutMs / 1000}s${last ? ` (${(last as Error).message})` : ""}${tail ? `\n${logName}.log ends:\n${tail}` : ""}`,
    );
}

function kubeconfigYaml(server: string, caFile: string, token: string, name: string): string {
    return YAML.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [
            { name, cluster: { server, "certificate-authority-data": readFileSync(caFile).toString("base64") } },
        ],
        users: [{ name: "admin", user: { token } }],
        contexts: [{ name, context: { cluster: name, user: "admin" } }],
        "current-context": name,
    });
}

type Log = (line: string) => void;

/** The cluster's own lines, on stderr: clusterUp's log unless given one, addKwokNode's, the CLI's. */
export const clusterLog: Log = (l) => process.stderr.write(`[cluster] ${l}\n`);

/** Checks the options and lays out the cluster: its name, directory, ports, nodes in pools. */
async function planCluster(opts: ClusterOptions): Promise<{ state: ClusterState; started: number }> {
    const name = opts.name ?? "reference";
    if (!/^[a-z0-9][a-z0-9-]{0,30}$/.test(name))
        throw new Error(`cluster name ${JSON.stringify(name)}: lower-case letters, digits and '-'`);
    const dir = join(clustersDir(), name);
    if (existsSync(join(dir, "state.json")))
        throw new Error(`cluster ${name} already exists (${dir}): run cluster:down -- --name ${name} first`);
    const services = opts.services && checkServiceLoad(opts.services);
    const bin = opts.bin ?? toolchainBin();
    const mode = opts.mode ?? "ipvs";
    const pools = opts.pools ?? DEFAULT_POOLS;
    const started = Date.now();
    mkdirSync(join(dir, "logs"), { recursive: true });
    mkdirSync(join(dir, "pki"), { recursive: true });
    const kind = opts.nodes ?? "kwok";
    if (kind === "real") {
        const support = realNodesSupported();
        if (!support.ok) throw new Error(`cannot make real nodes here: ${support.why}; use --nodes kwok`);
    }
    const ports = {
        etcd: await freePort(),
        etcdPeer: await freePort(),
        apiserver: await freePort(),
        kwok: await freePort(),
        agent: await freePort(),
    };
    const nodes = pools.flatMap(([pool, count]) =>
        Array.from({ length: count }, (_, i) => {
            const nodeName = `${pool}-${i + 1}`;
            return { name: nodeName, pool, kernel: opts.nodeKernels?.[nodeName] ?? opts.kernel ?? "6.8.0-51-generic" };
        }),
    );
    return {
        state: {
            name,
            dir,
            kubeconfig: join(dir, "kubeconfig"),
            ports,
            pids: {},
            nodes,
            mode,
            kind,
            bin,
            ...(opts.audit ? { auditLog: join(dir, "logs", "audit.log") } : {}),
            ...(services ? { services } : {}),
        },
        started,
    };
}

/** Credentials: a service-account key pair and a static admin token (returned, never logged). */
function writeCredentials(dir: string): string {
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    writeFileSync(join(dir, "pki", "sa.key"), privateKey.export({ type: "pkcs1", format: "pem" }), { mode: 0o600 });
    writeFileSync(join(dir, "pki", "sa.pub"), publicKey.export({ type: "spki", format: "pem" }));
    const token = randomBytes(24).toString("hex");
    writeFileSync(join(dir, "pki", "tokens.csv"), `${token},admin,admin,"system:masters"\n`, { mode: 0o600 });
    return token;
}

/** `openssl req -x509` arguments for a self-signed certificate (its own CA) in the cluster's pki dir. */
function selfSignedCertArgs(dir: string, file: string, commonName: string, sans?: string[]): string[] {
    return [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "30",
        "-subj",
        `/CN=${commonName}`,
        ...(sans ? ["-addext", `subjectAltName=${sans.join(",")}`] : []),
        "-keyout",
        join(dir, "pki", `${file}.key`),
        "-out",
        join(dir, "pki", `${file}.crt`),
    ];
}

async function startEtcd(state: ClusterState, log: Log): Promise<void> {
    const { name, dir, ports } = state;
    log(`starting etcd on 127.0.0.1:${ports.etcd}`);
    spawnDaemon(state, "etcd", join(state.bin, "etcd"), [
        `--name=${name}`,
        `--data-dir=${join(dir, "etcd")}`,
        `--listen-client-urls=http://127.0.0.1:${ports.etcd}`,
        `--advertise-client-urls=http://127.0.0.1:${ports.etcd}`,
        `--listen-peer-urls=http://127.0.0.1:${ports.etcdPeer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${ports.etcdPeer}`,
        `--initial-cluster=${name}=http://127.0.0.1:${ports.etcdPeer}`,
        "--log-level=warn",
    ]);
    await waitFor("etcd", 30_000, async () => (await fetch(`http://127.0.0.1:${ports.etcd}/health`)).ok, state, "etcd");
}

/**
 * Starts kube-apiserver with its serving certificate (self-signed: it is its own CA), valid for
 * loopback and, with real nodes, for the bridge address the namespaces reach it through; writes
 * the admin kubeconfig and waits until the server lists kube-system.
 */
/** kube-apiserver's flags for the audit log (its policy written beside the pki). */
function auditFlags(dir: string, path: string): string[] {
    const policy = join(dir, "pki", "audit-policy.yaml");
    writeFileSync(policy, AUDIT_POLICY);
    return [
        `--audit-policy-file=${policy}`,
        `--audit-log-path=${path}`,
        "--audit-log-format=json",
        "--audit-log-maxsize=0",
    ];
}

async function startApiServer(state: ClusterState, token: string, log: Log): Promise<k8s.KubeConfig> {
    const { dir, ports } = state;
    const sans = ["DNS:localhost", "IP:127.0.0.1", "IP:10.96.0.1"];
    const tls = spawnSync("openssl", selfSignedCertArgs(dir, "apiserver", "kube-apiserver", sans), {
        encoding: "utf8",
    });
    if (tls.status !== 0) throw new Error(`openssl could not make the API server certificate: ${tls.stderr}`);
    // the CA whose client certificates the server accepts (a test signs one with pki/client-ca.key)
    const clientCa = spawnSync("openssl", selfSignedCertArgs(dir, "client-ca", "kube-proxy-mode reference client CA"), {
        encoding: "utf8",
    });
    if (clientCa.status !== 0) throw new Error(`openssl could not make the client CA: ${clientCa.stderr}`);
    log(`starting kube-apiserver on https://127.0.0.1:${ports.apiserver}`);
    spawnDaemon(state, "kube-apiserver", join(state.bin, "kube-apiserver"), [
        `--etcd-servers=http://127.0.0.1:${ports.etcd}`,
        // real nodes reach the API server from their namespaces through the bridge
        `--bind-address=${state.kind === "real" ? "0.0.0.0" : "127.0.0.1"}`,
        `--secure-port=${ports.apiserver}`,
        `--tls-cert-file=${join(dir, "pki", "apiserver.crt")}`,
        `--tls-private-key-file=${join(dir, "pki", "apiserver.key")}`,
        `--service-account-issuer=https://kubernetes.default.svc.cluster.local`,
        `--service-account-key-file=${join(dir, "pki", "sa.pub")}`,
        `--service-account-signing-key-file=${join(dir, "pki", "sa.key")}`,
        "--service-cluster-ip-range=10.96.0.0/16",
        `--token-auth-file=${join(dir, "pki", "tokens.csv")}`,
        `--client-ca-file=${join(dir, "pki", "client-ca.crt")}`,
        "--authorization-mode=RBAC",
        "--allow-privileged=true",
        "--endpoint-reconciler-type=none",
        "--v=1",
        ...nodePortRangeFlag(state.services),
        ...(state.auditLog ? auditFlags(dir, state.auditLog) : []),
    ]);
    const ca = join(dir, "pki", "apiserver.crt");
    await waitFor("kube-apiserver certificate", 60_000, async () => existsSync(ca), state, "kube-apiserver");
    writeFileSync(
        state.kubeconfig,
        kubeconfigYaml(`https://127.0.0.1:${ports.apiserver}`, ca, token, `kpm-${state.name}`),
        {
            mode: 0o600,
        },
    );
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(state.kubeconfig);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await waitFor(
        "kube-apiserver",
        90_000,
        async () => (await core.listNamespace()).items.some((n) => n.metadata?.name === "kube-system"),
        state,
        "kube-apiserver",
    );
    return kc;
}

/**
 * The kwok nodes' lease duration: 40 s (kubelet's default) up to 1,000 nodes, then 40 ms per node.
 * kwok renews each lease every quarter of it, as kubelet does: 5,000 nodes at 40 s were 500 lease
 * writes a second, more than 2 cores serve beside the rest, and kwok fell behind (on 2026-12-02 the
 * Ready count fell, 3,426 then 3,333 of 5,000). The node lifecycle controller's grace period is
 * raised with it (kubelet's ratio: 50 s for 40 s), so a node is not marked NotReady between renewals.
 */
export function nodeLeaseSeconds(nodes: number): { lease: number; grace?: number } {
    const lease = Math.max(40, Math.ceil((nodes * 40) / 1000));
    return lease === 40 ? { lease } : { lease, grace: Math.ceil(lease * 1.25) };
}

function startControllers(state: ClusterState, log: Log): void {
    const { grace } = nodeLeaseSeconds(state.nodes.length);
    log("starting kube-controller-manager and kube-scheduler");
    spawnDaemon(state, "kube-controller-manager", join(state.bin, "kube-controller-manager"), [
        `--kubeconfig=${state.kubeconfig}`,
        "--leader-elect=false",
        `--service-account-private-key-file=${join(state.dir, "pki", "sa.key")}`,
        `--root-ca-file=${join(state.dir, "pki", "apiserver.crt")}`,
        "--use-service-account-credentials=false",
        "--secure-port=0",
        "--controllers=*,-nodeipam",
        ...(grace ? [`--node-monitor-grace-period=${grace}s`] : []),
        // the default 20 requests/s makes the DaemonSet controller take minutes to create
        // 5,000 kube-proxy pods (a reference cluster on loopback has the server to itself)
        "--kube-api-qps=500",
        "--kube-api-burst=1000",
        "--v=1",
    ]);
    spawnDaemon(state, "kube-scheduler", join(state.bin, "kube-scheduler"), [
        `--kubeconfig=${state.kubeconfig}`,
        "--leader-elect=false",
        "--secure-port=0",
        "--kube-api-qps=500",
        "--kube-api-burst=1000",
        "--v=1",
    ]);
}

/** Real nodes: a network namespace per node on a bridge, and the backend's namespace serving. */
function startRealNetwork(state: ClusterState, log: Log): void {
    const network = planNetwork(
        freeIndex(clustersDir()),
        state.nodes.map((n) => n.name),
    );
    state.network = network;
    writeFileSync(join(state.dir, "state.json"), JSON.stringify(state, null, 2));
    createNetwork(network);
    log(`real nodes: ${network.nodes.map((n) => `${n.name}=${n.ip}`).join(", ")} on bridge ${network.bridge}`);
    spawnSync("openssl", selfSignedCertArgs(state.dir, "agent", "localhost"), { stdio: "ignore" });
    spawnDaemon(state, "backend", "ip", [
        "netns",
        "exec",
        network.backend.netns,
        process.execPath,
        join(__dirname, "backend.js"),
        String(network.backend.port),
        "backend",
    ]);
}

function startKwok(state: ClusterState, log: Log): void {
    log(`starting kwok for ${state.nodes.length} node(s)`);
    writeFileSync(join(state.dir, "kwok.yaml"), kwokStages());
    spawnDaemon(state, "kwok", join(state.bin, "kwok"), [
        `--config=${join(state.dir, "kwok.yaml")}`,
        `--kubeconfig=${state.kubeconfig}`,
        `--node-lease-duration-seconds=${nodeLeaseSeconds(state.nodes.length).lease}`,
        "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
        "--node-ip=127.0.0.1",
        `--node-port=${state.ports.kwok}`,
        `--server-address=127.0.0.1:${state.ports.kwok}`,
        "--cidr=10.244.0.0/16",
    ]);
}

export async function clusterUp(opts: ClusterOptions = {}): Promise<ClusterState> {
    const log = opts.log ?? clusterLog;
    const { state, started } = await planCluster(opts);
    try {
        const token = writeCredentials(state.dir);
        await startEtcd(state, log);
        const kc = await startApiServer(state, token, log);
        startControllers(state, log);
        if (state.kind === "real") startRealNetwork(state, log);
        startKwok(state, log);
        await seed(kc, state, opts.nodeLabels ?? {}, log);
        const pools = opts.pools ?? DEFAULT_POOLS;
        const load = state.services ? `, ${state.services.services} load Services` : "";
        log(
            `ready in ${((Date.now() - started) / 1000).toFixed(1)}s: ${state.nodes.length} nodes in pools ${pools.map(([p, c]) => `${p}(${c})`).join(", ")}${load}, kube-proxy in ${state.mode} mode`,
        );
        return state;
    } catch (e) {
        await clusterDown(state.name).catch(() => undefined);
        throw e;
    }
}

/** An object cut from kubeadm's dry-run output, with the fields the seeding reads or strips. */
export type KubeadmObject = k8s.KubernetesObject & {
    data?: Record<string, string>;
    spec?: { template?: { metadata?: k8s.V1ObjectMeta } };
    status?: unknown;
};

async function apply(kc: k8s.KubeConfig, obj: KubeadmObject): Promise<void> {
    const client = k8s.KubernetesObjectApi.makeApiClient(kc);
    delete obj.metadata?.creationTimestamp;
    if (obj.spec?.template?.metadata) delete obj.spec.template.metadata.creationTimestamp;
    delete obj.status;
    await client.create(obj);
}

/** A Node of the reference cluster: pool label, Linux, and for kwok the annotation kwok manages it by. */
async function createNodeObject(
    core: k8s.CoreV1Api,
    n: { name: string; pool: string },
    real: boolean,
    extraLabels: Record<string, string> = {},
): Promise<void> {
    await core.createNode({
        body: {
            metadata: {
                name: n.name,
                labels: {
                    pool: n.pool,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "kubernetes.io/hostname": n.name,
                    type: real ? "netns" : "kwok",
                    ...extraLabels,
                },
                annotations: real ? {} : { "kwok.x-k8s.io/node": "fake" },
            },
        },
    });
}

/** Waits until every node reports Ready (kwok, or the node agent for real nodes). */
async function waitNodesReady(core: k8s.CoreV1Api, state: ClusterState, log: Log): Promise<void> {
    const real = state.kind === "real";
    const restarts = { count: 0 };
    await waitFor(
        real ? "real nodes" : "kwok nodes",
        // kwok marks nodes Ready at its own rate, slower on a busy machine: on 2 busy cores 5,000 nodes were
        // not Ready within 60 s once, nor within 210 s twice (the second on 2026-12-02); the start that
        // succeeded took 165 s in all
        60_000 + 60 * state.nodes.length,
        async () => {
            if (!real) reviveDaemon(state, "kwok", log, restarts);
            return (await core.listNode()).items.every((x) =>
                x.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
            );
        },
        state,
        real ? "node-agent" : "kwok",
    );
}

/** The workload a rollout must not disrupt: namespace demo, Deployment web (3 replicas), its PDB and Service. */
async function seedWorkload(kc: k8s.KubeConfig): Promise<void> {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: "demo" } } });
    const labels = { app: "web" };
    await kc.makeApiClient(k8s.AppsV1Api).createNamespacedDeployment({
        namespace: "demo",
        body: {
            metadata: { name: "web", namespace: "demo" },
            spec: {
                replicas: 3,
                selector: { matchLabels: labels },
                template: {
                    metadata: { labels },
                    spec: {
                        containers: [{ name: "web", image: "registry.k8s.io/pause:3.10" }],
                        tolerations: [{ key: "kwok.x-k8s.io/node", operator: "Exists" }],
                    },
                },
            },
        },
    });
    await kc.makeApiClient(k8s.PolicyV1Api).createNamespacedPodDisruptionBudget({
        namespace: "demo",
        body: {
            metadata: { name: "web", namespace: "demo" },
            spec: { minAvailable: 2, selector: { matchLabels: labels } },
        },
    });
    await core.createNamespacedService({
        namespace: "demo",
        body: {
            metadata: { name: "web", namespace: "demo" },
            spec: { selector: labels, ports: [{ port: 80, targetPort: 8080 }] },
        },
    });
}

/**
 * Real nodes' backend: a selectorless NodePort Service (a ClusterIP and a NodePort on every node,
 * the port the API server picks) with an EndpointSlice to the backend namespace's real address.
 */
async function seedBackend(kc: k8s.KubeConfig, network: RealNetwork): Promise<void> {
    const b = network.backend;
    await kc.makeApiClient(k8s.CoreV1Api).createNamespacedService({
        namespace: "demo",
        body: {
            metadata: { name: "backend", namespace: "demo" },
            spec: { type: "NodePort", ports: [{ name: "http", port: 80, targetPort: b.port, protocol: "TCP" }] },
        },
    });
    await kc.makeApiClient(k8s.DiscoveryV1Api).createNamespacedEndpointSlice({
        namespace: "demo",
        body: {
            metadata: {
                name: "backend-1",
                namespace: "demo",
                labels: {
                    "kubernetes.io/service-name": "backend",
                    "endpointslice.kubernetes.io/managed-by": "kube-proxy-mode-reference-cluster",
                },
            },
            addressType: "IPv4",
            endpoints: [{ addresses: [b.ip], conditions: { ready: true } }],
            ports: [{ name: "http", port: b.port, protocol: "TCP" }],
        },
    });
}

/** Waits until the kube-proxy DaemonSet has a Ready pod on every node. */
async function waitKubeProxyReady(kc: k8s.KubeConfig, state: ClusterState, log: Log): Promise<void> {
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    const restarts = { count: 0 };
    await waitFor(
        "kube-proxy pods on every node",
        90_000 + 60 * state.nodes.length,
        async () => {
            // kwok's pod stages set up lazily too, on the first pod it sees
            if (state.kind === "kwok") reviveDaemon(state, "kwok", log, restarts);
            const ds = await apps.readNamespacedDaemonSet({ name: "kube-proxy", namespace: "kube-system" });
            return (ds.status?.numberReady ?? 0) === state.nodes.length;
        },
        state,
        "kube-controller-manager",
    );
}

/**
 * Seeds the installer's objects (kube-proxy as kubeadm creates it), the nodes in their pools
 * (kernels set), the demo workload and, with real nodes, the backend; waits until kube-proxy
 * runs on every node.
 */
async function seed(
    kc: k8s.KubeConfig,
    state: ClusterState,
    nodeLabels: Record<string, Record<string, string>>,
    log: Log,
): Promise<void> {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    for (const obj of seedConfigMap(state.mode).objects) await apply(kc, obj);
    // before the nodes, so each kube-proxy starts on the whole load, as after a node's reboot
    if (state.services) await seedServiceLoad(kc, state.services, log);
    const real = state.kind === "real";
    for (const n of state.nodes) {
        await createNodeObject(core, n, real, nodeLabels[n.name]);
    }
    if (real) {
        // the node agent keeps the nodes' status (with this machine's real kernel) and runs their pods
        spawnDaemon(state, "node-agent", process.execPath, [join(__dirname, "nodeAgent.js"), state.dir]);
    }
    await waitNodesReady(core, state, log);
    // kwok fills in the node's status; the kernel is ours to set (real nodes report the real one)
    if (!real) for (const n of state.nodes) await setKernel(core, n.name, n.kernel);
    await seedWorkload(kc);
    if (state.network) await seedBackend(kc, state.network);
    await waitKubeProxyReady(kc, state, log);
}

/** Sets status.nodeInfo.kernelVersion (kwok keeps what is there). */
export async function setKernel(core: k8s.CoreV1Api, node: string, kernel: string): Promise<void> {
    await core.patchNodeStatus(
        {
            name: node,
            body: {
                status: {
                    nodeInfo: {
                        kernelVersion: kernel,
                        osImage: kernel.startsWith("5.10") ? "Amazon Linux 2" : "Ubuntu 24.04.1 LTS",
                        operatingSystem: "linux",
                    },
                },
            },
        },
        k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
}

/**
 * Fault injection for tests: kills one of the cluster's daemons (SIGKILL, as a crash), keeps it
 * down for `downMs`, starts it again with the same arguments and waits until the API answers.
 */
export async function restartDaemon(state: ClusterState, name: string, downMs: number): Promise<void> {
    const how = state.daemons?.[name];
    const pid = state.pids[name];
    if (!how || !pid) throw new Error(`cluster ${state.name} has no daemon ${name}`);
    try {
        process.kill(-pid, "SIGKILL");
    } catch {
        /* already gone */
    }
    await new Promise((r) => setTimeout(r, downMs));
    spawnDaemon(state, name, how.bin, how.args);
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(state.kubeconfig);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await waitFor(
        `${name} after its restart`,
        90_000,
        async () => (await core.listNode()).items.length > 0,
        state,
        name,
    );
}

/** A kwok node joining a pool (e.g. after that pool's step ran), Ready, with the given kernel. */
export async function addKwokNode(
    state: ClusterState,
    node: { name: string; pool: string; kernel: string },
): Promise<void> {
    if (state.kind !== "kwok") throw new Error("addKwokNode needs a cluster with kwok nodes");
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(state.kubeconfig);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await createNodeObject(core, node, false);
    const restarts = { count: 0 };
    await waitFor(
        `kwok node ${node.name}`,
        60_000,
        async () => {
            reviveDaemon(state, "kwok", clusterLog, restarts);
            return (
                (await core.readNode({ name: node.name })).status?.conditions?.some(
                    (c) => c.type === "Ready" && c.status === "True",
                ) ?? false
            );
        },
        state,
        "kwok",
    );
    await setKernel(core, node.name, node.kernel);
    state.nodes.push(node);
    writeFileSync(join(state.dir, "state.json"), JSON.stringify(state, null, 2));
}

export function readState(name = "reference"): ClusterState | undefined {
    const file = join(clustersDir(), name, "state.json");
    return existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : undefined;
}

export async function clusterDown(name = "reference"): Promise<boolean> {
    const dir = join(clustersDir(), name);
    const state = readState(name);
    if (state) {
        const order = [
            "node-agent",
            "backend",
            "kwok",
            "kube-scheduler",
            "kube-controller-manager",
            "kube-apiserver",
            "etcd",
            ...Object.keys(state.pids),
        ];
        for (const proc of [...new Set(order)]) {
            const pid = state.pids[proc];
            if (!pid) continue;
            try {
                process.kill(-pid, "SIGTERM");
            } catch {
                /* already gone */
            }
        }
        const until = Date.now() + 10_000;
        for (const pid of Object.values(state.pids)) {
            while (Date.now() < until) {
                try {
                    process.kill(pid, 0);
                    await new Promise((r) => setTimeout(r, 100));
                } catch {
                    break;
                }
            }
            try {
                process.kill(-pid, "SIGKILL");
            } catch {
                /* gone */
            }
        }
    }
    if (state?.network) destroyNetwork(state.network);
    if (!existsSync(dir)) return false;
    rmSync(dir, { recursive: true, force: true });
    return true;
}

function parsePools(text: string): [string, number][] {
    return text.split(",").map((part) => {
        const m = /^([a-z0-9-]+)=(\d+)$/.exec(part.trim());
        if (!m) throw new Error(`--pools ${JSON.stringify(text)}: write pool=count,pool=count`);
        return [m[1], Number(m[2])];
    });
}

function wholeNumber(option: string, text: string): number {
    if (!/^\d+$/.test(text)) throw new Error(`${option} ${JSON.stringify(text)}: a whole number`);
    return Number(text);
}

async function cli(argv: string[]): Promise<number> {
    const [command, ...rest] = argv;
    const { values } = parseArgs({
        args: rest,
        options: {
            name: { type: "string" },
            pools: { type: "string" },
            mode: { type: "string" },
            kernel: { type: "string" },
            "node-kernel": { type: "string", multiple: true },
            nodes: { type: "string" },
            audit: { type: "boolean" },
            services: { type: "string" },
            "endpoints-per-service": { type: "string" },
        },
        strict: true,
    });
    const name = values.name ?? "reference";
    if (command === "up") {
        const nodeKernels: Record<string, string> = {};
        for (const nk of values["node-kernel"] ?? []) {
            const [n, k] = nk.split("=");
            nodeKernels[n] = k;
        }
        const mode = (values.mode ?? "ipvs") as ProxyMode;
        if (!["iptables", "ipvs", "nftables"].includes(mode))
            throw new Error(`--mode ${mode}: iptables, ipvs or nftables`);
        const nodesKind = (values.nodes ?? (realNodesSupported().ok ? "real" : "kwok")) as "real" | "kwok";
        if (nodesKind !== "real" && nodesKind !== "kwok") throw new Error(`--nodes ${String(nodesKind)}: real or kwok`);
        if (nodesKind === "kwok" && values.nodes === undefined)
            clusterLog(`real nodes are not possible here (${realNodesSupported().why}); using kwok nodes`);
        const state = await clusterUp({
            name,
            pools: values.pools ? parsePools(values.pools) : undefined,
            mode,
            kernel: values.kernel,
            nodeKernels,
            nodes: nodesKind,
            audit: values.audit,
            services:
                values.services === undefined
                    ? undefined
                    : {
                          services: wholeNumber("--services", values.services),
                          endpointsPerService: wholeNumber(
                              "--endpoints-per-service",
                              values["endpoints-per-service"] ?? "10",
                          ),
                      },
        });
        process.stdout.write(`${state.kubeconfig}\n`);
        return 0;
    }
    if (command === "down") {
        const removed = await clusterDown(name);
        clusterLog(removed ? `${name}: stopped and removed` : `${name}: nothing to remove`);
        return 0;
    }
    process.stderr.write(
        "usage: referenceCluster.js up|down [--name N] [--pools canary=1,workers=3,batch=2] [--mode ipvs] [--kernel K] [--node-kernel NODE=K] [--nodes real|kwok] [--audit] [--services N [--endpoints-per-service M]]\n",
    );
    return 2;
}

if (require.main === module) {
    cli(process.argv.slice(2)).then(
        (code) => process.exit(code),
        (e) => {
            clusterLog((e as Error).message);
            process.exit(1);
        },
    );
}
