// End to end on the reference cluster's SIMULATED kubelet (kwok) and the REAL API server: kwok
// finalizes a deleted pod with one DELETE, as a kubelet does, so the bench's request counts
// (apiserver_request_total) do not carry a second DELETE per pod that a real node would not send
// (scripts/referenceCluster.ts oneDeletePerPod).
import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { apiRequestTotals } from "../../scripts/apiRequests.js";
import type { ClusterState } from "../../scripts/referenceCluster.js";
import { clients, startCluster, stopCluster } from "./support.js";

/** DELETEs of pods the API server has answered, by status code. */
function podDeletes(kc: k8s.KubeConfig): Promise<Map<string, number>> {
    return apiRequestTotals(kc, (l) =>
        l.verb === "DELETE" && l.resource === "pods" && !l.subresource ? l.code : undefined,
    );
}

describe("@e2e the reference cluster's SIMULATED kubelet (kwok) on the real API server", function () {
    this.timeout(120_000);
    let cluster: ClusterState | undefined;

    before(async () => {
        cluster = await startCluster({ nodes: "kwok", pools: [["workers", 2]] });
    });
    after(async () => stopCluster(cluster));

    it("finalizes each deleted kube-proxy pod with one DELETE: none is answered 404", async () => {
        const { kc, core } = clients(cluster!);
        const namespace = "kube-system";
        const { items } = await core.listNamespacedPod({ namespace, labelSelector: "k8s-app=kube-proxy" });
        assert.equal(items.length, 2, "the installer's kube-proxy runs on both nodes");
        const before = await podDeletes(kc);
        for (const p of items) await core.deleteNamespacedPod({ name: p.metadata!.name!, namespace });
        for (const p of items) {
            const until = Date.now() + 60_000;
            for (;;) {
                try {
                    await core.readNamespacedPod({ name: p.metadata!.name!, namespace });
                } catch (e) {
                    if ((e as { code?: number }).code === 404) break;
                    throw e;
                }
                assert.ok(Date.now() < until, `${p.metadata!.name} was not removed within 60 s`);
                await new Promise((r) => setTimeout(r, 200));
            }
        }
        // kwok's second DELETE, when it sends one, follows its first by milliseconds
        await new Promise((r) => setTimeout(r, 2000));
        const after = await podDeletes(kc);
        const delta = (code: string) => (after.get(code) ?? 0) - (before.get(code) ?? 0);
        assert.deepEqual(
            { answered200: delta("200"), answered404: delta("404") },
            { answered200: 4, answered404: 0 },
            "two deletions of ours and kwok's one finalizing DELETE per pod",
        );
    });
});
