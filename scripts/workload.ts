// The cost of a move to a node's workloads, from what a client on the node saw (pure: no I/O).
// scripts/workloadClient.ts records the series inside the node's network namespace (new
// connections to the backend's ClusterIP and, when given, to its NodePort on the node's own
// address); the bench's `workload` phase turns each series into figures here and prints them
// with workloadTable().
import type { KubeProxyFigures, RolloutSync } from "./kubeProxySamples.js";
import { markdownTable } from "./markdownTable.js";
import { spawn } from "node:child_process";
import { join } from "node:path";

/** One new-connection attempt: when it started (epoch ms) and whether it got the backend's answer in time. */
export interface Attempt {
    t: number;
    ok: boolean;
}

/** What the client on one node saw, from its start to its stop (epoch ms). */
export interface ClientRecord {
    startedAt: number;
    stoppedAt: number;
    /** new connections to the ClusterIP, one every 50 ms, in start order */
    attempts: Attempt[];
    /** new connections to the NodePort on the node's own address, at the same rate (absent: not asked, or a record written before) */
    nodePortAttempts?: Attempt[];
    /** that NodePort's address, "ip:port" */
    nodePortTarget?: string;
    /** the long-lived connection: when it was first opened (null: never), when it closed or failed (null: still open at the stop) */
    stream: {
        openedAt: number | null;
        closedAt: number | null;
        why?: string;
        lastDataAt: number | null;
        longestStallMs: number;
        localAddress?: string;
    };
}

export interface Gap {
    /** epoch ms of the first failed attempt (or of `from`, for a run that started before it) */
    from: number;
    /** epoch ms of the next successful attempt; the stop's time when none came */
    to: number;
    ms: number;
    /** false: the series ended in this gap (new connections never came back) */
    recovered: boolean;
}

/**
 * The times in which new connections failed, in order: each from the first failed attempt of a
 * run of failures to the next successful attempt (to the attempts' resolution, 50 ms); a run
 * still failing at the client's stop ends at `end`, not recovered.
 *
 * `routeFrom` (epoch ms) is for a node whose "before" state carries no traffic (the SIMULATED ipvs
 * stand-in): a run of failures that began before it is counted from `routeFrom` on (the moment
 * the node's old kube-proxy was stopped, from which the new mode has to route), and a run that
 * ended before it is not counted at all. Without it every run counts from its first failure.
 */
export function gaps(attempts: Attempt[], end: number, routeFrom?: number): Gap[] {
    const out: Gap[] = [];
    let runStart: number | undefined;
    const close = (to: number, recovered: boolean) => {
        if (runStart === undefined) return;
        const from = routeFrom !== undefined ? Math.max(runStart, routeFrom) : runStart;
        if (to > from) out.push({ from, to, ms: to - from, recovered });
        runStart = undefined;
    };
    for (const a of attempts) {
        if (!a.ok) {
            if (runStart === undefined) runStart = a.t;
        } else {
            close(a.t, true);
        }
    }
    close(end, false);
    return out;
}

/** The longest of gaps() (the first of equals), or null when no attempt failed in the counted window. */
export function longestGap(attempts: Attempt[], end: number, routeFrom?: number): Gap | null {
    return gaps(attempts, end, routeFrom).reduce<Gap | null>(
        (best, g) => (best === null || g.ms > best.ms ? g : best),
        null,
    );
}

export type Procedure = "KubeProxyMode up" | "kubectl runbook";

/** A kube-proxy pod of a DaemonSet on the node: added, or its deletion asked (`t`: ms from the client's start in a run's figures). */
export interface PodEvent {
    t: number;
    pod: string;
    event: "add" | "stop";
}

/**
 * From the start of the kube-proxy pod that ended a gap (the last one added before the gap ended)
 * to the gap's end: the new kube-proxy's start up to its first sync routing connections, the
 * yardstick a gap is held against (a gap no longer than this is kube-proxy's own start, not the
 * procedure's). Undefined when no pod was added before the gap ended.
 */
export function startToRouted(gap: Pick<Gap, "to">, events: PodEvent[]): number | undefined {
    const added = events.filter((e) => e.event === "add" && e.t <= gap.to).map((e) => e.t);
    return added.length ? gap.to - Math.max(...added) : undefined;
}

/** New connections to one address (the ClusterIP, or the NodePort) through a run. */
export interface ConnectionFigures {
    attempts: number;
    failed: number;
    /** every gap (epoch ms here; ms from the client's start in the bench's output) */
    gaps: Gap[];
    /** longest gap in ms (0: none), and whether new connections came back before the client stopped */
    longestGapMs: number;
    recovered: boolean;
}

/** The figures of one series of attempts; `routeFrom`: see longestGap. */
export function connectionFigures(attempts: Attempt[], end: number, routeFrom?: number): ConnectionFigures {
    const gap = longestGap(attempts, end, routeFrom);
    return {
        attempts: attempts.length,
        failed: attempts.filter((a) => !a.ok).length,
        gaps: gaps(attempts, end, routeFrom),
        longestGapMs: gap?.ms ?? 0,
        recovered: gap?.recovered ?? true,
    };
}

