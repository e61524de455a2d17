// End to end against the REAL API server (kube-apiserver 1.37 of the reference cluster; the nodes
// are SIMULATED by kwok, which does not matter here: only the Node objects are written). The
// rollout's cordon and uncordon are JSON Patches whose tests hold what they depend on
// (cluster/nodePatch.ts): this holds the server to the JSON Patch semantics they rely on, and shows
// that a write elsewhere on the node between the pool's list and the cordon (a status report, another
// agent's label) costs nothing, while a cordon or a taint someone else writes in between is read
// again and kept. The node list is read in protobuf (cluster/nodeProtobuf.ts): this also holds its
// decoding to the server's own JSON, on the nodes and on a refusal.
import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { KubeProxyCluster } from "../../components/cluster/kubeProxy.js";
import { namesFor } from "../../components/core/facts.js";
import { UNSCHEDULABLE_TAINT } from "../../components/core/nodes.js";
import { MARKS } from "../../components/core/plan.js";
import type { ClusterState } from "../../scripts/referenceCluster.js";
import { clients, serviceAccountKubeconfig, startCluster, stopCluster } from "./support.js";

const JSON_PATCH = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch);
const STRATEGIC = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.StrategicMergePatch);
const MOVE = { to: "abc123", from: null, phase: "started" as const };
const OTHER = { key: "dedicated", value: "gpu", effect: "NoSchedule" };

/** The tool's cluster client as it reads a server that has no protobuf: the node list in JSON too. */
class JsonOnlyCluster extends KubeProxyCluster {
    protected override api<T extends k8s.ApiType>(kind: new (config: k8s.Configuration) => T): T {
        return super.api(kind, []);
    }
}

