// components/core/kubeProxyObjects.ts: which iptables chains and ipsets are kube-proxy's, per mode,
// and which of them a kube-proxy running a given mode leaves behind for the cleanup.
import assert from "node:assert/strict";
import { chainIsLeftover, chainModes, isKubeProxyIpset } from "../../components/core/kubeProxyObjects.js";

const SVC = "KUBE-SVC-ABCDEFGHIJKLMN23"; // a per-Service chain: prefix and 16 base32 characters

describe("chainModes: the modes whose kube-proxy creates a chain", () => {
    it("a chain both iptables and ipvs create, in nat", () => {
        assert.deepEqual(chainModes("nat", "KUBE-SERVICES"), ["iptables", "ipvs"]);
    });
    it("a chain of one mode only", () => {
        assert.deepEqual(chainModes("nat", "KUBE-NODEPORTS"), ["iptables"]);
        assert.deepEqual(chainModes("nat", "KUBE-NODE-PORT"), ["ipvs"]);
    });
    it("the mangle canary is iptables-mode's (ipvs has no mangle chain)", () => {
        assert.deepEqual(chainModes("mangle", "KUBE-PROXY-CANARY"), ["iptables"]);
    });
    it("a table kube-proxy writes no chain to: nothing is kube-proxy's", () => {
        assert.deepEqual(chainModes("raw", "KUBE-SERVICES"), []);
    });
    it("per-Service hashed chains are iptables-mode's, in nat only", () => {
        assert.deepEqual(chainModes("nat", SVC), ["iptables"]);
        assert.deepEqual(chainModes("nat", "KUBE-SEP-ABCDEFGHIJKLMN23"), ["iptables"]);
        assert.deepEqual(chainModes("filter", SVC), []);
    });
    it("a hashed-looking chain with a hash of the wrong length or alphabet is not kube-proxy's", () => {
        assert.deepEqual(chainModes("nat", "KUBE-SVC-ABCDEFGHIJKLMN2"), []);
        assert.deepEqual(chainModes("nat", "KUBE-SVC-ABCDEFGHIJKLMN01"), []);
    });
    it("the kubelet's chains and KUBE-FIREWALL are not kube-proxy's", () => {
        for (const chain of ["KUBE-FIREWALL", "KUBE-KUBELET-CANARY", "KUBE-MARK-DROP"])
            for (const table of ["nat", "filter"]) assert.deepEqual(chainModes(table, chain), [], `${table} ${chain}`);
    });
});

describe("chainIsLeftover: what the cleanup removes for a kube-proxy running a mode", () => {
    it("a chain of another mode only is left over", () => {
        assert.equal(chainIsLeftover("nat", "KUBE-NODE-PORT", "iptables"), true);
        assert.equal(chainIsLeftover("nat", SVC, "ipvs"), true);
        assert.equal(chainIsLeftover("nat", SVC, "nftables"), true);
    });
    it("a chain the running mode uses is kept, even when another mode uses it too", () => {
        assert.equal(chainIsLeftover("nat", "KUBE-SERVICES", "ipvs"), false);
        assert.equal(chainIsLeftover("nat", "KUBE-SERVICES", "iptables"), false);
        assert.equal(chainIsLeftover("nat", SVC, "iptables"), false);
    });
    it("no mode running: every kube-proxy chain is left over", () => {
        assert.equal(chainIsLeftover("nat", "KUBE-SERVICES"), true);
        assert.equal(chainIsLeftover("filter", "KUBE-IPVS-FILTER"), true);
    });
    it("a chain that is not kube-proxy's is never left over, whatever runs", () => {
        for (const mode of [undefined, "iptables", "ipvs", "nftables"] as const) {
            assert.equal(chainIsLeftover("filter", "KUBE-FIREWALL", mode), false, String(mode));
            assert.equal(chainIsLeftover("filter", "MY-CHAIN", mode), false, String(mode));
        }
    });
});

describe("isKubeProxyIpset", () => {
    it("ipvs-mode's sets and their IPv6 variants, cut to 31 characters", () => {
        assert.equal(isKubeProxyIpset("KUBE-CLUSTER-IP"), true);
        assert.equal(isKubeProxyIpset("KUBE-6-CLUSTER-IP"), true);
        assert.equal(isKubeProxyIpset("KUBE-6-LOAD-BALANCER-SOURCE-CID"), true);
        assert.equal(isKubeProxyIpset("KUBE-6-LOAD-BALANCER-SOURCE-CIDR"), false);
        assert.equal(isKubeProxyIpset("my-set"), false);
    });
});
