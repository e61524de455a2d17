// scripts/referenceCluster.ts: the kwok nodes' lease duration grows with the node count; kwok's
// pod-delete stage finalizes a pod once.
import assert from "node:assert/strict";
import * as YAML from "yaml";
import { nodeLeaseSeconds, oneDeletePerPod } from "../../scripts/referenceCluster.js";

describe("the reference cluster's SIMULATED (kwok) node leases", () => {
    it("are kubelet's 40 s up to 1,000 nodes, then 40 ms per node with the node lifecycle controller's grace period raised by kubelet's ratio", () => {
        assert.deepEqual(nodeLeaseSeconds(6), { lease: 40 });
        assert.deepEqual(nodeLeaseSeconds(1000), { lease: 40 });
        assert.deepEqual(nodeLeaseSeconds(5000), { lease: 200, grace: 250 });
    });
});

describe("the reference cluster's SIMULATED (kwok) pod-delete stage", () => {
    // the shape of kwok v0.8.0's kustomize/stage/pod/fast/pod-delete.yaml
    const shipped = [
        "apiVersion: kwok.x-k8s.io/v1alpha1",
        "kind: Stage",
        "metadata:",
        "  name: pod-delete",
        "spec:",
        "  resourceRef:",
        "    apiGroup: v1",
        "    kind: Pod",
        "  selector:",
        "    matchExpressions:",
        "    - key: '.metadata.deletionTimestamp'",
        "      operator: 'Exists'",
        "  next:",
        "    delete: true",
    ].join("\n");

    it("matches a pod being deleted only while its grace period is not yet 0, so kwok's own DELETE does not trigger a second one", () => {
        const stage = YAML.parse(oneDeletePerPod(shipped)) as {
            spec: { selector: { matchExpressions: unknown[] }; next: unknown };
        };
        assert.deepEqual(stage.spec.selector.matchExpressions, [
            { key: ".metadata.deletionTimestamp", operator: "Exists" },
            { key: ".metadata.deletionGracePeriodSeconds | tostring", operator: "NotIn", values: ["0"] },
        ]);
        assert.deepEqual(stage.spec.next, { delete: true }, "what the stage does is unchanged");
    });

    it("refuses a stage of another shape (a kwok upgrade) instead of writing it unchanged", () => {
        assert.throws(() => oneDeletePerPod(shipped.replace("delete: true", "delete: false")), /pod-delete stage/);
        assert.throws(
            () => oneDeletePerPod(shipped.replace("name: pod-delete", "name: pod-ready")),
            /pod-delete stage/,
        );
    });
});
