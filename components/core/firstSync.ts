// A node's first full sync in its new mode: how long verification may wait for it (from the
// node's own old-mode sync), and whether kube-proxy is getting there, judged from samples of its
// /proxyMode, its sync metrics and its CPU time. Pure.
import { formatDuration } from "./duration.js";
import type { ProxyMode } from "./types.js";

/**
 * The documented defaults (docs/performance.md has the measurements behind them): the deadline is
 * `factor` times the old mode's mean full sync, at least `minSeconds`; kube-proxy using no CPU for
 * `stallSeconds` before its first sync is stalled.
 */
export const FIRST_SYNC_DEFAULTS = { factor: 20, minSeconds: 120, stallSeconds: 60 } as const;

/** The mean full-sync duration of a node's kube-proxy, read from its metrics before the move. */
export interface SyncBaseline {
    /** seconds; undefined when kube-proxy reported no sync */
    seconds?: number;
    /** which histogram it came from: full syncs (iptables, nftables) or every sync (ipvs has no other) */
    metric?: "full" | "all";
}

const FULL = "kubeproxy_sync_full_proxy_rules_duration_seconds";
const ALL = "kubeproxy_sync_proxy_rules_duration_seconds";

/** The largest per-family mean of one histogram (name_sum / name_count over the same labels). */
function meanOf(metrics: Record<string, number>, name: string): number | undefined {
    const means = Object.entries(metrics)
        .filter(([k]) => k.split("{")[0] === `${name}_count`)
        .map(([k, count]) => ({ count, sum: metrics[`${name}_sum${k.slice(`${name}_count`.length)}`] }))
        .filter(({ count, sum }) => count > 0 && Number.isFinite(sum))
        .map(({ count, sum }) => sum / count);
    return means.length ? Math.max(...means) : undefined;
}

/** The node's old-mode sync from its metrics (name{labels} -> value): full syncs when reported, else every sync. */
export function syncBaseline(metrics: Record<string, number>): SyncBaseline {
    const full = meanOf(metrics, FULL);
    if (full !== undefined) return { seconds: full, metric: "full" };
    const all = meanOf(metrics, ALL);
    return all !== undefined ? { seconds: all, metric: "all" } : {};
}

/** How long a node's first sync may take, and how long kube-proxy may sit idle before it. */
export interface FirstSyncLimits {
    deadlineSeconds: number;
    stallSeconds: number;
    /** the deadline's reason, in words */
    why: string;
}

/** The first-sync settings: the pool's override (seconds) wins over factor x baseline, floored at minSeconds. */
export interface FirstSyncSettings {
    factor: number;
    minSeconds: number;
    stallSeconds: number;
    /** the pool's firstSyncTimeout, in seconds */
    overrideSeconds?: number;
    /** how much slower the new mode syncs than the old (at least 1), and why: the baseline is the old mode's */
    slower?: { by: number; why: string };
}

/** The deadline of one node's first sync, from its baseline and the settings. */
export function firstSyncLimits(baseline: SyncBaseline, s: FirstSyncSettings): FirstSyncLimits {
    const stallSeconds = s.stallSeconds;
    if (s.overrideSeconds !== undefined)
        return {
            deadlineSeconds: s.overrideSeconds,
            stallSeconds,
            why: `the pool's firstSyncTimeout ${formatDuration(s.overrideSeconds)}`,
        };
    if (baseline.seconds === undefined)
        return {
            deadlineSeconds: s.minSeconds,
            stallSeconds,
            why: `the floor ${formatDuration(s.minSeconds)}: the old mode reported no sync duration`,
        };
    const by = s.slower && s.slower.by > 1 ? s.slower : undefined;
    const scaled = Math.ceil(s.factor * baseline.seconds * (by?.by ?? 1));
    const what =
        `${s.factor} x the old mode's mean ${baseline.metric === "full" ? "full " : ""}sync of ${baseline.seconds.toFixed(2)}s` +
        (by ? ` x ${by.by.toFixed(2)} (${by.why})` : "");
    return scaled > s.minSeconds
        ? { deadlineSeconds: scaled, stallSeconds, why: what }
        : { deadlineSeconds: s.minSeconds, stallSeconds, why: `the floor ${formatDuration(s.minSeconds)} (${what})` };
}

