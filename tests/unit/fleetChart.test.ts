// The fleet's waves chart (scripts/fleetChart.ts): the Gantt's rows from a FleetStatus (pure) and
// the vega-lite spec over them; that it renders headless to an SVG with a bar per row.
import assert from "node:assert/strict";
import type { FleetStackStatus, FleetStatus } from "../../components/fleet/contract.js";
import { fleetRows, fleetWavesSpec } from "../../scripts/fleetChart.js";
import { renderSvg } from "../../scripts/workloadChart.js";

const T0 = Date.parse("2026-12-07T03:00:00.000Z");
const stack = (wave: string, name: string, extra: Partial<FleetStackStatus>): FleetStackStatus => ({
    key: `${name}@/p`,
    wave,
    dir: "/p",
    stack: name,
    state: "succeeded",
    attempts: 1,
    ...extra,
});

const STATUS: FleetStatus = {
    phase: "stopped",
    paused: false,
    wave: "prod",
    file: "/p/fleet.yaml",
    counts: { pending: 1, running: 0, succeeded: 2, failed: 1, skipped: 0 },
    runs: 1,
    stacks: [
        stack("canary", "dev", { startedAt: T0 + 1000, endedAt: T0 + 21_500 }),
        stack("prod", "prod-a", { startedAt: T0 + 26_500, endedAt: T0 + 50_000 }),
        stack("prod", "prod-b", { startedAt: T0 + 27_000, endedAt: T0 + 40_000, state: "failed" }),
        stack("prod", "prod-c", { state: "pending" }),
    ],
    events: [
        {
            at: T0 + 500,
            kind: "previewing",
            wave: "canary",
            text: "wave canary: previewing 1 stack(s) before any of them starts",
        },
        {
            at: T0 + 21_500,
            kind: "soaking",
            wave: "canary",
            until: T0 + 26_500,
            text: `wave canary: succeeded; soaking until ${new Date(T0 + 26_500).toISOString()}`,
        },
        {
            at: T0 + 23_000,
            kind: "gate",
            wave: "prod",
            stack: "prod-a@/p",
            until: T0 + 26_000,
            text: "its promotion gate waits for the upstream's soak; previewed again at ...",
        },
        // an event whose text names a soak is not a wave's soak: its kind says what it is
        { at: T0 + 30_000, kind: "signal", wave: "prod", text: "soaking until 2026-12-07T04:00:00.000Z" },
    ],
};

describe("fleet chart: the waves as a Gantt", () => {
    it("a row per started stack (wave / stack) from its start to its end, in seconds from the first start, and the wave's preview before and its soak after; a pending stack has none", () => {
        assert.deepEqual(fleetRows(STATUS), [
            { row: "canary / preview", wave: "canary", what: "preview", from: -0.5, to: 0, state: "preview" },
            { row: "canary / dev", wave: "canary", what: "stack", from: 0, to: 20.5, state: "succeeded" },
            { row: "canary / soak", wave: "canary", what: "soak", from: 20.5, to: 25.5, state: "soak" },
            { row: "prod / prod-a gate", wave: "prod", what: "gate", from: 22, to: 25, state: "gate" },
            { row: "prod / prod-a", wave: "prod", what: "stack", from: 25.5, to: 49, state: "succeeded" },
            { row: "prod / prod-b", wave: "prod", what: "stack", from: 26, to: 39, state: "failed" },
        ]);
    });

    it("no stack started: no rows", () => {
        assert.deepEqual(fleetRows({ ...STATUS, stacks: [stack("prod", "prod-c", { state: "pending" })] }), []);
    });

    it("the spec draws the rows as bars in their order, coloured by wave, previews, gates and soaks lighter", () => {
        const spec = fleetWavesSpec(STATUS) as {
            data: { values: unknown[] };
            mark: { type: string };
            encoding: {
                y: { sort: string[] };
                color: { field: string };
                opacity: { condition: { test: string; value: number }; value: number };
            };
        };
        assert.deepEqual(spec.data.values, fleetRows(STATUS));
        assert.equal(spec.mark.type, "bar");
        assert.deepEqual(spec.encoding.y.sort, [
            "canary / preview",
            "canary / dev",
            "canary / soak",
            "prod / prod-a gate",
            "prod / prod-a",
            "prod / prod-b",
        ]);
        assert.equal(spec.encoding.color.field, "wave");
        assert.deepEqual(spec.encoding.opacity, {
            condition: { test: "datum.what !== 'stack'", value: 0.35 },
            value: 1,
        });
    });

    it("renders headless to an SVG naming each row", async function () {
        this.timeout(30_000);
        const svg = await renderSvg(fleetWavesSpec(STATUS));
        assert.match(svg, /^<svg/);
        for (const row of ["canary / preview", "canary / soak", "prod / prod-a gate", "prod / prod-a", "prod / prod-b"])
            assert.ok(svg.includes(row), `the SVG names ${row}`);
    });
});
