// The bench's kube-proxy figures (scripts/kubeProxySamples.ts): /proc and metrics parsing, each
// process's first sync, memory and CPU time, the old mode's and the new, and the rollout's first
// syncs (its node events).
import assert from "node:assert/strict";
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
} from "../../scripts/kubeProxySamples.js";
import type { NodeEvent } from "../../components/rollout/events.js";

describe("kube-proxy samples: reading /proc and the metrics", () => {
    it("reads CPU ticks (utime + stime) and the start from /proc/<pid>/stat, a command with spaces and parentheses included", () => {
        // fields 3.. after "(comm) ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime priority nice threads itreal starttime
        const stat =
            "4242 (kube (proxy) x) S 1 4242 4242 0 -1 4194560 900 0 0 0 153 47 0 0 20 0 12 0 987654 800000000 9000";
        assert.deepEqual(parseProcStat(stat), { startTicks: 987654, cpuTicks: 200 });
        assert.equal(parseProcStat("1 (x) S"), undefined);
    });

    it("reads VmRSS in bytes and the boot time", () => {
        assert.equal(
            parseVmRss("Name:\tkube-proxy\nVmPeak:\t  900 kB\nVmRSS:\t   51200 kB\nThreads:\t12\n"),
            51200 * 1024,
        );
        assert.equal(parseVmRss("Name:\tkube-proxy\nState:\tZ (zombie)\n"), undefined);
        assert.equal(parseBootTime("cpu  1 2 3\nbtime 1764979200\nprocesses 5\n"), 1764979200);
    });

    it("takes the latest last-sync timestamp over the IP families and sums the full-sync histogram", () => {
        const text = [
            "# HELP kubeproxy_sync_proxy_rules_last_timestamp_seconds [ALPHA] The last time proxy rules were successfully synced",
            'kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} 1.7649792125e+09',
            'kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv6"} 0',
            'kubeproxy_sync_full_proxy_rules_duration_seconds_bucket{ip_family="IPv4",le="1"} 1',
            'kubeproxy_sync_full_proxy_rules_duration_seconds_sum{ip_family="IPv4"} 0.834',
            'kubeproxy_sync_full_proxy_rules_duration_seconds_count{ip_family="IPv4"} 1',
        ].join("\n");
        assert.deepEqual(parseSyncMetrics(text), {
            lastSyncAt: 1764979212500,
            fullCount: 1,
            fullSumSeconds: 0.834,
        });
        assert.deepEqual(parseSyncMetrics("process_cpu_seconds_total 3\n"), {}, "no sync yet, or no answer");
        assert.deepEqual(parseSyncMetrics(""), {}, "curl's empty output");
    });

    it("sums the full-sync histogram over the families as the rollout does (core's fullSyncTotals), and ignores other histograms", () => {
        const text = [
            'kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} 1764979210',
            'kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv6"} 1764979211.25',
            'kubeproxy_sync_full_proxy_rules_duration_seconds_sum{ip_family="IPv4"} 1.5',
            'kubeproxy_sync_full_proxy_rules_duration_seconds_count{ip_family="IPv4"} 2',
            'kubeproxy_sync_full_proxy_rules_duration_seconds_sum{ip_family="IPv6"} 0.5',
            'kubeproxy_sync_full_proxy_rules_duration_seconds_count{ip_family="IPv6"} 1',
            'kubeproxy_sync_proxy_rules_duration_seconds_sum{ip_family="IPv4"} 9',
            'kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family="IPv4"} 7',
        ].join("\n");
        assert.deepEqual(parseSyncMetrics(text), { lastSyncAt: 1764979211250, fullCount: 3, fullSumSeconds: 2 });
        // the SIMULATED ipvs stand-in: a last sync, no full-sync histogram
        assert.deepEqual(
            parseSyncMetrics('kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} 1764979200\n'),
            { lastSyncAt: 1764979200000 },
        );
    });
});

