// The bench's timeline chart (scripts/workloadChart.ts): the rows and the vega-lite spec from the
// workload figures (pure), and that the spec renders headless to an SVG with the expected marks.
import assert from "node:assert/strict";
import { KINDS, renderSvg, runLabel, timelineRows, timelineSpec } from "../../scripts/workloadChart.js";
import type { WorkloadRun } from "../../scripts/workload.js";

const process = (pid: string, startedAt: number, firstSyncAt?: number) => ({
    pid,
    startedAt,
    ...(firstSyncAt !== undefined ? { firstSyncAt } : {}),
    lastSampleAt: 20_000,
    rssMB: 50,
    cpuSeconds: 1,
    peakRssMB: 60,
});

const runs: WorkloadRun[] = [
    {
        pair: "iptables -> nftables",
        procedure: "kubectl runbook",
        services: 1000,
        seconds: 9,
        nodes: [
            {
                node: "canary-1",
                attempts: 200,
                failed: 20,
                gaps: [{ from: 3400, to: 4400, ms: 1000, recovered: true }],
                longestGapMs: 1000,
                recovered: true,
                nodePort: {
                    attempts: 200,
                    failed: 30,
                    gaps: [{ from: 3400, to: 4900, ms: 1500, recovered: true }],
                    longestGapMs: 1500,
                    recovered: true,
                },
                longLived: "survived",
                longestStallMs: 110,
                kubeProxy: {
                    processes: [process("1", -60_000, -58_000), process("2", 3300, 4350), process("3", 9000)],
                },
            },
        ],
    },
];

describe("workload chart: the timeline", () => {
    it("labels a run by its load, procedure and pair, saying a SIMULATED before-state", () => {
        assert.equal(runLabel(runs[0]), "1000 Services · kubectl runbook · iptables -> nftables");
        assert.equal(
            runLabel({ procedure: "KubeProxyMode up", pair: "ipvs -> nftables", simulated: "stand-in" }),
            "0 Services · KubeProxyMode up · ipvs -> nftables (SIMULATED before)",
        );
    });

    it("draws each new kube-proxy's start to first sync, a marker at the sync and each gap (ClusterIP, NodePort), in seconds; not the old one, nor one not yet synced", () => {
        const run = runLabel(runs[0]);
        assert.deepEqual(timelineRows(runs), [
            { run, node: "canary-1", what: KINDS.startup, from: 3.3, to: 4.35 },
            { run, node: "canary-1", what: KINDS.sync, from: 4.35 },
            { run, node: "canary-1", what: KINDS.gap, from: 3.4, to: 4.4 },
            { run, node: "canary-1", what: KINDS.nodePortGap, from: 3.4, to: 4.9 },
        ]);
    });

    it("draws no NodePort bars for figures written before the NodePort was measured (an older bench.json)", () => {
        const { nodePort: _n, ...old } = runs[0].nodes[0];
        const rows = timelineRows([{ ...runs[0], nodes: [old] }]);
        assert.deepEqual(
            rows.map((r) => r.what),
            [KINDS.startup, KINDS.sync, KINDS.gap],
        );
    });

    it("is a vega-lite spec faceted by run, bars and markers in layers, the colours fixed per kind", () => {
        const spec = timelineSpec(runs) as {
            data: { values: unknown[] };
            facet: { row: { field: string } };
            spec: { layer: { mark: { type: string } }[] };
        };
        assert.equal(spec.data.values.length, 4);
        assert.equal(spec.facet.row.field, "run");
        assert.deepEqual(
            spec.spec.layer.map((l) => l.mark.type),
            ["bar", "point"],
        );
        assert.match(
            JSON.stringify(spec),
            /"domain":\["kube-proxy start to first sync","new connections to the ClusterIP failing","new connections to the NodePort failing","first sync"\]/,
        );
    });

    it("renders headless to an SVG: a bar per start-up and gap, a marker per sync, the run's label and the legend", async () => {
        const svg = await renderSvg(timelineSpec(runs));
        assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
        assert.match(
            svg,
            /1000 Services · kubectl runbook · iptables -&gt; nftables|1000 Services · kubectl runbook · iptables -> nftables/,
        );
        // the marks: vega names their groups by role; three bars, one point
        const bars = svg.match(/<path [^>]*fill="#(9ecae1|d62728|ff9896)"[^>]*>/g) ?? [];
        assert.ok(bars.length >= 3, `three bars (a start-up, a ClusterIP gap, a NodePort gap), got ${bars.length}`);
        assert.match(svg, /role-mark[^"]*layer_1_marks|mark-symbol/);
        assert.match(svg, /new connections to the ClusterIP failing/);
        assert.match(svg, /new connections to the NodePort failing/);
        assert.match(svg, /seconds from the node's client start/);
    });
});
