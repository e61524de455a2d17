// scripts/serviceLoad.ts: the reference cluster's production-shaped Service load, as objects.
import assert from "node:assert/strict";
import {
    checkServiceLoad,
    DEFAULT_NODE_PORTS,
    loadObjects,
    nodePortCount,
    nodePortRangeFlag,
} from "../../scripts/serviceLoad.js";

describe("the reference cluster's Service load", () => {
    it("gives each Service its own EndpointSlice with the asked number of distinct, ready endpoints", () => {
        const seen = new Set<string>();
        for (const i of [0, 1, 2, 9_999, 44_999]) {
            const { service, slice } = loadObjects(i, 10);
            assert.equal(service.spec?.selector, undefined, "selectorless: the slices are the only endpoints");
            assert.equal(slice.metadata?.labels?.["kubernetes.io/service-name"], service.metadata?.name);
            assert.equal(slice.endpoints.length, 10);
            for (const e of slice.endpoints) {
                assert.equal(e.conditions?.ready, true);
                const [a] = e.addresses;
                assert.match(a, /^10\.(12[89]|1[3-8][0-9]|19[01])\.\d+\.\d+$/, "inside 10.128.0.0/10");
                assert.ok(!seen.has(a), `${a} given twice`);
                seen.add(a);
            }
            assert.equal(slice.ports?.[0].port, service.spec?.ports?.[0].targetPort);
        }
        assert.equal(loadObjects(7, 10).service.metadata?.name, "load-00007");
        assert.equal(loadObjects(0, 10).slice.endpoints[0].addresses[0], "10.128.0.0");
        assert.equal(loadObjects(1, 10).slice.endpoints[0].addresses[0], "10.128.0.10");
        assert.equal(loadObjects(44_999, 90).slice.endpoints[89].addresses[0], "10.189.204.79");
    });

    it("makes one Service in three a NodePort, half of those with externalTrafficPolicy Local", () => {
        const services = Array.from({ length: 12 }, (_, i) => loadObjects(i, 1).service.spec);
        assert.deepEqual(
            services.map((s) => s?.type),
            services.map((_, i) => (i % 3 === 0 ? "NodePort" : "ClusterIP")),
        );
        assert.deepEqual(
            services.flatMap((s, i) => (s?.externalTrafficPolicy === "Local" ? [i] : [])),
            [0, 6],
        );
        assert.equal(nodePortCount(10_000), 3_334);
    });

    it("widens kube-apiserver's NodePort range only when the load needs more than its default", () => {
        assert.deepEqual(nodePortRangeFlag(undefined), []);
        assert.deepEqual(nodePortRangeFlag({ services: 3 * (DEFAULT_NODE_PORTS - 1000), endpointsPerService: 1 }), []);
        assert.deepEqual(nodePortRangeFlag({ services: 10_000, endpointsPerService: 10 }), [
            "--service-node-port-range=30000-34333",
        ]);
    });

    it("refuses figures the cluster cannot hold, naming the option", () => {
        assert.throws(() => checkServiceLoad({ services: 45_001, endpointsPerService: 10 }), /--services 45001/);
        assert.throws(() => checkServiceLoad({ services: 1.5, endpointsPerService: 10 }), /--services 1\.5/);
        assert.throws(
            () => checkServiceLoad({ services: 10, endpointsPerService: 0 }),
            /--endpoints-per-service 0: a whole number from 1 to 90/,
        );
        assert.throws(() => checkServiceLoad({ services: 10, endpointsPerService: 91 }), /--endpoints-per-service 91/);
        assert.deepEqual(checkServiceLoad({ services: 45_000, endpointsPerService: 90 }), {
            services: 45_000,
            endpointsPerService: 90,
        });
    });
});
