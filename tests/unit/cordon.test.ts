// The rollout's cordon carries the unschedulable taint with it. kube-controller-manager's node
// lifecycle controller keeps that taint in step with spec.unschedulable, with a read and a write of
// the node of its own after every cordon and uncordon; a cordon that already carries it leaves the
// controller nothing to do. The pure rule (core/nodes.ts) is tested on data; the cluster client's
// cordon and uncordon against a SIMULATED API server that serves one node and applies JSON merge
// patches and JSON Patches as the real one does (a failed `test` answered 422; a test of null on a
// missing member passes, as in the API server; nodePatch.e2e.test.ts holds the real one to that).
import assert from "node:assert/strict";
import type * as k8s from "@kubernetes/client-node";
import { applyPatch, getValueByPointer, type Operation } from "fast-json-patch";
import { taintsWhenCordoned, UNSCHEDULABLE_TAINT } from "../../components/core/nodes.js";
import { MARKS } from "../../components/core/plan.js";
import { asSeen, patchAsRead, type PatchOperation } from "../../components/cluster/nodePatch.js";
import type { KubeProxyCluster } from "../../components/cluster/kubeProxy.js";
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

/**
 * A JSON Patch (RFC 6902) applied as the API server applies application/json-patch+json: the whole
 * patch or nothing; a test of null on a missing member (its parent there) passes, as the server's
 * JSON Patch library has it; any other failed operation refuses the patch (the server's 422).
 */
function jsonPatch(target: k8s.V1Node, ops: Operation[]): k8s.V1Node | undefined {
    const parentOf = (path: string) => path.slice(0, path.lastIndexOf("/"));
    const kept = ops.filter((o) => {
        if (o.op !== "test" || o.value !== null) return true;
        const here = getValueByPointer(target, o.path) as unknown;
        return !(
            here === undefined &&
            (parentOf(o.path) === "" || getValueByPointer(target, parentOf(o.path)) !== undefined)
        );
    });
    try {
        return applyPatch(structuredClone(target), kept, true, false).newDocument;
    } catch {
        return undefined;
    }
}

interface SimulatedNodeServer extends SimulatedServer {
    node: () => k8s.V1Node;
    /** the bodies of the patches, in order: a merge patch (an object) or a JSON Patch (a list of operations) */
    patches: any[];
    /** how many JSON Patches were refused (422) */
    refused: () => number;
    /** how many times the node was read, alone or in a list */
    reads: () => number;
    /** runs once, when the next patch arrives and before it is judged: a write that lands in between */
    beforeNextPatch: (write: (n: k8s.V1Node) => k8s.V1Node) => void;
    /** every patch from now on is answered with this status code (e.g. 403: the identity may not patch nodes) */
    refusePatches: (code: number) => void;
}

/** SIMULATED API server: one node, read (alone or in a list), merge-patched and JSON-patched. */
async function simulatedNodeServer(initial: k8s.V1Node): Promise<SimulatedNodeServer> {
    let version = 1;
    // the API server always has a node's spec, {} when empty
    let node: k8s.V1Node = {
        ...initial,
        metadata: { ...initial.metadata, resourceVersion: "1" },
        spec: initial.spec ?? {},
    };
    let interloper: ((n: k8s.V1Node) => k8s.V1Node) | undefined;
    let refusal: number | undefined;
    const patches: any[] = [];
    let reads = 0;
    let refused = 0;
    const store = (n: k8s.V1Node) =>
        (node = { ...n, metadata: { ...n.metadata, resourceVersion: String(++version) } } as k8s.V1Node);
    const server = await listenSimulated((req, res) => {
        withBody(req, (raw) => {
            if (req.method === "GET") {
                reads++;
                if (req.url?.startsWith("/api/v1/nodes?") || req.url === "/api/v1/nodes")
                    return answer(res, 200, { kind: "NodeList", metadata: {}, items: [node] });
                return answer(res, 200, node);
            }
            if (req.method !== "PATCH") return answer(res, 405, failure(405, "MethodNotAllowed"));
            const patch = JSON.parse(raw) as any;
            patches.push(patch);
            if (refusal) return answer(res, refusal, failure(refusal, "Forbidden", "SIMULATED: patch refused"));
            if (interloper) {
                const write = interloper;
                interloper = undefined;
                store(write(node));
            }
            if (req.headers["content-type"] === "application/json-patch+json") {
                const patched = jsonPatch(node, patch as Operation[]);
                if (!patched) {
                    refused++;
                    return answer(res, 422, failure(422, "Invalid", "SIMULATED: the JSON Patch does not apply"));
                }
                return answer(res, 200, store(patched));
            }
            return answer(res, 200, store(mergePatch(node, patch) as k8s.V1Node));
        });
    });
    return {
        ...server,
        node: () => node,
        patches,
        refused: () => refused,
        reads: () => reads,
        beforeNextPatch: (w) => void (interloper = w),
        refusePatches: (code) => void (refusal = code),
    };
}

