// components/core/probe.ts: the probe's output parsed and judged, and kube-proxy's start-up log.
import assert from "node:assert/strict";
import {
    checkStartupLog,
    judgeProbe,
    parseIpvsLine,
    parseProbeOutput,
    type ProbeExpectations,
} from "../../components/core/index.js";

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

/** A probe output from its sections, in the script's order; `end` false leaves the end marker off. */
function probeOutput(sections: Record<string, string[]>, end = true): string {
    const out = Object.entries(sections).flatMap(([name, lines]) => [`### kpm:${name}`, ...lines]);
    return [...out, ...(end ? ["### kpm:end"] : [])].join("\n");
}

/** A node that runs `mode` cleanly: kube-proxy's own state for that mode, nothing of another. */
function cleanNode(mode: "iptables" | "ipvs" | "nftables", now = 1000): Record<string, string[]> {
    return {
        host: ["ran via: chroot /host; the pod's shell: /bin/busybox"],
        time: [String(now)],
        proxyMode: [mode, "rc=0"],
        metrics: [`kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} ${now - 3}`],
        "kube-ipvs0":
            mode === "ipvs" ? ["present", "5: kube-ipvs0    inet 10.96.0.1/32 scope global kube-ipvs0"] : ["absent"],
        ipsets: mode === "ipvs" ? ["set KUBE-CLUSTER-IP"] : [],
        ipvs: mode === "ipvs" ? ["vs TCP  0A600001:01BB rr"] : ["no ip_vs in the kernel"],
        iptables:
            mode === "nftables"
                ? ["chain IPv4 nft nat KUBE-KUBELET-CANARY"]
                : ["chain IPv4 nft nat KUBE-SERVICES", "chain IPv4 nft nat KUBE-MARK-MASQ"],
        nftables: mode === "nftables" ? ["table ip kube-proxy"] : [],
        connect: ["connected"],
    };
}

