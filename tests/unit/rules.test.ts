// components/core/rules.ts: one table per rule; each row is a configuration and the finding codes it must (and must not) produce.
import assert from "node:assert/strict";
import * as YAML from "yaml";
import {
    checkConfiguration,
    getPath,
    nodeVerdict,
    parseCurrentConfig,
    rememberedIpvsSettings,
    renderConfiguration,
    validateDesired,
    type DesiredSettings,
    type Finding,
} from "../../components/core/index.js";
import { fixture } from "../helpers.js";

function config(fields: Record<string, unknown>): string {
    return YAML.stringify({
        apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
        kind: "KubeProxyConfiguration",
        ...fields,
    });
}

function render(current: Record<string, unknown>, desired: DesiredSettings) {
    return renderConfiguration(parseCurrentConfig(config(current)), desired);
}

function codes(findings: Finding[], severity?: string): string[] {
    return findings.filter((f) => !severity || f.severity === severity).map((f) => f.code);
}

describe("rule: mode is required and pinned", () => {
    for (const [name, input] of [
        ["missing", {}],
        ["empty", { mode: "" }],
        ["not a mode", { mode: "nft" }],
    ] as const) {
        it(`refuses a ${name} mode, naming the field and the valid values`, () => {
            const { settings, findings } = validateDesired(input);
            assert.equal(settings, undefined);
            assert.equal(findings[0].field, "mode");
            assert.match(findings[0].message, /iptables, ipvs, nftables/);
            assert.match(findings[0].message, /default/);
        });
    }
    it("accepts each real mode", () => {
        for (const mode of ["iptables", "ipvs", "nftables"]) assert.ok(validateDesired({ mode }).settings);
    });
    it("reports an unpinned current mode and pins it", () => {
        const r = render({ mode: "" }, { mode: "iptables", kubernetesVersion: "1.37" });
        assert.ok(codes(r.findings).includes("mode.unpinned"));
        assert.deepEqual(
            r.changes.map((c) => [c.path, c.to]),
            [["mode", "iptables"]],
        );
    });
    it("names unknown settings", () => {
        const { findings } = validateDesired({ mode: "nftables", modee: "x" });
        assert.match(findings[0].message, /modee/);
    });
});

describe("rule: ipvs lifecycle (KEP-5495)", () => {
    const table: [string, Record<string, boolean> | undefined, string[], string[]][] = [
        // version, gates, errors, warnings
        ["1.36", undefined, [], ["ipvs.deprecated"]],
        ["1.37", undefined, [], ["ipvs.deprecated"]],
        ["1.40", undefined, ["ipvs.off"], ["ipvs.deprecated"]],
        ["1.40", { KubeProxyIPVS: true }, [], ["ipvs.deprecated", "ipvs.gated"]],
        ["1.42", { KubeProxyIPVS: true }, [], ["ipvs.deprecated", "ipvs.gated"]],
        ["1.43", { KubeProxyIPVS: true }, ["ipvs.removed"], ["ipvs.deprecated"]],
    ];
    for (const [version, gates, errors, warnings] of table) {
        it(`${version} ${gates ? "with" : "without"} KubeProxyIPVS: errors ${errors.join(",") || "none"}`, () => {
            const r = render(
                { mode: "ipvs" },
                { mode: "ipvs", kubernetesVersion: version, featureGates: gates, allowUnknownFeatureGates: true },
            );
            assert.deepEqual(
                codes(r.findings, "error").filter((c) => c.startsWith("ipvs")),
                errors,
            );
            assert.deepEqual(
                codes(r.findings, "warning").filter((c) => c.startsWith("ipvs")),
                warnings,
            );
        });
    }
    it("the deprecation warning carries the dates", () => {
        const r = render({ mode: "ipvs" }, { mode: "ipvs", kubernetesVersion: "1.37" });
        const f = r.findings.find((x) => x.code === "ipvs.deprecated")!;
        assert.match(f.message, /1\.40/);
        assert.match(f.message, /1\.43/);
    });
});

