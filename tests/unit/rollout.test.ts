// The rollout's pure parts: the plan, the DaemonSet shapes, and the judgement of a probe.
import assert from "node:assert/strict";
import * as YAML from "yaml";
import {
    canonicalDuringRollout,
    checkStartupLog,
    configHash,
    judgeProbe,
    MARKS,
    parseProbeOutput,
    planRollout,
    targetDaemonSetSpec,
    type NodeState,
    type RolloutTarget,
} from "../../components/core/index.js";
import { fixture } from "../helpers.js";

const target: RolloutTarget = { hash: "abc123", mode: "nftables", canonical: false };

function node(name: string, pool: string, extra: Partial<NodeState> = {}): NodeState {
    return {
        name,
        labels: { pool },
        kernelVersion: "6.8.0-51-generic",
        operatingSystem: "linux",
        placement: null,
        ...extra,
    };
}

describe("rollout plan", () => {
    const nodes = [
        node("c1", "canary"),
        node("w1", "workers"),
        node("w2", "workers"),
        node("w3", "workers"),
        node("b1", "batch"),
    ];
    const pools = [
        { name: "canary", nodeSelector: "pool=canary" },
        { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2 },
        { name: "batch", nodeSelector: "pool=batch", soak: "1m" },
    ];

    it("keeps the declared pool order and cuts batches of maxUnavailable", () => {
        const { plan, findings } = planRollout(pools, nodes, target);
        assert.deepEqual(findings, []);
        assert.deepEqual(
            plan.pools.map((p) => [p.name, p.batches]),
            [
                ["canary", [["c1"]]],
                ["workers", [["w1", "w2"], ["w3"]]],
                ["batch", [["b1"]]],
            ],
        );
        assert.equal(plan.moving, 5);
        assert.equal(plan.pools[2].soakSeconds, 60);
    });
    it("resumes: nodes verified on the target are done and not moved again", () => {
        const resumed = nodes.map((n) =>
            n.name === "c1" || n.name === "w1" ? { ...n, placement: "abc123", verified: "abc123" } : n,
        );
        const { plan } = planRollout(pools, resumed, target);
        assert.deepEqual(plan.pools[0].batches, []);
        assert.deepEqual(plan.pools[1].batches, [["w2", "w3"]]);
        assert.equal(plan.pools[0].nodes[0].action, "done");
    });
    it("a node on the target but not verified is moved (verified) again", () => {
        const { plan } = planRollout(
            pools,
            nodes.map((n) => (n.name === "c1" ? { ...n, placement: "abc123" } : n)),
            target,
        );
        assert.deepEqual(plan.pools[0].batches, [["c1"]]);
    });
    it("a canonical target is reached by nodes without the label", () => {
        const t = { ...target, canonical: true };
        const { plan } = planRollout(
            pools,
            nodes.map((n) => (n.name === "c1" ? { ...n, placement: "abc123" } : n)),
            t,
        );
        assert.equal(plan.moving, 1);
        assert.deepEqual(plan.pools[0].batches, [["c1"]]);
    });
    it("refuses overlapping pools and nodes in no pool, naming them", () => {
        const { findings } = planRollout(
            [
                { name: "a", nodeSelector: "pool in (canary,workers)" },
                { name: "b", nodeSelector: "pool=workers" },
            ],
            nodes,
            target,
        );
        const overlap = findings.filter((f) => f.code === "pools.overlap");
        assert.deepEqual(
            overlap.map((f) => f.nodes![0]),
            ["w1", "w2", "w3"],
        );
        const orphans = findings.find((f) => f.code === "pools.unassigned")!;
        assert.deepEqual(orphans.nodes, ["b1"]);
        assert.equal(orphans.severity, "error");
    });
    it("judges the kernels of the nodes that will move, and only those", () => {
        const old = [...nodes.slice(0, 4), node("b1", "batch", { kernelVersion: "5.10.0" })];
        const { findings } = planRollout(pools, old, target);
        const f = findings.find((x) => x.code === "node.kernelTooOld")!;
        assert.deepEqual(f.nodes, ["b1"]);
        assert.match(f.field, /pools\[2\] \(batch\)/);
        const done = planRollout(
            pools,
            old.map((n) => (n.name === "b1" ? { ...n, placement: "abc123", verified: "abc123" } : n)),
            target,
        );
        assert.ok(!done.findings.some((x) => x.code === "node.kernelTooOld"));
    });
    it("windows nodes are not in any pool's plan and are not orphans", () => {
        const { plan, findings } = planRollout(
            pools,
            [...nodes, { ...node("win1", "canary"), operatingSystem: "windows" }],
            target,
        );
        assert.deepEqual(findings, []);
        assert.ok(!plan.pools.some((p) => p.nodes.some((n) => n.name === "win1")), "win1 is in no pool's plan");
        assert.equal(plan.moving, planRollout(pools, nodes, target).plan.moving, "it does not count as moving");
    });
    it("validates pool fields", () => {
        const { findings } = planRollout(
            [{ name: "Bad Name", nodeSelector: "pool=x", maxUnavailable: 0, soak: "soon" }],
            nodes,
            target,
        );
        assert.deepEqual(findings.map((f) => f.field).sort(), [
            "pools[0].maxUnavailable",
            "pools[0].name",
            "pools[0].soak",
        ]);
    });
    it("hashes configurations by content", () => {
        assert.equal(configHash("a"), configHash("a"));
        assert.notEqual(configHash("a"), configHash("b"));
        assert.match(configHash("a"), /^[0-9a-f]{10}$/);
    });
});