describe("the probe's output, read", () => {
    it("parseIpvsLine decodes the kernel's IPv4, IPv6 and firewall-mark virtual servers and nothing else", () => {
        assert.deepEqual(parseIpvsLine("  UDP  0A600001:0035 rr "), {
            protocol: "UDP",
            address: "10.96.0.1",
            port: 53,
        });
        assert.deepEqual(parseIpvsLine("SCTP  C0A80A0B:0BB8 rr"), {
            protocol: "SCTP",
            address: "192.168.10.11",
            port: 3000,
        });
        assert.deepEqual(parseIpvsLine("TCP  [FD00:0000:0000:0000:0000:0000:0000:000A]:01bb rr"), {
            protocol: "TCP",
            address: "fd00::a",
            port: 443,
        });
        assert.deepEqual(parseIpvsLine("FWM  0000001F rr"), { protocol: "FWM", address: "31" });
        for (const line of [
            "IP Virtual Server version 1.2.1 (size=4096)",
            "Prot LocalAddress:Port Scheduler Flags",
            "  -> 0A000005:01BB      Masq    1      0          0",
            "XTCP  0A600001:01BB rr",
            "TCP  0A6000010:01BB rr",
            "TCP  0A60001:01BB rr",
            "TCP  0A600001:01BG rr",
            "TCP  x0A600001:01BB rr",
            "TCP  [fd00::1]:01BG rr",
            "TCP  x[fd00::1]:01BB rr",
            "TCP",
        ])
            assert.equal(parseIpvsLine(line), undefined, line);
    });

    it("reads every section of a probe run into its report", () => {
        const text = [
            "Defaulted container probe out of: probe",
            probeOutput({
                host: ["ran via: chroot /host; the pod's shell: /bin/busybox"],
                time: ["1700"],
                proxyMode: ["ipvs", "", "rc=0"],
                metrics: [
                    'kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} 1690.5',
                    "kubeproxy_sync_proxy_rules_duration_seconds_count 12",
                    "kubeproxy_sync_proxy_rules_",
                    "# HELP kubeproxy_sync_proxy_rules_duration_seconds a histogram",
                ],
                "kube-ipvs0": [
                    "present",
                    "5: kube-ipvs0    inet 10.96.0.10/32 scope global kube-ipvs0",
                    "5: kube-ipvs0    inet6 fd00::10/128 scope global",
                    "5: kube-ipvs0    link/ether",
                ],
                ipsets: ["set KUBE-CLUSTER-IP", "set KUBE-SRC-ABC", "  "],
                ipvs: ["vs TCP  0A60000A:0035 rr", "vs garbage", "TCP  0A60000B:0035 rr"],
                iptables: [
                    "chain IPv4 legacy nat KUBE-SERVICES",
                    "chain IPv6 nft filter KUBE-FORWARD",
                    "chain IPv5 nft filter KUBE-FORWARD",
                    "chain IPv4 nft filter",
                    "missing ip6tables-legacy-save (legacy ip6tables tables are in use: filter)",
                ],
                nftables: ["table ip kube-proxy", "table inet filter "],
                connect: ["failed rc=1"],
            }),
        ].join("\n");
        assert.deepEqual(parseProbeOutput(text), {
            via: "chroot /host",
            time: 1700,
            proxyMode: "ipvs",
            proxyModeError: undefined,
            metrics: {
                'kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"}': 1690.5,
                kubeproxy_sync_proxy_rules_duration_seconds_count: 12,
            },
            kubeIpvs0: { present: true, addresses: ["10.96.0.10/32", "fd00::10/128"] },
            ipsets: ["KUBE-CLUSTER-IP", "KUBE-SRC-ABC"],
            ipvsServices: [{ protocol: "TCP", address: "10.96.0.10", port: 53 }],
            iptables: [
                { family: "IPv4", backend: "legacy", table: "nat", chain: "KUBE-SERVICES" },
                { family: "IPv6", backend: "nft", table: "filter", chain: "KUBE-FORWARD" },
            ],
            nftTables: ["ip kube-proxy", "inet filter"],
            nftError: undefined,
            missing: ["ip6tables-legacy-save (legacy ip6tables tables are in use: filter)"],
            errors: [],
            connect: { attempted: true, ok: false, detail: "failed rc=1" },
            complete: true,
        });
    });

    it("keeps what the probe could not read apart from the data: missing tools, failed commands, no ipset list", () => {
        const r = parseProbeOutput(
            probeOutput({
                host: ["ran via: direct; the pod's shell: sh"],
                proxyMode: ["rc=7"],
                metrics: [],
                "kube-ipvs0": ["missing ip"],
                ipsets: ["error ipset list -n rc=1: ipset v7.1: Kernel error received: Operation not permitted"],
                ipvs: ["error /proc/net/ip_vs: Permission denied"],
                iptables: ["error iptables-nft-save rc=4: Permission denied (you must be root)"],
                nftables: [
                    "netlink: Error: cache initialization failed:",
                    "Operation not permitted",
                    "error nft list tables rc=1",
                ],
                connect: ["skipped"],
            }),
        );
        assert.equal(r.via, "direct");
        assert.equal(r.time, undefined);
        assert.equal(r.proxyMode, undefined);
        assert.equal(r.proxyModeError, "rc=7");
        assert.deepEqual(r.kubeIpvs0, { present: false, addresses: [] });
        assert.equal(r.ipsets, undefined, "a failed ipset list is not an empty one");
        assert.deepEqual(r.ipvsServices, []);
        assert.deepEqual(r.iptables, []);
        assert.deepEqual(r.nftTables, []);
        assert.equal(r.nftError, "netlink: Error: cache initialization failed: Operation not permitted");
        assert.deepEqual(r.missing, ["ip"]);
        assert.deepEqual(r.errors, [
            "ipset list -n rc=1: ipset v7.1: Kernel error received: Operation not permitted",
            "/proc/net/ip_vs: Permission denied",
            "iptables-nft-save rc=4: Permission denied (you must be root)",
            "nft list tables rc=1",
        ]);
        assert.deepEqual(r.connect, { attempted: false, ok: false, detail: "skipped" });
        assert.equal(parseProbeOutput(probeOutput({ ipsets: ["missing ipset"] })).ipsets, undefined);
        assert.equal(parseProbeOutput(probeOutput({ nftables: ["missing nft"] })).nftError, undefined);
        assert.deepEqual(parseProbeOutput(probeOutput({ ipsets: [] })).ipsets, [], "an empty list is seen");
        assert.equal(parseProbeOutput(probeOutput({})).ipsets, undefined, "no ipsets section: not seen");
    });

    it("a mode counts only when /proxyMode answered one of kube-proxy's modes with rc=0", () => {
        const mode = (lines: string[]) => {
            const r = parseProbeOutput(probeOutput({ proxyMode: lines }));
            return [r.proxyMode, r.proxyModeError];
        };
        assert.deepEqual(mode(["iptables", "rc=0"]), ["iptables", undefined]);
        assert.deepEqual(mode(["kernelspace", "rc=0"]), ["kernelspace", undefined]);
        assert.deepEqual(mode(["nftables", "rc=22"]), [undefined, "nftables"]);
        assert.deepEqual(mode(["nftablesx", "rc=0"]), [undefined, "nftablesx"]);
        assert.deepEqual(mode(["xipvs", "rc=0"]), [undefined, "xipvs"]);
        assert.deepEqual(mode(["ipvs", "iptables", "rc=0"]), [undefined, "ipvs iptables"]);
        assert.deepEqual(mode(["rc=0"]), [undefined, "rc=0"]);
        assert.deepEqual(mode([]), [undefined, "no answer"]);
        assert.deepEqual(mode(["curl: (7) Failed to connect", "rc=7"]), [undefined, "curl: (7) Failed to connect"]);
    });

    it("a connection is attempted unless skipped or silent, and made only when the probe says connected", () => {
        const connect = (lines: string[]) => parseProbeOutput(probeOutput({ connect: lines })).connect;
        assert.deepEqual(connect(["connected"]), { attempted: true, ok: true, detail: "connected" });
        assert.deepEqual(connect(["", "failed: no nc or curl on the node"]), {
            attempted: true,
            ok: false,
            detail: "failed: no nc or curl on the node",
        });
        assert.deepEqual(connect([]), { attempted: false, ok: false, detail: "" });
        assert.deepEqual(connect(["connected after all"]), {
            attempted: true,
            ok: false,
            detail: "connected after all",
        });
    });

    it("reads an output with CRLF line endings as the same report", () => {
        const sections = { ...cleanNode("ipvs"), nftables: ["table ip filter"] };
        const lf = probeOutput(sections);
        assert.deepEqual(parseProbeOutput(lf.replace(/\n/g, "\r\n")), parseProbeOutput(lf));
        assert.equal(parseProbeOutput(lf).connect.ok, true);
    });

    it("an output without its end marker is incomplete; a marker with trailing blanks still counts", () => {
        assert.equal(parseProbeOutput(probeOutput({ time: ["1"] }, false)).complete, false);
        assert.equal(parseProbeOutput("### kpm:time\n1\n### kpm:end  \r").complete, true);
        assert.equal(parseProbeOutput("### kpm:time \n 12 \n").time, 12);
    });
});