describe("rule: nftables availability", () => {
    const table: [string, Record<string, boolean> | undefined, string[]][] = [
        ["1.28", undefined, ["nftables.unavailable"]],
        ["1.29", undefined, ["nftables.gate"]],
        ["1.30", { NFTablesProxyMode: true }, []],
        ["1.31", undefined, []],
        ["1.37", undefined, []],
    ];
    for (const [version, gates, errors] of table) {
        it(`${version} ${gates ? "with" : "without"} NFTablesProxyMode: ${errors.join(",") || "allowed"}`, () => {
            const r = render(
                { mode: "iptables" },
                { mode: "nftables", kubernetesVersion: version, featureGates: gates, nodePortAddresses: ["0.0.0.0/0"] },
            );
            assert.deepEqual(
                codes(r.findings, "error").filter((c) => c.startsWith("nftables")),
                errors,
            );
        });
    }
});

describe("rule: feature gates are the ones kube-proxy of that release knows", () => {
    it("an unknown gate is an error with the closest known name", () => {
        const r = render(
            { mode: "iptables" },
            { mode: "nftables", kubernetesVersion: "1.37", featureGates: { KubeProxyNFTablesLocalhostNodePort: true } },
        );
        const f = r.findings.find((x) => x.code === "gate.unknown")!;
        assert.equal(f.severity, "error");
        assert.equal(f.field, "featureGates.KubeProxyNFTablesLocalhostNodePort");
        assert.match(f.message, /did you mean KubeProxyNFTablesLocalhostNodePorts\?/);
    });
    it("unknown gates already in the current configuration are caught too", () => {
        const r = render(
            { mode: "iptables", featureGates: { NoSuchGateAtAll: true } },
            { mode: "nftables", kubernetesVersion: "1.37" },
        );
        assert.ok(codes(r.findings, "error").includes("gate.unknown"));
    });
    it("allowUnknownFeatureGates turns the error into a warning", () => {
        const r = render(
            { mode: "iptables" },
            {
                mode: "iptables",
                kubernetesVersion: "1.37",
                featureGates: { FromTheFuture: true },
                allowUnknownFeatureGates: true,
            },
        );
        assert.deepEqual(codes(r.findings, "error"), []);
        assert.ok(codes(r.findings, "warning").includes("gate.unknown"));
    });
    it("a gate locked to its default may not be set the other way", () => {
        const r = render(
            { mode: "iptables" },
            { mode: "iptables", kubernetesVersion: "1.37", featureGates: { NFTablesProxyMode: false } },
        );
        assert.ok(codes(r.findings, "error").includes("gate.locked"));
        const ok = render(
            { mode: "iptables" },
            { mode: "iptables", kubernetesVersion: "1.37", featureGates: { NFTablesProxyMode: true } },
        );
        assert.ok(!codes(ok.findings).includes("gate.locked"));
    });
    it("a gate enabled without a gate it depends on is refused (1.35+)", () => {
        const r = render(
            { mode: "iptables" },
            { mode: "nftables", kubernetesVersion: "1.37", featureGates: { WorkloadWithJob: true } },
        );
        const f = r.findings.find((x) => x.code === "gate.dependency")!;
        assert.equal(f.severity, "error");
        assert.match(f.message, /WorkloadWithJob needs GenericWorkload enabled/);
        const ok = render(
            { mode: "iptables" },
            {
                mode: "nftables",
                kubernetesVersion: "1.37",
                featureGates: { WorkloadWithJob: true, GenericWorkload: true },
            },
        );
        assert.ok(!codes(ok.findings).includes("gate.dependency"));
        const off = render(
            { mode: "iptables" },
            { mode: "nftables", kubernetesVersion: "1.37", featureGates: { APIServerIdentity: false } },
        );
        assert.ok(
            codes(off.findings, "error").includes("gate.dependency"),
            "turning off a gate another enabled gate needs",
        );
        // the same broken pair: refused from 1.35, accepted by 1.34 (no dependency checks there)
        const pair = { ClusterTrustBundle: false, ClusterTrustBundleProjection: true };
        assert.ok(
            codes(
                render({ mode: "iptables" }, { mode: "iptables", kubernetesVersion: "1.35", featureGates: pair })
                    .findings,
                "error",
            ).includes("gate.dependency"),
        );
        assert.ok(
            !codes(
                render({ mode: "iptables" }, { mode: "iptables", kubernetesVersion: "1.34", featureGates: pair })
                    .findings,
            ).includes("gate.dependency"),
        );
    });
    it("a gate that arrived in a later release is unknown in an earlier one", () => {
        const r = render(
            { mode: "ipvs" },
            { mode: "ipvs", kubernetesVersion: "1.33", featureGates: { KubeProxyIPVS: true } },
        );
        assert.ok(codes(r.findings, "error").includes("gate.unknown"));
    });
});