/** whether a patch is a JSON Patch whose tests hold the node's cordon as read */
function madeAgainstTheNodeAsRead(patch: unknown): boolean {
    return (
        Array.isArray(patch) &&
        (patch as PatchOperation[]).some((o) => o.op === "test" && o.path === "/spec/unschedulable")
    );
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
        assert.equal(
            sim.node().metadata?.annotations?.[MARKS.cordonedAnnotation],
            undefined,
            "the cordon mark removed",
        );
        assert.ok(sim.patches.every(madeAgainstTheNodeAsRead), "each made against the node as read");
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
        assert.ok(madeAgainstTheNodeAsRead(sim.patches[0]), "made against the node as read");
    });

    it("a move reads its node once: the uncordon is built on the answer to the move's own last patch, still made against the node as read", async () => {
        sim = await simulatedNodeServer({ metadata: { name: "workers-1" }, spec: { taints: [OTHER] } });
        const cluster = clusterOn(sim.url);
        await cluster.startMove("workers-1", MOVE);
        await cluster.writeNode("workers-1", { move: { ...MOVE, phase: "switching" }, placement: "abc123" });
        await cluster.writeNode("workers-1", {
            move: null,
            uncordon: true,
            verified: { hash: "abc123", checks: "hooks" },
        });
        assert.equal(sim.reads(), 1, "read for the cordon only");
        assert.equal(sim.patches.length, 3);
        assert.ok(madeAgainstTheNodeAsRead(sim.patches[2]), "the uncordon is made against the node as last seen");
        assert.equal(sim.refused(), 0);
        assert.deepEqual(sim.node().spec?.taints, [OTHER]);
        assert.equal(sim.node().spec?.unschedulable, undefined);
        assert.equal(
            sim.node().metadata?.labels?.[MARKS.configLabel],
            "abc123",
            "the placement written by the middle write",
        );
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
        assert.equal(sim.patches.length, 3, "the cordon, the stale uncordon (refused), the uncordon read again");
        assert.equal(sim.refused(), 1);
        assert.equal(sim.reads(), 2, "read for the cordon, and again after the refusal");
    });

    it("a node someone else cordoned is left cordoned with its taints as they were", async () => {
        sim = await simulatedNodeServer({
            metadata: { name: "workers-1" },
            spec: { unschedulable: true, taints: [UNSCHEDULABLE_TAINT] },
        });
        const cluster = clusterOn(sim.url);
        assert.equal(await cluster.startMove("workers-1", MOVE), false, "not the rollout's cordon");
        assert.ok(
            !sim.patches[0].some((o: PatchOperation) => o.op !== "test" && o.path.startsWith("/spec")),
            "neither the cordon nor the taints are written",
        );
        await cluster.writeNode("workers-1", { move: null });
        assert.equal(sim.node().spec?.unschedulable, true);
        assert.deepEqual(sim.node().spec?.taints, [UNSCHEDULABLE_TAINT]);
    });

    /** A node with one taint of its own, listed by the tool's client (as a pool's list does): the client's view of it. */
    async function listedNode(): Promise<KubeProxyCluster> {
        sim = await simulatedNodeServer({
            metadata: { name: "workers-1", annotations: {} },
            spec: { taints: [OTHER] },
        });
        const cluster = clusterOn(sim.url);
        await cluster.nodes();
        return cluster;
    }

    it("a write elsewhere on the node between the pool's list and the cordon (a kubelet's status report) does not refuse the cordon: one patch, no read beyond the list", async () => {
        const cluster = await listedNode();
        sim.beforeNextPatch((n) => ({ ...n, status: { conditions: [{ type: "Ready", status: "True" }] } }));
        assert.equal(await cluster.startMove("workers-1", MOVE), true);
        assert.deepEqual(
            { patches: sim.patches.length, refused: sim.refused(), reads: sim.reads() },
            { patches: 1, refused: 0, reads: 1 },
        );
        assert.equal(sim.node().spec?.unschedulable, true);
        assert.deepEqual(sim.node().spec?.taints, [OTHER, UNSCHEDULABLE_TAINT]);
        assert.deepEqual(sim.node().status?.conditions, [{ type: "Ready", status: "True" }], "the status report kept");
    });

    it("a cordon someone makes (kubectl cordon: spec.unschedulable only) between the pool's list and the rollout's cordon is read again and not taken for the rollout's; the taints as they were", async () => {
        const cluster = await listedNode();
        sim.beforeNextPatch((n) => ({ ...n, spec: { ...n.spec, unschedulable: true } }));
        assert.equal(await cluster.startMove("workers-1", MOVE), false, "not the rollout's cordon");
        assert.deepEqual({ refused: sim.refused(), reads: sim.reads() }, { refused: 1, reads: 2 });
        assert.equal(sim.node().metadata?.annotations?.[MARKS.cordonedAnnotation], undefined, "no cordon mark");
        assert.deepEqual(sim.node().spec, { unschedulable: true, taints: [OTHER] });
        assert.ok(sim.node().metadata?.annotations?.[MARKS.moveAnnotation], "the move's memory written");
    });

    it("a node the rollout cordoned already (a run resumed after it stopped mid-move) is taken as the rollout's cordon, and stays cordoned", async () => {
        sim = await simulatedNodeServer({
            metadata: { name: "workers-1", annotations: { [MARKS.cordonedAnnotation]: MARKS.managedByValue } },
            spec: { unschedulable: true, taints: [UNSCHEDULABLE_TAINT] },
        });
        const cluster = clusterOn(sim.url);
        assert.equal(await cluster.startMove("workers-1", MOVE), true, "the rollout's own cordon");
        assert.equal(sim.node().spec?.unschedulable, true);
        assert.deepEqual(sim.node().spec?.taints, [UNSCHEDULABLE_TAINT]);
        assert.deepEqual(JSON.parse(sim.node().metadata?.annotations?.[MARKS.moveAnnotation] ?? "null"), MOVE);
    });

    it("an uncordon of a node someone uncordoned already (kubectl uncordon; the controller took the taint off) leaves it schedulable and removes the rollout's mark", async () => {
        sim = await simulatedNodeServer({
            metadata: { name: "workers-1", annotations: { [MARKS.cordonedAnnotation]: MARKS.managedByValue } },
            spec: {},
        });
        const cluster = clusterOn(sim.url);
        await cluster.writeNode("workers-1", { move: null, uncordon: true });
        assert.equal(sim.refused(), 0);
        assert.deepEqual(sim.node().spec, {}, "not cordoned, no taints written");
        assert.equal(sim.node().metadata?.annotations?.[MARKS.cordonedAnnotation], undefined);
    });

    it("an uncordon of a node someone else cordoned (no rollout mark: an answer lost, a cordon made since the listing) keeps that cordon and its taint", async () => {
        sim = await simulatedNodeServer({
            metadata: { name: "workers-1" },
            spec: { unschedulable: true, taints: [UNSCHEDULABLE_TAINT, OTHER] },
        });
        const cluster = clusterOn(sim.url);
        await cluster.writeNode("workers-1", { move: null, uncordon: true });
        assert.equal(sim.refused(), 0);
        assert.deepEqual(sim.node().spec, { unschedulable: true, taints: [UNSCHEDULABLE_TAINT, OTHER] });
    });

    it("a node whose taints change before every attempt: the cordon gives up after 5 refusals (422), failing with the server's reason", async () => {
        sim = await simulatedNodeServer({ metadata: { name: "workers-1" } });
        const cluster = clusterOn(sim.url);
        let churn = 0;
        // a controller that writes the node's taints again and again
        const retaint = (n: k8s.V1Node): k8s.V1Node => {
            sim.beforeNextPatch(retaint);
            return { ...n, spec: { ...n.spec, taints: [{ ...OTHER, value: `gpu-${++churn}` }] } };
        };
        sim.beforeNextPatch(retaint);
        await assert.rejects(cluster.startMove("workers-1", MOVE), /the JSON Patch does not apply/);
        assert.deepEqual({ patches: sim.patches.length, refused: sim.refused() }, { patches: 5, refused: 5 });
        assert.equal(sim.node().spec?.unschedulable, undefined, "not cordoned");
    });

    it("a patch refused for another reason (403: the identity may not patch nodes) fails at once, not tried again", async () => {
        sim = await simulatedNodeServer({ metadata: { name: "workers-1" } });
        const cluster = clusterOn(sim.url);
        sim.refusePatches(403);
        await assert.rejects(cluster.startMove("workers-1", MOVE), /patch refused/);
        assert.equal(sim.patches.length, 1);
    });

    it("the verification, the move's memory and the placement are one merge patch with no read of the node: a cordon someone makes meanwhile does not refuse it", async () => {
        sim = await simulatedNodeServer({ metadata: { name: "workers-1" } });
        const cluster = clusterOn(sim.url);
        sim.beforeNextPatch((n) => ({ ...n, spec: { ...n.spec, unschedulable: true } }));
        await cluster.writeNode("workers-1", {
            move: { ...MOVE, phase: "switching" },
            placement: "abc123",
            verified: { hash: "abc123", checks: "hooks" },
        });
        assert.deepEqual(
            {
                patches: sim.patches.length,
                refused: sim.refused(),
                reads: sim.reads(),
                asRead: madeAgainstTheNodeAsRead(sim.patches[0]),
            },
            { patches: 1, refused: 0, reads: 0, asRead: false },
        );
        // the rollout's memory of the node, as the next run reads it
        const [{ placement, verified, verifiedAt, checks, move, unschedulable, cordonedByRollout }] =
            await cluster.nodes();
        assert.deepEqual(
            { placement, verified, checks, move, unschedulable, cordonedByRollout },
            {
                placement: "abc123",
                verified: "abc123",
                checks: "hooks",
                move: { ...MOVE, phase: "switching" },
                unschedulable: true,
                cordonedByRollout: false,
            },
        );
        assert.match(verifiedAt ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    });

    it("a node with no annotations and no labels at all gets them whole, tested still absent", async () => {
        sim = await simulatedNodeServer({ metadata: { name: "workers-1" } });
        const cluster = clusterOn(sim.url);
        assert.equal(await cluster.startMove("workers-1", MOVE, "abc123"), true);
        assert.equal(sim.refused(), 0);
        assert.equal(sim.node().metadata?.annotations?.[MARKS.cordonedAnnotation], MARKS.managedByValue);
        assert.equal(sim.node().metadata?.labels?.[MARKS.configLabel], "abc123");
        assert.deepEqual(
            sim.patches[0].filter((o: PatchOperation) => o.op === "test").map((o: PatchOperation) => [o.path, o.value]),
            [
                ["/spec/unschedulable", null],
                ["/metadata/annotations", null],
                ["/spec/taints", null],
                ["/metadata/labels", null],
            ],
        );
    });
});

