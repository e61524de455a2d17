// A node's kube-proxy processes through a move, from samples of /proc and of its metrics (pure:
// no I/O). The bench's workload phase samples every node's kube-proxy while the clients run
// (scripts/bench.ts: kubeProxySampler) and reads here, per node: each process's first full sync
// (its start to the end of its first sync), its memory and CPU time, and the rollout's own
// first-sync figures (its "first sync" node events, components/rollout/events.ts) to set beside
// them. No log line is read.
import { fullSyncTotals } from "../components/core/firstSync.js";
import { metricValues, parseMetrics } from "../components/core/probe.js";
import type { NodeEvent } from "../components/rollout/events.js";

/** What /proc/<pid>/stat says of a process: its start (clock ticks after boot) and CPU time (ticks). */
export interface ProcStat {
    startTicks: number;
    cpuTicks: number;
}

/** Reads /proc/<pid>/stat: utime + stime (fields 14, 15) and starttime (field 22), after the command's closing parenthesis. */
export function parseProcStat(text: string): ProcStat | undefined {
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    // fields[0] is field 3 (state): field n is fields[n - 3]
    const [utime, stime, start] = [fields[11], fields[12], fields[19]].map(Number);
    if (![utime, stime, start].every(Number.isFinite)) return undefined;
    return { startTicks: start, cpuTicks: utime + stime };
}

/** VmRSS of /proc/<pid>/status, in bytes (undefined: not there, e.g. a zombie). */
export function parseVmRss(text: string): number | undefined {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(text);
    return m ? Number(m[1]) * 1024 : undefined;
}

/** Boot time (epoch seconds) from /proc/stat's btime line. */
export function parseBootTime(text: string): number | undefined {
    const m = /^btime (\d+)$/m.exec(text);
    return m ? Number(m[1]) : undefined;
}

/**
 * From kube-proxy's /metrics text: the end of its last sync (epoch ms; the latest over the IP
 * families of kubeproxy_sync_proxy_rules_last_timestamp_seconds, undefined before any sync) and
 * how many full syncs it made and their summed duration (kubeproxy_sync_full_proxy_rules_duration_seconds;
 * iptables and nftables report it, the SIMULATED ipvs stand-in does not). The text is read and
 * the histogram summed by the product's own functions (core/probe.ts, core/firstSync.ts), the
 * ones the rollout reads a node's metrics with.
 */
export function parseSyncMetrics(text: string): { lastSyncAt?: number; fullCount?: number; fullSumSeconds?: number } {
    const metrics = parseMetrics(text.split("\n"));
    const last = metricValues(metrics, "kubeproxy_sync_proxy_rules_last_timestamp_seconds").filter(
        (v) => Number.isFinite(v) && v > 0,
    );
    const full = fullSyncTotals(metrics);
    return {
        ...(last.length ? { lastSyncAt: Math.round(Math.max(...last) * 1000) } : {}),
        ...(full ? { fullCount: full.count, fullSumSeconds: full.sum } : {}),
    };
}

/** One sample of one kube-proxy process on a node (times epoch ms). */
export interface ProxySample {
    t: number;
    pid: string;
    /** the process's start */
    startedAt: number;
    rssBytes: number;
    cpuSeconds: number;
    /** the SIMULATED ipvs stand-in, not a real kube-proxy */
    standin?: boolean;
    /** from its metrics, read until its first sync is seen: the end of its last sync, its full syncs */
    lastSyncAt?: number;
    fullCount?: number;
    fullSumSeconds?: number;
}

/** One kube-proxy process of a node, as the samples saw it (times in ms from `origin`, the client's start). */
export interface ProxyProcess {
    pid: string;
    startedAt: number;
    /** the SIMULATED ipvs stand-in, not a real kube-proxy */
    standin?: true;
    /** the end of its first sync, when a sample saw it */
    firstSyncAt?: number;
    /** its start to the end of its first sync, in seconds: kube-proxy's start-up and its first full sync */
    firstSyncSeconds?: number;
    /** the first full sync's own duration (kubeproxy_sync_full_proxy_rules_duration_seconds), when read while it was the only one */
    firstFullSyncRulesSeconds?: number;
    /** CPU seconds it had used when its first sync was seen (its start-up and first sync, to the sample's resolution) */
    cpuAtFirstSyncSeconds?: number;
    /** its last sample: memory and CPU time then, and when */
    lastSampleAt: number;
    rssMB: number;
    cpuSeconds: number;
    peakRssMB: number;
}

const mb = (bytes: number) => Math.round(bytes / 1e5) / 10;
const seconds2 = (ms: number) => Math.round(ms / 10) / 100;

/**
 * Each process in the order it started. A process started after `origin`, or first seen before
 * it had synced, has its first sync: the lastSyncAt of the first sample that has one, if that
 * sync ended after the process started (a sample's metrics are read
 * within a second of it, so a second sync in between would make it late by at most that).
 */