describe("the node's verdict", () => {
    const judge = (sections: Record<string, string[]>, expect: ProbeExpectations) =>
        judgeProbe(parseProbeOutput(probeOutput(sections)), expect);
    const check = (name: string, sections: Record<string, string[]>, expect: ProbeExpectations) =>
        judge(sections, expect).find((c) => c.check === name)!;
    const nft: ProbeExpectations = { mode: "nftables", maxSyncAgeSeconds: 300, connect: true, node: "n1" };

    it("passes a clean node of each mode, each check naming what it saw", () => {
        for (const mode of ["iptables", "ipvs", "nftables"] as const) {
            const results = judge(cleanNode(mode), { ...nft, mode });
            assert.deepEqual(
                results.map((c) => [c.check, c.ok]),
                [
                    ["mode", true],
                    ["leftovers", true],
                    ["rules", true],
                    ["sync", true],
                    ["connection", true],
                ],
                mode,
            );
            assert.equal(results[0].detail, `/proxyMode says ${mode}`);
            assert.equal(results[1].detail, "no state of another mode left");
            assert.equal(results[3].detail, "last rule sync 3s ago, no sync failures");
            assert.equal(results[4].detail, "connected to the Service's ClusterIP from the node");
        }
        assert.equal(
            check("rules", cleanNode("iptables"), { ...nft, mode: "iptables" }).detail,
            "iptables chain KUBE-SERVICES present",
        );
        assert.equal(check("rules", cleanNode("ipvs"), { ...nft, mode: "ipvs" }).detail, "kube-ipvs0 present");
        assert.equal(check("rules", cleanNode("nftables"), nft).detail, "nftables ip kube-proxy present");
    });

    it("the mode check names what /proxyMode said, or why it did not answer", () => {
        assert.deepEqual(check("mode", { ...cleanNode("nftables"), proxyMode: ["iptables", "rc=0"] }, nft), {
            check: "mode",
            ok: false,
            detail: "/proxyMode says iptables, expected nftables",
        });
        assert.deepEqual(check("mode", { ...cleanNode("nftables"), proxyMode: ["connection refused", "rc=7"] }, nft), {
            check: "mode",
            ok: false,
            detail: "/proxyMode did not answer: connection refused",
        });
    });

    it("the connection check is there only when asked for, and says why it failed", () => {
        assert.equal(
            judge(cleanNode("nftables"), { ...nft, connect: false }).some((c) => c.check === "connection"),
            false,
        );
        assert.deepEqual(check("connection", { ...cleanNode("nftables"), connect: [] }, nft), {
            check: "connection",
            ok: false,
            detail: "no connection to the Service's ClusterIP from the node: not attempted",
        });
        assert.equal(
            check("connection", { ...cleanNode("nftables"), connect: ["failed rc=1"] }, nft).detail,
            "no connection to the Service's ClusterIP from the node: failed rc=1",
        );
    });

    it("an incomplete output fails the node first, with every other check still judged", () => {
        const results = judgeProbe(parseProbeOutput(probeOutput(cleanNode("nftables"), false)), nft);
        assert.deepEqual(results[0], {
            check: "probe",
            ok: false,
            detail: "the probe's output is incomplete (it was cut off or did not run to the end)",
        });
        assert.deepEqual(
            results.slice(1).map((c) => c.ok),
            [true, true, true, true, true],
        );
    });

    describe("leftovers", () => {
        it("iptables mode leaves ipvs mode's own chains, and nftables mode every kube-proxy chain; ipvs mode none", () => {
            const chains = [
                "chain IPv4 nft nat KUBE-SERVICES",
                "chain IPv4 nft nat KUBE-LOAD-BALANCER",
                "chain IPv6 nft filter KUBE-IPVS-FILTER",
                "chain IPv4 nft nat KUBE-SVC-ABCDEFGHIJKLMNOP",
                "chain IPv4 nft filter KUBE-FIREWALL",
            ];
            const iptables = check(
                "leftovers",
                { ...cleanNode("iptables"), iptables: chains },
                { ...nft, mode: "iptables" },
            );
            assert.equal(iptables.ok, false);
            assert.equal(iptables.detail, "left behind: iptables chains KUBE-LOAD-BALANCER, KUBE-IPVS-FILTER");
            const nftables = check("leftovers", { ...cleanNode("nftables"), iptables: chains }, nft);
            assert.equal(
                nftables.detail,
                "left behind: iptables chains KUBE-SERVICES, KUBE-LOAD-BALANCER, KUBE-IPVS-FILTER, KUBE-SVC-ABCDEFGHIJKLMNOP",
            );
            const ipvs = check("leftovers", { ...cleanNode("ipvs"), iptables: chains }, { ...nft, mode: "ipvs" });
            assert.equal(ipvs.ok, true, ipvs.detail);
        });

        it("a chain in both families is named once", () => {
            const r = check(
                "leftovers",
                {
                    ...cleanNode("nftables"),
                    iptables: ["chain IPv4 nft nat KUBE-SERVICES", "chain IPv6 nft nat KUBE-SERVICES"],
                },
                nft,
            );
            assert.equal(r.detail, "left behind: iptables chains KUBE-SERVICES");
        });

        it("kube-proxy's nftables tables are left behind outside nftables mode", () => {
            const r = check(
                "leftovers",
                {
                    ...cleanNode("iptables"),
                    nftables: ["table ip kube-proxy", "table ip6 kube-proxy", "table inet filter"],
                },
                { ...nft, mode: "iptables" },
            );
            assert.deepEqual(r, {
                check: "leftovers",
                ok: false,
                detail: "left behind: nftables tables ip kube-proxy, ip6 kube-proxy",
            });
        });

        it("ipvs mode's state is left behind in the other modes: kube-ipvs0, its ipsets, IPVS servers on Service IPs", () => {
            const node = {
                ...cleanNode("iptables"),
                "kube-ipvs0": ["present"],
                ipsets: ["set KUBE-CLUSTER-IP", "set KUBE-6-LOOP-BACK", "set other"],
                ipvs: ["vs TCP  0A600001:01BB rr", "vs UDP  0A60000A:0035 rr", "vs FWM  00000002 rr"],
            };
            const r = check("leftovers", node, { ...nft, mode: "iptables", serviceIPs: ["10.96.0.10"] });
            assert.equal(r.ok, false);
            assert.equal(
                r.detail,
                "left behind: kube-ipvs0 exists; ipsets KUBE-CLUSTER-IP, KUBE-6-LOOP-BACK; " +
                    "1 IPVS virtual server(s) of kube-proxy (UDP 10.96.0.10:53); " +
                    "not ours, left alone: IPVS virtual server TCP 10.96.0.1:443, IPVS virtual server FWM 2",
            );
            // a kube-ipvs0 address makes the virtual servers on it kube-proxy's
            const held = check(
                "leftovers",
                { ...node, "kube-ipvs0": ["present", "5: kube-ipvs0 inet 10.96.0.1/32 scope global"] },
                { ...nft, mode: "iptables" },
            );
            assert.match(held.detail, /1 IPVS virtual server\(s\) of kube-proxy \(TCP 10\.96\.0\.1:443\)/);
            assert.match(
                held.detail,
                /not ours, left alone: IPVS virtual server UDP 10\.96\.0\.10:53, IPVS virtual server FWM 2$/,
            );
        });

        it("names other agents' KUBE-* chains and ipsets as not ours, and passes on them alone", () => {
            const r = check(
                "leftovers",
                {
                    ...cleanNode("nftables"),
                    ipsets: ["set KUBE-SRC-ABC", "set cilium"],
                    iptables: [
                        "chain IPv4 nft filter KUBE-ROUTER-INPUT",
                        "chain IPv6 nft filter KUBE-ROUTER-INPUT",
                        "chain IPv4 nft nat KUBE-MARK-DROP",
                        "chain IPv4 nft filter INPUT",
                        "chain IPv4 nft filter CILIUM-KUBE-X",
                    ],
                },
                nft,
            );
            assert.deepEqual(r, {
                check: "leftovers",
                ok: true,
                detail:
                    "no state of another mode left; not ours, left alone: ipset KUBE-SRC-ABC, " +
                    "iptables chain KUBE-ROUTER-INPUT (filter, IPv4, nft), iptables chain KUBE-ROUTER-INPUT (filter, IPv6, nft)",
            });
        });

        it("fails, naming the node, when the probe cannot see: a missing tool or a failed command, leftovers still named", () => {
            const r = check(
                "leftovers",
                {
                    ...cleanNode("nftables"),
                    "kube-ipvs0": ["missing ip"],
                    ipvs: ["error /proc/net/ip_vs: Permission denied"],
                    nftables: ["table ip kube-proxy"],
                    iptables: ["chain IPv4 nft nat KUBE-SERVICES", "chain IPv4 nft filter KUBE-ROUTER-INPUT"],
                },
                nft,
            );
            assert.deepEqual(r, {
                check: "leftovers",
                ok: false,
                detail:
                    "the probe cannot see on node n1: ip is not on the node; cannot read: /proc/net/ip_vs: Permission denied; " +
                    "left behind: iptables chains KUBE-SERVICES; not ours, left alone: iptables chain KUBE-ROUTER-INPUT (filter, IPv4, nft)",
            });
            const blindOnly = check(
                "leftovers",
                { ...cleanNode("nftables"), "kube-ipvs0": ["missing ip"] },
                { ...nft, node: undefined },
            );
            assert.deepEqual(blindOnly, {
                check: "leftovers",
                ok: false,
                detail: "the probe cannot see: ip is not on the node",
            });
        });

        it("a node without ipset passes only when it holds no other state of ipvs mode", () => {
            const noIpset = { ...cleanNode("iptables"), ipsets: ["missing ipset"] };
            const iptables = { ...nft, mode: "iptables" as const };
            const clean = check("leftovers", noIpset, iptables);
            assert.deepEqual(clean, {
                check: "leftovers",
                ok: true,
                detail:
                    "no state of another mode left; ipset is not on the node: no ipset checked, which passes because only ipvs mode uses ipsets " +
                    "and the node holds no other state of ipvs mode",
            });
            const blind =
                /^the probe cannot see on node n1: ipset is not on the node, and the node holds state of ipvs mode \(the mode that uses ipsets\): its ipsets cannot be checked/;
            const ipvsStates: Record<string, string[]>[] = [
                { "kube-ipvs0": ["present"] },
                { ipvs: ["vs TCP  0A600001:01BB rr"] },
                { iptables: ["chain IPv4 nft nat KUBE-SERVICES", "chain IPv4 nft nat KUBE-LOAD-BALANCER"] },
            ];
            for (const ipvsState of ipvsStates) {
                const r = check("leftovers", { ...noIpset, ...ipvsState }, { ...iptables, serviceIPs: ["10.96.0.1"] });
                assert.equal(r.ok, false, JSON.stringify(ipvsState));
                assert.match(r.detail, blind, JSON.stringify(ipvsState));
            }
            // an ipset list that failed is not a missing ipset: that is an error, blind in every mode
            const failed = check(
                "leftovers",
                { ...cleanNode("ipvs"), ipsets: ["error ipset list -n rc=1: x"] },
                { ...nft, mode: "ipvs" },
            );
            assert.equal(failed.detail, "the probe cannot see on node n1: cannot read: ipset list -n rc=1: x");
            assert.deepEqual(check("leftovers", { ...noIpset, ipsets: ["error ipset list -n rc=1: x"] }, iptables), {
                check: "leftovers",
                ok: false,
                detail: "the probe cannot see on node n1: cannot read: ipset list -n rc=1: x",
            });
            // in ipvs mode its own state is no leftover, and a missing ipset is not judged here
            assert.equal(
                check("leftovers", { ...cleanNode("ipvs"), ipsets: ["missing ipset"] }, { ...nft, mode: "ipvs" }).ok,
                true,
            );
        });
    });

    describe("rules", () => {
        it("iptables mode needs KUBE-SERVICES in the nat table", () => {
            const iptables = { ...nft, mode: "iptables" as const };
            assert.deepEqual(
                check(
                    "rules",
                    { ...cleanNode("iptables"), iptables: ["chain IPv4 nft filter KUBE-SERVICES"] },
                    iptables,
                ),
                {
                    check: "rules",
                    ok: false,
                    detail: "no KUBE-SERVICES chain in iptables",
                },
            );
        });
        it("ipvs mode needs kube-ipvs0", () => {
            assert.deepEqual(
                check("rules", { ...cleanNode("ipvs"), "kube-ipvs0": ["absent"] }, { ...nft, mode: "ipvs" }),
                {
                    check: "rules",
                    ok: false,
                    detail: "no kube-ipvs0 interface",
                },
            );
        });
        it("nftables mode needs the table of every IP family kube-proxy syncs", () => {
            const dualStack = {
                ...cleanNode("nftables"),
                metrics: [
                    'kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} 997',
                    'kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv6"} 997',
                    'kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family="IPv6"} 4',
                ],
            };
            assert.deepEqual(check("rules", dualStack, nft), {
                check: "rules",
                ok: false,
                detail: "missing nftables table ip6 kube-proxy (kube-proxy syncs IPv4 and IPv6)",
            });
            assert.equal(
                check("rules", { ...dualStack, nftables: ["table ip6 kube-proxy", "table ip kube-proxy"] }, nft).detail,
                "nftables ip6 kube-proxy, ip kube-proxy present",
            );
            const v6only = {
                ...dualStack,
                metrics: ['kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv6"} 997'],
            };
            assert.equal(
                check("rules", v6only, nft).detail,
                "missing nftables table ip6 kube-proxy (kube-proxy syncs IPv6)",
            );
            assert.equal(check("rules", { ...v6only, nftables: ["table ip6 kube-proxy"] }, nft).ok, true);
            assert.equal(
                check("rules", { ...dualStack, nftables: [] }, nft).detail,
                "missing nftables table ip kube-proxy, ip6 kube-proxy (kube-proxy syncs IPv4 and IPv6)",
            );
            // a family counts by its last sync, not by any metric that names it
            const v4synced = { ...dualStack, metrics: [dualStack.metrics[0], dualStack.metrics[2]] };
            assert.equal(check("rules", v4synced, nft).ok, true);
            // without family metrics, one kube-proxy table is enough; another table is not
            const noMetrics = { ...cleanNode("nftables"), metrics: [] };
            assert.equal(check("rules", noMetrics, nft).ok, true);
            assert.deepEqual(
                check("rules", { ...noMetrics, nftables: ["table inet kube-proxy", "table ip filter"] }, nft),
                {
                    check: "rules",
                    ok: false,
                    detail: "no kube-proxy nftables table on the node",
                },
            );
            assert.equal(
                check(
                    "rules",
                    { ...noMetrics, nftables: ["Error: Operation not permitted", "error nft list tables rc=1"] },
                    nft,
                ).detail,
                "no kube-proxy nftables table on the node (Error: Operation not permitted)",
            );
        });
    });

    describe("sync", () => {
        const at = (metrics: string[], time = ["1000"]) => ({ ...cleanNode("nftables"), time, metrics });
        const last = (family: string, t: number) =>
            `kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="${family}"} ${t}`;

        it("fails a sync older than the limit, passes one exactly at it", () => {
            assert.deepEqual(check("sync", at([last("IPv4", 700)]), nft), {
                check: "sync",
                ok: true,
                detail: "last rule sync 300s ago, no sync failures",
            });
            assert.deepEqual(check("sync", at([last("IPv4", 699.6)]), nft), {
                check: "sync",
                ok: false,
                detail: "last rule sync 300s ago (more than 300s)",
            });
        });
        it("takes the newest sync of a dual-stack kube-proxy", () => {
            assert.equal(
                check("sync", at([last("IPv4", 100), last("IPv6", 990)]), nft).detail,
                "last rule sync 10s ago, no sync failures",
            );
            assert.equal(check("sync", at([last("IPv4", 990), last("IPv6", 100)]), nft).ok, true);
        });
        it("a clock behind kube-proxy's reads as 0s; no probe time reads as reported", () => {
            assert.equal(
                check("sync", at([last("IPv4", 1030)]), nft).detail,
                "last rule sync 0s ago, no sync failures",
            );
            assert.deepEqual(check("sync", at([last("IPv4", 5)], []), nft), {
                check: "sync",
                ok: true,
                detail: "last rule sync reported, no sync failures",
            });
        });
        it("reads the metrics with or without their ip_family label", () => {
            assert.equal(
                check("sync", at(["kubeproxy_sync_proxy_rules_last_timestamp_seconds 990"]), nft).detail,
                "last rule sync 10s ago, no sync failures",
            );
            assert.equal(
                check("sync", at([last("IPv4", 990), "kubeproxy_sync_proxy_rules_nftables_sync_failures_total 1"]), nft)
                    .detail,
                "1 nftables sync failure(s) reported",
            );
        });
        it("fails when kube-proxy reports no sync", () => {
            assert.deepEqual(check("sync", at(["kubeproxy_sync_proxy_rules_duration_seconds_count 3"]), nft), {
                check: "sync",
                ok: false,
                detail: "kube-proxy reports no kubeproxy_sync_proxy_rules_last_timestamp_seconds: rules were never synced",
            });
        });
        it("counts nftables sync failures of every family, in nftables mode only", () => {
            const failures = (family: string, n: number) =>
                `kubeproxy_sync_proxy_rules_nftables_sync_failures_total{ip_family="${family}"} ${n}`;
            const metrics = [last("IPv4", 999), failures("IPv4", 0), failures("IPv6", 2)];
            assert.deepEqual(check("sync", at(metrics), nft), {
                check: "sync",
                ok: false,
                detail: "2 nftables sync failure(s) reported",
            });
            assert.equal(
                check("sync", at([last("IPv4", 999), failures("IPv4", 1), failures("IPv6", 2)]), nft).detail,
                "3 nftables sync failure(s) reported",
            );
            assert.equal(check("sync", at(metrics), { ...nft, mode: "iptables" }).ok, true);
            assert.equal(check("sync", at([last("IPv4", 999), failures("IPv4", 0)]), nft).ok, true);
        });
    });
});

