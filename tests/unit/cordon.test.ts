// The rollout's cordon carries the unschedulable taint with it. kube-controller-manager's node
// lifecycle controller keeps that taint in step with spec.unschedulable, with a read and a write of
// the node of its own after every cordon and uncordon; a cordon that already carries it leaves the
// controller nothing to do. The pure rule (core/nodes.ts) is tested on data; the cluster client's
// cordon and uncordon against a SIMULATED API server that serves one node, applies JSON merge
// patches and honours the resourceVersion a patch carries (409 when it is stale, as the real one).
import assert from "node:assert/strict";
import type * as k8s from "@kubernetes/client-node";
import { taintsWhenCordoned, UNSCHEDULABLE_TAINT } from "../../components/core/nodes.js";
import { MARKS } from "../../components/core/plan.js";
import { answer, clusterOn, failure, listenSimulated, withBody, type SimulatedServer } from "./simulatedApi.js";

const OTHER = { key: "dedicated", value: "gpu", effect: "NoSchedule" };

describe("the unschedulable taint written with the cordon (core/nodes.ts)", () => {
    it("adds it on a cordon and removes it on an uncordon, keeping every other taint", () => {
        assert.deepEqual(taintsWhenCordoned([OTHER], true), [OTHER, UNSCHEDULABLE_TAINT]);
        assert.deepEqual(taintsWhenCordoned(undefined, true), [UNSCHEDULABLE_TAINT]);
        assert.deepEqual(taintsWhenCordoned([OTHER, UNSCHEDULABLE_TAINT], false), [OTHER]);
        assert.deepEqual(taintsWhenCordoned([UNSCHEDULABLE_TAINT], false), []);
    });

    it("says nothing changes when the list is already right (the controller got there first)", () => {
        assert.equal(taintsWhenCordoned([UNSCHEDULABLE_TAINT], true), undefined);
        assert.equal(taintsWhenCordoned([OTHER], false), undefined);
        assert.equal(taintsWhenCordoned(undefined, false), undefined);
    });

    it("matches the taint by key and effect, as the controller does: a NoExecute taint of that key is another taint", () => {
        const noExecute = { key: UNSCHEDULABLE_TAINT.key, effect: "NoExecute" };
        assert.deepEqual(taintsWhenCordoned([noExecute], true), [noExecute, UNSCHEDULABLE_TAINT]);
        assert.equal(taintsWhenCordoned([noExecute], false), undefined);
    });
});

/** RFC 7386 JSON merge patch, as the API server applies application/merge-patch+json. */
function mergePatch(target: unknown, patch: unknown): unknown {
    if (patch === null || typeof patch !== "object" || Array.isArray(patch)) return patch;
    const out: Record<string, unknown> =
        target && typeof target === "object" && !Array.isArray(target) ? { ...(target as object) } : {};
    for (const [k, v] of Object.entries(patch)) {
        if (v === null) delete out[k];
        else out[k] = mergePatch(out[k], v);
    }
    return out;
}

interface SimulatedNodeServer extends SimulatedServer {
    node: () => k8s.V1Node;
    patches: Record<string, any>[];
    /** how many times the node was read */
    reads: () => number;
    /** runs once, when the next patch arrives and before it is judged: a write that lands in between */
    beforeNextPatch: (write: (n: k8s.V1Node) => k8s.V1Node) => void;
}

/** SIMULATED API server: one node, read and merge-patched, with resourceVersion compare-and-swap. */
async function simulatedNodeServer(initial: k8s.V1Node): Promise<SimulatedNodeServer> {
    let version = 1;
    let node: k8s.V1Node = { ...initial, metadata: { ...initial.metadata, resourceVersion: "1" } };
    let interloper: ((n: k8s.V1Node) => k8s.V1Node) | undefined;
    const patches: Record<string, any>[] = [];
    let reads = 0;
    const store = (n: k8s.V1Node) =>
        (node = { ...n, metadata: { ...n.metadata, resourceVersion: String(++version) } } as k8s.V1Node);
    const server = await listenSimulated((req, res) => {
        withBody(req, (raw) => {
            if (req.method === "GET") {
                reads++;
                return answer(res, 200, node);
            }
            if (req.method !== "PATCH") return answer(res, 405, failure(405, "MethodNotAllowed"));
            const patch = JSON.parse(raw) as Record<string, any>;
            patches.push(patch);
            if (interloper) {
                const write = interloper;
                interloper = undefined;
                store(write(node));
            }
            const rv = patch.metadata?.resourceVersion;
            if (rv !== undefined && rv !== node.metadata?.resourceVersion)
                return answer(res, 409, failure(409, "Conflict", "SIMULATED: the object has been modified"));
            const { resourceVersion: _rv, ...meta } = patch.metadata ?? {};
            return answer(res, 200, store(mergePatch(node, { ...patch, metadata: meta }) as k8s.V1Node));
        });
    });
    return {
        ...server,
        node: () => node,
        patches,
        reads: () => reads,
        beforeNextPatch: (w) => void (interloper = w),
    };
}

const MOVE = { to: "abc123", from: null, phase: "started" as const };

