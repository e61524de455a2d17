// The bench's per-node breakdown (scripts/nodePhases.ts): where each node's time goes, read from
// the rollout steps' log lines as the engine streams them.
import assert from "node:assert/strict";
import { batchPhases, floorOf, nodePhases, nodePhasesTable, type StepLine } from "../../scripts/nodePhases.js";

const at = (t: number, step: string, text: string): StepLine => ({ t, step, text });

describe("bench: per-node phases from the steps' lines", () => {
    it("splits each node's move and hand-back into restart (cordon to kube-proxy running) and checks (to released)", () => {
        const lines = [
            at(1000, "pool-canary", "pool canary node canary-1: cordoned"),
            at(2500, "pool-canary", "pool canary node canary-1: kube-proxy kpm-abc-x1 running on the target abc\n"),
            at(2600, "pool-canary", "pool canary node canary-1: ok mode: nftables"),
            at(4000, "pool-canary", "pool canary node canary-1: verified"),
            at(9000, "finish", "pool canary node canary-1: cordoned"),
            at(
                10200,
                "finish",
                "pool canary node canary-1: kube-proxy kube-proxy-z running on the installer's DaemonSet",
            ),
            at(11000, "finish", "pool canary node canary-1: handed back to the installer's DaemonSet, checked"),
        ];
        assert.deepEqual(nodePhases(lines), [
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

    it("leaves out a node whose move failed (no release line), and keeps nodes of a batch apart", () => {
        const lines = [
            at(0, "pool-workers", "pool workers node workers-1: cordoned"),
            at(0, "pool-workers", "pool workers node workers-2: cordoned"),
            at(1000, "pool-workers", "pool workers node workers-2: kube-proxy p running on the target abc"),
            at(1500, "pool-workers", "pool workers node workers-1: FAILED restart: timed out"),
            at(
                2000,
                "pool-workers",
                "pool workers node workers-2: moved; built-in node checks are off (verify.nodeChecks: false), 0 hook(s) passed",
            ),
        ];
        const phases = nodePhases(lines);
        assert.deepEqual(
            phases.map((p) => [p.node, p.totalSeconds]),
            [["workers-2", 2]],
        );
        assert.match(nodePhasesTable(phases), /^\| workers-2 \| workers \| move \| 1\.0 \| 1\.0 \| 2\.0 \|$/m);
    });

    describe("per batch", () => {
        // as the engine hands them over: each line carries the runner's own clock before the text
        const lines = [
            at(0, "pool-workers", "[20:44:49] pool workers: 3 node(s), 3 to move, at most 2 at a time"),
            at(100, "pool-workers", "[20:44:49] pool workers: batch 1/2: workers-1 .. workers-2 (2 nodes)"),
            at(300, "pool-workers", "[20:44:49] pool workers node workers-1: cordoned"),
            at(1500, "pool-workers", "[20:44:50] pool workers node workers-2: cordoned"),
            at(3600, "pool-workers", "[20:44:52] pool workers node workers-1: kube-proxy p1 running on the target abc"),
            at(3700, "pool-workers", "[20:44:52] pool workers node workers-1: moved; 0 hook(s) passed"),
            at(4600, "pool-workers", "[20:44:53] pool workers node workers-2: kube-proxy p2 running on the target abc"),
            at(4700, "pool-workers", "[20:44:53] pool workers node workers-2: moved; 0 hook(s) passed"),
            at(5000, "pool-workers", "[20:44:54] pool workers: batch 2/2: workers-3"),
            at(5100, "pool-workers", "[20:44:54] pool workers node workers-3: cordoned"),
            at(8100, "pool-workers", "[20:44:57] pool workers node workers-3: kube-proxy p3 running on the target abc"),
            at(8200, "pool-workers", "[20:44:57] pool workers node workers-3: moved; 0 hook(s) passed"),
            at(9000, "finish", "[20:44:58] pool canary: batch 1/1: canary-1"),
            at(9100, "finish", "[20:44:58] pool canary node canary-1: cordoned"),
            at(
                12100,
                "finish",
                "[20:45:01] pool canary node canary-1: kube-proxy k running on the installer's DaemonSet",
            ),
            at(
                12600,
                "finish",
                "[20:45:02] pool canary node canary-1: handed back to the installer's DaemonSet, checked",
            ),
            at(12700, "finish", "[20:45:02] pool workers: batch 1/2: workers-1 .. workers-2 (2 nodes)"),
            at(12800, "finish", "[20:45:02] pool workers node workers-1: cordoned"),
            at(13000, "finish", "[20:45:02] pool workers node workers-1: FAILED restart: timed out"),
        ];

        it("times each batch from its line to its last node released, beside its slowest node's own move (cordoned to released)", () => {
            const batches = batchPhases(lines);
            assert.deepEqual(
                batches.map((b) => [b.step, b.pool, b.kind, b.index, b.nodes, b.seconds, b.slowestNodeSeconds]),
                [
                    ["pool-workers", "workers", "move", 1, 2, 4.6, 3.4],
                    ["pool-workers", "workers", "move", 2, 1, 3.2, 3.1],
                    ["finish", "canary", "hand-back", 1, 1, 3.6, 3.5],
                ],
            );
        });

        it("sums the floor of the pools' batches plus the soak of each pool that had a batch, and the hand-backs apart", () => {
            const pools = [
                { batches: ["workers-1 .. workers-2", "workers-3"], soakSeconds: 10 },
                { batches: [], soakSeconds: 600 },
            ];
            const { floorSeconds, batches } = floorOf(lines, pools);
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
            assert.ok(!batchPhases(lines).some((b) => b.step === "finish" && b.pool === "workers"));
        });

        it("counts a node cordoned before its batch's line (the rollout's first node) in the batch announced next, timed from that cordon", () => {
            const first = [
                at(0, "pool-canary", "[20:44:43] pool canary node canary-1: cordoned"),
                at(50, "pool-canary", "[20:44:43] DaemonSet kube-system/kube-proxy-abc: created"),
                at(100, "pool-canary", "[20:44:43] pool canary: batch 1/1: canary-1"),
                at(3000, "pool-canary", "[20:44:46] pool canary node canary-1: kube-proxy p running on the target abc"),
                at(3500, "pool-canary", "[20:44:46] pool canary node canary-1: moved; 0 hook(s) passed"),
            ];
            assert.deepEqual(
                batchPhases(first).map((b) => [b.pool, b.index, b.nodes, b.seconds, b.slowestNodeSeconds]),
                [["canary", 1, 1, 3.5, 3.5]],
            );
        });
    });
});