/** One sample of the node's kube-proxy, as the probe's await-sync action prints it. */
export interface SyncSample {
    /** the node's clock, seconds since the epoch */
    t: number;
    /** what /proxyMode answered; undefined: no answer */
    mode?: string;
    /** the IP families with a last-sync timestamp: each has finished a sync */
    synced: string[];
    /** CPU ticks of kube-proxy and its child processes; undefined: its process cannot be found or read */
    cpu?: number;
    /** kube-proxy's process ids in the node's network namespace (empty: none found, or none readable) */
    pids: string[];
}

const SAMPLE = /^sample (\d+) mode=(\S+) synced=(\S+) cpu=(\S+) pids=(\S+)$/;

/** A sample line (`sample <t> mode=<m|-> synced=<IPv4,..|-> cpu=<ticks|-> pids=<p,..|->`), or undefined for any other line. */
export function parseSyncSample(line: string): SyncSample | undefined {
    const m = SAMPLE.exec(line.trim());
    if (!m) return undefined;
    const list = (v: string) => (v === "-" ? [] : v.split(",").filter(Boolean));
    const cpu = m[4] === "-" ? undefined : Number(m[4]);
    return {
        t: Number(m[1]),
        mode: m[2] === "-" ? undefined : m[2],
        synced: list(m[3]),
        cpu: cpu !== undefined && Number.isFinite(cpu) ? cpu : undefined,
        pids: list(m[5]),
    };
}

/** Where a node's first sync stands after some samples. */
export type FirstSyncVerdict =
    | { kind: "synced"; seconds: number }
    | { kind: "waiting"; seconds: number; busy?: boolean }
    | { kind: "failed"; seconds: number; detail: string; check: "mode" | "first-sync" };

/**
 * Judges the samples so far against the limits: synced once /proxyMode answers `mode` and a
 * family reports a finished sync; failed when it synced in another mode, when kube-proxy's process went away or was replaced (a
 * crash), used no CPU for `stallSeconds` before syncing (a stall; only where its CPU can be read),
 * or the deadline passed; waiting otherwise, `busy` when its CPU grew since the last sample.
 */
export function judgeFirstSync(samples: SyncSample[], mode: ProxyMode, limits: FirstSyncLimits): FirstSyncVerdict {
    const last = samples.at(-1);
    if (!last) return { kind: "waiting", seconds: 0 };
    const seconds = last.t - samples[0].t;
    if (last.synced.length > 0 && last.mode !== undefined)
        return last.mode === mode
            ? { kind: "synced", seconds }
            : { kind: "failed", check: "mode", seconds, detail: `/proxyMode says ${last.mode}, expected ${mode}` };
    // gone when none of the processes first seen is left: a pid seen beside them (a child between
    // its fork and its exec still carries kube-proxy's name) is not a restart
    const seen = samples.find((s) => s.pids.length > 0);
    if (seen && !seen.pids.some((p) => last.pids.includes(p)))
        return {
            kind: "failed",
            check: "first-sync",
            seconds,
            detail: last.pids.length
                ? `kube-proxy restarted before its first sync (process ${seen.pids.join(",")}, now ${last.pids.join(",")})`
                : `kube-proxy's process ${seen.pids.join(",")} exited before its first sync`,
        };
    const state = last.mode
        ? `/proxyMode says ${last.mode}${last.mode === mode ? "" : `, expected ${mode}`}, no sync finished`
        : "/proxyMode not answering yet";
    if (last.cpu !== undefined) {
        const since = lastProgress(samples);
        if (last.t - since >= limits.stallSeconds)
            return {
                kind: "failed",
                check: "first-sync",
                seconds,
                detail: `kube-proxy stalled before its first sync: no CPU used for ${last.t - since}s (limit ${limits.stallSeconds}s; ${state})`,
            };
    }
    if (seconds >= limits.deadlineSeconds)
        return {
            kind: "failed",
            check: "first-sync",
            seconds,
            detail: `no first sync within ${formatDuration(limits.deadlineSeconds)} (${limits.why}; ${state}${last.cpu === undefined ? "; its CPU time could not be read" : ", still busy"})`,
        };
    const prev = samples.at(-2);
    const busy = last.cpu === undefined || prev?.cpu === undefined ? undefined : last.cpu > prev.cpu;
    return { kind: "waiting", seconds, busy };
}

/** The time of the last sample whose CPU grew over the one before (the first sample's time if none did). */
function lastProgress(samples: SyncSample[]): number {
    for (let i = samples.length - 1; i > 0; i--) {
        const [a, b] = [samples[i - 1].cpu, samples[i].cpu];
        if (a !== undefined && b !== undefined && b > a) return samples[i].t;
    }
    return samples[0].t;
}