describe("the rollout's cordon and uncordon carry the unschedulable taint (SIMULATED API server)", () => {
    let sim: SimulatedNodeServer;
    afterEach(async () => sim?.close());

    it("the cordon adds the taint in the same write, and the uncordon removes it in the same write, other taints kept", async () => {
        sim = await simulatedNodeServer({ metadata: { name: "workers-1" }, spec: { taints: [OTHER] } });
        const cluster = clusterOn(sim.url);
        assert.equal(await cluster.startMove("workers-1", MOVE), true, "the cordon is the rollout's");
        assert.equal(sim.patches.length, 1, "one write");
        assert.equal(sim.node().spec?.unschedulable, true);
        assert.deepEqual(sim.node().spec?.taints, [OTHER, UNSCHEDULABLE_TAINT]);
        assert.equal(sim.node().metadata?.annotations?.[MARKS.cordonedAnnotation], MARKS.managedByValue);

        await cluster.writeNode("workers-1", { move: null, uncordon: true });
        assert.equal(sim.patches.length, 2, "one write");
        assert.equal(sim.node().spec?.unschedulable, undefined);
        assert.deepEqual(sim.node().spec?.taints, [OTHER]);
        assert.ok(
            sim.patches.every((p) => p.metadata.resourceVersion),
            "each made against the node as read",
        );
    });

    it("a move with nothing between cordon and restart: the memory, the cordon with its taint and the placement label in one write", async () => {
        sim = await simulatedNodeServer({ metadata: { name: "workers-1" }, spec: { taints: [OTHER] } });
        const cluster = clusterOn(sim.url);
        assert.equal(await cluster.startMove("workers-1", { ...MOVE, phase: "switching" }, "abc123"), true);
        assert.equal(sim.patches.length, 1, "one write");
        const n = sim.node();
        assert.deepEqual(
            {
                unschedulable: n.spec?.unschedulable,
                taints: n.spec?.taints,
                placement: n.metadata?.labels?.[MARKS.configLabel],
                move: JSON.parse(n.metadata?.annotations?.[MARKS.moveAnnotation] ?? "null"),
            },
            {
                unschedulable: true,
                taints: [OTHER, UNSCHEDULABLE_TAINT],
                placement: "abc123",
                move: { ...MOVE, phase: "switching" },
            },
        );
        assert.ok(sim.patches[0].metadata.resourceVersion, "made against the node as read");
    });

    it("a move reads its node once: the uncordon is built on the answer to the move's own last patch, still a compare-and-swap", async () => {
        sim = await simulatedNodeServer({ metadata: { name: "workers-1" }, spec: { taints: [OTHER] } });
        const cluster = clusterOn(sim.url);
        await cluster.startMove("workers-1", MOVE);
        await cluster.writeNode("workers-1", { move: { ...MOVE, phase: "switching" }, placement: "abc123" });
        const before = sim.node().metadata?.resourceVersion;
        await cluster.writeNode("workers-1", {
            move: null,
            uncordon: true,
            verified: { hash: "abc123", checks: "hooks" },
        });
        assert.equal(sim.reads(), 1, "read for the cordon only");
        assert.equal(sim.patches.length, 3);
        assert.equal(
            sim.patches[2].metadata.resourceVersion,
            before,
            "the uncordon is made against the node as last seen",
        );
        assert.deepEqual(sim.node().spec?.taints, [OTHER]);
        assert.equal(sim.node().spec?.unschedulable, undefined);
    });

    it("an uncordon leaves no empty taint list behind when the taint was the only one", async () => {
        sim = await simulatedNodeServer({ metadata: { name: "workers-1" } });
        const cluster = clusterOn(sim.url);
        await cluster.startMove("workers-1", MOVE);
        assert.deepEqual(sim.node().spec?.taints, [UNSCHEDULABLE_TAINT]);
        await cluster.writeNode("workers-1", { move: null, uncordon: true });
        assert.equal(sim.node().spec?.taints, undefined);
    });

    it("a taint someone adds between the uncordon's read and its write is read again, not lost", async () => {
        sim = await simulatedNodeServer({ metadata: { name: "workers-1" } });
        const cluster = clusterOn(sim.url);
        await cluster.startMove("workers-1", MOVE);
        sim.beforeNextPatch((n) => ({ ...n, spec: { ...n.spec, taints: [...(n.spec?.taints ?? []), OTHER] } }));
        await cluster.writeNode("workers-1", { move: null, uncordon: true });
        assert.deepEqual(sim.node().spec?.taints, [OTHER]);
        assert.equal(sim.patches.length, 3, "the cordon, the stale uncordon (409), the uncordon read again");
    });

    it("a node someone else cordoned is left cordoned with its taints as they were", async () => {
        sim = await simulatedNodeServer({
            metadata: { name: "workers-1" },
            spec: { unschedulable: true, taints: [UNSCHEDULABLE_TAINT] },
        });
        const cluster = clusterOn(sim.url);
        assert.equal(await cluster.startMove("workers-1", MOVE), false, "not the rollout's cordon");
        assert.equal(sim.patches[0].spec, undefined, "neither the cordon nor the taints are written");
        await cluster.writeNode("workers-1", { move: null });
        assert.equal(sim.node().spec?.unschedulable, true);
        assert.deepEqual(sim.node().spec?.taints, [UNSCHEDULABLE_TAINT]);
    });
});
