// The bench's workload figures (scripts/workload.ts): the longest gap in which new connections
// failed, from a series of probe results (the ClusterIP's and the NodePort's), and the tables the
// bench prints.
import assert from "node:assert/strict";
import {
    connectionFigures,
    gaps,
    longestGap,
    startToRouted,
    nodeFigures,
    workloadTable,
    scaleTable,
    type Attempt,
    type ClientRecord,
} from "../../scripts/workload.js";

/** Attempts every 50 ms from t=0, ok unless their index is in `failed`. */
function series(count: number, failed: (i: number) => boolean): Attempt[] {
    return Array.from({ length: count }, (_, i) => ({ t: i * 50, ok: !failed(i) }));
}

describe("workload figures: the longest gap of new connections", () => {
    it("is null when every attempt got its answer", () => {
        assert.equal(
            longestGap(
                series(40, () => false),
                2000,
            ),
            null,
        );
    });

    it("runs from the first failed attempt to the next successful one, and picks the longest of several runs", () => {
        // failures at 10-12 (t 500..600, next ok at 650) and 20-29 (t 1000..1450, next ok at 1500)
        const gap = longestGap(
            series(40, (i) => (i >= 10 && i <= 12) || (i >= 20 && i <= 29)),
            2000,
        );
        assert.deepEqual(gap, { from: 1000, to: 1500, ms: 500, recovered: true });
    });

    it("lists every run of failures in order", () => {
        const all = gaps(
            series(40, (i) => i === 3 || (i >= 20 && i <= 21)),
            2000,
        );
        assert.deepEqual(all, [
            { from: 150, to: 200, ms: 50, recovered: true },
            { from: 1000, to: 1100, ms: 100, recovered: true },
        ]);
    });

    it("counts a single failed attempt as one attempt's interval", () => {
        assert.equal(
            longestGap(
                series(40, (i) => i === 7),
                2000,
            )?.ms,
            50,
        );
    });

    it("says not recovered when the series ends failing, and counts to the client's stop", () => {
        const gap = longestGap(
            series(40, (i) => i >= 30),
            2100,
        );
        assert.deepEqual(gap, { from: 1500, to: 2100, ms: 600, recovered: false });
    });

    it("with routeFrom (a before-state that carries no traffic) counts a run that began earlier only from routeFrom on", () => {
        // the SIMULATED ipvs before-state: failing from the start until attempt 30 (t 1500)
        const attempts = series(40, (i) => i < 30);
        assert.equal(longestGap(attempts, 2000)?.ms, 1500, "without routeFrom the whole before-state counts");
        assert.deepEqual(longestGap(attempts, 2000, 1200), { from: 1200, to: 1500, ms: 300, recovered: true });
    });

    it("with routeFrom ignores a run that ended before it, and counts runs after it whole", () => {
        const attempts = series(60, (i) => i < 10 || (i >= 40 && i < 44));
        assert.deepEqual(longestGap(attempts, 3000, 1000), { from: 2000, to: 2200, ms: 200, recovered: true });
    });
});

describe("workload figures: a node's long-lived connection", () => {
    const base: ClientRecord = {
        startedAt: 0,
        stoppedAt: 2000,
        attempts: series(40, () => false),
        stream: { openedAt: 10, closedAt: null, lastDataAt: 1990, longestStallMs: 130 },
    };

    it("survived when it was open from the start and still open at the stop", () => {
        const f = nodeFigures("workers-1", base);
        assert.deepEqual(f, {
            node: "workers-1",
            attempts: 40,
            failed: 0,
            gaps: [],
            longestGapMs: 0,
            recovered: true,
            longLived: "survived",
            longestStallMs: 130,
        });
    });

    it("broke when it closed before the stop, with the reason", () => {
        const f = nodeFigures("workers-1", {
            ...base,
            stream: { openedAt: 10, closedAt: 1510, why: "ECONNRESET", lastDataAt: 1500, longestStallMs: 130 },
        });
        assert.equal(f.longLived, "broke after 1.5 s: ECONNRESET");
    });

    it("stalled, not survived, when it is still open but carried no data for over a second before the stop", () => {
        const f = nodeFigures("canary-1", {
            ...base,
            stoppedAt: 60_000,
            stream: { openedAt: 19_000, closedAt: null, lastDataAt: 25_000, longestStallMs: 35_000 },
        });
        assert.equal(f.longLived, "stalled: open but no data for the last 35.0 s (held from 19 s on)");
    });

    it("not held when it never opened, with the last reason", () => {
        const f = nodeFigures("workers-1", {
            ...base,
            stream: { openedAt: null, closedAt: null, why: "ECONNREFUSED", lastDataAt: null, longestStallMs: 0 },
        });
        assert.equal(f.longLived, "not held: never opened (ECONNREFUSED)");
        assert.equal(f.longestStallMs, null);
    });

    it("for a before-state that carries no traffic, says from when it was held and why not earlier", () => {
        const f = nodeFigures(
            "canary-1",
            { ...base, stream: { openedAt: 1500, closedAt: null, lastDataAt: 1950, longestStallMs: 100 } },
            1000,
            "SIMULATED ipvs before it",
        );
        assert.equal(f.longLived, "survived from 2 s on (SIMULATED ipvs before it)");
    });
});