/** The full-sync histogram's running totals on one node (summed over its families). */
export interface FullSyncTotals {
    sum: number;
    count: number;
}

/** The full-sync totals from a node's metrics (name{labels} -> value); undefined when it reports none. */
export function fullSyncTotals(metrics: Record<string, number>): FullSyncTotals | undefined {
    const sum = Object.entries(metrics)
        .filter(([k]) => k.split("{")[0] === `${FULL}_sum`)
        .reduce((a, [, v]) => a + v, 0);
    const counts = Object.entries(metrics).filter(([k]) => k.split("{")[0] === `${FULL}_count`);
    if (counts.length === 0) return undefined;
    return { sum, count: counts.reduce((a, [, v]) => a + v, 0) };
}

/**
 * A node whose full syncs during a soak took longer on average than `boundSeconds` (from the
 * totals at its start and end: only the syncs in between count), in words; undefined when they
 * did not, or when none ran or the process restarted (its totals went back: the pod check names
 * a restart).
 */
export function slowSyncProblem(
    start: FullSyncTotals | undefined,
    end: FullSyncTotals | undefined,
    boundSeconds: number,
): string | undefined {
    if (!start || !end || end.count <= start.count || end.sum < start.sum) return undefined;
    const mean = (end.sum - start.sum) / (end.count - start.count);
    return mean > boundSeconds
        ? `full syncs during the soak took ${mean.toFixed(1)}s on average (${end.count - start.count} of them), more than ${formatDuration(boundSeconds)} (verify.firstSyncMin)`
        : undefined;
}

/** What the rollout measured of a node's kube-proxy in one mode, in seconds. */
export interface ModeSync {
    /** its mean sync while it ran in the mode (SyncBaseline: full syncs, or every sync for ipvs) */
    mean?: number;
    metric?: "full" | "all";
    /** its first sync after a restart into the mode, from its pod running (start-up cleanup included) */
    first?: number;
}

/** A node's measured syncs by mode (MARKS.syncAnnotation): kept for later previews and resumed moves. */
export type NodeSyncs = Partial<Record<ProxyMode, ModeSync>>;

const MODES: readonly ProxyMode[] = ["iptables", "ipvs", "nftables"];
const secondsOf = (v: unknown): number | undefined =>
    typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : undefined;

/** The node's measured syncs from its annotation; what is not a measurement (someone's edit) is left out. */
export function parseNodeSyncs(text: string | undefined): NodeSyncs | undefined {
    if (!text) return undefined;
    let raw: unknown;
    try {
        raw = JSON.parse(text);
    } catch {
        return undefined;
    }
    if (!raw || typeof raw !== "object") return undefined;
    const out: NodeSyncs = {};
    for (const mode of MODES) {
        const m = (raw as Record<string, unknown>)[mode] as Record<string, unknown> | undefined;
        if (!m || typeof m !== "object") continue;
        const mean = secondsOf(m.mean);
        const first = secondsOf(m.first);
        const metric = m.metric === "full" || m.metric === "all" ? m.metric : undefined;
        const sync: ModeSync = {
            ...(mean !== undefined ? { mean, ...(metric ? { metric } : {}) } : {}),
            ...(first !== undefined ? { first } : {}),
        };
        if (Object.keys(sync).length) out[mode] = sync;
    }
    return Object.keys(out).length ? out : undefined;
}

/** `syncs` with what was measured in `mode` added (a newer figure replaces an older one), rounded to 10 ms. */
export function withSync(syncs: NodeSyncs | undefined, mode: ProxyMode, measured: ModeSync): NodeSyncs {
    const round = (v: number | undefined) => (v === undefined ? undefined : Math.round(v * 100) / 100);
    const next: ModeSync = { ...syncs?.[mode] };
    if (measured.mean !== undefined) {
        next.mean = round(measured.mean);
        if (measured.metric) next.metric = measured.metric;
    }
    if (measured.first !== undefined) next.first = round(measured.first);
    return { ...syncs, [mode]: next };
}

/** The baseline a node's recorded syncs give for `mode` (a move resumed past its restart cannot read it live). */
export function recordedBaseline(syncs: NodeSyncs | undefined, mode: ProxyMode): SyncBaseline {
    const m = syncs?.[mode];
    return m?.mean !== undefined ? { seconds: m.mean, metric: m.metric ?? "full" } : {};
}
