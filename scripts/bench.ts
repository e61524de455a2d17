// `npm run bench`: KubeProxyMode at scale, side by side with the plain kubectl procedure.
//
//   node dist/scripts/bench.js [--sizes 100,1000,5000] [--real-nodes 6] [--phases preview,up,peer] [--json]
//        [--max-unavailable 50] [--soak 0s] [--lines FILE] [--audit] [--heap] [--cluster NAME]
//   --sizes "" runs no kwok cluster; --real-nodes 0 no real one; --lines FILE appends every line
//   the steps of each `pulumi up` printed, with its time in seconds from the up's start; --audit
//   starts the clusters with kube-apiserver's audit log and tells the up's requests by client
//   (the tool, each controller, kwok), as does --cluster NAME on a cluster started with --audit;
//   --heap snapshots the runner's heap every 30 s of each up and reports its live heap, the memory
//   it holds, apart from its RSS; each snapshot pauses the runner, so the up's times are slowed
//   and not comparable with a run without it (docs/performance.md); --preview-runs N runs
//   the two previews N times each (default 3), alternating, and reports each one's median (a busy
//   machine moves one preview by a second or more)
//   node dist/scripts/bench.js --core 5000     the preview's pure work alone (no cluster, no Pulumi):
//        reading a kwok-like NodeList, deciding the migration, the plan text and JSON; run it
//        under `node --cpu-prof` to see where the time goes
//
// For each size it starts a reference cluster with SIMULATED (kwok) nodes, pools canary=1 and
// workers=N-1 on ipvs, and measures on the real Pulumi engine (the same program, CLI and code
// paths as a user's `pulumi up`, through the Automation API):
//   - `pulumi preview` of an empty program and of the KubeProxyMode program: wall time and peak
//     RSS of the engine's process tree (pulumi, language host, program, providers; summed, sampled
//     every 100 ms);
//   - `pulumi up` (ipvs -> nftables, verify.nodeChecks: false since kwok nodes have no host to probe):
//     wall time, each step's time (from the engine's events), the pools' time (their steps summed),
//     the finish's time, and the floor `sum over pools of (ceil(n/k) x per-batch floor + soak)`
//     where each batch's floor is its slowest node's own move, cordoned to released (its
//     kube-proxy's restart, start, settling and checks), read from the rollout's node events (each
//     step's CLI appends them to one file: rollout --events, KPM_EVENTS_FILE); per kind
//     (moves, hand-backs) the batches' time beside their floor; and the runner's peak RSS (the
//     steps' CLI process, sampled every 100 ms);
//   - API requests per node moved, from kube-apiserver's apiserver_request_total (scraped before
//     and after with the cluster's token), the nodes' heartbeats (leases, and kwok's node status on
//     its 10-to-20-minute timer) left out and the rest of the cluster's own background rate (the
//     controllers), measured for 15 s while nothing runs, subtracted;
//   - then the same on a cluster of --real-nodes REAL nodes (network namespaces on this machine
//     running the real kube-proxy; their ipvs before-state is the SIMULATED stand-in), one node
//     at a time with the built-in node checks on, and per node where its move and its hand-back
//     went (restart, checks), from the same node events (nodePhases.ts);
//   - the runbook's procedure as a plain script, the peer: edit the ConfigMap, then restart
//     kube-proxy node by node with `kubectl delete pod` and wait for the new pod to be Ready; no
//     verification. It runs on the same cluster after the up (nftables -> iptables: on kwok nodes
//     the mode changes nothing but the ConfigMap text, so the per-node work is the same).
//   node dist/scripts/bench.js --phases workload [--pairs ipvs:nftables,ipvs:iptables,iptables:nftables]
//        [--workload-nodes 3]: the cost to workloads on REAL nodes (network namespaces, the real
//        kube-proxy; the ipvs before-state is the SIMULATED stand-in): per mode pair, a fresh cluster
//        for the up and one for the runbook, a client in each node's namespace (20 new connections
//        a second and one long-lived connection to demo/backend's ClusterIP, and 20 new connections
//        a second to its NodePort on the node's own address) through the procedure;
//        the gaps, the long-lived connection's fate (scripts/workload.ts), one table;
//        [--services 1000,5000 [--endpoints-per-service 10]] runs every pair once per count with
//        that many load Services seeded (scripts/serviceLoad.ts), so the real kube-proxy programs
//        them, and waits for every node's kube-proxy to have synced before the clients start; per
//        node it samples kube-proxy from /proc and its metrics (scripts/kubeProxySamples.ts): the
//        new mode's first full sync (its process's start to kubeproxy_sync_proxy_rules_last_timestamp_seconds,
//        and under the up the rollout's own first sync beside it, its node event), its memory and CPU time in
//        the old mode and the new, the node's verification (up) and its pool's wall time: a second table
//   --out DIR writes the run's JSON to DIR/bench.json and, with workload runs, their timeline
//        (scripts/workloadChart.ts, rendered headless with vega-lite and vega) to DIR/workload-timeline.svg;
//   --chart FILE renders the timeline of a bench.json written before (into --out DIR, else beside it)
//   node dist/scripts/bench.js --phases fleet [--fleet-clusters 4]: promote's walk of N stacks against
//        one fleet wave of them on the embedded Temporal server, N SIMULATED kwok clusters
//        (scripts/fleetBench.ts); writes docs/performance/fleet-N.json (into --out DIR, if given)
//        and the wave's chart, fleet-waves.svg, beside it (scripts/fleetChart.ts)
// Progress goes to stderr; the table (or with --json one object) to stdout.
import { markdownTable } from "./markdownTable.js";
import { previewFigures, type PreviewFigures, type PreviewRun } from "./previewFigures.js";
import { execFile, execFileSync } from "node:child_process";
import {
    appendFileSync,
    existsSync,
    mkdirSync,
    mkdtempSync,
    readdirSync,
    readFileSync,
    readlinkSync,
    rmSync,
    statSync,
    writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { LocalWorkspace, type EngineEvent, type Stack } from "@pulumi/pulumi/automation";
import { parseCurrentConfig } from "../components/core/config.js";
import { decideMigration, type ClusterSnapshot } from "../components/core/migration.js";
import { compareNodeNames, nodeFacts, type NodeObject } from "../components/core/nodes.js";
import { MARKS } from "../components/core/plan.js";
import type { ProxyMode } from "../components/core/types.js";
import { parseKubeVersion } from "../components/core/versions.js";
import { clusterDown, clusterUp, readState, ROOT, type ClusterState } from "./referenceCluster.js";
import { projectDir, setKubeconfig, setStackConfig, toolchain } from "../tests/e2e/support.js";
import { apiRequestTotals, countedRequests } from "./apiRequests.js";
import { perNodeByClient, requestsByClient } from "./auditLog.js";
import { heapSnapshotOptions, snapshotsIn, writesHeapSnapshots } from "./heapSnapshot.js";
import { floorOf, nodePhases, nodePhasesTable, type BatchFigures, type NodePhase } from "./nodePhases.js";
import { parseEvents, type NodeEvent } from "../components/rollout/events.js";
import {
    kubeProxyFigures,
    parseBootTime,
    parseProcStat,
    parseSyncMetrics,
    parseVmRss,
    poolSeconds,
    proxyProcesses,
    rolloutSyncs,
    type ProxySample,
} from "./kubeProxySamples.js";
import { renderSvg, timelineSpec } from "./workloadChart.js";
import { fleetBench, fleetReport, type FleetBenchResult } from "./fleetBench.js";
import { fleetWavesSpec } from "./fleetChart.js";
import {
    nodeFigures,
    scaleTable,
    startToRouted,
    startWorkloadClient,
    workloadTable,
    type ClientRecord,
    type Gap,
    type PodEvent,
    type Procedure,
    type WorkloadRun,
} from "./workload.js";

interface Options {
    sizes: number[];
    phases: Set<string>;
    json: boolean;
    maxUnavailable: number;
    soak: string;
    /** --core N: time the preview's pure work over N synthetic nodes, and nothing else */
    core?: number;
    /** the workload phase: mode pairs, and real nodes per cluster */
    pairs: [ProxyMode, ProxyMode][];
    workloadNodes: number;
    /** --services 1000,5000: the workload phase runs once per count, with that many load Services seeded (none: []) */
    services: number[];
    /** --endpoints-per-service M: each load Service's endpoints (default 10) */
    endpointsPerService: number;
    /** --out DIR: the run's JSON written to DIR/bench.json and, with workload runs, their timeline to DIR/workload-timeline.svg */
    out?: string;
    /** --chart FILE: render the timeline of a bench.json written before (to --out, else beside it) and do nothing else */
    chart?: string;
    /** --real-nodes N: also a cluster of N real nodes (0: none), for the per-node breakdown */
    realNodes: number;
    /** --cluster NAME: measure on this running reference cluster (its size) instead of starting one per size; left running */
    cluster?: string;
    /** --lines FILE: every up's step lines, timed, appended there (to see where a step's time went) */
    lines?: string;
    /** --audit: the clusters the bench starts write kube-apiserver's audit log, and the up's requests are told by client */
    audit: boolean;
    /** --heap: heap snapshots of the runner every 30 s of the up, for its live heap (see the usage above) */
    heap: boolean;
    /** --preview-runs N: each preview N times, alternating empty and KubeProxyMode; the figures are the medians */
    previewRuns: number;
    /** --fleet-clusters N: the fleet phase's clusters (and stacks), default 4 */
    fleetClusters: number;
}

export interface SizeResult {
    nodes: number;
    /** SIMULATED kwok nodes, or real nodes (network namespaces running the real kube-proxy) */
    kind: "kwok" | "real";
    clusterUpSeconds: number;
    preview?: { empty: PreviewFigures; kubeProxyMode: PreviewFigures };
    up?: {
        seconds: number;
        steps: Record<string, number>;
        finishSeconds: number;
        /** the pool steps' time, summed: the rollout without the finish */
        poolsSeconds: number;
        /** the pools' batches' floors (each its slowest node's own move, cordoned to released), summed, plus each pool's soak */
        floorSeconds: number;
        /** per kind: how many batches, their time (batch line to last release) and their floors, summed */
        batches: Record<"move" | "hand-back", BatchFigures>;
        moved: number;
        apiRequestsPerNode: number;
        /** per verb and resource, background not subtracted (it is in the total) */
        apiByKindPerNode: Record<string, number>;
        /** with the cluster's audit log (--audit): per client, its requests per node and their kinds (background not subtracted) */
        apiByClientPerNode?: ReturnType<typeof perNodeByClient>;
        /** the peak RSS of the rollout's CLI process (the runner), the largest over the steps, in MB */
        runnerPeakMB: number;
        /** --heap: the runner's live heap (after a full garbage collection), the largest of its snapshots, in MB, and how many were taken */
        runnerLiveHeap?: { maxMB: number; snapshots: number };
        /** real nodes: each node's move and hand-back, from the rollout's node events */
        perNode?: NodePhase[];
    };
    peer?: { seconds: number; apiRequestsPerNode: number; apiByKindPerNode: Record<string, number> };
    /** the up's time over the peer's */
    ratio?: number;
}

const progress = (line: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

/** --pairs: comma-separated from:to mode pairs, each to iptables or nftables. */
function parsePairs(text: string): [ProxyMode, ProxyMode][] {
    const pairs = text.split(",").map((s) => s.trim().split(":") as [ProxyMode, ProxyMode]);
    for (const pair of pairs) {
        if (
            pair.length !== 2 ||
            pair.some((m) => !["ipvs", "iptables", "nftables"].includes(m)) ||
            pair[0] === pair[1] ||
            pair[1] === "ipvs"
        )
            throw new Error(
                `--pairs ${text}: comma-separated from:to mode pairs, to iptables or nftables (e.g. --pairs iptables:nftables,ipvs:nftables)`,
            );
    }
    return pairs;
}

function parseOptions(argv: string[]): Options {
    const { values } = parseArgs({
        args: argv,
        options: {
            sizes: { type: "string", default: "100,1000,5000" },
            phases: { type: "string", default: "preview,up,peer" },
            json: { type: "boolean", default: false },
            "max-unavailable": { type: "string", default: "50" },
            soak: { type: "string", default: "0s" },
            core: { type: "string" },
            pairs: { type: "string", default: "ipvs:nftables,ipvs:iptables,iptables:nftables" },
            "workload-nodes": { type: "string", default: "3" },
            "real-nodes": { type: "string", default: "6" },
            cluster: { type: "string" },
            lines: { type: "string" },
            audit: { type: "boolean", default: false },
            heap: { type: "boolean", default: false },
            "preview-runs": { type: "string", default: "3" },
            services: { type: "string", default: "" },
            "endpoints-per-service": { type: "string", default: "10" },
            out: { type: "string" },
            chart: { type: "string" },
            "fleet-clusters": { type: "string", default: "4" },
        },
    });
    const services = values.services.trim() === "" ? [] : values.services.split(",").map((s) => Number(s.trim()));
    if (services.some((n) => !Number.isInteger(n) || n < 1 || n > 45_000))
        throw new Error(
            `--services ${values.services}: comma-separated Service counts from 1 to 45000 (e.g. 1000,5000)`,
        );
    const endpointsPerService = Number(values["endpoints-per-service"]);
    if (!Number.isInteger(endpointsPerService) || endpointsPerService < 1 || endpointsPerService > 90)
        throw new Error(`--endpoints-per-service ${values["endpoints-per-service"]}: a whole number from 1 to 90`);
    const sizes = values.sizes.trim() === "" ? [] : values.sizes.split(",").map((s) => Number(s.trim()));
    if (sizes.some((n) => !Number.isInteger(n) || n < 2))
        throw new Error(
            `--sizes ${values.sizes}: a comma-separated list of node counts of at least 2 (e.g. --sizes 100,1000)`,
        );
    const phases = new Set(values.phases.split(",").map((s) => s.trim()));
    for (const p of phases)
        if (!["preview", "up", "peer", "workload", "fleet"].includes(p))
            throw new Error(`--phases: unknown phase ${p} (use preview, up, peer, workload, fleet)`);
    const fleetClusters = Number(values["fleet-clusters"]);
    if (!Number.isInteger(fleetClusters) || fleetClusters < 1 || fleetClusters > 12)
        throw new Error(`--fleet-clusters ${values["fleet-clusters"]}: a whole number from 1 to 12`);
    const pairs = parsePairs(values.pairs);
    const workloadNodes = Number(values["workload-nodes"]);
    if (!Number.isInteger(workloadNodes) || workloadNodes < 2 || workloadNodes > 12)
        throw new Error(
            `--workload-nodes ${values["workload-nodes"]}: a whole number from 2 to 12 (real nodes: network namespaces on this machine)`,
        );
    const realNodes = Number(values["real-nodes"]);
    if (!Number.isInteger(realNodes) || realNodes < 0 || realNodes === 1 || realNodes > 12)
        throw new Error(
            `--real-nodes ${values["real-nodes"]}: 0 (none) or a whole number from 2 to 12 (real nodes: network namespaces on this machine)`,
        );
    const maxUnavailable = Number(values["max-unavailable"]);
    if (!Number.isInteger(maxUnavailable) || maxUnavailable < 1)
        throw new Error(`--max-unavailable ${values["max-unavailable"]}: a whole number of at least 1`);
    const previewRuns = Number(values["preview-runs"]);
    if (!Number.isInteger(previewRuns) || previewRuns < 1 || previewRuns > 20)
        throw new Error(`--preview-runs ${values["preview-runs"]}: a whole number from 1 to 20`);
    const core = values.core === undefined ? undefined : Number(values.core);
    if (values.cluster !== undefined && !readState(values.cluster))
        throw new Error(
            `--cluster ${values.cluster}: no reference cluster of that name is running (npm run cluster:up -- --name ${values.cluster} --nodes kwok --pools canary=1,workers=N)`,
        );
    return {
        sizes: values.cluster !== undefined ? [readState(values.cluster)!.nodes.length] : sizes,
        phases,
        json: values.json,
        maxUnavailable,
        soak: values.soak,
        core,
        pairs,
        workloadNodes,
        realNodes: values.cluster !== undefined ? 0 : realNodes,
        lines: values.lines,
        cluster: values.cluster,
        audit: values.audit,
        heap: values.heap,
        previewRuns,
        fleetClusters,
        services,
        endpointsPerService,
        ...(values.out !== undefined ? { out: values.out } : {}),
        ...(values.chart !== undefined ? { chart: values.chart } : {}),
    };
}

/** The processes below this one: pid -> [parent pid, resident bytes]. */
function processTree(): Map<number, [number, number]> {
    const out = new Map<number, [number, number]>();
    for (const entry of readdirSync("/proc")) {
        if (!/^\d+$/.test(entry)) continue;
        try {
            const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
            const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
            out.set(Number(entry), [Number(fields[1]), Number(fields[21]) * 4096]);
        } catch {
            /* gone */
        }
    }
    return out;
}

/** What a process runs, in a word: its executable's name, or for node the script it runs. */
function processName(pid: number): string {
    try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
        const base = (a: string | undefined) => (a ?? "?").split("/").pop()!;
        if (base(argv[0]) !== "node") return base(argv[0]);
        const script = argv.slice(1).find((a) => !a.startsWith("-") && !a.includes("("));
        return `node ${base(script)}`;
    } catch {
        try {
            const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
            return stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
        } catch {
            return "?";
        }
    }
}

/**
 * --heap: from now until `stop`, the processes this one starts get heapSnapshotOptions, and every
 * 30 s each runner among them (a step's CLI, `node main.js`) is sent SIGUSR2 and writes a heap
 * snapshot; `figures` reads them (the largest live heap) and deletes them.
 */
function runnerSnapshots(): { stop: () => void; figures: () => { maxMB: number; snapshots: number } } {
    const dir = mkdtempSync(join(tmpdir(), "kpm-bench-heap-"));
    const before = process.env.NODE_OPTIONS;
    process.env.NODE_OPTIONS = `${before ?? ""} ${heapSnapshotOptions(dir)}`.trim();
    const timer = setInterval(() => {
        for (const pid of descendantsRss(new Set()).keys())
            if (processName(pid) === "node main.js" && writesHeapSnapshots(pid)) process.kill(pid, "SIGUSR2");
    }, 30_000);
    return {
        stop: () => {
            clearInterval(timer);
            if (before === undefined) delete process.env.NODE_OPTIONS;
            else process.env.NODE_OPTIONS = before;
        },
        figures: () => {
            try {
                const taken = snapshotsIn(dir);
                return {
                    maxMB: Math.round(Math.max(0, ...taken.map((t) => t.bytes)) / 1e5) / 10,
                    snapshots: taken.length,
                };
            } finally {
                rmSync(dir, { recursive: true, force: true });
            }
        },
    };
}

/** Resident memory of this process's descendants that are not `excluded` nor below one (the cluster's daemons), by pid. */
function descendantsRss(excluded: Set<number>): Map<number, number> {
    const tree = processTree();
    const out = new Map<number, number>();
    for (const [pid, [, bytes]] of tree) {
        for (let p: number | undefined = pid; p !== undefined && p > 1; p = tree.get(p)?.[0]) {
            if (excluded.has(p)) break;
            if (p === process.pid) {
                if (pid !== process.pid) out.set(pid, bytes);
                break;
            }
        }
    }
    return out;
}

/** Runs fn while sampling the peak RSS of the processes it starts (the processes already running are left out). */
async function measured<T>(fn: () => Promise<T>): Promise<{ value: T } & PreviewRun> {
    const before = new Set([...processTree().keys()].filter((p) => p !== process.pid));
    let peak = 0;
    const peaks = new Map<number, { name: string; bytes: number }>();
    const timer = setInterval(() => {
        const now = descendantsRss(before);
        let total = 0;
        for (const [pid, bytes] of now) {
            total += bytes;
            const known = peaks.get(pid);
            // a process just forked may not have exec'd yet: name it again until it has
            const seen =
                known && known.name !== "?" && !known.name.startsWith("node ?")
                    ? known
                    : { name: processName(pid), bytes: known?.bytes ?? 0 };
            peaks.set(pid, { name: seen.name, bytes: Math.max(seen.bytes, bytes) });
        }
        peak = Math.max(peak, total);
    }, 100);
    const started = performance.now();
    try {
        const value = await fn();
        const byProcess: Record<string, number> = {};
        for (const { name, bytes } of peaks.values())
            byProcess[name] = Math.max(byProcess[name] ?? 0, Math.round(bytes / 1e6));
        return { value, seconds: (performance.now() - started) / 1000, peakRssMB: Math.round(peak / 1e6), byProcess };
    } finally {
        clearInterval(timer);
    }
}

/**
 * apiserver_request_total summed per verb and resource (and subresource), every label set but the
 * leases', scraped with the cluster's own credentials.
 */
async function apiRequests(kc: k8s.KubeConfig): Promise<Map<string, number>> {
    // leases are the nodes' heartbeats (kwok renews every node's lease about every 10 s): the
    // cluster's own traffic, which would drown the figure; their status heartbeats are counted here
    // and left out of the figure (countedRequests); the rest of the background is subtracted
    return apiRequestTotals(kc, (l) =>
        l.resource === "leases" ? undefined : `${l.verb} ${l.resource}${l.subresource ? `/${l.subresource}` : ""}`,
    );
}

/** after - before, per kind, largest first, the kinds that did not change left out */
function apiDelta(before: Map<string, number>, after: Map<string, number>): [string, number][] {
    return [...after.entries()]
        .map(([k, v]): [string, number] => [k, v - (before.get(k) ?? 0)])
        .filter(([, v]) => v > 0)
        .sort((a, b) => b[1] - a[1]);
}

/** Requests per second the cluster makes on its own (the controllers; the nodes' heartbeats are not counted), over `seconds`. */
async function backgroundRate(kc: k8s.KubeConfig, seconds: number): Promise<number> {
    const before = countedRequests(await apiRequests(kc));
    await new Promise((r) => setTimeout(r, seconds * 1000));
    return (countedRequests(await apiRequests(kc)) - before) / seconds;
}

/** Counts the requests fn causes: the difference of the counter, less the background over the same time. */
/** requests per node moved, by kind, to 0.1 */
function perNode(byKind: [string, number][], nodes: number): Record<string, number> {
    return Object.fromEntries(byKind.map(([k, v]) => [k, nodes ? Math.round((v / nodes) * 10) / 10 : NaN]));
}

/** the kinds of one node's API requests, the largest first (those under 0.1 per node left out) */
function describeKinds(kinds: Record<string, number>): string {
    return Object.entries(kinds)
        .filter(([, v]) => v >= 0.1)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ");
}

async function counted<T>(
    kc: k8s.KubeConfig,
    background: number,
    fn: () => Promise<T>,
): Promise<{ value: T; requests: number; seconds: number; byKind: [string, number][] }> {
    const before = await apiRequests(kc);
    const started = performance.now();
    const value = await fn();
    const seconds = (performance.now() - started) / 1000;
    const after = await apiRequests(kc);
    const requests = Math.max(0, countedRequests(after) - countedRequests(before) - background * seconds);
    return { value, requests, seconds, byKind: apiDelta(before, after) };
}

/** A stack named bench in a fresh project directory (projectDir); `write` may replace the project's files first. */
async function benchStack(prefix: string, write?: (dir: string) => void): Promise<Stack> {
    const { dir, envVars, pulumiCommand } = await projectDir(prefix);
    write?.(dir);
    return LocalWorkspace.createOrSelectStack(
        { stackName: "bench", workDir: dir },
        { workDir: dir, envVars, pulumiCommand },
    );
}

/**
 * Where the stack's rollout steps put their node events: KPM_EVENTS_FILE in its engine's
 * environment, which each step's CLI runs with (rollout --events: components/cli/events.ts), a
 * file of the stack's project directory, emptied first. `read` gives the events the up left.
 */
function rolloutEvents(stack: Stack): { read: () => NodeEvent[] } {
    const path = join(stack.workspace.workDir, "rollout-events.jsonl");
    rmSync(path, { force: true });
    stack.workspace.envVars.KPM_EVENTS_FILE = path;
    return { read: () => (existsSync(path) ? parseEvents(readFileSync(path, "utf8")) : []) };
}

/** The stack of an empty program: the engine's own cost. */
function emptyStack(): Promise<Stack> {
    return benchStack("kpm-bench-empty-", (dir) => {
        writeFileSync(
            join(dir, "Pulumi.yaml"),
            "name: kpm-bench-empty\nruntime:\n  name: nodejs\n  options:\n    typescript: false\nmain: index.js\n",
        );
        writeFileSync(join(dir, "index.js"), "// an empty program: the engine's own cost\n");
    });
}

async function kubeProxyModeStack(state: ClusterState, opts: Options) {
    const stack = await benchStack("kpm-bench-");
    await setKubeconfig(stack, state);
    const real = state.kind === "real";
    await setStackConfig(stack, {
        mode: "nftables",
        nodePortAddresses: ["0.0.0.0/0"],
        pools: [
            { name: "canary", nodeSelector: "pool=canary", maxUnavailable: 1, soak: opts.soak },
            // real nodes: one at a time, so each node's figures are its own
            { name: "workers", nodeSelector: "pool=workers", maxUnavailable: real ? 1 : opts.maxUnavailable },
        ],
        // real nodes: the built-in node checks (the probe pod) through the reference cluster's
        // demo Service; SIMULATED nodes (kwok) have no host for the probe pod: hooks only
        verify: real ? { service: "demo/backend" } : { nodeChecks: false },
    });
    return stack;
}

/** A rollout step's log line and when the bench saw it (--lines: for a person to read; the figures come from the node events). */
interface StepLine {
    t: number;
    /** "pool-<name>" or "finish": which step printed it */
    step: string;
    text: string;
}

function stepName(urn: string | undefined): string | undefined {
    const m = urn ? /::kube-proxy-(pool-[a-z0-9-]+|finish)$/.exec(urn) : null;
    return m?.[1];
}

async function up(
    state: ClusterState,
    kc: k8s.KubeConfig,
    opts: Options,
    background: number,
): Promise<NonNullable<SizeResult["up"]>> {
    const stack = await kubeProxyModeStack(state, opts);
    const rollout = rolloutEvents(stack);
    const started = new Map<string, number>();
    const steps: Record<string, number> = {};
    const lines: StepLine[] = [];
    const onEvent = (e: EngineEvent) => {
        const pre = stepName(e.resourcePreEvent?.metadata.urn);
        if (pre) {
            started.set(pre, performance.now());
            progress(`up: ${pre} started`);
        }
        const done = stepName(e.resOutputsEvent?.metadata.urn);
        if (done && started.has(done)) {
            steps[done] = (performance.now() - started.get(done)!) / 1000;
            progress(`up: ${done} done in ${steps[done].toFixed(1)} s`);
        }
        const said = e.diagnosticEvent && stepName(e.diagnosticEvent.urn);
        if (said) lines.push({ t: performance.now(), step: said, text: e.diagnosticEvent!.message });
    };
    const began = performance.now();
    const from = new Date();
    const heap = opts.heap ? runnerSnapshots() : undefined;
    const r = await counted(kc, background, () => measured(() => stack.up({ onEvent }))).finally(() => heap?.stop());
    const to = new Date();
    if (opts.lines)
        appendFileSync(
            opts.lines,
            lines
                .map(
                    (l) => `${state.nodes.length} ${((l.t - began) / 1000).toFixed(3)} ${l.step} ${l.text.trimEnd()}\n`,
                )
                .join(""),
        );
    const events = rollout.read();
    const outputs = await stack.outputs();
    const plan = outputs.plan?.value as {
        moving: number;
        pools: { name: string; batches: string[]; soakSeconds: number }[];
    };
    const { floorSeconds, batches } = floorOf(events, plan.pools);
    return {
        seconds: r.seconds,
        steps,
        finishSeconds: steps.finish ?? NaN,
        poolsSeconds: Object.entries(steps)
            .filter(([k]) => k.startsWith("pool-"))
            .reduce((t, [, v]) => t + v, 0),
        floorSeconds,
        batches,
        moved: plan.moving,
        apiRequestsPerNode: plan.moving ? r.requests / plan.moving : NaN,
        apiByKindPerNode: perNode(r.byKind, plan.moving),
        ...(state.auditLog ? { apiByClientPerNode: await auditedRequests(state.auditLog, from, to, plan.moving) } : {}),
        // each step runs the CLI as `node -e <watchdog> .../cli/main.js` (components/pulumi/commandStep.ts)
        runnerPeakMB: r.value.byProcess["node main.js"] ?? NaN,
        ...(heap ? { runnerLiveHeap: heap.figures() } : {}),
        ...(state.kind === "real" ? { perNode: nodePhases(events) } : {}),
    };
}

/** The up's requests per client, per node moved, from the cluster's audit log (read once the up is over). */
async function auditedRequests(
    path: string,
    from: Date,
    to: Date,
    nodes: number,
): Promise<ReturnType<typeof perNodeByClient>> {
    // kube-apiserver writes each event when its request completes: let the last ones reach the file
    await new Promise((r) => setTimeout(r, 2000));
    return perNodeByClient(requestsByClient(readFileSync(path, "utf8").split("\n"), from, to), nodes);
}

function kubectl(bin: string, kubeconfig: string, args: string[], input?: string): Promise<string> {
    return new Promise((resolve, reject) => {
        const child = execFile(
            join(bin, "kubectl"),
            ["--kubeconfig", kubeconfig, ...args],
            { maxBuffer: 256 * 1024 * 1024 },
            (err, stdout, stderr) =>
                err ? reject(new Error(`kubectl ${args.join(" ")}: ${stderr.trim() || err.message}`)) : resolve(stdout),
        );
        if (input !== undefined) child.stdin!.end(input);
    });
}

/**
 * The runbook's procedure as a plain script (the peer): edit the ConfigMap's mode, then for
 * each node delete its kube-proxy pod and wait until the DaemonSet's new pod there is Ready.
 * No cordon, no verification.
 */
async function runbook(
    state: ClusterState,
    mode: string,
    restarted?: (node: string, from: number, to: number) => void,
): Promise<number> {
    const k = (args: string[], input?: string) => kubectl(state.bin, state.kubeconfig, args, input);
    const cm = JSON.parse(await k(["get", "configmap", "-n", "kube-system", "kube-proxy", "-o", "json"]));
    cm.data["config.conf"] = cm.data["config.conf"].replace(/^mode: .*$/m, `mode: ${mode}`);
    await k(["replace", "-f", "-"], JSON.stringify(cm));
    const nodes = (await k(["get", "nodes", "-o", "jsonpath={.items[*].metadata.name}"]))
        .split(" ")
        .filter(Boolean)
        .sort(compareNodeNames);
    const started = performance.now();
    for (const [i, node] of nodes.entries()) {
        const podsOn = async () =>
            JSON.parse(
                await k([
                    "get",
                    "pods",
                    "-n",
                    "kube-system",
                    "-l",
                    "k8s-app=kube-proxy",
                    "--field-selector",
                    `spec.nodeName=${node}`,
                    "-o",
                    "json",
                ]),
            ).items as k8s.V1Pod[];
        const from = Date.now();
        const old = (await podsOn())[0]?.metadata?.name;
        if (old) await k(["delete", "pod", "-n", "kube-system", old, "--wait=true"]);
        for (;;) {
            const ready = (await podsOn()).some(
                (p) =>
                    p.metadata?.name !== old &&
                    !p.metadata?.deletionTimestamp &&
                    p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
            );
            if (ready) break;
            await new Promise((r) => setTimeout(r, 500));
        }
        restarted?.(node, from, Date.now());
        if ((i + 1) % 10 === 0 || i + 1 === nodes.length) {
            const elapsed = (performance.now() - started) / 1000;
            progress(
                `peer: ${i + 1}/${nodes.length} node(s), ${((i + 1) / elapsed).toFixed(2)} node/s, ETA ${Math.round(((nodes.length - i - 1) * elapsed) / (i + 1))} s`,
            );
        }
    }
    return nodes.length;
}

/**
 * The preview of the KubeProxyMode program beside an empty program's, time and peak memory:
 * --preview-runs times each, alternating, so a busy spell of the machine falls on both.
 */
async function previewPhase(n: number, state: ClusterState, opts: Options): Promise<SizeResult["preview"]> {
    const said = (label: string, kpm: PreviewRun, empty: PreviewRun) =>
        progress(
            `${n} nodes: ${label}preview ${kpm.seconds.toFixed(1)} s / ${kpm.peakRssMB} MB (empty program ${empty.seconds.toFixed(1)} s / ${empty.peakRssMB} MB)`,
        );
    const emptyRuns: PreviewRun[] = [];
    const kpmRuns: PreviewRun[] = [];
    const [empty, kpm] = [await emptyStack(), await kubeProxyModeStack(state, opts)];
    for (let i = 1; i <= opts.previewRuns; i++) {
        const of = opts.previewRuns > 1 ? ` (${i} of ${opts.previewRuns})` : "";
        progress(`${n} nodes: pulumi preview of an empty program${of}`);
        const emptyRun = await measured(() => empty.preview());
        progress(`${n} nodes: pulumi preview of the KubeProxyMode program${of}`);
        const kpmRun = await measured(() => kpm.preview());
        said("", kpmRun, emptyRun);
        emptyRuns.push(emptyRun);
        kpmRuns.push(kpmRun);
    }
    const r = previewFigures(kpmRuns);
    const e = previewFigures(emptyRuns);
    if (opts.previewRuns > 1) said(`median of ${opts.previewRuns}: `, r, e);
    const each = (f: PreviewFigures) =>
        Object.entries(f.byProcess)
            .sort((a, b) => b[1] - a[1])
            .map(([k, v]) => `${k} ${v}`)
            .join(", ");
    progress(`${n} nodes: peak MB per process: KubeProxyMode: ${each(r)}; empty: ${each(e)}`);
    return { empty: e, kubeProxyMode: r };
}

/** `pulumi up` (ipvs -> nftables) and the runbook as a plain script, each against the background API rate. */
async function upAndPeerPhases(
    n: number,
    state: ClusterState,
    kc: k8s.KubeConfig,
    opts: Options,
    result: SizeResult,
    background: number,
): Promise<void> {
    if (opts.phases.has("up")) {
        progress(`${n} nodes: pulumi up (ipvs -> nftables)`);
        result.up = await up(state, kc, opts, background);
        progress(
            `${n} nodes: up ${result.up.seconds.toFixed(0)} s (pools ${result.up.poolsSeconds.toFixed(0)} s against a floor of ${result.up.floorSeconds.toFixed(0)} s, finish ${result.up.finishSeconds.toFixed(0)} s, the runner's peak ${result.up.runnerPeakMB} MB${result.up.runnerLiveHeap ? `, its live heap at most ${result.up.runnerLiveHeap.maxMB} MB in ${result.up.runnerLiveHeap.snapshots} snapshot(s), which paused it: these times are slowed by them` : ""})`,
        );
        for (const [kind, b] of Object.entries(result.up.batches))
            progress(
                `${n} nodes: ${kind} batches: ${b.count}, ${b.seconds.toFixed(1)} s against their floor of ${b.floorSeconds.toFixed(1)} s (their slowest nodes' own moves)`,
            );
        progress(`${n} nodes: up API requests per node, by kind: ${describeKinds(result.up.apiByKindPerNode)}`);
        for (const c of result.up.apiByClientPerNode ?? [])
            progress(`${n} nodes: up API requests per node from ${c.client}: ${c.perNode} (${describeKinds(c.kinds)})`);
    }
    if (opts.phases.has("peer")) {
        progress(`${n} nodes: the runbook as a plain script (ConfigMap edit, kubectl delete pod node by node)`);
        const r = await counted(kc, background, () => runbook(state, opts.phases.has("up") ? "iptables" : "nftables"));
        result.peer = {
            seconds: r.seconds,
            apiRequestsPerNode: r.requests / r.value,
            apiByKindPerNode: perNode(r.byKind, r.value),
        };
        progress(`${n} nodes: peer API requests per node, by kind: ${describeKinds(result.peer.apiByKindPerNode)}`);
        if (result.up) result.ratio = result.up.seconds / result.peer.seconds;
        progress(`${n} nodes: peer ${r.seconds.toFixed(0)} s`);
    }
}

async function benchSize(n: number, opts: Options, kind: SizeResult["kind"] = "kwok"): Promise<SizeResult> {
    progress(
        `${n} nodes: starting a reference cluster with ${kind === "real" ? "real nodes (network namespaces, the real kube-proxy; ipvs is the SIMULATED stand-in)" : "SIMULATED (kwok) nodes"}, pools canary=1 workers=${n - 1}, on ipvs`,
    );
    const name = `bench-${process.pid}-${n}${kind === "real" ? "-real" : ""}`;
    const upStarted = performance.now();
    let state: ClusterState | undefined;
    try {
        state = opts.cluster
            ? readState(opts.cluster)!
            : await clusterUp({
                  name,
                  pools: [
                      ["canary", 1],
                      ["workers", n - 1],
                  ],
                  nodes: kind,
                  mode: "ipvs",
                  audit: opts.audit,
                  log: (l) => progress(`cluster: ${l}`),
              });
        const result: SizeResult = {
            nodes: n,
            kind: state.kind,
            clusterUpSeconds: (performance.now() - upStarted) / 1000,
        };
        progress(`${n} nodes: cluster up in ${result.clusterUpSeconds.toFixed(0)} s`);
        const kc = new k8s.KubeConfig();
        kc.loadFromFile(state.kubeconfig);
        // first, so a cluster just started has settled before anything is timed
        progress(`${n} nodes: measuring the cluster's background API rate for 15 s`);
        const background = await backgroundRate(kc, 15);
        progress(`${n} nodes: background ${background.toFixed(1)} request(s)/s`);
        if (opts.phases.has("preview")) result.preview = await previewPhase(n, state, opts);
        if (opts.phases.has("up") || opts.phases.has("peer"))
            await upAndPeerPhases(n, state, kc, opts, result, background);
        return result;
    } finally {
        if (opts.cluster) progress(`cluster ${opts.cluster} left running (--cluster)`);
        else if (state) await clusterDown(state.name);
        else await clusterDown(name).catch(() => undefined);
    }
}

/** What the ipvs stand-in means for the workload figures, said beside them. */
export const IPVS_BEFORE_STATE =
    "the ipvs stand-in programs no traffic, so before the move no connection reaches the backend: the long-lived connection is opened only once the new mode routes (then held through the rest of the run, the finish's hand-back included), and the gap is counted from the moment the node's old kube-proxy was stopped to the first connection the new mode routes";

/**
 * Starts the workload client in each node's network namespace (new connections to the ClusterIP
 * and, with `nodePort`, to that NodePort on the node's own address); stop() ends them and returns
 * what each saw.
 */
function startClients(
    state: ClusterState,
    ip: string,
    port: number,
    nodePort?: number,
): { stop: () => Promise<Map<string, ClientRecord>> } {
    const clients = state.network!.nodes.map((n) => {
        const targets = [ip, String(port), ...(nodePort !== undefined ? [n.ip, String(nodePort)] : [])];
        return { node: n.name, client: startWorkloadClient(n.netns, `on ${n.name}`, targets) };
    });
    return {
        async stop() {
            // all stopped first, then each record read
            const records = clients.map((c) => ({ node: c.node, record: c.client.stop() }));
            const out = new Map<string, ClientRecord>();
            for (const c of records) out.set(c.node, await c.record);
            return out;
        },
    };
}

/** Watches the DaemonSets' kube-proxy pods on each node: when each was added and when its deletion was asked (epoch ms, as seen here). */
async function watchKubeProxyPods(
    kc: k8s.KubeConfig,
): Promise<{ events: Map<string, PodEvent[]>; firstStop: (node: string) => number | undefined; abort: () => void }> {
    const events = new Map<string, PodEvent[]>();
    const seen = new Set<string>();
    const ctl = await new k8s.Watch(kc).watch(
        "/api/v1/namespaces/kube-system/pods",
        {},
        (type: string, pod: k8s.V1Pod) => {
            const node = pod.spec?.nodeName;
            const name = pod.metadata?.name ?? "";
            if (!node || !pod.metadata?.ownerReferences?.some((o) => o.kind === "DaemonSet")) return;
            const list = events.get(node) ?? [];
            events.set(node, list);
            const stopping = type === "DELETED" || !!pod.metadata?.deletionTimestamp;
            const key = `${name}/${stopping ? "stop" : "add"}`;
            if (seen.has(key)) return;
            seen.add(key);
            list.push({ t: Date.now(), pod: name, event: stopping ? "stop" : "add" });
        },
        () => undefined,
    );
    return {
        events,
        firstStop: (node) => events.get(node)?.find((e) => e.event === "stop")?.t,
        abort: () => ctl.abort(),
    };
}

type KubeProxyPodWatch = Awaited<ReturnType<typeof watchKubeProxyPods>>;

/** What the up of the workload phase leaves to read: its node events (the first syncs among them) and each step's time, seconds. */
interface UpRecord {
    events: NodeEvent[];
    steps: Record<string, number>;
}

/** The move under test as KubeProxyMode does it: `pulumi up` of a stack over the real-nodes cluster. */
async function kubeProxyModeUp(state: ClusterState, to: ProxyMode, pair: string, record: UpRecord): Promise<void> {
    const stack = await benchStack("kpm-bench-workload-");
    await setKubeconfig(stack, state);
    // real nodes: the built-in node checks run (the probe pod); one node at a time in each pool
    await setStackConfig(stack, {
        mode: to,
        nodePortAddresses: ["0.0.0.0/0"],
        // the tool refuses a pool that neither drains nor accepts the node's unrouted window when
        // that window is long: ipvs -> iptables (kube-proxy stopped for the cleanup) and any move
        // whose estimate at the load passes 15 s (to iptables at 1,000 Services and up,
        // core/syncEstimate.ts). The clients run in the node's own network (no pod to drain), and
        // that gap is what this phase measures: every pair accepts it (the setting only silences
        // the refusal; the rollout runs the same)
        pools: ["canary", "workers"].map((p) => ({
            name: p,
            nodeSelector: `pool=${p}`,
            maxUnavailable: 1,
            allowUnroutedNode: true,
        })),
        // the connection check goes through the same Service the clients use
        verify: { service: "demo/backend" },
    });
    const rollout = rolloutEvents(stack);
    const started = new Map<string, number>();
    // the node events, what the up left of them even when it failed
    await stack
        .up({
            onEvent: (e: EngineEvent) => {
                const pre = stepName(e.resourcePreEvent?.metadata.urn);
                if (pre) started.set(pre, Date.now());
                const done = stepName(e.resOutputsEvent?.metadata.urn);
                if (done) {
                    if (started.has(done)) record.steps[done] = (Date.now() - started.get(done)!) / 1000;
                    progress(`workload ${pair}: ${done} done`);
                }
            },
        })
        .finally(() => (record.events = rollout.read()));
}

/**
 * Samples the kube-proxy processes in each node's network namespace every 500 ms until stop():
 * from /proc their start, resident memory and CPU time, and from their metrics (curl in the
 * node's namespace, only until a process's first sync is seen) the end of their last sync.
 */
function kubeProxySampler(state: ClusterState): {
    settled: (timeoutMs: number, startedAfter?: number) => Promise<number>;
    stop: () => Promise<Map<string, ProxySample[]>>;
} {
    const hz = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    const bootMs = parseBootTime(readFileSync("/proc/stat", "utf8"))! * 1000;
    const byInode = new Map(state.network!.nodes.map((n) => [`net:[${statSync(`/run/netns/${n.netns}`).ino}]`, n]));
    const samples = new Map(state.network!.nodes.map((n) => [n.name, [] as ProxySample[]]));
    const synced = new Set<string>();
    const reading = new Set<string>();
    const pending = new Set<Promise<void>>();
    const metrics = (netns: string) =>
        new Promise<string>((resolve) =>
            execFile(
                "ip",
                ["netns", "exec", netns, "curl", "-s", "-m", "2", "http://127.0.0.1:10249/metrics"],
                { maxBuffer: 16 * 1024 * 1024 },
                (_err, out) => resolve(out ?? ""),
            ),
        );
    const tick = () => {
        for (const entry of readdirSync("/proc")) {
            if (!/^\d+$/.test(entry)) continue;
            let sample: ProxySample;
            let node: { name: string; netns: string } | undefined;
            try {
                node = byInode.get(readlinkSync(`/proc/${entry}/ns/net`));
                if (!node) continue;
                const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
                // the real kube-proxy (not a cleanup run of it), or the SIMULATED ipvs stand-in the
                // node agent runs for an ipvs pod (it answers the same last-sync metric): without
                // it a node on ipvs has no kube-proxy to wait for, and the settle never ends
                if (!/\/(kube-proxy|ipvsStandin\.js)\0/.test(cmdline) || cmdline.includes("--cleanup")) continue;
                const stat = parseProcStat(readFileSync(`/proc/${entry}/stat`, "utf8"));
                const rss = parseVmRss(readFileSync(`/proc/${entry}/status`, "utf8"));
                if (!stat || rss === undefined) continue;
                sample = {
                    t: Date.now(),
                    pid: entry,
                    ...(cmdline.includes("ipvsStandin.js") ? { standin: true } : {}),
                    startedAt: Math.round(bootMs + (stat.startTicks * 1000) / hz),
                    rssBytes: rss,
                    cpuSeconds: stat.cpuTicks / hz,
                };
            } catch {
                continue; // gone between the listing and the read
            }
            const list = samples.get(node.name)!;
            if (synced.has(entry)) {
                list.push(sample);
                continue;
            }
            if (reading.has(node.name)) continue;
            reading.add(node.name);
            const read: Promise<void> = metrics(node.netns).then((text) => {
                const m = parseSyncMetrics(text);
                list.push({ ...sample, ...m });
                if (m.lastSyncAt !== undefined && m.lastSyncAt >= sample.startedAt) synced.add(entry);
                reading.delete(node.name);
                pending.delete(read);
            });
            pending.add(read);
        }
    };
    tick();
    const timer = setInterval(tick, 500);
    /** every node's newest kube-proxy has finished a sync (and, with `after`, started after it: epoch ms) */
    const allSynced = (after = 0) =>
        [...samples.values()].every((list) => {
            const newest = list.reduce<ProxySample | undefined>(
                (a, b) => (a === undefined || b.startedAt > a.startedAt ? b : a),
                undefined,
            );
            return newest !== undefined && newest.startedAt > after && synced.has(newest.pid);
        });
    return {
        /**
         * Waits until every node's kube-proxy has synced (a cluster just started may still be on
         * its first sync) and, with `startedAfter` (epoch ms), is a process started after it:
         * after a procedure, the old kube-proxy, synced long ago, must not pass for the new one
         * (the runbook's pod is Ready before the node's new process has even started). Returns
         * the seconds waited.
         */
        async settled(timeoutMs, startedAfter) {
            const started = Date.now();
            while (!allSynced(startedAfter)) {
                if (Date.now() - started > timeoutMs)
                    throw new Error(`the nodes' kube-proxy did not finish a sync within ${timeoutMs / 1000} s`);
                await new Promise((r) => setTimeout(r, 500));
            }
            return (Date.now() - started) / 1000;
        },
        async stop() {
            clearInterval(timer);
            await Promise.all([...pending]);
            return samples;
        },
    };
}

/** What a procedure under traffic leaves to read, besides run.seconds and run.error. */
interface TrafficRecord {
    records: Map<string, ClientRecord>;
    watch: KubeProxyPodWatch;
    samples: Map<string, ProxySample[]>;
    /** the up's node events and step times (empty for the runbook) */
    up: UpRecord;
    /** the runbook's node restarts (epoch ms; empty for the up) */
    restarts: { node: string; from: number; to: number }[];
}

/**
 * Runs the procedure while the clients run (from every node's kube-proxy synced, 3 s before it, to
 * every node's new kube-proxy synced, 3 s after it) and the nodes' kube-proxy is sampled; a failed procedure is recorded in run.error, the clients are stopped either way.
 */
async function procedureUnderTraffic(
    state: ClusterState,
    kc: k8s.KubeConfig,
    run: WorkloadRun,
    from: ProxyMode,
    to: ProxyMode,
): Promise<TrafficRecord> {
    const svc = await kc.makeApiClient(k8s.CoreV1Api).readNamespacedService({ name: "backend", namespace: "demo" });
    const ip = svc.spec!.clusterIP!;
    const port = svc.spec!.ports![0].port;
    // the reference cluster's backend is a NodePort Service: its NodePort on each node's own address
    const nodePort = svc.spec!.ports![0].nodePort ?? undefined;
    const watch = await watchKubeProxyPods(kc);
    const sampler = kubeProxySampler(state);
    // the old mode settled first: with a Service load, the nodes' kube-proxy may still be on its first sync
    const waited = await sampler.settled(600_000).catch(async (e: Error) => {
        await sampler.stop();
        watch.abort();
        throw e;
    });
    progress(`workload ${run.pair}, ${run.procedure}: every node's kube-proxy synced (waited ${waited.toFixed(1)} s)`);
    run.settleSeconds = Math.round(waited * 10) / 10;
    const clients = startClients(state, ip, port, nodePort);
    const up: UpRecord = { events: [], steps: {} };
    const restarts: TrafficRecord["restarts"] = [];
    let records: Map<string, ClientRecord>;
    let samples: Map<string, ProxySample[]>;
    const started = performance.now();
    let procedureAt = Date.now();
    try {
        await new Promise((r) => setTimeout(r, 3000));
        procedureAt = Date.now();
        if (run.procedure === "KubeProxyMode up") await kubeProxyModeUp(state, to, run.pair, up);
        else await runbook(state, to, (node, t0, t1) => restarts.push({ node, from: t0, to: t1 }));
        run.seconds = (performance.now() - started) / 1000;
        // the runbook ends at the last pod's Ready, which may come before its new kube-proxy has
        // started, let alone synced: the clients run on until every node's kube-proxy is one
        // started since the procedure began and has synced (at most 2 minutes), then 3 s. A
        // process's start is read from /proc against the boot time in whole seconds, so it may
        // read up to 1 s early: the old ones started 3 s and more before the procedure, the
        // threshold is 1.5 s before it
        await sampler
            .settled(120_000, procedureAt - 1500)
            .catch((e: Error) => progress(`workload ${run.pair}: ${e.message}`));
        await new Promise((r) => setTimeout(r, 3000));
    } catch (e) {
        run.seconds = (performance.now() - started) / 1000;
        run.error = (e as Error).message;
        progress(
            `workload ${run.pair}, ${run.procedure}: FAILED: ${
                run.error
                    .split("\n")
                    .filter((l) => /rollout failed|FAILED|error/i.test(l))
                    .slice(0, 6)
                    .join(" / ") || run.error.slice(0, 500)
            }`,
        );
    } finally {
        records = await clients.stop();
        samples = await sampler.stop();
        watch.abort();
    }
    return { records, watch, samples, up, restarts };
}

/**
 * The pools' wall time: under the up each pool step's (the finish apart), under the runbook from
 * the pool's first pod deletion to its last node's new pod Ready.
 */
function workloadPoolSeconds(state: ClusterState, t: TrafficRecord): Record<string, number> {
    if (t.restarts.length) {
        const poolOf = new Map(state.nodes.map((n) => [n.name, n.pool]));
        return poolSeconds(t.restarts.map((r) => ({ pool: poolOf.get(r.node) ?? "?", ...r })));
    }
    return Object.fromEntries(
        Object.entries(t.up.steps).map(([step, s]) => [step.replace(/^pool-/, ""), Math.round(s * 10) / 10]),
    );
}

/** Each node's figures from its client's record, with its kube-proxy pods' events and processes relative to the client's start. */
function workloadNodeFigures(state: ClusterState, t: TrafficRecord, from: ProxyMode): WorkloadRun["nodes"] {
    const { records, watch } = t;
    const syncs = rolloutSyncs(t.up.events);
    const verified = new Map(
        nodePhases(t.up.events)
            .filter((p) => p.kind === "move")
            .map((p) => [p.node, p.checksSeconds]),
    );
    return state.nodes.map((node) => {
        const r = records.get(node.name)!;
        // the pods' events relative to the client's start, for reading the gaps against
        const events = (watch.events.get(node.name) ?? [])
            .filter((e) => e.t >= r.startedAt)
            .map((e) => ({ ...e, t: e.t - r.startedAt }));
        const figures = nodeFigures(
            node.name,
            r,
            from === "ipvs" ? (watch.firstStop(node.name) ?? r.stoppedAt) : undefined,
            from === "ipvs" ? "SIMULATED ipvs before it" : undefined,
        );
        const relative = (gs: Gap[]) => gs.map((g) => ({ ...g, from: g.from - r.startedAt, to: g.to - r.startedAt }));
        figures.gaps = relative(figures.gaps);
        if (figures.nodePort) figures.nodePort.gaps = relative(figures.nodePort.gaps);
        const longest = figures.gaps.find((g) => g.ms === figures.longestGapMs);
        const startToRoutedMs = longest ? startToRouted(longest, events) : undefined;
        const kubeProxy = kubeProxyFigures(proxyProcesses(t.samples.get(node.name) ?? [], r.startedAt));
        const rollout = syncs.get(node.name);
        const verifySeconds = verified.get(node.name);
        return {
            ...figures,
            pool: node.pool,
            ...(startToRoutedMs !== undefined ? { startToRoutedMs } : {}),
            podEvents: events,
            kubeProxy,
            ...(rollout ? { rolloutSync: rollout } : {}),
            ...(verifySeconds !== undefined ? { verifySeconds: Math.round(verifySeconds * 10) / 10 } : {}),
        };
    });
}

/** One mode pair under one procedure, on a fresh real-nodes cluster: the nodes' clients run through the whole procedure. */
async function workloadRun(
    from: ProxyMode,
    to: ProxyMode,
    procedure: Procedure,
    opts: Options,
    k: number,
    services?: number,
): Promise<WorkloadRun> {
    const name = `bench-${process.pid}-w${k}`;
    const pair = `${from} -> ${to}`;
    const run: WorkloadRun = {
        pair,
        procedure,
        seconds: 0,
        nodes: [],
        ...(services !== undefined ? { services, endpointsPerService: opts.endpointsPerService } : {}),
        ...(from === "ipvs" ? { simulated: IPVS_BEFORE_STATE } : {}),
    };
    const load = services !== undefined ? `, ${services} load Services` : "";
    progress(
        `workload ${pair}, ${procedure}: starting a reference cluster of ${opts.workloadNodes} real nodes on ${from}${load}`,
    );
    let state: ClusterState | undefined;
    try {
        state = await clusterUp({
            name,
            pools: [
                ["canary", 1],
                ["workers", opts.workloadNodes - 1],
            ],
            nodes: "real",
            mode: from,
            ...(services !== undefined
                ? { services: { services, endpointsPerService: opts.endpointsPerService } }
                : {}),
            log: (l) => progress(`cluster: ${l}`),
        });
        const kc = new k8s.KubeConfig();
        kc.loadFromFile(state.kubeconfig);
        const traffic = await procedureUnderTraffic(state, kc, run, from, to);
        run.nodes.push(...workloadNodeFigures(state, traffic, from));
        run.poolSeconds = workloadPoolSeconds(state, traffic);
        progress(
            `workload ${pair}${load}, ${procedure}: ${run.nodes.map((n) => `${n.node} gap ${n.longestGapMs} ms (NodePort ${n.nodePort?.longestGapMs ?? "-"} ms), first sync ${n.kubeProxy?.firstSyncSeconds ?? "-"} s, long-lived ${n.longLived}`).join("; ")}`,
        );
        return run;
    } catch (e) {
        // the cluster's start or the old mode's settle failed: this run's row says so, and the
        // bench goes on to the next (the runs before it are not lost)
        run.error = (e as Error).message;
        progress(`workload ${pair}${load}, ${procedure}: FAILED before the procedure: ${run.error.slice(0, 500)}`);
        return run;
    } finally {
        if (state) await clusterDown(state.name);
        else await clusterDown(name).catch(() => undefined);
    }
}

const f = (x: number | undefined, digits = 1) => (x === undefined || Number.isNaN(x) ? "-" : x.toFixed(digits));

export function table(results: SizeResult[]): string {
    const head = [
        "nodes",
        "preview empty s / MB",
        "preview KubeProxyMode s / MB",
        "up s",
        "pools s / floor s",
        "finish s",
        "runner peak MB",
        "API req/node",
        "peer s",
        "peer API req/node",
        "up / peer",
    ];
    const rows = results.map((r) => [
        r.kind === "real" ? `${r.nodes} (real)` : String(r.nodes),
        r.preview ? `${f(r.preview.empty.seconds)} / ${r.preview.empty.peakRssMB}` : "-",
        r.preview ? `${f(r.preview.kubeProxyMode.seconds)} / ${r.preview.kubeProxyMode.peakRssMB}` : "-",
        f(r.up?.seconds, 0),
        r.up ? `${f(r.up.poolsSeconds, 0)} / ${f(r.up.floorSeconds, 0)}` : "-",
        f(r.up?.finishSeconds, 0),
        f(r.up?.runnerPeakMB, 0),
        f(r.up?.apiRequestsPerNode),
        f(r.peer?.seconds, 0),
        f(r.peer?.apiRequestsPerNode),
        r.ratio === undefined ? "-" : `${f(r.ratio, 2)}x`,
    ]);
    return markdownTable(head, rows);
}

/** A Node as kwok's API server returns it (SIMULATED), with the fields the preview reads and the bulk it does not. */
function kwokNode(name: string, pool: string): unknown {
    const time = "2026-12-01T00:00:00Z";
    return {
        apiVersion: "v1",
        kind: "Node",
        metadata: {
            name,
            uid: `uid-${name}`,
            resourceVersion: "1",
            creationTimestamp: time,
            labels: {
                pool,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                type: "kwok",
            },
            annotations: { "kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0" },
        },
        spec: {},
        status: {
            addresses: [{ type: "InternalIP", address: "10.0.0.1" }],
            capacity: { cpu: "32", memory: "256Gi", pods: "110" },
            allocatable: { cpu: "32", memory: "256Gi", pods: "110" },
            conditions: ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"].map((type) => ({
                type,
                status: type === "Ready" ? "True" : "False",
                lastHeartbeatTime: time,
                lastTransitionTime: time,
                reason: type,
                message: type,
            })),
            nodeInfo: {
                architecture: "amd64",
                kernelVersion: "6.8.0-51-generic",
                kubeletVersion: "fake",
                operatingSystem: "linux",
                osImage: "",
                kubeProxyVersion: "",
            },
        },
    };
}