describe("workload figures: the NodePort's new connections", () => {
    const record: ClientRecord = {
        startedAt: 0,
        stoppedAt: 3000,
        attempts: series(60, (i) => i >= 20 && i < 24),
        nodePortAttempts: series(60, (i) => i < 10 || (i >= 20 && i < 30)),
        nodePortTarget: "10.89.0.10:31080",
        stream: { openedAt: 10, closedAt: null, lastDataAt: 2990, longestStallMs: 110 },
    };

    it("figures them apart from the ClusterIP's, which keep their names", () => {
        const f = nodeFigures("canary-1", record);
        assert.equal(f.longestGapMs, 200);
        assert.equal(f.attempts, 60);
        assert.equal(f.failed, 4);
        assert.deepEqual(f.nodePort, {
            target: "10.89.0.10:31080",
            attempts: 60,
            failed: 20,
            gaps: [
                { from: 0, to: 500, ms: 500, recovered: true },
                { from: 1000, to: 1500, ms: 500, recovered: true },
            ],
            longestGapMs: 500,
            recovered: true,
        });
    });

    it("counts them from routeFrom as the ClusterIP's (a before-state that carries no traffic)", () => {
        const f = nodeFigures("canary-1", record, 1200, "SIMULATED ipvs before it");
        assert.deepEqual(f.nodePort?.gaps, [{ from: 1200, to: 1500, ms: 300, recovered: true }]);
        assert.deepEqual(connectionFigures(record.nodePortAttempts!, record.stoppedAt, 1200), {
            attempts: 60,
            failed: 20,
            gaps: f.nodePort!.gaps,
            longestGapMs: 300,
            recovered: true,
        });
    });

    it("has none for a record written before they were measured", () => {
        const { nodePortAttempts: _a, nodePortTarget: _t, ...old } = record;
        assert.equal(nodeFigures("canary-1", old).nodePort, undefined);
    });
});

describe("workload figures: the new kube-proxy's start to routed", () => {
    it("runs from the last kube-proxy pod added before the gap ended to the gap's end", () => {
        const events = [
            { t: 100, pod: "kube-proxy-a", event: "add" as const },
            { t: 3000, pod: "kube-proxy-a", event: "stop" as const },
            { t: 3050, pod: "kube-proxy-b", event: "add" as const },
            { t: 9000, pod: "kube-proxy-c", event: "add" as const },
        ];
        assert.equal(startToRouted({ to: 4200 }, events), 1150);
        assert.equal(startToRouted({ to: 50 }, events), undefined, "no pod added before the gap ended");
    });
});