describe("@e2e the rollout's node list and node patches on the real API server (SIMULATED kwok nodes)", function () {
    this.timeout(120_000);
    let cluster: ClusterState | undefined;
    let core: k8s.CoreV1Api;

    before(async () => {
        cluster = await startCluster({ nodes: "kwok", pools: [["workers", 5]] });
        ({ core } = clients(cluster));
    });
    after(async () => stopCluster(cluster));

    /** The tool's cluster client, counting its reads of single nodes (a refused patch is followed by one). */
    function tool(): { cluster: KubeProxyCluster; reads: () => number } {
        const kc = new k8s.KubeConfig();
        kc.loadFromFile(cluster!.kubeconfig);
        const c = new KubeProxyCluster(kc, namesFor("kubeadm"));
        let reads = 0;
        const read = c.node.bind(c);
        c.node = (name: string) => {
            reads++;
            return read(name);
        };
        return { cluster: c, reads: () => reads };
    }

    /** A kubelet's status report on the node: its Ready condition with a new heartbeat time. */
    async function statusReport(node: string): Promise<void> {
        await core.patchNodeStatus(
            {
                name: node,
                body: { status: { conditions: [{ type: "Ready", status: "True", lastHeartbeatTime: new Date() }] } },
            },
            STRATEGIC,
        );
    }

    async function refusal(node: string, ops: unknown[]): Promise<number | undefined> {
        try {
            await core.patchNode({ name: node, body: ops }, JSON_PATCH);
            return undefined;
        } catch (e) {
            return (e as { code?: number }).code;
        }
    }

    it("the server's JSON Patch: a test of null passes on a missing member and fails on a present one or a missing parent (422)", async () => {
        assert.equal(await refusal("workers-1", [{ op: "test", path: "/spec/unschedulable", value: null }]), undefined);
        assert.equal(
            await refusal("workers-1", [{ op: "test", path: "/metadata/annotations/absent~1key", value: null }]),
            undefined,
        );
        assert.equal(await refusal("workers-1", [{ op: "test", path: "/spec/nothing/here", value: null }]), 422);
        assert.equal(
            await refusal("workers-1", [{ op: "test", path: "/metadata/labels/pool", value: null }]),
            422,
            "a present label",
        );
        assert.equal(
            await refusal("workers-1", [
                { op: "test", path: "/metadata/labels/pool", value: "workers" },
                { op: "remove", path: "/metadata/annotations/absent~1key" },
            ]),
            422,
            "a remove of a missing key refuses the whole patch",
        );
    });

    it("a status report and another agent's label between the pool's list and the cordon: the cordon lands at once, with no read; the uncordon too", async () => {
        const { cluster: c, reads } = tool();
        await c.nodes();
        await statusReport("workers-2");
        await core.patchNode({ name: "workers-2", body: { metadata: { labels: { "other-agent": "x" } } } }, STRATEGIC);
        assert.equal(await c.startMove("workers-2", MOVE), true, "the rollout's cordon");
        await statusReport("workers-2");
        await c.writeNode("workers-2", { move: null, uncordon: true });
        assert.equal(reads(), 0, "no node read after the list");
        const n = await core.readNode({ name: "workers-2" });
        assert.equal(n.spec?.unschedulable, undefined);
        assert.equal(n.metadata?.labels?.["other-agent"], "x");
        assert.equal(n.metadata?.annotations?.[MARKS.cordonedAnnotation], undefined);
        assert.ok(!(n.spec?.taints ?? []).some((t) => t.key === UNSCHEDULABLE_TAINT.key));
    });

    it("kubectl cordon between the pool's list and the rollout's cordon: read again, not taken for the rollout's, left cordoned", async () => {
        const { cluster: c, reads } = tool();
        await c.nodes();
        await core.patchNode({ name: "workers-3", body: { spec: { unschedulable: true } } }, STRATEGIC);
        assert.equal(await c.startMove("workers-3", MOVE), false, "not the rollout's cordon");
        assert.equal(reads(), 1, "read again once");
        const n = await core.readNode({ name: "workers-3" });
        assert.equal(n.spec?.unschedulable, true);
        assert.equal(n.metadata?.annotations?.[MARKS.cordonedAnnotation], undefined, "no cordon mark");
        assert.ok(n.metadata?.annotations?.[MARKS.moveAnnotation], "the move's memory written");
    });

    it("a taint someone adds between the rollout's cordon and its uncordon: read again and kept, the unschedulable taint removed", async () => {
        const { cluster: c, reads } = tool();
        await c.nodes();
        assert.equal(await c.startMove("workers-4", MOVE), true);
        const taints = (await core.readNode({ name: "workers-4" })).spec?.taints ?? [];
        await core.patchNode({ name: "workers-4", body: { spec: { taints: [...taints, OTHER] } } }, STRATEGIC);
        await c.writeNode("workers-4", { move: null, uncordon: true });
        assert.equal(reads(), 1, "read again once");
        const n = await core.readNode({ name: "workers-4" });
        assert.equal(n.spec?.unschedulable, undefined);
        assert.ok(
            n.spec?.taints?.some((t) => t.key === OTHER.key && t.value === OTHER.value),
            "their taint kept",
        );
        assert.ok(!n.spec?.taints?.some((t) => t.key === UNSCHEDULABLE_TAINT.key), "the unschedulable taint removed");
    });

    /** workers-5 as a node with what the protobuf decoding must get right: timed taints, a taint with no value, an empty label. */
    async function awkwardNode(): Promise<void> {
        await core.patchNode(
            {
                name: "workers-5",
                body: {
                    metadata: {
                        labels: { "empty-label": "" },
                        annotations: { [MARKS.verifiedAnnotation]: "abc123@x" },
                    },
                    spec: {
                        taints: [
                            {
                                key: "example.com/timed",
                                value: "yes",
                                effect: "NoExecute",
                                timeAdded: new Date(1_790_000_000_000),
                            },
                            { key: "example.com/no-value", effect: "PreferNoSchedule" },
                        ],
                    },
                },
            },
            STRATEGIC,
        );
    }

    it("the node list in protobuf reads every node as the same list in JSON does", async () => {
        await awkwardNode();
        const viaProtobuf = await tool().cluster.nodes();
        const viaJson = await new JsonOnlyCluster(clients(cluster!).kc, namesFor("kubeadm")).nodes();
        assert.equal(viaProtobuf.length, 5);
        assert.deepEqual(viaProtobuf, viaJson);
        const awkward = viaProtobuf.find((n) => n.name === "workers-5")!;
        assert.equal(awkward.labels["empty-label"], "");
        assert.equal(awkward.verified, "abc123");
        assert.equal(awkward.kernelVersion, viaJson.find((n) => n.name === "workers-5")!.kernelVersion);
    });

    it("a node with timed taints and a taint with no value, listed in protobuf: cordoned and uncordoned at once, with no read, its taints kept", async () => {
        await awkwardNode();
        const { cluster: c, reads } = tool();
        await c.nodes();
        assert.equal(await c.startMove("workers-5", MOVE), true, "the rollout's cordon");
        await c.writeNode("workers-5", { move: null, uncordon: true });
        assert.equal(reads(), 0, "the taints tested as listed: no node read");
        const n = await core.readNode({ name: "workers-5" });
        assert.equal(n.spec?.unschedulable, undefined);
        assert.deepEqual(
            n.spec?.taints?.map((t) => t.key),
            ["example.com/timed", "example.com/no-value"],
        );
    });

    it("a node list refused in protobuf (no permission) fails naming the server's reason and message", async () => {
        const kc = new k8s.KubeConfig();
        kc.loadFromString(await serviceAccountKubeconfig(cluster!, "kpm-no-permission"));
        await assert.rejects(
            new KubeProxyCluster(kc, namesFor("kubeadm")).nodes(),
            /403 Forbidden: nodes is forbidden: User "system:serviceaccount:kube-system:kpm-no-permission" cannot list resource "nodes"/,
        );
    });
});