describe("rule: nodePortAddresses", () => {
    const table: [string, string[], Record<string, boolean> | undefined, string, string[]][] = [
        // version, addresses, gates, mode, error codes
        ["1.37", ["10.0.0.0/8", "fd00::/64"], undefined, "nftables", []],
        ["1.37", ["10.0.0.1"], undefined, "nftables", ["nodePortAddresses.invalid"]],
        ["1.37", ["banana"], undefined, "nftables", ["nodePortAddresses.invalid"]],
        ["1.37", ["10.0.0.0/33"], undefined, "nftables", ["nodePortAddresses.invalid"]],
        ["1.36", ["primary"], undefined, "nftables", []],
        ["1.36", ["primary", "10.0.0.0/8"], undefined, "nftables", ["nodePortAddresses.primaryAlone"]],
        ["1.37", ["primary", "10.0.0.0/8"], undefined, "nftables", []],
        ["1.36", ["localhost"], undefined, "iptables", ["nodePortAddresses.keyword"]],
        ["1.36", ["all"], undefined, "iptables", ["nodePortAddresses.keyword"]],
        ["1.37", ["all"], undefined, "nftables", []],
        ["1.37", ["primary", "localhost"], undefined, "nftables", ["nodePortAddresses.localhostGate"]],
        ["1.37", ["primary", "localhost"], { KubeProxyNFTablesLocalhostNodePorts: true }, "nftables", []],
    ];
    for (const [version, addresses, gates, mode, errors] of table) {
        it(`${version} ${mode} ${JSON.stringify(addresses)}${gates ? " +gate" : ""}: ${errors.join(",") || "valid"}`, () => {
            const r = render(
                { mode: "iptables" },
                { mode: mode as any, kubernetesVersion: version, nodePortAddresses: addresses, featureGates: gates },
            );
            assert.deepEqual(
                codes(r.findings, "error").filter((c) => c.startsWith("nodePortAddresses")),
                errors,
            );
        });
    }
    it("an address without a prefix gets the /32 suggestion", () => {
        const r = render(
            { mode: "iptables" },
            { mode: "iptables", kubernetesVersion: "1.37", nodePortAddresses: ["10.0.0.1"] },
        );
        const f = r.findings.find((x) => x.code === "nodePortAddresses.invalid")!;
        assert.equal(f.field, "nodePortAddresses[0]");
        assert.match(f.fix!, /10\.0\.0\.1\/32/);
    });
});

