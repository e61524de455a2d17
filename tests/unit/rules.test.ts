// components/core/rules.ts: one table per rule; each row is a configuration and the finding codes it must (and must not) produce.
import assert from "node:assert/strict";
import * as YAML from "yaml";
import {
    checkConfiguration,
    conntrackFinding,
    getPath,
    nodeVerdict,
    parseCurrentConfig,
    parseKubeVersion,
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

/** The one finding of `code` in a render, which must be there. */
function finding(r: { findings: Finding[] }, code: string): Finding {
    const f = r.findings.find((x) => x.code === code);
    assert.ok(f, `no ${code} in ${codes(r.findings).join(", ")}`);
    return f;
}

describe("what each finding tells the reviewer: the field to change, the releases involved, the fix", () => {
    it("an unknown version: a warning on kubernetesVersion that says how to pass it", () => {
        const f = finding(
            { findings: checkConfiguration({ desired: { mode: "iptables" }, result: { mode: "iptables" } }) },
            "version.unknown",
        );
        assert.deepEqual([f.severity, f.field], ["warning", "kubernetesVersion"]);
        assert.match(f.message, /version rules .* were not checked/);
        assert.match(f.fix!, /--kubernetes-version/);
    });
    it("an unpinned mode: a note naming the mode this change pins; nothing without a current configuration", () => {
        const f = finding(render({ mode: "" }, { mode: "nftables", kubernetesVersion: "1.37" }), "mode.unpinned");
        assert.equal(f.severity, "info");
        assert.match(f.message, /\(mode: ""\), so kube-proxy runs iptables today/);
        assert.match(f.message, /pins it to nftables$/);
        const absent = finding(render({}, { mode: "iptables", kubernetesVersion: "1.37" }), "mode.unpinned");
        assert.match(absent.message, /\(mode: ""\)/);
        const none = checkConfiguration({
            desired: { mode: "nftables" },
            version: undefined,
            result: { mode: "nftables" },
        });
        assert.deepEqual(
            codes(none),
            ["version.unknown", "nftables.conntrack"],
            "no current: no mode or reach findings",
        );
    });
    it("ipvs: the release it runs on, the release that deletes it, and the gate to set until then", () => {
        const version = (v: string, featureGates?: Record<string, boolean>) =>
            render(
                { mode: "ipvs" },
                { mode: "ipvs", kubernetesVersion: v, featureGates, allowUnknownFeatureGates: true },
            );
        const deprecated = finding(version("1.37"), "ipvs.deprecated");
        assert.match(deprecated.message, /the KubeProxyIPVS gate itself goes in 1\.46/);
        assert.match(deprecated.fix!, /kernel 5\.13\+/);
        const off = finding(version("1.40"), "ipvs.off");
        assert.match(off.message, /^kube-proxy 1\.40 exits in ipvs mode unless featureGates\.KubeProxyIPVS is true/);
        assert.match(off.fix!, /until 1\.43 only\) featureGates\.KubeProxyIPVS: true/);
        const gated = finding(version("1.41", { KubeProxyIPVS: true }), "ipvs.gated");
        assert.equal(gated.field, "featureGates.KubeProxyIPVS");
        assert.match(gated.message, /runs on 1\.41 only because KubeProxyIPVS=true; this works only until 1\.43/);
        assert.match(gated.fix!, /before upgrading to 1\.43/);
        const removed = finding(version("1.43"), "ipvs.removed");
        assert.match(removed.message, /does not exist in Kubernetes 1\.43/);
        assert.match(removed.fix!, /nftables or iptables/);
        assert.deepEqual(
            codes(checkConfiguration({ desired: { mode: "ipvs" }, result: { mode: "ipvs" } })).filter((c) =>
                c.startsWith("ipvs"),
            ),
            ["ipvs.deprecated"],
            "without a version only the deprecation",
        );
    });
    it("nftables too early: the release it needs, the gate on the field to change; no version, no such error", () => {
        const at = (v: string) =>
            render({ mode: "iptables" }, { mode: "nftables", kubernetesVersion: v, nodePortAddresses: ["0.0.0.0/0"] });
        const unavailable = finding(at("1.28"), "nftables.unavailable");
        assert.match(unavailable.message, /needs Kubernetes 1\.29 or newer; this cluster runs 1\.28/);
        assert.match(unavailable.fix!, /upgrade to 1\.31\+/);
        const gate = finding(at("1.30"), "nftables.gate");
        assert.equal(gate.field, "featureGates.NFTablesProxyMode");
        assert.match(gate.message, /alpha in 1\.30/);
        assert.match(gate.fix!, /set featureGates\.NFTablesProxyMode: true/);
        const unknown = checkConfiguration({ desired: { mode: "nftables" }, result: { mode: "nftables" } });
        assert.ok(!codes(unknown, "error").some((c) => c.startsWith("nftables")), codes(unknown).join(", "));
    });
});

