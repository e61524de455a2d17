// components/core/probe.ts: the probe's output parsed and judged, and kube-proxy's start-up log.
import assert from "node:assert/strict";
import { checkStartupLog, judgeProbe, parseProbeOutput } from "../../components/core/index.js";

describe("probe output", () => {
    const healthy = (now: number) =>
        [
            "### kpm:time",
            String(now),
            "### kpm:proxyMode",
            "nftables",
            "rc=0",
            "### kpm:metrics",
            `kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} ${now - 3}`,
            `kubeproxy_sync_proxy_rules_nftables_sync_failures_total{ip_family="IPv4"} 0`,
            "### kpm:kube-ipvs0",
            "absent",
            "### kpm:ipsets",
            "### kpm:ipvs",
            "no ip_vs in the kernel",
            "### kpm:iptables",
            "chain IPv4 nft mangle KUBE-IPTABLES-HINT",
            "chain IPv4 nft nat KUBE-KUBELET-CANARY",
            "chain IPv6 nft nat KUBE-KUBELET-CANARY",
            "### kpm:nftables",
            "table ip kube-proxy",
            "table ip6 kube-proxy",
            "### kpm:connect",
            "connected",
            "### kpm:end",
        ].join("\n");
    const expect = { mode: "nftables" as const, maxSyncAgeSeconds: 300, connect: true };
    const failed = (text: string, e = expect) =>
        judgeProbe(parseProbeOutput(text), e)
            .filter((c) => !c.ok)
            .map((c) => c.check);

    it("passes a healthy nftables node (kubelet's own chains are not leftovers)", () => {
        assert.deepEqual(failed(healthy(1000)), []);
    });
    it("fails the mode when /proxyMode says another mode or does not answer", () => {
        assert.deepEqual(failed(healthy(1000).replace("nftables\nrc=0", "iptables\nrc=0")), ["mode"]);
        assert.ok(failed(healthy(1000).replace("nftables\nrc=0", "curl: (7) refused\nrc=7")).includes("mode"));
    });
    it("fails leftovers for kube-ipvs0 with addresses, KUBE ipsets, IPVS services, kube-proxy iptables chains", () => {
        const withIpvs0 = healthy(1000).replace(
            "### kpm:kube-ipvs0\nabsent",
            "### kpm:kube-ipvs0\npresent\n3: kube-ipvs0    inet 10.96.0.1/32 scope global kube-ipvs0",
        );
        const r = judgeProbe(parseProbeOutput(withIpvs0), expect).find((c) => c.check === "leftovers")!;
        assert.equal(r.ok, false);
        assert.match(
            r.detail,
            /kube-ipvs0 exists holding 1 address\(es\) \(10\.96\.0\.1\/32\) that black-hole those ClusterIPs/,
        );
        assert.deepEqual(failed(healthy(1000).replace("### kpm:ipsets", "### kpm:ipsets\nset KUBE-CLUSTER-IP")), [
            "leftovers",
        ]);
        assert.deepEqual(
            failed(
                healthy(1000)
                    .replace("### kpm:ipvs\nno ip_vs in the kernel", "### kpm:ipvs\nvs TCP  0A600001:01BB rr")
                    .replace(
                        "### kpm:kube-ipvs0\nabsent",
                        "### kpm:kube-ipvs0\npresent\n3: kube-ipvs0    inet 10.96.0.1/32",
                    ),
            ),
            ["leftovers"],
        );
        assert.deepEqual(
            failed(
                healthy(1000).replace(
                    "chain IPv6 nft nat KUBE-KUBELET-CANARY",
                    "chain IPv6 nft nat KUBE-KUBELET-CANARY\nchain IPv6 nft nat KUBE-SERVICES",
                ),
            ),
            ["leftovers"],
        );
    });
    it("fails rules when the kube-proxy table is missing", () => {
        assert.deepEqual(failed(healthy(1000).replace("table ip kube-proxy\ntable ip6 kube-proxy", "")), ["rules"]);
    });
    it("fails sync when the last sync is old, missing, or nftables reports failures", () => {
        assert.deepEqual(failed(healthy(1000), { ...expect, maxSyncAgeSeconds: 1 }), ["sync"]);
        assert.deepEqual(failed(healthy(1000).replace(/^kubeproxy_sync_proxy_rules_last.*$/m, "")), ["sync"]);
        assert.deepEqual(
            failed(
                healthy(1000).replace(
                    'sync_failures_total{ip_family="IPv4"} 0',
                    'sync_failures_total{ip_family="IPv4"} 2',
                ),
            ),
            ["sync"],
        );
    });
    it("fails the connection when the ClusterIP does not answer", () => {
        assert.deepEqual(failed(healthy(1000).replace("connected", "failed rc=28")), ["connection"]);
    });
    it("an output cut short is a failure", () => {
        assert.ok(failed(healthy(1000).replace("### kpm:end", "")).includes("probe"));
    });
    it("reads the start-up log line of the mode kube-proxy chose", () => {
        assert.equal(checkStartupLog('I1130 server_linux.go:1] "Using nftables Proxier"', "nftables").ok, true);
        assert.equal(checkStartupLog('I1130 "Using iptables Proxier"', "nftables").ok, false);
        assert.match(
            checkStartupLog(
                "E1130 unable to create proxier: kube-proxy in nftables mode requires kernel 5.13 or later",
                "nftables",
            ).detail,
            /requires kernel 5\.13/,
        );
    });
});