export function proxyProcesses(samples: readonly ProxySample[], origin: number): ProxyProcess[] {
    const byPid = new Map<string, ProxySample[]>();
    for (const s of [...samples].sort((a, b) => a.t - b.t)) {
        const list = byPid.get(s.pid) ?? [];
        list.push(s);
        byPid.set(s.pid, list);
    }
    return [...byPid.entries()]
        .map(([pid, list]): ProxyProcess => {
            const last = list[list.length - 1];
            const synced = list.find((s) => s.lastSyncAt !== undefined && s.lastSyncAt >= s.startedAt);
            const p: ProxyProcess = {
                pid,
                startedAt: last.startedAt - origin,
                lastSampleAt: last.t - origin,
                rssMB: mb(last.rssBytes),
                cpuSeconds: Math.round(last.cpuSeconds * 100) / 100,
                peakRssMB: mb(Math.max(...list.map((s) => s.rssBytes))),
                ...(list.some((s) => s.standin) ? { standin: true as const } : {}),
            };
            // known when the process started after the origin, or was seen before its first sync (the
            // old mode's, on a cluster just started); otherwise its last sync is not its first
            const seenUnsynced = !(list[0].lastSyncAt !== undefined && list[0].lastSyncAt >= list[0].startedAt);
            if (synced && (last.startedAt > origin || seenUnsynced)) {
                p.firstSyncAt = synced.lastSyncAt! - origin;
                p.firstSyncSeconds = seconds2(synced.lastSyncAt! - synced.startedAt);
                p.cpuAtFirstSyncSeconds = Math.round(synced.cpuSeconds * 100) / 100;
                if (synced.fullCount === 1 && synced.fullSumSeconds !== undefined)
                    p.firstFullSyncRulesSeconds = Math.round(synced.fullSumSeconds * 1000) / 1000;
            }
            return p;
        })
        .sort((a, b) => a.startedAt - b.startedAt);
}

/** Memory and CPU time of one kube-proxy (its last sample). */
export interface ProxyUse {
    rssMB: number;
    cpuSeconds: number;
    /** how long it had run at that sample, in seconds (its CPU time is over that) */
    ageSeconds: number;
}

/** A node's kube-proxy in the old mode and in the new one, and the new mode's first full sync. */
export interface KubeProxyFigures {
    /** the kube-proxy running when the samples began: the old mode */
    before?: ProxyUse;
    /** the old mode's first full sync (its start to the end of its first sync), when the samples saw it (a cluster just started) */
    oldFirstSyncSeconds?: number;
    /** the kube-proxy running at the end: the new mode */
    after?: ProxyUse;
    /** the first kube-proxy started after the first sample that synced (the new mode's): its start to its first sync, seconds */
    firstSyncSeconds?: number;
    /** that sync's own duration, from kube-proxy's histogram */
    firstFullSyncRulesSeconds?: number;
    /** CPU seconds that kube-proxy had used when its first sync was seen */
    cpuToFirstSyncSeconds?: number;
    processes: ProxyProcess[];
}

const use = (p: ProxyProcess): ProxyUse => ({
    rssMB: p.rssMB,
    cpuSeconds: p.cpuSeconds,
    ageSeconds: seconds2(p.lastSampleAt - p.startedAt),
});

/**
 * The figures from a node's processes: the one running from the start is the old mode's, the
 * first started later the new mode's. A SIMULATED ipvs stand-in started later is the old mode's
 * again (the bench moves only to iptables or nftables), never the new mode's.
 */
export function kubeProxyFigures(processes: ProxyProcess[]): KubeProxyFigures {
    const old = processes.find((p) => p.startedAt <= 0);
    const fresh = processes.filter((p) => p.startedAt > 0 && !p.standin);
    const first = fresh[0];
    const now = fresh[fresh.length - 1];
    return {
        ...(old ? { before: use(old) } : {}),
        ...(old?.firstSyncSeconds !== undefined ? { oldFirstSyncSeconds: old.firstSyncSeconds } : {}),
        ...(now ? { after: use(now) } : {}),
        ...(first?.firstSyncSeconds !== undefined ? { firstSyncSeconds: first.firstSyncSeconds } : {}),
        ...(first?.firstFullSyncRulesSeconds !== undefined
            ? { firstFullSyncRulesSeconds: first.firstFullSyncRulesSeconds }
            : {}),
        ...(first?.cpuAtFirstSyncSeconds !== undefined ? { cpuToFirstSyncSeconds: first.cpuAtFirstSyncSeconds } : {}),
        processes,
    };
}

/** What the rollout measured of one node's first syncs (seconds), its move's and its hand-back's. */
export interface RolloutSync {
    /** the old mode's mean full sync, read from the node's kube-proxy before the move */
    oldMeanFullSyncSeconds?: number;
    /** the move's first sync, seconds into the wait for it */
    moveFirstSyncSeconds?: number;
    /** the same of the finish's hand-back to the installer's DaemonSet */
    handBackFirstSyncSeconds?: number;
}

/** Per node, the rollout's first syncs (the first of each kind), from its "first sync" node events. */
export function rolloutSyncs(events: readonly NodeEvent[]): Map<string, RolloutSync> {
    const out = new Map<string, RolloutSync>();
    for (const e of events) {
        if (e.type !== "first sync") continue;
        const r = out.get(e.node) ?? {};
        if (e.step === "hand-back") r.handBackFirstSyncSeconds ??= e.seconds;
        else {
            r.moveFirstSyncSeconds ??= e.seconds;
            // read live before the move; a mean recorded earlier or of every sync is not the old mode's full sync
            if (e.old?.metric === "full" && !e.old.recorded) r.oldMeanFullSyncSeconds ??= e.old.seconds;
        }
        out.set(e.node, r);
    }
    return out;
}

/** The pool steps' times: per pool, from its first node cordoned (or restarted) to its last released, seconds. */
export function poolSeconds(nodeTimes: readonly { pool: string; from: number; to: number }[]): Record<string, number> {
    const out: Record<string, { from: number; to: number }> = {};
    for (const n of nodeTimes) {
        const p = (out[n.pool] ??= { from: n.from, to: n.to });
        p.from = Math.min(p.from, n.from);
        p.to = Math.max(p.to, n.to);
    }
    return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, Math.round(v.to - v.from) / 1000]));
}