describe("feature gate findings name the gate and what to do", () => {
    it("a gate that is not a boolean is refused, even one already in the current configuration", () => {
        const f = finding(
            render(
                { mode: "iptables", featureGates: { NFTablesProxyMode: "true" } },
                { mode: "iptables", kubernetesVersion: "1.37" },
            ),
            "gate.value",
        );
        assert.deepEqual([f.severity, f.field], ["error", "featureGates.NFTablesProxyMode"]);
        assert.match(f.message, /is "true": a gate is true or false/);
    });
    it("a locked gate says how to fix it", () => {
        const f = finding(
            render(
                { mode: "iptables" },
                { mode: "iptables", kubernetesVersion: "1.37", featureGates: { NFTablesProxyMode: false } },
            ),
            "gate.locked",
        );
        assert.equal(f.field, "featureGates.NFTablesProxyMode");
        assert.match(f.message, /locked to true in 1\.37: kube-proxy refuses to start when it is set to false/);
        assert.equal(f.fix, "remove featureGates.NFTablesProxyMode");
    });
    it("an unknown gate: on a release newer than the tool's list it says so; the fix offers a rename, the flag, or says it was accepted", () => {
        const unknown = (kubernetesVersion: string | undefined, featureGates: Record<string, boolean>, allow = false) =>
            finding(
                render(
                    { mode: "iptables" },
                    { mode: "iptables", kubernetesVersion, featureGates, allowUnknownFeatureGates: allow },
                ),
                "gate.unknown",
            );
        const newer = unknown("1.99", { FromTheFuture: true });
        assert.match(newer.message, /^FromTheFuture is not a feature gate of the newest list this tool has \(1\.\d+\)/);
        assert.match(newer.fix!, /^remove it, or allow unknown gates \(--allow-unknown-feature-gates\)/);
        assert.match(
            unknown(undefined, { FromTheFuture: true }).message,
            /is not a feature gate of Kubernetes 1\.\d+:/,
        );
        assert.match(unknown("1.37", { FromTheFuture: true }).message, /is not a feature gate of Kubernetes 1\.37:/);
        assert.match(
            unknown("1.37", { KubeProxyNFTablesLocalhostNodePort: true }).fix!,
            /^rename it to KubeProxyNFTablesLocalhostNodePorts, or allow unknown gates/,
        );
        assert.match(
            unknown("1.37", { FromTheFuture: true }, true).fix!,
            /^accepted because unknown gates are allowed/,
        );
    });
    it("a broken dependency is reported on the gate the user set, with the gates to enable", () => {
        const on = finding(
            render(
                { mode: "iptables" },
                { mode: "nftables", kubernetesVersion: "1.37", featureGates: { WorkloadWithJob: true } },
            ),
            "gate.dependency",
        );
        assert.equal(on.field, "featureGates.WorkloadWithJob");
        assert.match(on.fix!, /^set featureGates\.GenericWorkload: true, or leave WorkloadWithJob at its default$/);
        const off = finding(
            render(
                { mode: "iptables" },
                { mode: "nftables", kubernetesVersion: "1.37", featureGates: { APIServerIdentity: false } },
            ),
            "gate.dependency",
        );
        assert.equal(off.field, "featureGates.APIServerIdentity");
        assert.match(off.message, /needs APIServerIdentity enabled in 1\.37/);
        const two = finding(
            render(
                { mode: "iptables" },
                { mode: "nftables", kubernetesVersion: "1.37", featureGates: { CompositePodGroup: true } },
            ),
            "gate.dependency",
        );
        assert.match(
            two.message,
            /^CompositePodGroup needs GenericWorkload and TopologyAwareWorkloadScheduling enabled/,
        );
        assert.match(
            two.fix!,
            /^set featureGates\.GenericWorkload: true, featureGates\.TopologyAwareWorkloadScheduling: true, or leave/,
        );
    });
});

