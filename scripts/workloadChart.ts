// The workload phase's timeline as a chart: per run (Service count, procedure, mode pair) a row of
// lanes, one per node, on a time axis from the node's client start: a bar for each new kube-proxy's
// start to its first sync, a bar for each gap in which new connections to the ClusterIP failed and,
// when the run measured it, one for each gap in new connections to the NodePort (figures written
// before it was measured have none), and a marker at each first sync. timelineSpec() is pure (figures in, a vega-lite spec out);
// renderSvg() compiles it to vega and renders an SVG headless (renderer "none": no canvas, no
// native dependencies). The bench writes it beside its JSON (scripts/bench.ts, --out).
import type { WorkloadRun } from "./workload.js";

/** What a bar or marker of the timeline stands for. */
export const KINDS = {
    startup: "kube-proxy start to first sync",
    gap: "new connections to the ClusterIP failing",
    nodePortGap: "new connections to the NodePort failing",
    sync: "first sync",
} as const;

/** One bar (from..to) or marker (from only) on a node's lane, in seconds from its client's start. */
export interface TimelineRow {
    run: string;
    node: string;
    what: (typeof KINDS)[keyof typeof KINDS];
    from: number;
    to?: number;
}

/** A run's label: its load, procedure and mode pair, e.g. "1000 Services · kubectl runbook · iptables -> nftables". */
export function runLabel(r: Pick<WorkloadRun, "services" | "procedure" | "pair" | "simulated">): string {
    return `${r.services ?? 0} Services · ${r.procedure} · ${r.pair}${r.simulated ? " (SIMULATED before)" : ""}`;
}

const s = (ms: number) => Math.round(ms) / 1000;

/** The timeline's rows: per run and node, its new kube-proxies' start-ups and first syncs, and its gaps. */
export function timelineRows(runs: readonly WorkloadRun[]): TimelineRow[] {
    const rows: TimelineRow[] = [];
    for (const r of runs) {
        const run = runLabel(r);
        for (const n of r.nodes) {
            // the kube-proxies started during the run: the old mode's, running from before, is not drawn, nor
            // a SIMULATED ipvs stand-in started again (the old mode's too)
            for (const p of n.kubeProxy?.processes ?? []) {
                if (p.startedAt <= 0 || p.firstSyncAt === undefined || p.standin) continue;
                rows.push({ run, node: n.node, what: KINDS.startup, from: s(p.startedAt), to: s(p.firstSyncAt) });
                rows.push({ run, node: n.node, what: KINDS.sync, from: s(p.firstSyncAt) });
            }
            for (const g of n.gaps) rows.push({ run, node: n.node, what: KINDS.gap, from: s(g.from), to: s(g.to) });
            for (const g of n.nodePort?.gaps ?? [])
                rows.push({ run, node: n.node, what: KINDS.nodePortGap, from: s(g.from), to: s(g.to) });
        }
    }
    return rows;
}

/** A vega-lite spec (plain JSON: vega-lite is an ES module, loaded only to render). */
export type VegaLiteSpec = Record<string, unknown>;

/** The timeline of the runs as a vega-lite spec: a facet row per run, a lane per node. */
export function timelineSpec(runs: readonly WorkloadRun[], title = "Each node through the move"): VegaLiteSpec {
    const color = {
        field: "what",
        type: "nominal",
        title: null,
        scale: {
            domain: [KINDS.startup, KINDS.gap, KINDS.nodePortGap, KINDS.sync],
            range: ["#9ecae1", "#d62728", "#ff9896", "#08306b"],
        },
        legend: { orient: "bottom", labelLimit: 400 },
    };
    const x = { field: "from", type: "quantitative", title: "seconds from the node's client start" };
    return {
        $schema: "https://vega.github.io/schema/vega-lite/v6.json",
        title: {
            text: title,
            subtitle:
                "bars: a new kube-proxy's start to its first sync, and the gaps in new connections to the ClusterIP and to the NodePort",
        },
        data: { values: timelineRows(runs) },
        facet: {
            row: {
                field: "run",
                type: "nominal",
                title: null,
                // each run's label above its lanes, not beside them
                header: { labelOrient: "top", labelAngle: 0, labelAnchor: "start", labelFontWeight: "bold" },
            },
        },
        spec: {
            width: 640,
            layer: [
                {
                    transform: [{ filter: `datum.what !== '${KINDS.sync}'` }],
                    mark: { type: "bar", height: 6 },
                    encoding: {
                        y: { field: "node", type: "nominal", title: null },
                        yOffset: {
                            field: "what",
                            type: "nominal",
                            scale: { domain: [KINDS.startup, KINDS.gap, KINDS.nodePortGap] },
                        },
                        x,
                        x2: { field: "to" },
                        color,
                        tooltip: [
                            { field: "what", type: "nominal" },
                            { field: "from", type: "quantitative", title: "from s" },
                            { field: "to", type: "quantitative", title: "to s" },
                        ],
                    },
                },
                {
                    transform: [{ filter: `datum.what === '${KINDS.sync}'` }],
                    mark: { type: "point", shape: "diamond", filled: true, size: 70 },
                    encoding: {
                        y: { field: "node", type: "nominal", title: null },
                        x,
                        color,
                        tooltip: [{ field: "from", type: "quantitative", title: "first sync at s" }],
                    },
                },
            ],
        },
        config: { font: "sans-serif", view: { stroke: "#ddd" } },
    };
}

/** Renders a vega-lite spec as SVG text, headless: vega-lite compiles it to vega, vega renders without a canvas. */
export async function renderSvg(spec: VegaLiteSpec): Promise<string> {
    const vl = await import("vega-lite");
    const vega = await import("vega");
    const compiled = vl.compile(spec as unknown as Parameters<typeof vl.compile>[0]).spec;
    const view = new vega.View(vega.parse(compiled), { renderer: "none" });
    try {
        return await view.toSVG();
    } finally {
        view.finalize();
    }
}
