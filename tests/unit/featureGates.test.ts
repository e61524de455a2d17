// components/core/featureGates.ts: which release's gate list a cluster is checked against, and the
// name suggested for a misspelt gate.
import assert from "node:assert/strict";
import {
    gateRegistry,
    knownReleases,
    parseKubeVersion,
    suggestGate,
    type GateRegistry,
} from "../../components/core/index.js";

const version = (v: string) => parseKubeVersion(v)!;

describe("gateRegistry: the gate list a release is checked against", () => {
    it("knows the releases 1.29 to 1.37, oldest first", () => {
        assert.deepEqual(knownReleases(), ["1.29", "1.30", "1.31", "1.32", "1.33", "1.34", "1.35", "1.36", "1.37"]);
    });
    it("a known release: its own list, neither newer nor older than known", () => {
        const r = gateRegistry(version("v1.33.4"));
        assert.equal(r.release, "1.33");
        assert.equal(r.newerThanKnown, false);
        assert.equal(r.olderThanKnown, false);
        assert.equal(r.source, "k8s.io/kubernetes@v1.33.13");
        assert.deepEqual(r.gates.NFTablesProxyMode, { default: true, stage: "GA", locked: true });
    });
    it("a release newer than every list: the newest list, flagged newer", () => {
        const r = gateRegistry(version("1.40.1"));
        assert.equal(r.release, "1.37");
        assert.equal(r.newerThanKnown, true);
        assert.equal(r.olderThanKnown, false);
    });
    it("a release older than every list: the oldest list, flagged older", () => {
        const r = gateRegistry(version("1.27.3"));
        assert.equal(r.release, "1.29");
        assert.equal(r.newerThanKnown, false);
        assert.equal(r.olderThanKnown, true);
        assert.deepEqual(r.gates.NFTablesProxyMode, { default: false, stage: "ALPHA", locked: false });
    });
    it("no version known: the newest list, flagged newer (the gate check cannot be exact)", () => {
        const r = gateRegistry(undefined);
        assert.equal(r.release, "1.37");
        assert.equal(r.newerThanKnown, true);
        assert.equal(r.olderThanKnown, false);
    });
    it("a gate removed in a release is unknown to that release only", () => {
        assert.ok("JobSuccessPolicy" in gateRegistry(version("1.36")).gates);
        assert.ok(!("JobSuccessPolicy" in gateRegistry(version("1.37")).gates));
    });
    it("gate dependencies from 1.35 only; none before", () => {
        assert.deepEqual(gateRegistry(version("1.35")).dependencies.ClusterTrustBundleProjection, [
            "ClusterTrustBundle",
        ]);
        assert.deepEqual(Object.keys(gateRegistry(version("1.34")).dependencies), []);
    });
    it("names of Object.prototype members are not gates", () => {
        const r = gateRegistry(version("1.37"));
        for (const name of ["constructor", "toString", "__proto__", "hasOwnProperty"]) {
            assert.ok(!(name in r.gates), name);
            assert.equal(r.gates[name], undefined, name);
            assert.ok(!(name in r.dependencies), name);
        }
    });
});

describe("suggestGate: the known gate a misspelt name means", () => {
    const registry = gateRegistry(version("1.37"));
    it("a name in the wrong case: the gate as kube-proxy spells it", () => {
        assert.equal(suggestGate("NFTABLESPROXYMODE", registry), "NFTablesProxyMode");
        assert.equal(suggestGate("nftablesproxymode", registry), "NFTablesProxyMode");
    });
    it("a typo of one letter: the closest gate", () => {
        assert.equal(suggestGate("NFTablesProxyMod", registry), "NFTablesProxyMode");
    });
    it("a short name: three edits away is still a typo", () => {
        assert.equal(suggestGate("AllAlXXX", registry), "AllAlpha");
    });
    it("a long name: up to a quarter of its length in edits", () => {
        assert.equal(suggestGate("NFTablesProxyModeXYZW", registry), "NFTablesProxyMode");
    });
    it("a name far from every gate: no suggestion", () => {
        assert.equal(suggestGate("NoSuchGateAtAllHere", registry), undefined);
    });
    it("an empty gate list: no suggestion", () => {
        const empty: GateRegistry = { ...registry, gates: {} };
        assert.equal(suggestGate("NFTablesProxyMode", empty), undefined);
    });
});