describe("the rollout's memory of each node, as the cluster client lists it (SIMULATED API server)", () => {
    let sim: SimulatedNodeServer | undefined;
    afterEach(async () => sim?.close());
    /** what nodes() says of one node with these annotations and this cordon */
    async function listed(annotations: Record<string, string>, unschedulable?: true) {
        await sim?.close();
        sim = await simulatedNodeServer({ metadata: { name: "workers-1", annotations }, spec: { unschedulable } });
        const [n] = await clusterOn(sim.url).nodes();
        return n;
    }
    const mark = { [MARKS.cordonedAnnotation]: MARKS.managedByValue };

    it("a cordon is the rollout's only when the node is cordoned and carries the rollout's mark", async () => {
        const seen = [];
        for (const [annotations, unschedulable] of [
            [mark, true],
            [{}, true],
            [mark, undefined],
            [{}, undefined],
        ] as const) {
            const n = await listed(annotations, unschedulable);
            seen.push([n.unschedulable, n.cordonedByRollout]);
        }
        assert.deepEqual(seen, [
            [true, true],
            [true, false],
            [false, false],
            [false, false],
        ]);
    });

    it("a node never verified nor moved has no verification and no move", async () => {
        const n = await listed({});
        assert.deepEqual(
            { verified: n.verified, verifiedAt: n.verifiedAt, checks: n.checks, move: n.move, placement: n.placement },
            { verified: undefined, verifiedAt: undefined, checks: undefined, move: undefined, placement: null },
        );
    });

    it("reads the move's memory the rollout wrote, and ignores one that is not its (not JSON, or lacking to, from or a phase)", async () => {
        const ours = { to: "abc123", from: "def456", phase: "switching" };
        assert.deepEqual((await listed({ [MARKS.moveAnnotation]: JSON.stringify(ours) })).move, ours);
        // the bridge a move made is read back, so the next run deletes it
        const bridged = { ...ours, bridge: "kpm-bridge" };
        assert.deepEqual((await listed({ [MARKS.moveAnnotation]: JSON.stringify(bridged) })).move, bridged);
        const notOurs = [
            "",
            "not json",
            "null",
            '"switching"',
            "{}",
            '{"phase":"switching"}',
            '{"to":"abc123"}',
            '{"to":"abc123","from":null}',
            '{"from":null,"phase":"switching"}',
            '{"to":"abc123","from":null,"phase":3}',
        ];
        const moves = [];
        for (const text of notOurs) moves.push((await listed({ [MARKS.moveAnnotation]: text })).move);
        assert.deepEqual(
            moves,
            notOurs.map(() => undefined),
        );
    });
});

