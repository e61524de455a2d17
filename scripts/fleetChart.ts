// A fleet's waves as a chart (issue #42): a Gantt of the fleet's status, one row per stack labelled
// "wave / stack", a bar from its startedAt to its endedAt coloured by its wave, a row per wave's preview
// ("wave / preview", its previewing event to its first start), per stack whose own gate waited for
// its upstream's soak ("wave / stack gate", from its gate event to its until) and per soaking wave
// ("wave / soak", from its soaking event to its until). fleetRows() and fleetWavesSpec()
// are pure (a FleetStatus in, rows and a vega-lite spec out); the SVG is rendered with
// workloadChart's renderSvg (headless). The bench's fleet phase writes it (scripts/fleetBench.ts).
import type { FleetStatus } from "../components/fleet/contract.js";
import type { VegaLiteSpec } from "./workloadChart.js";

/** One bar: a stack's activity, or a wave's soak, in seconds from the fleet's first start. */
export interface FleetRow {
    /** "wave / stack", "wave / preview", "wave / stack gate" or "wave / soak" */
    row: string;
    wave: string;
    what: "preview" | "gate" | "stack" | "soak";
    from: number;
    to: number;
    /** the stack's final state (the other rows: "preview", "gate", "soak") */
    state: string;
}

/**
 * The chart's rows, in wave order (the status's stack order): a wave's preview (its "previewing"
 * event to its first stack's start; every stack of a wave is previewed before any starts), its
 * stacks, then its soak;
 * stacks that never started (pending, skipped before running) have no bar and are left out.
 */
export function fleetRows(status: FleetStatus): FleetRow[] {
    const started = status.stacks.filter((s) => s.startedAt !== undefined);
    if (!started.length) return [];
    const t0 = Math.min(...started.map((s) => s.startedAt!));
    const sec = (ms: number) => Math.round(ms - t0) / 1000;
    const soaks = new Map<string, { from: number; to: number }>();
    const previews = new Map<string, number>();
    const gates: { wave: string; stack: string; from: number; to: number }[] = [];
    const nameOf = new Map(status.stacks.map((s) => [s.key, s.stack]));
    for (const e of status.events) {
        if (e.wave === undefined) continue;
        if (e.kind === "gate" && e.stack !== undefined && e.until !== undefined)
            gates.push({ wave: e.wave, stack: nameOf.get(e.stack) ?? e.stack, from: e.at, to: e.until });
        if (e.kind === "previewing") previews.set(e.wave, e.at);
        if (e.kind === "soaking" && e.until !== undefined) soaks.set(e.wave, { from: e.at, to: e.until });
    }
    const rows: FleetRow[] = [];
    const waves = [...new Set(status.stacks.map((s) => s.wave))];
    for (const wave of waves) {
        const inWave = started.filter((x) => x.wave === wave);
        for (const g of gates.filter((x) => x.wave === wave))
            rows.push({
                row: `${wave} / ${g.stack} gate`,
                wave,
                what: "gate",
                from: sec(g.from),
                to: sec(g.to),
                state: "gate",
            });
        const preview = previews.get(wave);
        if (preview !== undefined && inWave.length) {
            const first = Math.min(...inWave.map((x) => x.startedAt!));
            rows.push({
                row: `${wave} / preview`,
                wave,
                what: "preview",
                from: sec(preview),
                to: sec(first),
                state: "preview",
            });
        }
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
            subtitle:
                "a bar per stack from its start to its end, coloured by wave; lighter: the wave's preview of all its stacks before them, a stack's own gate waiting for its upstream's soak, and the wave's soak",
        },
        width: 640,
        data: { values: rows },
        mark: { type: "bar", height: 12 },
        encoding: {
            y: { field: "row", type: "nominal", title: null, sort: rows.map((r) => r.row) },
            x: {
                field: "from",
                type: "quantitative",
                title: "seconds from the fleet's first stack start (previews before it)",
            },
            x2: { field: "to" },
            color: { field: "wave", type: "nominal", title: "wave", sort: [...new Set(rows.map((r) => r.wave))] },
            // soaks lighter (a condition: an opacity scale on a discrete field is not advised)
            opacity: { condition: { test: "datum.what !== 'stack'", value: 0.35 }, value: 1 },
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