describe("nodePortAddresses findings point at the entry", () => {
    const result = (nodePortAddresses: unknown, version?: string) =>
        checkConfiguration({
            desired: { mode: "iptables" },
            version: version === undefined ? undefined : parseKubeVersion(version),
            result: { mode: "iptables", nodePortAddresses },
        }).filter((f) => f.code.startsWith("nodePort"));
    it("null is unset; a string is not a list; an entry that is not a string is invalid at its index", () => {
        assert.deepEqual(result(null), []);
        assert.deepEqual(
            result("0.0.0.0/0").map((f) => [f.severity, f.code, f.field]),
            [["error", "nodePortAddresses.shape", "nodePortAddresses"]],
        );
        const [f] = result(["10.0.0.0/8", 5]);
        assert.deepEqual(
            [f.code, f.field, f.message],
            ["nodePortAddresses.invalid", "nodePortAddresses[1]", "5 is not a string"],
        );
    });
    it("without a version, keywords and primary with others are accepted", () => {
        assert.deepEqual(result(["localhost", "primary", "10.0.0.0/8"]), []);
    });
    it("before the keywords release: each keyword and a primary among others at its index, with the fix that release allows", () => {
        const found = result(["banana", "10.0.0.0/8", "primary", "all", "localhost"], "1.36");
        assert.deepEqual(
            found.map((f) => [f.code, f.field]),
            [
                ["nodePortAddresses.invalid", "nodePortAddresses[0]"],
                ["nodePortAddresses.keyword", "nodePortAddresses[3]"],
                ["nodePortAddresses.keyword", "nodePortAddresses[4]"],
                ["nodePortAddresses.primaryAlone", "nodePortAddresses[2]"],
            ],
        );
        assert.match(found[0].fix!, /or primary \(alone\)$/);
        assert.match(
            found[1].message,
            /^"all" is a nodePortAddresses keyword only from Kubernetes 1\.37 .*this cluster runs 1\.36$/,
        );
        assert.equal(found[1].fix, "use 0.0.0.0/0 and ::/0");
        assert.match(found[2].fix!, /127\.0\.0\.0\/8/);
        assert.match(found[3].message, /before Kubernetes 1\.37, "primary" must be the only/);
        assert.match(result(["banana"], "1.37")[0].fix!, /or primary, localhost, all$/);
    });
    it("localhost in nftables mode without its gate is refused at its index", () => {
        const r = render(
            { mode: "iptables" },
            { mode: "nftables", kubernetesVersion: "1.37", nodePortAddresses: ["10.0.0.0/8", "localhost"] },
        );
        const f = finding(r, "nodePortAddresses.localhostGate");
        assert.equal(f.field, "nodePortAddresses[1]");
        assert.match(f.fix!, /set featureGates\.KubeProxyNFTablesLocalhostNodePorts: true, or drop "localhost"/);
    });
});