/** The preview's pure work over n synthetic nodes, step by step, in milliseconds. */
function coreFigures(n: number): Record<string, number> {
    const items = [
        kwokNode("canary-1", "canary"),
        ...Array.from({ length: n - 1 }, (_, i) => kwokNode(`workers-${i + 1}`, "workers")),
    ];
    const text = JSON.stringify({ apiVersion: "v1", kind: "NodeList", items });
    const clock = () => performance.now();
    const t0 = clock();
    // the NodeList kwokNode builds just above: its shape is known
    const list = JSON.parse(text) as { items: NodeObject[] };
    const t1 = clock();
    const nodes = list.items.map((item) => ({
        ...nodeFacts(item),
        placement: item.metadata?.labels?.[MARKS.configLabel] ?? null,
    }));
    const t2 = clock();
    const current = parseCurrentConfig(
        readFileSync(join(ROOT, "tests", "fixtures", "kubeadm", "1.37-ipvs", "configmap.yaml"), "utf8"),
    );
    const snapshot: ClusterSnapshot = {
        serverVersion: parseKubeVersion("1.37.2")!,
        current,
        location: "kube-system/kube-proxy config.conf",
        nodes,
        services: [],
    };
    const pools = [
        { name: "canary", nodeSelector: "pool=canary", maxUnavailable: 1 },
        { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 50 },
    ];
    const m = decideMigration(snapshot, { mode: "nftables", nodePortAddresses: ["0.0.0.0/0"] }, pools);
    const t3 = clock();
    const planJson = JSON.stringify(m.plan);
    const t4 = clock();
    return {
        nodes: n,
        nodeListMB: +(text.length / 1e6).toFixed(1),
        parseMs: +(t1 - t0).toFixed(1),
        nodeFactsMs: +(t2 - t1).toFixed(1),
        decideMigrationMs: +(t3 - t2).toFixed(1),
        planJsonMs: +(t4 - t3).toFixed(1),
        planJsonKB: Math.round(planJson.length / 1e3),
        planTextLines: m.planText.split("\n").length,
        findings: m.findings.length,
        rssMB: Math.round(process.memoryUsage().rss / 1e6),
    };
}