const sample = (t: number, pid: string, startedAt: number, extra: Partial<ProxySample> = {}): ProxySample => ({
    t,
    pid,
    startedAt,
    rssBytes: 40e6,
    cpuSeconds: 1,
    ...extra,
});

describe("kube-proxy samples: a node's processes through a move", () => {
    // the client started at 10,000; the old kube-proxy long before; the new one at 13,000 and synced at 15,400
    const samples = [
        sample(10_100, "100", 1_000, { lastSyncAt: 5_000, rssBytes: 60e6, cpuSeconds: 4.5 }),
        sample(12_900, "100", 1_000, { rssBytes: 62e6, cpuSeconds: 4.6 }),
        sample(13_400, "200", 13_000, { rssBytes: 30e6, cpuSeconds: 0.3 }),
        sample(14_900, "200", 13_000, { rssBytes: 70e6, cpuSeconds: 1.9 }),
        sample(15_900, "200", 13_000, {
            lastSyncAt: 15_400,
            fullCount: 1,
            fullSumSeconds: 1.234,
            rssBytes: 80e6,
            cpuSeconds: 2.4,
        }),
        sample(20_000, "200", 13_000, { rssBytes: 75e6, cpuSeconds: 2.6 }),
    ];

    it("gives each process its start, last and peak memory, CPU time, and a first sync only to one started after the origin", () => {
        const [old, fresh] = proxyProcesses(samples, 10_000);
        assert.deepEqual(old, {
            pid: "100",
            startedAt: -9000,
            lastSampleAt: 2900,
            rssMB: 62,
            cpuSeconds: 4.6,
            peakRssMB: 62,
        });
        assert.deepEqual(fresh, {
            pid: "200",
            startedAt: 3000,
            lastSampleAt: 10_000,
            rssMB: 75,
            cpuSeconds: 2.6,
            peakRssMB: 80,
            firstSyncAt: 5400,
            firstSyncSeconds: 2.4,
            firstFullSyncRulesSeconds: 1.234,
            cpuAtFirstSyncSeconds: 2.4,
        });
    });

    it("leaves out the sync's own duration once more than one full sync was counted", () => {
        const [, fresh] = proxyProcesses(
            samples.map((s) => (s.fullCount ? { ...s, fullCount: 2 } : s)),
            10_000,
        );
        assert.equal(fresh.firstFullSyncRulesSeconds, undefined);
        assert.equal(fresh.firstSyncSeconds, 2.4);
    });

    it("says the old mode's use (the process running from the start), the new mode's (the last), and the first new one's first sync", () => {
        // the up's hand-back: a third kube-proxy at 30,000, synced at 31,000
        const processes = proxyProcesses(
            [...samples, sample(31_500, "300", 30_000, { lastSyncAt: 31_000, rssBytes: 50e6, cpuSeconds: 0.9 })],
            10_000,
        );
        assert.deepEqual(kubeProxyFigures(processes), {
            before: { rssMB: 62, cpuSeconds: 4.6, ageSeconds: 11.9 },
            after: { rssMB: 50, cpuSeconds: 0.9, ageSeconds: 1.5 },
            firstSyncSeconds: 2.4,
            firstFullSyncRulesSeconds: 1.234,
            cpuToFirstSyncSeconds: 2.4,
            processes,
        });
    });

    it("gives the old mode's first sync when the samples saw its process before it synced (a cluster just started)", () => {
        const seen = [
            sample(9_000, "100", 1_000, { rssBytes: 50e6 }),
            sample(9_600, "100", 1_000, { lastSyncAt: 9_300, fullCount: 1, fullSumSeconds: 5.5, cpuSeconds: 3 }),
            ...samples.slice(1),
        ];
        const f = kubeProxyFigures(proxyProcesses(seen, 10_000));
        assert.equal(f.oldFirstSyncSeconds, 8.3);
        assert.equal(f.processes[0].firstFullSyncRulesSeconds, 5.5);
        assert.equal(f.firstSyncSeconds, 2.4, "the new mode's as before");
    });

    it("never takes a SIMULATED ipvs stand-in started later for the new mode's kube-proxy", () => {
        // stand-ins started again during the move (about a second each, one synced at once)
        const withStandins = [
            ...samples.slice(0, 2).map((s) => ({ ...s, standin: true })),
            sample(11_500, "150", 11_000, { rssBytes: 20e6, cpuSeconds: 0, standin: true }),
            sample(12_000, "160", 11_900, { rssBytes: 20e6, cpuSeconds: 0, standin: true, lastSyncAt: 11_950 }),
            ...samples.slice(2),
        ];
        const processes = proxyProcesses(withStandins, 10_000);
        assert.deepEqual(
            processes.map((p) => [p.pid, p.standin ?? false]),
            [
                ["100", true],
                ["150", true],
                ["160", true],
                ["200", false],
            ],
        );
        const f = kubeProxyFigures(processes);
        assert.equal(f.firstSyncSeconds, 2.4, "process 200's, not the stand-in 160's");
        assert.equal(f.firstFullSyncRulesSeconds, 1.234);
        assert.deepEqual(f.after, { rssMB: 75, cpuSeconds: 2.6, ageSeconds: 7 });
    });

    it("has no first sync when no new kube-proxy's sync was seen", () => {
        const f = kubeProxyFigures(proxyProcesses(samples.slice(0, 4), 10_000));
        assert.equal(f.firstSyncSeconds, undefined);
        assert.deepEqual(f.after, { rssMB: 70, cpuSeconds: 1.9, ageSeconds: 1.9 });
    });
});