describe("workload figures: the table", () => {
    it("has a row per run and node, marks a SIMULATED before-state in the pair and explains it under the table", () => {
        const node = nodeFigures("canary-1", {
            startedAt: 0,
            stoppedAt: 2000,
            attempts: series(40, (i) => i === 5 || i === 6),
            stream: { openedAt: 10, closedAt: null, lastDataAt: 1990, longestStallMs: 120 },
        });
        // the NodePort's series: 4 failed in a row (200 ms); a record from before it was measured has none
        const withNodePort = nodeFigures("canary-1", {
            startedAt: 0,
            stoppedAt: 2000,
            attempts: series(40, (i) => i === 5 || i === 6),
            nodePortAttempts: series(40, (i) => i >= 5 && i < 9),
            stream: { openedAt: 10, closedAt: null, lastDataAt: 1990, longestStallMs: 120 },
        });
        const text = workloadTable([
            { pair: "iptables -> nftables", procedure: "KubeProxyMode up", seconds: 41.2, nodes: [withNodePort] },
            {
                pair: "ipvs -> nftables",
                procedure: "kubectl runbook",
                seconds: 9.6,
                nodes: [node],
                simulated: "the stand-in programs no traffic",
            },
            {
                pair: "ipvs -> iptables",
                procedure: "KubeProxyMode up",
                seconds: 3,
                nodes: [],
                error: "rollout failed: node canary-1\nmore",
            },
        ]);
        assert.equal(
            text,
            [
                "| mode pair | procedure | node | ClusterIP new conns (failed) | gaps | ClusterIP longest gap ms | its kube-proxy's start to routed ms | NodePort new conns (failed) | NodePort longest gap ms | long-lived connection | longest stall ms | run s |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
                "| iptables -> nftables | KubeProxyMode up | canary-1 | 40 (2) | 1 | 100 | - | 40 (4) | 200 | survived | 120 | 41 |",
                "| ipvs -> nftables (SIMULATED before-state) | kubectl runbook | canary-1 | 40 (2) | 1 | 100 | - | - | - | survived | 120 | 10 |",
                "| ipvs -> iptables | KubeProxyMode up | - | - | - | - | - | - | - | run failed: rollout failed: node canary-1 | - | 3 |",
                "",
                "SIMULATED: ipvs -> nftables: the stand-in programs no traffic",
            ].join("\n"),
        );
    });
});

describe("workload figures: the production-shape table", () => {
    it("has a row per run and node: the load, the first sync from the metrics and the rollout's log, kube-proxy's use, verification and pool time", () => {
        const node = {
            ...nodeFigures("workers-1", {
                startedAt: 0,
                stoppedAt: 2000,
                attempts: series(40, (i) => i >= 5 && i < 20),
                nodePortAttempts: series(40, (i) => i >= 20),
                stream: { openedAt: 10, closedAt: null, lastDataAt: 1990, longestStallMs: 120 },
            }),
            pool: "workers",
            kubeProxy: {
                before: { rssMB: 61.4, cpuSeconds: 12.34, ageSeconds: 80 },
                oldFirstSyncSeconds: 31.2,
                after: { rssMB: 48.6, cpuSeconds: 3.1, ageSeconds: 20 },
                firstSyncSeconds: 2.456,
                cpuToFirstSyncSeconds: 2.2,
                processes: [],
            },
            rolloutSync: { moveFirstSyncSeconds: 3, oldMeanFullSyncSeconds: 0.4 },
            verifySeconds: 9.26,
        };
        const text = scaleTable([
            {
                pair: "iptables -> nftables",
                procedure: "KubeProxyMode up",
                services: 1000,
                seconds: 40,
                nodes: [node],
                poolSeconds: { canary: 14.2, workers: 15.75, finish: 8 },
            },
            { pair: "iptables -> nftables", procedure: "kubectl runbook", seconds: 3, nodes: [], error: "boom\nmore" },
        ]);
        assert.equal(
            text,
            [
                "| Services | mode pair | procedure | node | ClusterIP longest gap ms | NodePort longest gap ms | old mode's first full sync s | first full sync s (metrics) | first sync s (rollout log) | CPU s to first sync | old kube-proxy MB / CPU s | new kube-proxy MB / CPU s | verification s | pool s |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
                "| 1000 | iptables -> nftables | KubeProxyMode up | workers-1 | 750 | 1000 (not recovered) | 31.20 | 2.46 | 3 | 2.20 | 61 / 12.3 | 49 / 3.1 | 9.3 | 15.8 |",
                "| 0 | iptables -> nftables | kubectl runbook | - | - | - | - | - | - | - | - | - | - | failed: boom |",
            ].join("\n"),
        );
    });
});