describe("rule: NodePort reach when moving to nftables", () => {
    it("warns that NodePorts answer only on the primary IP when nodePortAddresses is unset", () => {
        const r = render({ mode: "ipvs" }, { mode: "nftables", kubernetesVersion: "1.37" });
        const f = r.findings.find((x) => x.code === "nodePort.reach")!;
        assert.equal(f.severity, "warning");
        assert.match(f.message, /primary IP/);
        assert.match(f.fix!, /0\.0\.0\.0\/0/);
    });
    it("is silent when the old reach is kept", () => {
        const r = render(
            { mode: "ipvs" },
            { mode: "nftables", kubernetesVersion: "1.37", nodePortAddresses: ["0.0.0.0/0", "::/0"] },
        );
        assert.ok(!codes(r.findings).includes("nodePort.reach"));
    });
    it("warns about localhost NodePorts unless the gate and keyword are set", () => {
        const warned = render(
            { mode: "iptables" },
            { mode: "nftables", kubernetesVersion: "1.37", nodePortAddresses: ["primary"] },
        );
        assert.ok(codes(warned.findings).includes("nodePort.localhost"));
        const kept = render(
            { mode: "iptables" },
            {
                mode: "nftables",
                kubernetesVersion: "1.37",
                nodePortAddresses: ["primary", "localhost"],
                featureGates: { KubeProxyNFTablesLocalhostNodePorts: true },
            },
        );
        assert.ok(!codes(kept.findings).includes("nodePort.localhost"));
    });
    it("says nothing about reach when staying in nftables", () => {
        const r = render({ mode: "nftables" }, { mode: "nftables", kubernetesVersion: "1.37" });
        assert.ok(!codes(r.findings).includes("nodePort.reach"));
    });
});

describe("rule: per-mode settings move with the mode", () => {
    it("carries ipvs sync periods and the iptables masquerade settings into the nftables block", () => {
        const r = render(
            {
                mode: "ipvs",
                ipvs: { syncPeriod: "45s", minSyncPeriod: "5s" },
                iptables: { masqueradeAll: true, masqueradeBit: 15 },
            },
            { mode: "nftables", kubernetesVersion: "1.37" },
        );
        assert.deepEqual(r.after.nftables, {
            syncPeriod: "45s",
            minSyncPeriod: "5s",
            masqueradeAll: true,
            masqueradeBit: 15,
        });
        for (const p of [
            "nftables.syncPeriod",
            "nftables.minSyncPeriod",
            "nftables.masqueradeAll",
            "nftables.masqueradeBit",
        ]) {
            const c = r.changes.find((x) => x.path === p)!;
            assert.match(c.reason, /carried from/, p);
        }
    });
    it("ipvs -> iptables carries the sync periods; masquerade already lives in the iptables block", () => {
        const r = render(
            { mode: "ipvs", ipvs: { syncPeriod: "45s" }, iptables: { masqueradeAll: true } },
            { mode: "iptables", kubernetesVersion: "1.37" },
        );
        assert.equal(getPath(r.after, "iptables.syncPeriod"), "45s");
        assert.ok(!r.changes.some((c) => c.path === "iptables.masqueradeAll"));
    });
    it("zero values are defaults and are not carried", () => {
        const r = render(
            { mode: "iptables", iptables: { syncPeriod: "0s", masqueradeBit: null } },
            { mode: "nftables", kubernetesVersion: "1.37" },
        );
        assert.ok(!r.changes.some((c) => c.path.startsWith("nftables.")));
    });
    it("a conflicting value already in the new block is kept and reported", () => {
        const r = render(
            { mode: "iptables", iptables: { syncPeriod: "45s" }, nftables: { syncPeriod: "20s" } },
            { mode: "nftables", kubernetesVersion: "1.37" },
        );
        assert.equal(getPath(r.after, "nftables.syncPeriod"), "20s");
        assert.ok(codes(r.findings, "warning").includes("carry.conflict"));
    });
});