describe("kube-proxy's start-up log", () => {
    it("passes the line of the expected mode alone", () => {
        assert.deepEqual(checkStartupLog('I1130 server.go:1] "Using ipvs Proxier"\nI1130 more', "ipvs"), {
            check: "startup-log",
            ok: true,
            detail: 'log says "Using ipvs Proxier"',
        });
    });
    it("fails a log that names two modes (a restart into another mode), naming both", () => {
        const log = 'I1 "Using iptables Proxier"\nE2 exiting\nI3 "Using nftables Proxier"';
        assert.deepEqual(checkStartupLog(log, "nftables"), {
            check: "startup-log",
            ok: false,
            detail: 'log says "Using iptables Proxier" and "Using nftables Proxier", expected "Using nftables Proxier"',
        });
        assert.equal(
            checkStartupLog('I1 "Using ipvs Proxier"', "nftables").detail,
            'log says "Using ipvs Proxier", expected "Using nftables Proxier"',
        );
    });
    it("without the line, quotes the log's last five lines", () => {
        const log = ["l1", "l2", "l3", "l4", "l5", "l6", ""].join("\n");
        assert.deepEqual(checkStartupLog(log, "iptables"), {
            check: "startup-log",
            ok: false,
            detail: 'no "Using iptables Proxier" in the log; last lines: l2 | l3 | l4 | l5 | l6',
        });
        assert.equal(checkStartupLog("  \n", "iptables").detail, 'no "Using iptables Proxier" in the log');
    });
});
