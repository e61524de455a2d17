// The bench's per-node breakdown (scripts/nodePhases.ts): where each node's time goes, read from
// the rollout's node events (components/rollout/events.ts) as each step's CLI wrote them.
import assert from "node:assert/strict";
import type { NodeEvent, StepKind } from "../../components/rollout/events.js";
import { batchPhases, floorOf, nodePhases, nodePhasesTable } from "../../scripts/nodePhases.js";

const node = (at: number, step: StepKind, pool: string, name: string) => ({ at, step, pool, node: name });
const cordoned = (at: number, step: StepKind, pool: string, name: string): NodeEvent => ({
    ...node(at, step, pool, name),
    type: "cordoned",
    ours: true,
});
const running = (at: number, step: StepKind, pool: string, name: string): NodeEvent => ({
    ...node(at, step, pool, name),
    type: "kube-proxy running",
    pod: `kube-proxy-${name}`,
    placement: step === "move" ? "abc" : null,
});
const check = (at: number, step: StepKind, pool: string, name: string, ok = true): NodeEvent => ({
    ...node(at, step, pool, name),
    type: "check",
    check: "mode",
    ok,
    detail: "nftables",
    hook: false,
});
const released = (at: number, step: StepKind, pool: string, name: string): NodeEvent => ({
    ...node(at, step, pool, name),
    type: "released",
    how: step === "move" ? "moved" : "handed back",
    hooks: 0,
});
const batch = (at: number, step: StepKind, pool: string, index: number, of: number, nodes: string[]): NodeEvent => ({
    type: "batch started",
    at,
    step,
    pool,
    index,
    of,
    nodes,
});

describe("bench: per-node phases from the rollout's node events", () => {
    it("splits each node's move and hand-back into restart (cordon to kube-proxy running) and checks (to released)", () => {
        const events = [
            cordoned(1000, "move", "canary", "canary-1"),
            running(2500, "move", "canary", "canary-1"),
            check(2600, "move", "canary", "canary-1"),
            released(4000, "move", "canary", "canary-1"),
            cordoned(9000, "hand-back", "canary", "canary-1"),
            running(10200, "hand-back", "canary", "canary-1"),
            released(11000, "hand-back", "canary", "canary-1"),
        ];
        assert.deepEqual(nodePhases(events), [
            {
                node: "canary-1",
                pool: "canary",
                kind: "move",
                restartSeconds: 1.5,
                checksSeconds: 1.5,
                totalSeconds: 3,
            },
            {
                node: "canary-1",
                pool: "canary",
                kind: "hand-back",
                restartSeconds: 1.2,
                checksSeconds: 0.8,
                totalSeconds: 2,
            },
        ]);
    });

    it("leaves out a node whose move failed (never released), and keeps nodes of a batch apart", () => {
        const events = [
            cordoned(0, "move", "workers", "workers-1"),
            cordoned(0, "move", "workers", "workers-2"),
            running(1000, "move", "workers", "workers-2"),
            check(1500, "move", "workers", "workers-1", false),
            released(2000, "move", "workers", "workers-2"),
        ];
        const phases = nodePhases(events);
        assert.deepEqual(
            phases.map((p) => [p.node, p.totalSeconds]),
            [["workers-2", 2]],
        );
        assert.match(nodePhasesTable(phases), /^\| workers-2 \| workers \| move \| 1\.0 \| 1\.0 \| 2\.0 \|$/m);
    });

    describe("per batch", () => {
        const events = [
            batch(100, "move", "workers", 1, 2, ["workers-1", "workers-2"]),
            cordoned(300, "move", "workers", "workers-1"),
            cordoned(1500, "move", "workers", "workers-2"),
            running(3600, "move", "workers", "workers-1"),
            released(3700, "move", "workers", "workers-1"),
            running(4600, "move", "workers", "workers-2"),
            released(4700, "move", "workers", "workers-2"),
            batch(5000, "move", "workers", 2, 2, ["workers-3"]),
            cordoned(5100, "move", "workers", "workers-3"),
            running(8100, "move", "workers", "workers-3"),
            released(8200, "move", "workers", "workers-3"),
            batch(9000, "hand-back", "canary", 1, 1, ["canary-1"]),
            cordoned(9100, "hand-back", "canary", "canary-1"),
            running(12100, "hand-back", "canary", "canary-1"),
            released(12600, "hand-back", "canary", "canary-1"),
            batch(12700, "hand-back", "workers", 1, 2, ["workers-1", "workers-2"]),
            cordoned(12800, "hand-back", "workers", "workers-1"),
        ];

        it("times each batch from its start to its last node released, beside its slowest node's own move (cordoned to released)", () => {
            assert.deepEqual(
                batchPhases(events).map((b) => [b.pool, b.kind, b.index, b.nodes, b.seconds, b.slowestNodeSeconds]),
                [
                    ["workers", "move", 1, 2, 4.6, 3.4],
                    ["workers", "move", 2, 1, 3.2, 3.1],
                    ["canary", "hand-back", 1, 1, 3.6, 3.5],
                ],
            );
        });

        it("sums the floor of the pools' batches plus the soak of each pool that had a batch, and the hand-backs apart", () => {
            const pools = [
                { batches: ["workers-1 .. workers-2", "workers-3"], soakSeconds: 10 },
                { batches: [], soakSeconds: 600 },
            ];
            const { floorSeconds, batches } = floorOf(events, pools);
            assert.equal(floorSeconds.toFixed(1), "16.5");
            assert.deepEqual(
                Object.fromEntries(
                    Object.entries(batches).map(([k, v]) => [
                        k,
                        [v.count, v.seconds.toFixed(1), v.floorSeconds.toFixed(1)],
                    ]),
                ),
                { move: [2, "7.8", "6.5"], "hand-back": [1, "3.6", "3.5"] },
            );
        });

        it("leaves out a batch that released no node (its first node failed)", () => {
            assert.ok(!batchPhases(events).some((b) => b.kind === "hand-back" && b.pool === "workers"));
        });

        it("counts a node cordoned before its batch started in the batch started next, timed from that cordon", () => {
            const first = [
                cordoned(0, "move", "canary", "canary-1"),
                batch(100, "move", "canary", 1, 1, ["canary-1"]),
                running(3000, "move", "canary", "canary-1"),
                released(3500, "move", "canary", "canary-1"),
            ];
            assert.deepEqual(
                batchPhases(first).map((b) => [b.pool, b.index, b.nodes, b.seconds, b.slowestNodeSeconds]),
                [["canary", 1, 1, 3.5, 3.5]],
            );
        });
    });
});