describe("rule: ipvs-only settings are dead outside ipvs mode", () => {
    it("resets non-default scheduler, strictARP, excludeCIDRs and timeouts, each with its reason", () => {
        const r = render(
            {
                mode: "ipvs",
                ipvs: {
                    scheduler: "lc",
                    strictARP: true,
                    excludeCIDRs: ["10.0.0.0/24"],
                    tcpTimeout: "900s",
                    tcpFinTimeout: "0s",
                },
            },
            { mode: "nftables", kubernetesVersion: "1.37" },
        );
        const byPath = Object.fromEntries(r.changes.map((c) => [c.path, c]));
        assert.match(byPath["ipvs.scheduler"].reason, /sessionAffinity: ClientIP/);
        assert.match(byPath["ipvs.scheduler"].reason, /internalTrafficPolicy: Local/);
        assert.match(byPath["ipvs.strictARP"].reason, /sysctls.*stay on the nodes/);
        assert.ok(byPath["ipvs.excludeCIDRs"]);
        assert.ok(byPath["ipvs.tcpTimeout"]);
        assert.equal(byPath["ipvs.tcpFinTimeout"], undefined, "a zero timeout is not dead configuration");
    });
    it("kubeadm's all-zero ipvs block is left alone", () => {
        const r = render(
            {
                mode: "iptables",
                ipvs: {
                    excludeCIDRs: null,
                    minSyncPeriod: "0s",
                    scheduler: "",
                    strictARP: false,
                    syncPeriod: "0s",
                    tcpFinTimeout: "0s",
                    tcpTimeout: "0s",
                    udpTimeout: "0s",
                },
            },
            { mode: "nftables", kubernetesVersion: "1.37" },
        );
        assert.ok(!r.changes.some((c) => c.path.startsWith("ipvs.")));
    });
    it("staying in ipvs keeps the scheduler", () => {
        const r = render({ mode: "ipvs", ipvs: { scheduler: "lc" } }, { mode: "ipvs", kubernetesVersion: "1.37" });
        assert.equal(getPath(r.after, "ipvs.scheduler"), "lc");
    });
});

