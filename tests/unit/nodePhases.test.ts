// The bench's per-node breakdown (scripts/nodePhases.ts): where each node's time goes, read from
// the rollout steps' log lines as the engine streams them.
import assert from "node:assert/strict";
import { nodePhases, nodePhasesTable, type StepLine } from "../../scripts/nodePhases.js";

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
});