describe("DaemonSet shapes for a per-node rollout", () => {
    const original = YAML.parse(fixture("kubeadm/1.37/daemonset.yaml")).spec;

    it("keeps the installer's DaemonSet off labelled nodes and stops it from rolling on its own", () => {
        const spec = canonicalDuringRollout(original);
        assert.deepEqual(spec.updateStrategy, { type: "OnDelete" });
        const terms =
            spec.template.spec!.affinity!.nodeAffinity!.requiredDuringSchedulingIgnoredDuringExecution!
                .nodeSelectorTerms;
        assert.deepEqual(terms, [{ matchExpressions: [{ key: MARKS.configLabel, operator: "DoesNotExist" }] }]);
        assert.deepEqual(
            spec.template.spec?.containers,
            original.template.spec.containers,
            "the container is untouched",
        );
        assert.equal(original.updateStrategy.type, "RollingUpdate", "the input is not modified");
    });
    it("adds the requirement to every existing affinity term", () => {
        const withAffinity = structuredClone(original);
        withAffinity.template.spec.affinity = {
            nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                    nodeSelectorTerms: [
                        { matchExpressions: [{ key: "a", operator: "Exists" }] },
                        { matchFields: [{ key: "metadata.name", operator: "In", values: ["n"] }] },
                    ],
                },
            },
        };
        const terms =
            canonicalDuringRollout(withAffinity).template.spec!.affinity!.nodeAffinity!
                .requiredDuringSchedulingIgnoredDuringExecution!.nodeSelectorTerms;
        assert.equal(terms.length, 2);
        for (const t of terms)
            assert.ok(t.matchExpressions?.some((e) => e.key === MARKS.configLabel && e.operator === "DoesNotExist"));
    });
    it("runs the target on nodes labelled with its hash, mounting its own ConfigMap", () => {
        const spec = targetDaemonSetSpec(original, { hash: "abc123", canonicalConfigMap: "kube-proxy" });
        assert.equal(spec.selector.matchLabels?.[MARKS.configLabel], "abc123");
        assert.equal(spec.template.metadata?.labels?.[MARKS.configLabel], "abc123");
        assert.equal(
            spec.template.spec?.volumes?.find((v) => v.name === "kube-proxy")?.configMap?.name,
            "kube-proxy-abc123",
        );
        const req =
            spec.template.spec.affinity!.nodeAffinity!.requiredDuringSchedulingIgnoredDuringExecution!
                .nodeSelectorTerms[0].matchExpressions;
        assert.deepEqual(req, [{ key: MARKS.configLabel, operator: "In", values: ["abc123"] }]);
    });
    it("refuses a DaemonSet that does not mount the ConfigMap", () => {
        assert.throws(
            () => targetDaemonSetSpec(original, { hash: "x", canonicalConfigMap: "kube-proxy-config" }),
            /mounts no volume from ConfigMap kube-proxy-config/,
        );
    });
});

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
