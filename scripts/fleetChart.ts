// A fleet's waves as a chart (issue #42): a Gantt of the fleet's status, one row per stack labelled
// "wave / stack", a bar from its startedAt to its endedAt coloured by its wave, and a row per soaking
// wave ("wave / soak") from its "soaking until" event to that time. fleetRows() and fleetWavesSpec()
// are pure (a FleetStatus in, rows and a vega-lite spec out); the SVG is rendered with
// workloadChart's renderSvg (headless). The bench's fleet phase writes it (scripts/fleetBench.ts).
import type { FleetStatus } from "../components/fleet/contract.js";
import type { VegaLiteSpec } from "./workloadChart.js";

/** One bar: a stack's activity, or a wave's soak, in seconds from the fleet's first start. */
export interface FleetRow {
    /** "wave / stack", or "wave / soak" */
    row: string;
    wave: string;
    what: "stack" | "soak";
    from: number;
    to: number;
    /** the stack's final state (soak rows: "soak") */
    state: string;
}

const SOAKING = /soaking until (\S+)$/;

/**
 * The chart's rows, in wave order (the status's stack order), each soak after its wave's stacks;
 * stacks that never started (pending, skipped before running) have no bar and are left out.
 */
export function fleetRows(status: FleetStatus): FleetRow[] {
    const started = status.stacks.filter((s) => s.startedAt !== undefined);
    if (!started.length) return [];
    const t0 = Math.min(...started.map((s) => s.startedAt!));
    const sec = (ms: number) => Math.round(ms - t0) / 1000;
    const soaks = new Map<string, { from: number; to: number }>();
    for (const e of status.events) {
        const m = e.wave !== undefined && !e.stack ? SOAKING.exec(e.text) : null;
        const until = m ? Date.parse(m[1]) : NaN;
        if (m && !Number.isNaN(until)) soaks.set(e.wave!, { from: e.at, to: until });
    }
    const rows: FleetRow[] = [];
    const waves = [...new Set(status.stacks.map((s) => s.wave))];
    for (const wave of waves) {
        for (const s of started.filter((x) => x.wave === wave))
            rows.push({
                row: `${wave} / ${s.stack}`,
                wave,
                what: "stack",
                from: sec(s.startedAt!),
                to: sec(s.endedAt ?? s.startedAt!),
                state: s.state,
            });
        const soak = soaks.get(wave);
        if (soak)
            rows.push({
                row: `${wave} / soak`,
                wave,
                what: "soak",
                from: sec(soak.from),
                to: sec(soak.to),
                state: "soak",
            });
    }
    return rows;
}

/** The fleet's waves as a vega-lite Gantt: a row per stack (and soak), bars coloured by wave, soaks lighter. */
export function fleetWavesSpec(status: FleetStatus, title = "The fleet's waves"): VegaLiteSpec {
    const rows = fleetRows(status);
    return {
        $schema: "https://vega.github.io/schema/vega-lite/v6.json",
        title: {
            text: title,
            subtitle: "a bar per stack from its start to its end (its preview done), coloured by wave; soaks lighter",
        },
        width: 640,
        data: { values: rows },
        mark: { type: "bar", height: 12 },
        encoding: {
            y: { field: "row", type: "nominal", title: null, sort: rows.map((r) => r.row) },
            x: { field: "from", type: "quantitative", title: "seconds from the fleet's first stack start" },
            x2: { field: "to" },
            color: { field: "wave", type: "nominal", title: "wave", sort: [...new Set(rows.map((r) => r.wave))] },
            // soaks lighter (a condition: an opacity scale on a discrete field is not advised)
            opacity: { condition: { test: "datum.what === 'soak'", value: 0.35 }, value: 1 },
            tooltip: [
                { field: "row", type: "nominal", title: "wave / stack" },
                { field: "state", type: "nominal" },
                { field: "from", type: "quantitative", title: "from s" },
                { field: "to", type: "quantitative", title: "to s" },
            ],
        },
        config: { font: "sans-serif", view: { stroke: "#ddd" } },
    };
}
