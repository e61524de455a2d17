// scripts/referenceCluster.ts: the kwok nodes' lease duration grows with the node count.
import assert from "node:assert/strict";
import { nodeLeaseSeconds } from "../../scripts/referenceCluster.js";

describe("the reference cluster's SIMULATED (kwok) node leases", () => {
    it("are kubelet's 40 s up to 1,000 nodes, then 40 ms per node with the node lifecycle controller's grace period raised by kubelet's ratio", () => {
        assert.deepEqual(nodeLeaseSeconds(6), { lease: 40 });
        assert.deepEqual(nodeLeaseSeconds(1000), { lease: 40 });
        assert.deepEqual(nodeLeaseSeconds(5000), { lease: 200, grace: 250 });
    });
});