describe("a node's patch made against the node as read (cluster/nodePatch.ts)", () => {
    // built in each test, not when the file loads: the mutation run counts what each test reaches
    const readNode = () =>
        asSeen({
            metadata: { annotations: { [MARKS.moveAnnotation]: "{}", other: "x" }, labels: { pool: "workers" } },
            spec: { taints: [{ ...OTHER, timeAdded: new Date("2026-12-03T05:00:00Z") }] },
        });
    /** a node the rollout cordoned, with nothing else of the rollout's on it */
    const cordoned = (annotations?: Record<string, string>) =>
        asSeen({ metadata: { annotations }, spec: { unschedulable: true, taints: [UNSCHEDULABLE_TAINT] } });
    const esc = (k: string) => k.replace(/~/g, "~0").replace(/\//g, "~1");

    it("keeps of the node only the rollout's own annotations and label, and a taint's time as the API server writes it", () => {
        assert.deepEqual(readNode(), {
            unschedulable: false,
            taints: [{ ...OTHER, timeAdded: "2026-12-03T05:00:00Z" }],
            annotations: { [MARKS.moveAnnotation]: "{}" },
            labels: {},
        });
    });

    it("a cordon tests the cordon, the rollout's cordon mark and the taints as read, then writes them; keys escaped as JSON Pointer steps", () => {
        const ops = patchAsRead({ move: null, cordon: true, placement: "abc123" }, readNode());
        assert.deepEqual(ops, [
            { op: "test", path: "/spec/unschedulable", value: null },
            { op: "test", path: `/metadata/annotations/${esc(MARKS.cordonedAnnotation)}`, value: null },
            { op: "test", path: "/spec/taints", value: [{ ...OTHER, timeAdded: "2026-12-03T05:00:00Z" }] },
            {
                op: "add",
                path: "/spec/taints",
                value: [{ ...OTHER, timeAdded: "2026-12-03T05:00:00Z" }, UNSCHEDULABLE_TAINT],
            },
            { op: "add", path: "/spec/unschedulable", value: true },
            { op: "remove", path: `/metadata/annotations/${esc(MARKS.moveAnnotation)}` },
            { op: "add", path: `/metadata/annotations/${esc(MARKS.cordonedAnnotation)}`, value: MARKS.managedByValue },
            { op: "add", path: `/metadata/labels/${esc(MARKS.configLabel)}`, value: "abc123" },
        ]);
    });

    it("an annotation to remove that was not there as read is tested still absent, not removed (a remove of a missing key refuses the patch)", () => {
        const ops = patchAsRead({ verified: { hash: null, checks: "" } }, readNode());
        assert.deepEqual(
            ops.filter((o) => o.path.includes("verified") || o.path.includes("checks")).map((o) => [o.op, o.value]),
            [
                ["test", null],
                ["test", null],
            ],
        );
    });

    it("an uncordon writes only the cordon, its taint and its mark: the move's memory, the verification and the placement are left alone", () => {
        const ops = patchAsRead({ uncordon: true }, cordoned({ [MARKS.cordonedAnnotation]: MARKS.managedByValue }));
        const mark = `/metadata/annotations/${esc(MARKS.cordonedAnnotation)}`;
        assert.deepEqual(ops, [
            { op: "test", path: "/spec/unschedulable", value: true },
            { op: "test", path: mark, value: MARKS.managedByValue },
            { op: "test", path: "/spec/taints", value: [UNSCHEDULABLE_TAINT] },
            { op: "remove", path: "/spec/taints" },
            { op: "remove", path: "/spec/unschedulable" },
            { op: "remove", path: mark },
        ]);
    });

    it("an uncordon of a node with no annotations at all writes no annotations (nothing to remove)", () => {
        const ops = patchAsRead({ move: null, uncordon: true }, cordoned());
        assert.deepEqual(
            ops.filter((o) => o.path.startsWith("/metadata")),
            [{ op: "test", path: "/metadata/annotations", value: null }],
        );
    });

    it("a cordon of a node cordoned already writes no cordon and removes none", () => {
        const ops = patchAsRead({ cordon: true }, cordoned());
        assert.deepEqual(
            ops.filter((o) => o.path.startsWith("/spec")),
            [{ op: "test", path: "/spec/unschedulable", value: true }],
        );
    });
});