describe("moving into nftables: reach, localhost NodePorts and where the state lives", () => {
    const into = (version: string, nodePortAddresses?: string[], featureGates?: Record<string, boolean>) =>
        render({ mode: "iptables" }, { mode: "nftables", kubernetesVersion: version, nodePortAddresses, featureGates });
    it("the reach warning says what the list is and offers the all keyword only where that keyword exists", () => {
        const unset = finding(into("1.37"), "nodePort.reach");
        assert.match(
            unset.message,
            /nodePortAddresses is unset, which means primary in nftables mode, while iptables mode answered/,
        );
        assert.match(unset.fix!, /\(or \["all"\]\)/);
        const primary = finding(into("1.36", ["primary"]), "nodePort.reach");
        assert.match(primary.message, /nodePortAddresses is \["primary"\], while iptables mode/);
        assert.doesNotMatch(primary.fix!, /"all"/);
    });
    it("warns about localhost NodePorts when either the keyword or the gate is missing; the fix fits the release", () => {
        const keywordOnly = into("1.37", ["primary", "localhost"]);
        assert.match(
            finding(keywordOnly, "nodePort.localhost").fix!,
            /^on 1\.37\+ set featureGates\.KubeProxyNFTablesLocalhostNodePorts: true/,
        );
        const gateOnly = into("1.37", ["primary"], { KubeProxyNFTablesLocalhostNodePorts: true });
        assert.ok(codes(gateOnly.findings).includes("nodePort.localhost"));
        assert.match(
            finding(into("1.36", ["primary"]), "nodePort.localhost").fix!,
            /^point those clients at the ClusterIP or the node's primary IP$/,
        );
    });
    it("notes that kube-proxy's state moves to its nftables tables, only when the mode changes into nftables", () => {
        const f = finding(into("1.37"), "nftables.stateMoves");
        assert.equal(f.severity, "info");
        assert.match(f.message, /`table ip kube-proxy`/);
        const staying = render({ mode: "nftables" }, { mode: "nftables", kubernetesVersion: "1.37" });
        assert.ok(!codes(staying.findings).some((c) => c.startsWith("nodePort.") || c === "nftables.stateMoves"));
    });
});

describe("the conntrack warning, for the cluster and for a node", () => {
    it("for the cluster it speaks of nodes with old kernels; for a node, of its kernel, and names the node", () => {
        const [cluster] = conntrackFinding("nftables", undefined, "unknown");
        assert.match(cluster.message, /^on nodes with a kernel older than 6\.1, nftables mode/);
        assert.equal(cluster.fix, "set conntrack.tcpBeLiberal: true (the supported equivalent)");
        const [node] = conntrackFinding("nftables", false, true, ["n1"]);
        assert.match(node.message, /^kernel older than 6\.1: nftables mode/);
        assert.deepEqual([node.severity, node.field, node.nodes], ["warning", "conntrack.tcpBeLiberal", ["n1"]]);
        assert.deepEqual(conntrackFinding("iptables", undefined, true), []);
        assert.deepEqual(conntrackFinding("nftables", true, true), []);
        assert.deepEqual(conntrackFinding("nftables", undefined, false), []);
    });
});