describe("kube-proxy samples: the rollout's first syncs and the pools' time", () => {
    it("reads each node's old-mode mean, its move's first sync and its hand-back's from the node events, the first of each", () => {
        const base = { pool: "canary", node: "canary-1", mode: "nftables" as const };
        const events: NodeEvent[] = [
            { type: "batch started", pool: "canary", step: "move", index: 1, of: 1, nodes: ["canary-1"], at: 1 },
            { ...base, type: "cordoned", step: "move", ours: true, at: 2 },
            {
                ...base,
                type: "first sync",
                step: "move",
                seconds: 3,
                old: { seconds: 0.41, metric: "full", recorded: false },
                at: 3,
            },
            // a second move of the node (a later up): the first of each kind is kept
            { ...base, type: "first sync", step: "move", seconds: 9, at: 4 },
            {
                ...base,
                type: "first sync",
                step: "hand-back",
                seconds: 2,
                old: { seconds: 0.2, metric: "full", recorded: false },
                at: 5,
            },
            // an old mode's mean recorded by an earlier move, or of every sync (ipvs), is no full sync read before this one
            {
                ...base,
                node: "workers-1",
                type: "first sync",
                step: "move",
                seconds: 4,
                old: { seconds: 1, metric: "full", recorded: true },
                at: 6,
            },
            {
                ...base,
                node: "workers-2",
                type: "first sync",
                step: "move",
                seconds: 5,
                old: { seconds: 1, metric: "all", recorded: false },
                at: 7,
            },
        ];
        assert.deepEqual(
            [...rolloutSyncs(events)],
            [
                ["canary-1", { moveFirstSyncSeconds: 3, oldMeanFullSyncSeconds: 0.41, handBackFirstSyncSeconds: 2 }],
                ["workers-1", { moveFirstSyncSeconds: 4 }],
                ["workers-2", { moveFirstSyncSeconds: 5 }],
            ],
        );
    });

    it("times each pool from its first node's start to its last node's end", () => {
        assert.deepEqual(
            poolSeconds([
                { pool: "canary", from: 1000, to: 3500 },
                { pool: "workers", from: 3600, to: 6000 },
                { pool: "workers", from: 6000, to: 9100 },
            ]),
            { canary: 2.5, workers: 5.5 },
        );
    });
});