/** Figures of one node under one procedure and mode pair (the ClusterIP's at the top level, as before the NodePort's were added). */
export interface NodeWorkloadFigures {
    node: string;
    /** its pool, for its pool's wall time */
    pool?: string;
    attempts: number;
    failed: number;
    /** every gap (epoch ms here; ms from the client's start in the bench's output, as podEvents) */
    gaps: Gap[];
    /** longest gap in ms (0: none), and whether new connections came back before the client stopped */
    longestGapMs: number;
    recovered: boolean;
    /** new connections to the NodePort on the node's own address (`target`, ip:port); absent in figures from before they were measured */
    nodePort?: ConnectionFigures & { target?: string };
    /** "survived" | "broke: <why>" | "not held: <why>" */
    longLived: string;
    /** longest time without data on the long-lived connection while it was open (the backend writes every 100 ms) */
    longestStallMs: number | null;
    /** the long-lived connection's source address (the node's own, or an address kube-ipvs0 holds) */
    localAddress?: string;
    /** startToRouted() of the longest gap: the new kube-proxy's pod added until new connections worked again */
    startToRoutedMs?: number;
    /** the node's kube-proxy pods during the run (the bench's --json, to read the gaps against) */
    podEvents?: PodEvent[];
    /** the node's kube-proxy processes, sampled from /proc and their metrics (scripts/kubeProxySamples.ts) */
    kubeProxy?: KubeProxyFigures;
    /** under the up: what the rollout's log said of the node's first syncs */
    rolloutSync?: RolloutSync;
    /** under the up: the node's verification, its new kube-proxy running to released (the first-sync wait and the checks), seconds */
    verifySeconds?: number;
}

/** Without data for longer than this at the stop, the long-lived connection is dead though open (the backend writes every 100 ms). */
export const STALLED_AFTER_MS = 1000;

/** A node's figures from its client's record. `routeFrom`: see longestGap; `unroutableBefore` says why the long-lived connection could not be opened before the move. */
export function nodeFigures(
    node: string,
    r: ClientRecord,
    routeFrom?: number,
    unroutableBefore?: string,
): NodeWorkloadFigures {
    const clusterIp = connectionFigures(r.attempts, r.stoppedAt, routeFrom);
    let longLived: string;
    const s = r.stream;
    if (s.openedAt === null) longLived = `not held: never opened${s.why ? ` (${s.why})` : ""}`;
    else if (s.closedAt !== null)
        longLived = `broke after ${((s.closedAt - s.openedAt) / 1000).toFixed(1)} s${s.why ? `: ${s.why}` : ""}`;
    // open but silent: the backend writes every 100 ms, so a second without data is a dead connection
    else if (s.lastDataAt !== null && r.stoppedAt - s.lastDataAt > STALLED_AFTER_MS)
        longLived = `stalled: open but no data for the last ${((r.stoppedAt - s.lastDataAt) / 1000).toFixed(1)} s (held from ${((s.openedAt - r.startedAt) / 1000).toFixed(0)} s on)`;
    else if (unroutableBefore && s.openedAt > r.startedAt + 1000)
        longLived = `survived from ${((s.openedAt - r.startedAt) / 1000).toFixed(0)} s on (${unroutableBefore})`;
    else longLived = "survived";
    return {
        node,
        ...clusterIp,
        ...(r.nodePortAttempts
            ? {
                  nodePort: {
                      ...(r.nodePortTarget ? { target: r.nodePortTarget } : {}),
                      ...connectionFigures(r.nodePortAttempts, r.stoppedAt, routeFrom),
                  },
              }
            : {}),
        longLived,
        longestStallMs: s.openedAt === null ? null : s.longestStallMs,
        ...(s.localAddress ? { localAddress: s.localAddress } : {}),
    };
}

export interface WorkloadRun {
    /** e.g. "iptables -> nftables" */
    pair: string;
    procedure: Procedure;
    /** what in this run is SIMULATED, said beside its figures */
    simulated?: string;
    seconds: number;
    nodes: NodeWorkloadFigures[];
    error?: string;
    /** the load Services seeded before the nodes joined (--services), and their endpoints each */
    services?: number;
    endpointsPerService?: number;
    /** how long the bench waited, before the clients started, for every node's kube-proxy (the old mode) to finish a sync */
    settleSeconds?: number;
    /** each pool's wall time, seconds: under the up its step's (and the finish's, as "finish"), under the runbook its nodes' restarts */
    poolSeconds?: Record<string, number>;
}

/** A longest gap in ms, "(not recovered)" when the series ended in it. */
const gapText = (c: Pick<ConnectionFigures, "longestGapMs" | "recovered">) =>
    c.longestGapMs === 0 ? "0" : `${c.longestGapMs}${c.recovered ? "" : " (not recovered)"}`;

