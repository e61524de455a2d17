// components/core/cleanup.ts: the cleanup's report in a few lines at any size.
import assert from "node:assert/strict";
import { summarizeCleanup } from "../../components/core/index.js";

describe("cleanup report", () => {
    it("30,000 removed chains of one table are one line with the count and the first names", () => {
        const lines = Array.from(
            { length: 30_000 },
            (_, i) => `removed kube-proxy chain KUBE-SEP-${i} (iptables table nat, nft backend)`,
        );
        assert.deepEqual(summarizeCleanup(lines), [
            "removed kube-proxy chains (iptables table nat, nft backend): 30000: KUBE-SEP-0, KUBE-SEP-1, KUBE-SEP-2 ... and 29997 more",
        ]);
    });

    it("groups by kind, family, table and backend in the order each first appears; errors and other lines stay whole", () => {
        const out = summarizeCleanup([
            "removed IPVS virtual server TCP 10.96.0.1:443",
            "removed link kube-ipvs0",
            "removed the rule of chain PREROUTING jumping to KUBE-SERVICES (iptables table nat, legacy backend)",
            "removed kube-proxy chain KUBE-SERVICES (iptables table nat, legacy backend)",
            "removed kube-proxy chain KUBE-FIREWALL (iptables table filter, legacy backend)",
            "removed kube-proxy chain KUBE-SERVICES (ip6tables table nat, legacy backend)",
            "removed IPVS virtual server TCP 10.96.0.10:53",
            "not ours, left alone: iptables chain KUBE-ROUTER-INPUT (table filter, legacy backend)",
            "destroyed ipset KUBE-CLUSTER-IP",
            "not ours, left alone: ipset KUBE-SRC-X",
            "not ours, left alone: IPVS virtual server TCP 10.0.0.5:80",
            "error: ipset destroy KUBE-LOOP-BACK failed: in use",
            "removed nftables table ip kube-proxy",
        ]);
        assert.deepEqual(out, [
            "removed IPVS virtual servers: 2: TCP 10.96.0.1:443, TCP 10.96.0.10:53",
            "removed link kube-ipvs0",
            "removed rules jumping to them (iptables table nat, legacy backend): 1: PREROUTING -> KUBE-SERVICES",
            "removed kube-proxy chains (iptables table nat, legacy backend): 1: KUBE-SERVICES",
            "removed kube-proxy chains (iptables table filter, legacy backend): 1: KUBE-FIREWALL",
            "removed kube-proxy chains (ip6tables table nat, legacy backend): 1: KUBE-SERVICES",
            "not ours, left alone: iptables chains (table filter, legacy backend): 1: KUBE-ROUTER-INPUT",
            "destroyed ipsets: 1: KUBE-CLUSTER-IP",
            "not ours, left alone: ipsets: 1: KUBE-SRC-X",
            "not ours, left alone: IPVS virtual servers: 1: TCP 10.0.0.5:80",
            "error: ipset destroy KUBE-LOOP-BACK failed: in use",
            "removed nftables table ip kube-proxy",
        ]);
    });
});