/** The workload runs' timeline (scripts/workloadChart.ts) as DIR/workload-timeline.svg; returns its path. */
async function writeTimeline(runs: WorkloadRun[], dir: string): Promise<string> {
    const path = join(dir, "workload-timeline.svg");
    mkdirSync(dir, { recursive: true });
    writeFileSync(path, await renderSvg(timelineSpec(runs)));
    return path;
}

/** The fleet phase's figures as fleet-N.json and its waves as fleet-waves.svg, in --out DIR or docs/performance. */
async function writeFleet(fleet: FleetBenchResult, machine: object, opts: Options): Promise<void> {
    const dir = opts.out ?? join(ROOT, "docs", "performance");
    mkdirSync(dir, { recursive: true });
    const json = join(dir, `fleet-${fleet.clusters}.json`);
    writeFileSync(
        json,
        JSON.stringify({ machine, options: { fleetClusters: opts.fleetClusters }, fleet }, null, 2) + "\n",
    );
    writeFileSync(join(dir, "fleet-waves.svg"), await renderSvg(fleetWavesSpec(fleet.status)));
    progress(`fleet figures written to ${json}, the waves to ${join(dir, "fleet-waves.svg")}`);
}

async function main(): Promise<void> {
    const opts = parseOptions(process.argv.slice(2));
    if (opts.chart !== undefined) {
        const saved = JSON.parse(readFileSync(opts.chart, "utf8")) as { workload: WorkloadRun[] };
        const svg = await writeTimeline(saved.workload, opts.out ?? dirname(opts.chart));
        progress(`timeline of ${opts.chart} written to ${svg}`);
        return;
    }
    if (opts.core !== undefined) {
        process.stdout.write(JSON.stringify(coreFigures(opts.core)) + "\n");
        return;
    }
    toolchain();
    const results: SizeResult[] = [];
    if (["preview", "up", "peer"].some((p) => opts.phases.has(p)))
        for (const n of opts.sizes) results.push(await benchSize(n, opts));
    if (opts.realNodes && ["preview", "up", "peer"].some((p) => opts.phases.has(p)))
        results.push(await benchSize(opts.realNodes, opts, "real"));
    const workload: WorkloadRun[] = [];
    if (opts.phases.has("workload")) {
        let k = 0;
        // no --services: one round without a load, as before
        for (const services of opts.services.length ? opts.services : [undefined])
            for (const [from, to] of opts.pairs)
                for (const procedure of ["KubeProxyMode up", "kubectl runbook"] as Procedure[])
                    workload.push(await workloadRun(from, to, procedure, opts, ++k, services));
    }
    const fleet = opts.phases.has("fleet") ? await fleetBench(opts.fleetClusters, progress) : undefined;
    const machine = {
        date: new Date().toISOString(),
        cpus: (await import("node:os")).cpus().length,
        memoryGB: Math.round((await import("node:os")).totalmem() / 2 ** 30),
    };
    if (fleet) await writeFleet(fleet, machine, opts);
    const json = JSON.stringify(
        { machine, options: { ...opts, phases: [...opts.phases] }, results, workload, ...(fleet ? { fleet } : {}) },
        null,
        2,
    );
    if (opts.out) {
        mkdirSync(opts.out, { recursive: true });
        writeFileSync(join(opts.out, "bench.json"), json + "\n");
        progress(`figures written to ${join(opts.out, "bench.json")}`);
        if (workload.length) progress(`timeline written to ${await writeTimeline(workload, opts.out)}`);
    }
    if (opts.json) process.stdout.write(json + "\n");
    else {
        const perNode = results.flatMap((r) => r.up?.perNode ?? []);
        const tables = [
            ...(results.length ? [table(results)] : []),
            ...(perNode.length ? [`Per node, real nodes (one at a time):\n\n${nodePhasesTable(perNode)}`] : []),
            ...(workload.length ? [workloadTable(workload), scaleTable(workload)] : []),
            ...(fleet ? [fleetReport(fleet)] : []),
        ];
        process.stdout.write(
            `${tables.join("\n\n")}\n(${machine.date}, ${machine.cpus} cores, ${machine.memoryGB} GB)\n`,
        );
    }
}

if (require.main === module) {
    main().catch((e) => {
        process.stderr.write(`bench failed: ${(e as Error).stack ?? e}\n`);
        process.exit(1);
    });
}