/** One markdown table: a row per run and node. */
export function workloadTable(runs: WorkloadRun[]): string {
    const head = [
        "mode pair",
        "procedure",
        "node",
        "ClusterIP new conns (failed)",
        "gaps",
        "ClusterIP longest gap ms",
        "its kube-proxy's start to routed ms",
        "NodePort new conns (failed)",
        "NodePort longest gap ms",
        "long-lived connection",
        "longest stall ms",
        "run s",
    ];
    const rows: string[][] = [];
    for (const r of runs) {
        const pair = r.simulated ? `${r.pair} (SIMULATED before-state)` : r.pair;
        if (r.error)
            rows.push([
                pair,
                r.procedure,
                "-",
                "-",
                "-",
                "-",
                "-",
                "-",
                "-",
                `run failed: ${r.error.split("\n")[0]}`,
                "-",
                r.seconds.toFixed(0),
            ]);
        for (const n of r.nodes) {
            rows.push([
                pair,
                r.procedure,
                n.node,
                `${n.attempts} (${n.failed})`,
                String(n.gaps.length),
                gapText(n),
                n.startToRoutedMs === undefined ? "-" : String(n.startToRoutedMs),
                n.nodePort ? `${n.nodePort.attempts} (${n.nodePort.failed})` : "-",
                n.nodePort ? gapText(n.nodePort) : "-",
                n.longLived,
                n.longestStallMs === null ? "-" : String(n.longestStallMs),
                r.seconds.toFixed(0),
            ]);
        }
    }
    const notes = [...new Set(runs.filter((r) => r.simulated).map((r) => `${r.pair}: ${r.simulated}`))];
    const table = markdownTable(head, rows);
    return notes.length ? `${table}\n\nSIMULATED: ${notes.join("\n")}` : table;
}

const num = (x: number | undefined, digits = 1) => (x === undefined ? "-" : x.toFixed(digits));

/**
 * The production-shape table: a row per run and node with the load's size, the longest gaps (ClusterIP, NodePort), the
 * old mode's first full sync (when the bench saw it: on the cluster it just started), the new mode's (from kube-proxy's metrics, and under the up also the rollout's log),
 * kube-proxy's memory and CPU time in the old mode and the new, the node's verification (up
 * only) and its pool's wall time.
 */
export function scaleTable(runs: WorkloadRun[]): string {
    const head = [
        "Services",
        "mode pair",
        "procedure",
        "node",
        "ClusterIP longest gap ms",
        "NodePort longest gap ms",
        "old mode's first full sync s",
        "first full sync s (metrics)",
        "first sync s (rollout log)",
        "CPU s to first sync",
        "old kube-proxy MB / CPU s",
        "new kube-proxy MB / CPU s",
        "verification s",
        "pool s",
    ];
    const rows: string[][] = [];
    for (const r of runs) {
        const services = r.services === undefined ? "0" : String(r.services);
        const pair = r.simulated ? `${r.pair} (SIMULATED before-state)` : r.pair;
        if (r.error)
            rows.push([services, pair, r.procedure, "-", ...Array(9).fill("-"), `failed: ${r.error.split("\n")[0]}`]);
        for (const n of r.nodes) {
            const k = n.kubeProxy;
            const use = (u: { rssMB: number; cpuSeconds: number } | undefined) =>
                u ? `${u.rssMB.toFixed(0)} / ${u.cpuSeconds.toFixed(1)}` : "-";
            const pool = n.pool ?? n.node.replace(/-\d+$/, "");
            rows.push([
                services,
                pair,
                r.procedure,
                n.node,
                gapText(n),
                n.nodePort ? gapText(n.nodePort) : "-",
                num(k?.oldFirstSyncSeconds, 2),
                num(k?.firstSyncSeconds, 2),
                num(n.rolloutSync?.moveFirstSyncSeconds, 0),
                num(k?.cpuToFirstSyncSeconds, 2),
                use(k?.before),
                use(k?.after),
                num(n.verifySeconds),
                num(r.poolSeconds?.[pool]),
            ]);
        }
    }
    return markdownTable(head, rows);
}

/**
 * Runs the workload client (workloadClient.ts) in a network namespace against `targets` (host and
 * port pairs: the Service, then optionally a NodePort); stop() ends it and returns what it saw.
 */
export function startWorkloadClient(
    netns: string,
    who: string,
    targets: string[],
): { stop: () => Promise<ClientRecord> } {
    const child = spawn(
        "ip",
        ["netns", "exec", netns, process.execPath, join(__dirname, "workloadClient.js"), ...targets],
        {
            stdio: ["ignore", "pipe", "pipe"],
        },
    );
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    const exited = new Promise<ClientRecord>((resolve, reject) =>
        child.on("exit", (code) => {
            try {
                resolve(JSON.parse(out) as ClientRecord);
            } catch {
                reject(new Error(`the workload client ${who} exited (${code}) without its record: ${err.trim()}`));
            }
        }),
    );
    return {
        stop: () => {
            child.kill("SIGTERM");
            return exited;
        },
    };
}