describe("the way back to ipvs: reset ipvs-only values are remembered in the configuration and restored", () => {
    const ipvs137 = () => parseCurrentConfig(fixture("kubeadm/1.37-ipvs/configmap.yaml"));
    const again = (text: string, desired: DesiredSettings) => renderConfiguration(parseCurrentConfig(text), desired);
    it("kubeadm 1.37 on ipvs (scheduler lc, strictARP) -> nftables -> ipvs restores both, and the memory goes with the restore", () => {
        const out = renderConfiguration(ipvs137(), { mode: "nftables", kubernetesVersion: "1.37" });
        assert.equal(getPath(out.after, "ipvs.scheduler"), "");
        assert.match(
            out.config,
            /^ {2}scheduler: "" # kube-proxy-mode: was "lc" in ipvs mode, restored on a move back to ipvs$/m,
        );
        assert.deepEqual(rememberedIpvsSettings(out.config), { "ipvs.scheduler": "lc", "ipvs.strictARP": true });
        const back = again(out.config, { mode: "ipvs", kubernetesVersion: "1.37" });
        assert.equal(getPath(back.after, "ipvs.scheduler"), "lc");
        assert.equal(getPath(back.after, "ipvs.strictARP"), true);
        assert.match(
            back.changes.find((c) => c.path === "ipvs.strictARP")!.reason,
            /^restored: ipvs.strictARP was true before this cluster left ipvs mode/,
        );
        assert.deepEqual(rememberedIpvsSettings(back.config), {});
        assert.doesNotMatch(back.config, /kube-proxy-mode: was/);
        // and the round trip lands on kube-proxy's own data of the start (the carried nftables block aside)
        const { nftables: _n, ...start } = ipvs137().config;
        const { nftables: _m, ...end } = back.after;
        assert.deepEqual(end, start);
    });
    it("the memory survives renders that stay out of ipvs (nftables -> iptables -> ipvs still restores)", () => {
        const nft = renderConfiguration(ipvs137(), { mode: "nftables", kubernetesVersion: "1.37" });
        assert.equal(
            again(nft.config, { mode: "nftables", kubernetesVersion: "1.37" }).config,
            nft.config,
            "idempotent, memory kept",
        );
        const ipt = again(nft.config, { mode: "iptables", kubernetesVersion: "1.37" });
        assert.deepEqual(rememberedIpvsSettings(ipt.config), { "ipvs.scheduler": "lc", "ipvs.strictARP": true });
        assert.equal(
            getPath(again(ipt.config, { mode: "ipvs", kubernetesVersion: "1.37" }).after, "ipvs.scheduler"),
            "lc",
        );
    });
    it("a value set by hand since is not overwritten; the user's own comment stays; an edited memory is not trusted", () => {
        const text = [
            "apiVersion: kubeproxy.config.k8s.io/v1alpha1",
            "kind: KubeProxyConfiguration",
            "mode: nftables",
            "ipvs:",
            '  scheduler: rr # round robin; kube-proxy-mode: was "lc" in ipvs mode, restored on a move back to ipvs',
            "  strictARP: false # MetalLB; kube-proxy-mode: was tru in ipvs mode, restored on a move back to ipvs",
            "",
        ].join("\n");
        assert.deepEqual(rememberedIpvsSettings(text), { "ipvs.scheduler": "lc" }, "`tru` is not JSON: no memory");
        const back = again(text, { mode: "ipvs", kubernetesVersion: "1.37" });
        assert.equal(getPath(back.after, "ipvs.scheduler"), "rr", "set by hand since: kept");
        assert.equal(getPath(back.after, "ipvs.strictARP"), false);
        const out = renderConfiguration(
            parseCurrentConfig(
                config({ mode: "ipvs", ipvs: { scheduler: "lc" } }).replace(
                    "scheduler: lc",
                    "scheduler: lc # least connections",
                ),
            ),
            { mode: "nftables", kubernetesVersion: "1.37" },
        );
        assert.match(out.config, /scheduler: "" # least connections; kube-proxy-mode: was "lc" in ipvs mode/);
        assert.match(
            again(out.config, { mode: "ipvs", kubernetesVersion: "1.37" }).config,
            /scheduler: lc # least connections\n/,
        );
    });
});

describe("rule: leaving ipvs for iptables leaves ipvs state behind", () => {
    it("warns that iptables mode does not clean ipvs leftovers", () => {
        const r = render({ mode: "ipvs" }, { mode: "iptables", kubernetesVersion: "1.37" });
        const f = r.findings.find((x) => x.code === "ipvs.leftovers")!;
        assert.equal(f.severity, "warning");
        assert.match(f.message, /kube-ipvs0/);
    });
    it("does not warn for ipvs -> nftables (nftables mode cleans them)", () => {
        const r = render({ mode: "ipvs" }, { mode: "nftables", kubernetesVersion: "1.37" });
        assert.ok(!codes(r.findings).includes("ipvs.leftovers"));
    });
});

describe("rule: conntrack on kernels older than 6.1", () => {
    it("warns in render unless conntrack.tcpBeLiberal is true", () => {
        assert.ok(
            codes(render({ mode: "iptables" }, { mode: "nftables", kubernetesVersion: "1.37" }).findings).includes(
                "nftables.conntrack",
            ),
        );
        const ok = render(
            { mode: "iptables" },
            { mode: "nftables", kubernetesVersion: "1.37", conntrack: { tcpBeLiberal: true } },
        );
        assert.ok(!codes(ok.findings).includes("nftables.conntrack"));
        assert.equal(getPath(ok.after, "conntrack.tcpBeLiberal"), true);
    });
    it("warns per node only for kernels older than 6.1", () => {
        const node = (kernelVersion: string) => ({ name: "n1", labels: {}, kernelVersion });
        assert.equal(nodeVerdict(node("5.15.0-1057-aws"), "nftables").verdict, "warn");
        assert.equal(nodeVerdict(node("6.1.0-28-cloud-amd64"), "nftables").verdict, "ok");
        assert.equal(nodeVerdict(node("5.15.0-1057-aws"), "nftables", { tcpBeLiberal: true }).verdict, "ok");
    });
});

describe("the rules see the configuration kube-proxy will read", () => {
    it("checkConfiguration without a version warns that version rules were skipped", () => {
        const f = checkConfiguration({ desired: { mode: "nftables" }, result: { mode: "nftables" } });
        assert.ok(codes(f, "warning").includes("version.unknown"));
    });
});