describe("each rule stays silent where it does not apply, and every finding names a field", () => {
    const cases: [string, Record<string, unknown>, DesiredSettings][] = [
        ["iptables -> iptables", { mode: "iptables" }, { mode: "iptables", kubernetesVersion: "1.28" }],
        ["iptables -> ipvs", { mode: "iptables" }, { mode: "ipvs", kubernetesVersion: "1.37" }],
        ["ipvs -> iptables", { mode: "ipvs" }, { mode: "iptables", kubernetesVersion: "1.37" }],
        ["iptables -> nftables", { mode: "iptables" }, { mode: "nftables", kubernetesVersion: "1.37" }],
        [
            "1.36 localhost",
            { mode: "iptables" },
            { mode: "iptables", kubernetesVersion: "1.36", nodePortAddresses: ["localhost", "primary"] },
        ],
        [
            "1.37 localhost",
            { mode: "iptables" },
            { mode: "nftables", kubernetesVersion: "1.37", nodePortAddresses: ["localhost"] },
        ],
        ["unpinned", { mode: "" }, { mode: "iptables", kubernetesVersion: "1.37" }],
    ];
    it("pinned iptables on an old release: nothing; a move into ipvs: only the ipvs deprecation", () => {
        const [same, toIpvs] = cases.map(([, current, desired]) => codes(render(current, desired).findings));
        assert.deepEqual(same, [], "iptables -> iptables on 1.28");
        assert.deepEqual(toIpvs, ["ipvs.deprecated"]);
    });
    it("every finding has a code, a severity and a field", () => {
        for (const [name, current, desired] of cases)
            for (const f of render(current, desired).findings)
                assert.ok(f.code && f.severity && f.field, `${name}: ${JSON.stringify(f)}`);
    });
    it("a gate turned off is not checked for the gates it would need", () => {
        const r = render(
            { mode: "iptables" },
            { mode: "nftables", kubernetesVersion: "1.37", featureGates: { CompositePodGroup: false } },
        );
        assert.ok(!codes(r.findings).includes("gate.dependency"));
        const unknown = finding(
            render(
                { mode: "iptables" },
                { mode: "iptables", kubernetesVersion: "1.37", featureGates: { FromTheFuture: true } },
            ),
            "gate.unknown",
        );
        assert.match(unknown.message, /refuses to start on an unknown gate$/);
    });
    it("nodePortAddresses: primary after another keyword, localhost first, two CIDRs before 1.37", () => {
        const r136 = render(
            { mode: "iptables" },
            { mode: "iptables", kubernetesVersion: "1.36", nodePortAddresses: ["all", "primary"] },
        );
        const alone = finding(r136, "nodePortAddresses.primaryAlone");
        assert.equal(alone.field, "nodePortAddresses[1]");
        assert.equal(alone.fix, 'use ["primary"] alone, or list CIDRs');
        const cidrs = render(
            { mode: "iptables" },
            { mode: "iptables", kubernetesVersion: "1.36", nodePortAddresses: ["10.0.0.0/8", "fd00::/64"] },
        );
        assert.deepEqual(codes(cidrs.findings), []);
        const lh = finding(
            render(
                { mode: "iptables" },
                { mode: "nftables", kubernetesVersion: "1.37", nodePortAddresses: ["localhost"] },
            ),
            "nodePortAddresses.localhostGate",
        );
        assert.equal(lh.field, "nodePortAddresses[0]");
        assert.match(
            lh.message,
            /localhost NodePorts in nftables mode need featureGates\.KubeProxyNFTablesLocalhostNodePorts: true/,
        );
        const shape = checkConfiguration({
            desired: { mode: "iptables" },
            result: { mode: "iptables", nodePortAddresses: "x" },
        });
        assert.equal(
            finding({ findings: shape }, "nodePortAddresses.shape").message,
            "nodePortAddresses must be a list",
        );
    });
    it("moving into nftables: no reach warning when another keyword or a CIDR is listed; the warnings' words", () => {
        const to = (nodePortAddresses?: string[], version = "1.37") =>
            render({ mode: "iptables" }, { mode: "nftables", kubernetesVersion: version, nodePortAddresses });
        assert.ok(!codes(to(["all"]).findings).includes("nodePort.reach"));
        assert.ok(!codes(to(["primary", "10.0.0.0/8"]).findings).includes("nodePort.reach"));
        assert.equal(
            finding(to(["primary"], "1.36"), "nodePort.reach").fix,
            'to keep the old reach set nodePortAddresses: ["0.0.0.0/0", "::/0"]; to accept the change, set ["primary"] explicitly',
        );
        const localhost = finding(to(["primary"]), "nodePort.localhost");
        assert.equal(localhost.severity, "warning");
        assert.match(localhost.message, /^127\.0\.0\.1:<nodePort> stops answering in nftables mode/);
        assert.match(
            finding(to(), "nftables.stateMoves").message,
            /^kube-proxy no longer opens the host firewall for NodePorts/,
        );
        assert.match(finding(to(), "nftables.conntrack").message, /^on nodes with a kernel older than 6\.1,/);
    });
    it("leaving ipvs for iptables: the leftovers, what they break, and the cleanup", () => {
        const f = finding(render({ mode: "ipvs" }, { mode: "iptables", kubernetesVersion: "1.37" }), "ipvs.leftovers");
        assert.match(f.message, /^iptables mode does not remove ipvs leftovers/);
        assert.match(f.message, /black-holes those ClusterIPs/);
        assert.match(f.fix!, /kube-proxy-mode cleanup/);
    });
});
