// End-to-end support: a reference cluster per test, a Pulumi workspace on a local file backend
// driving the real engine (through the Automation API), and observers of the cluster.
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { LocalWorkspace, PulumiCommand, type Stack } from "@pulumi/pulumi/automation";
import {
    clusterDown,
    clusterUp,
    enginePath,
    engineTemp,
    toolchainBin,
    type ClusterOptions,
    type ClusterState,
} from "../../scripts/referenceCluster.js";
import { rbacObjects } from "../../components/core/rbac.js";
import type { ProxyMode } from "../../components/core/types.js";
import { CLI, ROOT } from "../helpers.js";

let binDir: string | undefined;

/** The toolchain's bin dir, on PATH for this process (the engine, plugins, kubectl; the command plugin, SIMULATED where no real one is on PATH). */
export function toolchain(): string {
    if (!binDir) {
        binDir = toolchainBin();
        process.env.PATH = enginePath(binDir).path;
    }
    return binDir;
}

const scratch: string[] = [];
process.on("exit", () => {
    for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

/**
 * A fresh directory in the system's temporary directory, removed when this process exits (tests
 * and the bench write kubeconfigs and stack state there: nothing of theirs outlives the run).
 */
export function scratchDir(prefix: string): string {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    scratch.push(dir);
    return dir;
}

let counter = 0;
export async function startCluster(opts: ClusterOptions = {}): Promise<ClusterState> {
    toolchain();
    const name = `e2e-${process.pid}-${++counter}`;
    return clusterUp({ name, log: () => undefined, ...opts });
}

export async function stopCluster(state: ClusterState | undefined): Promise<void> {
    if (state) await clusterDown(state.name);
}

export function clients(state: ClusterState) {
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(state.kubeconfig);
    return { kc, core: kc.makeApiClient(k8s.CoreV1Api), apps: kc.makeApiClient(k8s.AppsV1Api) };
}

export interface Workspace {
    dir: string;
    stack: Stack;
    output: string[];
    setConfig(values: Record<string, unknown>): Promise<void>;
    dispose(): void;
}

export const POOLS = [
    { name: "canary", nodeSelector: "pool=canary", maxUnavailable: 1 },
    { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2 },
    { name: "batch", nodeSelector: "pool=batch", maxUnavailable: 1 },
];

/**
 * A temporary Pulumi project directory running this repository's config-driven program (the
 * root Pulumi.yaml's, over this checkout's build), a file backend beside it, and the
 * environment the engine runs with: offline, no ambient cluster.
 */
export async function projectDir(
    prefix: string,
): Promise<{ dir: string; envVars: Record<string, string>; pulumiCommand: PulumiCommand }> {
    toolchain();
    const dir = scratchDir(prefix);
    writeFileSync(join(dir, "Pulumi.yaml"), readFileSync(join(ROOT, "Pulumi.yaml"), "utf8"));
    for (const entry of ["dist", "node_modules", "package.json"]) symlinkSync(join(ROOT, entry), join(dir, entry));
    mkdirSync(join(dir, ".state"));
    const envVars: Record<string, string> = {
        PULUMI_BACKEND_URL: `file://${join(dir, ".state")}`,
        PULUMI_CONFIG_PASSPHRASE: "e2e-passphrase",
        PULUMI_HOME: join(dir, ".pulumi-home"),
        PULUMI_SKIP_UPDATE_CHECK: "true",
        PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
        PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK: "true",
        PATH: process.env.PATH!,
        // the rollout steps' CLI must not pick up a developer's own cluster
        KUBECONFIG: join(dir, "no-ambient-kubeconfig"),
        ...engineTemp(dir),
    };
    return { dir, envVars, pulumiCommand: await PulumiCommand.get({ skipVersionCheck: true }) };
}

/**
 * A Pulumi project in a temporary directory running this repository's config-driven program
 * (the root Pulumi.yaml's), with a file backend beside it. The kubeconfig goes in as a secret.
 */
export async function workspace(cluster: ClusterState, config: Record<string, unknown>): Promise<Workspace> {
    toolchain();
    const { dir, envVars, pulumiCommand } = await projectDir("kpm-e2e-");
    const ws = await LocalWorkspace.create({ workDir: dir, envVars, pulumiCommand });
    const stack = await LocalWorkspace.createOrSelectStack(
        { stackName: "e2e", workDir: dir },
        { workDir: dir, envVars, pulumiCommand },
    );
    void ws;
    const output: string[] = [];
    const w: Workspace = {
        dir,
        stack,
        output,
        setConfig: (values) => setStackConfig(stack, values),
        dispose() {
            rmSync(dir, { recursive: true, force: true });
        },
    };
    await setKubeconfig(stack, cluster);
    await w.setConfig({ pools: POOLS, verify: { nodeChecks: false }, ...config });
    return w;
}

/** Sets the program's config (kube-proxy-mode:<key>, objects as JSON); undefined removes a key. */
export async function setStackConfig(stack: Stack, values: Record<string, unknown>): Promise<void> {
    const all: Record<string, { value: string }> = {};
    for (const [k, v] of Object.entries(values)) {
        if (v === undefined) await stack.removeConfig(`kube-proxy-mode:${k}`).catch(() => undefined);
        else all[`kube-proxy-mode:${k}`] = { value: typeof v === "string" ? v : JSON.stringify(v) };
    }
    await stack.setAllConfig(all);
}

/**
 * The program's secret kubeconfig: a ServiceAccount bound to exactly the shipped ClusterRole and
 * Role (rbac/kube-proxy-mode.yaml), never the cluster's admin, so every rollout the e2e suites run
 * proves the shipped least privilege (a missing permission fails the suite, naming verb and resource).
 */
export async function setKubeconfig(stack: Stack, cluster: ClusterState): Promise<void> {
    await stack.setConfig("kube-proxy-mode:kubeconfig", {
        value: await leastPrivilegeKubeconfig(cluster),
        secret: true,
    });
}

const minted = new Map<string, string>();

/**
 * A kubeconfig for the ServiceAccount kube-system/<account> (default kube-proxy-mode) bound to the
 * shipped role (created once per cluster and account). Deleting that ServiceAccount revokes it.
 */
export async function leastPrivilegeKubeconfig(cluster: ClusterState, account = "kube-proxy-mode"): Promise<string> {
    const key = `${cluster.name}/${account}`;
    const known = minted.get(key);
    if (known) return known;
    const { kc } = clients(cluster);
    const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
    const sa = { name: account, namespace: "kube-system" };
    const text = await serviceAccountKubeconfig(cluster, account);
    for (const o of rbacObjects({ name: account, serviceAccount: sa })) {
        await objects.create(o as k8s.KubernetesObject).catch((e) => {
            if (e?.code !== 409) throw e;
        });
    }
    minted.set(key, text);
    return text;
}

/**
 * A kubeconfig for the ServiceAccount kube-system/<account> (created when missing), with a token
 * valid for 6 hours; it can do what the account is bound to, nothing when it is bound to nothing.
 */
export async function serviceAccountKubeconfig(cluster: ClusterState, account: string): Promise<string> {
    const { kc, core } = clients(cluster);
    const sa = { name: account, namespace: "kube-system" };
    await core
        .createNamespacedServiceAccount({ namespace: sa.namespace, body: { metadata: { name: sa.name } } })
        .catch((e) => {
            if (e?.code !== 409) throw e;
        });
    const token = await core.createNamespacedServiceAccountToken({
        name: sa.name,
        namespace: sa.namespace,
        body: { spec: { audiences: [], expirationSeconds: 6 * 3600 } },
    });
    const admin = kc.getCurrentCluster()!;
    const out = new k8s.KubeConfig();
    out.loadFromOptions({
        clusters: [
            {
                name: admin.name,
                server: admin.server,
                caData: admin.caData,
                caFile: admin.caFile,
                skipTLSVerify: admin.skipTLSVerify,
            },
        ],
        users: [{ name: "kube-proxy-mode", token: token.status!.token }],
        contexts: [{ name: admin.name, cluster: admin.name, user: "kube-proxy-mode" }],
        currentContext: admin.name,
    });
    return out.exportConfig();
}

/** resourceVersion of every object in kube-system and of every Node. */
export async function resourceVersions(state: ClusterState): Promise<Record<string, string>> {
    const { kc } = clients(state);
    const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
    const out: Record<string, string> = {};
    for (const [apiVersion, kind] of [
        ["v1", "ConfigMap"],
        ["v1", "Pod"],
        ["v1", "ServiceAccount"],
        ["apps/v1", "DaemonSet"],
        ["apps/v1", "ControllerRevision"],
    ] as const) {
        const list = await objects.list(apiVersion, kind, "kube-system");
        for (const o of list.items) out[`${kind} kube-system/${o.metadata!.name}`] = o.metadata!.resourceVersion!;
    }
    const nodes = await objects.list("v1", "Node");
    for (const o of nodes.items) out[`Node ${o.metadata!.name}`] = o.metadata!.resourceVersion!;
    return out;
}

/** Nodes' status changes (heartbeats) move resourceVersion; compare what a user would call the object. */
export async function nodeSpecsAndLabels(state: ClusterState): Promise<Record<string, string>> {
    const { core } = clients(state);
    const out: Record<string, string> = {};
    for (const n of (await core.listNode()).items)
        out[n.metadata!.name!] = JSON.stringify({
            labels: n.metadata!.labels,
            annotations: n.metadata!.annotations,
            spec: n.spec,
        });
    return out;
}

export interface CordonWatch {
    /** pool -> the most nodes of that pool cordoned at one moment */
    maxCordoned: Record<string, number>;
    /** pools in the order their first node was cordoned */
    poolOrder: string[];
    /** node cordon events in order */
    events: string[];
    stop(): void;
}

/** Watches Nodes while a rollout runs, and records every cordon as it happens. */
export async function watchCordons(state: ClusterState): Promise<CordonWatch> {
    const { kc } = clients(state);
    const poolOf = new Map(state.nodes.map((n) => [n.name, n.pool]));
    const cordoned = new Set<string>();
    const result: CordonWatch = { maxCordoned: {}, poolOrder: [], events: [], stop: () => undefined };
    const watch = new k8s.Watch(kc);
    const req = await watch.watch(
        "/api/v1/nodes",
        {},
        (_type, node: k8s.V1Node) => {
            const name = node.metadata!.name!;
            const pool = poolOf.get(name) ?? "?";
            const now = node.spec?.unschedulable === true;
            if (now && !cordoned.has(name)) {
                cordoned.add(name);
                result.events.push(`cordon ${name}`);
                if (!result.poolOrder.includes(pool)) result.poolOrder.push(pool);
            } else if (!now && cordoned.has(name)) {
                cordoned.delete(name);
                result.events.push(`uncordon ${name}`);
            }
            const inPool = [...cordoned].filter((n) => poolOf.get(n) === pool).length;
            result.maxCordoned[pool] = Math.max(result.maxCordoned[pool] ?? 0, inPool);
        },
        () => undefined,
    );
    result.stop = () => req.abort();
    return result;
}

export function poolSpec(name: string) {
    return POOLS.find((p) => p.name === name)!;
}

// ---- real nodes: each node a network namespace running the real kube-proxy ----------------------

/** The built-in node checks (verify.nodeChecks: true), as the rollout logs them. */
export const BUILT_IN_CHECKS = ["startup-log", "mode", "leftovers", "rules", "sync", "connection"];

export function netns(c: ClusterState, node: string): string {
    return c.network!.nodes.find((n) => n.name === node)!.netns;
}

/** A command in a node's network namespace (argv, no shell). */
export function onNode(c: ClusterState, node: string, argv: string[]): { code: number; out: string } {
    const r = spawnSync("ip", ["netns", "exec", netns(c, node), ...argv], { encoding: "utf8" });
    return { code: r.status ?? 1, out: `${r.stdout}${r.stderr}` };
}

export async function backendClusterIP(c: ClusterState): Promise<string> {
    const svc = await clients(c).core.readNamespacedService({ name: "backend", namespace: "demo" });
    return svc.spec!.clusterIP!;
}

/** Waits until every node's kube-proxy answers /proxyMode (the processes start right after the cluster is up). */
export async function proxiesAnswer(c: ClusterState): Promise<void> {
    const until = Date.now() + 60_000;
    for (const n of c.nodes) {
        while (onNode(c, n.name, ["curl", "-s", "-m", "2", "127.0.0.1:10249/proxyMode"]).out === "") {
            if (Date.now() > until) throw new Error(`kube-proxy on ${n.name} does not answer /proxyMode`);
            await new Promise((r) => setTimeout(r, 300));
        }
    }
}

/** Polls a node until `argv`'s output matches `pattern`: kube-proxy answers /proxyMode before its first sync has written any rule. */
export async function eventuallyOnNode(
    c: ClusterState,
    node: string,
    argv: string[],
    pattern: RegExp,
    what: string,
): Promise<void> {
    const until = Date.now() + 60_000;
    let last = onNode(c, node, argv).out;
    while (!pattern.test(last)) {
        if (Date.now() > until) assert.fail(`${node}: ${what} within 60 s; last output of ${argv.join(" ")}:\n${last}`);
        await new Promise((r) => setTimeout(r, 500));
        last = onNode(c, node, argv).out;
    }
}

/** The real kube-proxy processes in a node's namespace. */
export function kubeProxyPids(c: ClusterState, node: string): string[] {
    return execFileSync("ip", ["netns", "pids", netns(c, node)], { encoding: "utf8" })
        .split("\n")
        .filter((p) => {
            try {
                return p !== "" && /\/kube-proxy\0/.test(readFileSync(`/proc/${p}/cmdline`, "utf8"));
            } catch {
                return false; // gone between the listing and the read (a probe, a restart)
            }
        });
}

/**
 * The data plane of every node, as it is: the mode its kube-proxy answers on /proxyMode (the
 * metrics port in the node's namespace) is `modes[node]`, and the demo Service answers a
 * connection made from that node through the rules its kube-proxy wrote (polled: a kube-proxy
 * just restarted answers /proxyMode before its first sync).
 */
export async function assertDataPlane(c: ClusterState, modes: Record<string, ProxyMode>): Promise<void> {
    assert.deepEqual(c.nodes.map((n) => n.name).sort(), Object.keys(modes).sort(), "a mode is expected for every node");
    const ip = await backendClusterIP(c);
    for (const n of c.nodes) {
        assert.equal(
            onNode(c, n.name, ["curl", "-s", "-m", "5", "127.0.0.1:10249/proxyMode"]).out,
            modes[n.name],
            `${n.name}: kube-proxy's /proxyMode`,
        );
        await eventuallyOnNode(
            c,
            n.name,
            ["curl", "-s", "-m", "3", `http://${ip}/`],
            /backend answered GET \//,
            `the Service ${ip} (demo/backend) answers from the node`,
        );
    }
}

/** A CLI run watched as it goes: its exit code and output; when the awaited line came and when it ended (ms since the epoch). */
export interface WatchedRun {
    code: number | null;
    out: string;
    triggeredAt?: number;
    endedAt: number;
}

/**
 * Runs the CLI with `args` and `env` (over this process's), each output line appended to `output`
 * under `[label]`; `on.then` is called once, with the process, when the output first matches
 * `on.line` (to kill it, or to inject a fault mid-run); with `limitMs`, a run still going then is
 * killed (SIGKILL), so a hang fails the test instead of stalling it.
 */
export function watchedCli(
    args: string[],
    env: Record<string, string>,
    label: string,
    output: string[],
    on?: { line: RegExp; then: (child: ChildProcess) => void },
    limitMs?: number,
): Promise<WatchedRun> {
    return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, [CLI, ...args], {
            env: { ...process.env, ...env },
            stdio: ["ignore", "pipe", "pipe"],
        });
        const limit = limitMs === undefined ? undefined : setTimeout(() => child.kill("SIGKILL"), limitMs);
        let out = "";
        let triggeredAt: number | undefined;
        const take = (d: Buffer) => {
            const text = d.toString();
            out += text;
            output.push(
                ...text
                    .trimEnd()
                    .split("\n")
                    .map((l) => `[${label}] ${l}`),
            );
            if (on && triggeredAt === undefined && on.line.test(out)) {
                triggeredAt = Date.now();
                on.then(child);
            }
        };
        child.stdout!.on("data", take);
        child.stderr!.on("data", take);
        child.on("error", reject);
        child.on("close", (code) => {
            clearTimeout(limit);
            resolve({ code, out, triggeredAt, endedAt: Date.now() });
        });
    });
}
