// Promotion gates and alerts, the pure parts: the target two stacks compare, the gate's verdict
// for each way an upstream can be not ready, the verification count, and the alert rules.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as YAML from "yaml";
import {
    alertRules,
    checkPromotion,
    gateRefusal,
    soakOnlyRetryAfter,
    parsePromotion,
    planAlerts,
    promotionTarget,
    summarizeVerification,
    type GateInput,
    type PromotionRecord,
} from "../../components/core/index.js";
import { ROOT } from "../helpers.js";

function config(fields: Record<string, unknown>): string {
    return YAML.stringify({
        apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
        kind: "KubeProxyConfiguration",
        ...fields,
    });
}

const NFT = {
    mode: "nftables",
    nodePortAddresses: ["0.0.0.0/0"],
    nftables: { syncPeriod: "45s", minSyncPeriod: "0s" },
    conntrack: { tcpBeLiberal: true },
};

describe("promotion target: the data-plane settings two clusters must share", () => {
    it("ignores what legitimately differs between clusters (CIDRs, hostnames, paths, bind addresses)", () => {
        const staging = promotionTarget(
            config({
                ...NFT,
                clusterCIDR: "10.244.0.0/16",
                hostnameOverride: "a",
                clientConnection: { kubeconfig: "/a" },
                metricsBindAddress: "0.0.0.0:10249",
            }),
        );
        const prod = promotionTarget(
            config({
                ...NFT,
                clusterCIDR: "10.50.0.0/16",
                clientConnection: { kubeconfig: "/var/lib/kube-proxy/kubeconfig.conf" },
            }),
        );
        assert.equal(staging.targetHash, prod.targetHash);
        assert.deepEqual(staging.target, {
            mode: "nftables",
            "conntrack.tcpBeLiberal": true,
            nodePortAddresses: ["0.0.0.0/0"],
            "nftables.syncPeriod": "45s",
        });
    });
    it("zero values and absent values are the same target; key order does not matter", () => {
        const a = promotionTarget(
            config({ ...NFT, featureGates: {}, nftables: { syncPeriod: "45s", masqueradeBit: null } }),
        );
        const b = promotionTarget(
            config({
                nftables: { syncPeriod: "45s" },
                conntrack: { tcpBeLiberal: true },
                nodePortAddresses: ["0.0.0.0/0"],
                mode: "nftables",
            }),
        );
        assert.equal(a.targetHash, b.targetHash);
    });
    it("differs in any setting kube-proxy-mode owns or carries: mode, mode block, gates, nodePortAddresses, conntrack", () => {
        const base = promotionTarget(config(NFT)).targetHash;
        for (const change of [
            { mode: "iptables" },
            { nftables: { syncPeriod: "30s" } },
            { featureGates: { KubeProxyNFTablesLocalhostNodePorts: true } },
            { nodePortAddresses: ["primary"] },
            { conntrack: { tcpBeLiberal: false } },
        ]) {
            assert.notEqual(promotionTarget(config({ ...NFT, ...change })).targetHash, base, JSON.stringify(change));
        }
    });
    it("the hash is of the settings in sorted order, and stays the same across versions (stacks compare recorded hashes)", () => {
        const { target, targetHash } = promotionTarget(config(NFT));
        assert.equal(
            JSON.stringify(target),
            '{"mode":"nftables","conntrack.tcpBeLiberal":true,"nftables.syncPeriod":"45s","nodePortAddresses":["0.0.0.0/0"]}',
        );
        assert.equal(targetHash, "5c22bc58f1");
    });
    it("feature gates in any key order are the same target, kept in sorted order", () => {
        const ab = promotionTarget(config({ mode: "nftables", featureGates: { A: false, B: true } }));
        const ba = promotionTarget(config({ mode: "nftables", featureGates: { B: true, A: false } }));
        assert.equal(ab.targetHash, ba.targetHash);
        assert.equal(JSON.stringify(ba.target), '{"mode":"nftables","featureGates":{"A":false,"B":true}}');
    });
    it("only the active mode's block counts (ipvs leftovers in another block are not the target)", () => {
        assert.equal(
            promotionTarget(config({ ...NFT, iptables: { syncPeriod: "10s" } })).targetHash,
            promotionTarget(config(NFT)).targetHash,
        );
        assert.equal(
            promotionTarget(config({ ...NFT, ipvs: { scheduler: "lc", strictARP: true, syncPeriod: "45s" } }))
                .targetHash,
            promotionTarget(config(NFT)).targetHash,
        );
    });
});

describe("promotion gate", () => {
    const own = { ...promotionTarget(config(NFT)), mode: "nftables" as const };
    const now = new Date("2026-03-02T12:00:00Z");
    const record = (over: Partial<PromotionRecord> = {}): PromotionRecord => ({
        targetHash: own.targetHash,
        target: own.target,
        configHash: "aaaaaaaaaa",
        mode: "nftables",
        finishedAt: "2026-03-01T10:00:00Z",
        nodesVerified: 4,
        nodesChecked: 4,
        nodesTotal: 4,
        unverified: [],
        ...over,
    });
    const gate = (over: Partial<GateInput> = {}) =>
        checkPromotion({
            upstream: "acme/kpm/staging",
            record: record(),
            own,
            alreadyApplied: false,
            minSoakSeconds: 24 * 3600,
            requireNodeChecks: true,
            now,
            ...over,
        });

    it("opens when the upstream finished the same target, verified every node and held it for minSoak", () => {
        const v = gate();
        assert.equal(v.open, true);
        assert.deepEqual(v.missing, []);
        assert.match(
            v.notes[0],
            /acme\/kpm\/staging finished nftables .* verified 4\/4 node\(s\), held for 26h \(minSoak 24h\)/,
        );
    });
    it("refuses an upstream that never finished (no record), saying what to do", () => {
        const v = gate({ record: undefined });
        assert.equal(v.open, false);
        assert.match(
            v.missing[0],
            /acme\/kpm\/staging has no promotion record: it has not finished a kube-proxy-mode rollout \(run pulumi up there first/,
        );
    });
    it("refuses a record that is not one", () => {
        const v = gate({ record: { mode: "nftables" } });
        assert.equal(v.open, false);
        assert.match(v.missing[0], /not a kube-proxy-mode promotion record \(targetHash: /);
    });
    it("refuses a different target, naming each differing setting with both values", () => {
        const other = promotionTarget(config({ ...NFT, nodePortAddresses: ["primary"] }));
        const v = gate({ record: record({ targetHash: other.targetHash, target: other.target }) });
        assert.equal(v.open, false);
        assert.match(
            v.missing[0],
            /finished a different target .* nodePortAddresses: \["primary"\] there, \["0\.0\.0\.0\/0"\] here/,
        );
    });
    it("refuses the same mode with other settings (not just the mode)", () => {
        const other = promotionTarget(config({ ...NFT, conntrack: {} }));
        const v = gate({ record: record({ targetHash: other.targetHash, target: other.target }) });
        assert.equal(v.open, false);
        assert.match(v.missing[0], /conntrack\.tcpBeLiberal: \(unset\) there, true here/);
    });
    it("refuses an upstream with unverified nodes, naming them", () => {
        const v = gate({
            record: record({ nodesVerified: 2, nodesChecked: 2, unverified: ["workers-1", "workers-2"] }),
        });
        assert.equal(v.open, false);
        assert.match(
            v.missing[0],
            /verified 2 of 4 node\(s\) on configuration aaaaaaaaaa \(not verified: workers-1, workers-2\)/,
        );
    });
    it("refuses an upstream of zero nodes", () => {
        assert.equal(gate({ record: record({ nodesVerified: 0, nodesChecked: 0, nodesTotal: 0 }) }).open, false);
    });
    it("refuses nodes verified by hooks only unless requireNodeChecks is false", () => {
        const hooksOnly = record({ nodesChecked: 0 });
        const v = gate({ record: hooksOnly });
        assert.equal(v.open, false);
        assert.match(
            v.missing[0],
            /verified 4 of 4 node\(s\) with hooks only \(verify\.nodeChecks: false there\).*promotion\.requireNodeChecks: false/,
        );
        const accepted = gate({ record: hooksOnly, requireNodeChecks: false });
        assert.equal(accepted.open, true);
        assert.match(accepted.notes[1], /hooks only \(accepted/);
    });
    it("refuses an upstream that finished too recently, saying how long is left and when to retry", () => {
        const v = gate({ record: record({ finishedAt: "2026-03-02T11:00:00Z" }) });
        assert.equal(v.open, false);
        assert.match(
            v.missing[0],
            /finished at 2026-03-02T11:00:00Z and has held it for 1h; promotion\.minSoak is 24h: 23h left \(retry after 2026-03-03T11:00:00\.000Z\)/,
        );
    });
    it("the soak boundary: exactly minSoak is enough, a second less is not", () => {
        const finishedAt = new Date(now.getTime() - 24 * 3600 * 1000).toISOString();
        assert.equal(gate({ record: record({ finishedAt }) }).open, true);
        assert.equal(
            gate({ record: record({ finishedAt: new Date(now.getTime() - (24 * 3600 - 1) * 1000).toISOString() }) })
                .open,
            false,
        );
    });
    it("lists every missing thing at once", () => {
        const v = gate({
            record: record({
                finishedAt: now.toISOString(),
                nodesVerified: 3,
                mode: "nftables",
                targetHash: "0000000000",
                target: {},
            }),
        });
        assert.equal(v.missing.length, 3);
        assert.match(
            gateRefusal("acme/kpm/staging", v),
            /^promotion gate refused: acme\/kpm\/staging is not ready to be followed:\n- .*different target.*\n- .*verified 3 of 4.*\n- .*minSoak/,
        );
    });
    it("a refusal for the soak alone gives its retry time, as written and with its whitespace collapsed; one with another gap gives none", () => {
        const soaking = gateRefusal(
            "acme/kpm/staging",
            gate({ record: record({ finishedAt: "2026-03-02T11:30:00Z" }), minSoakSeconds: 3600 }),
        );
        assert.match(soaking, /retry after 2026-03-02T12:30:00.000Z/);
        assert.equal(soakOnlyRetryAfter(soaking)?.toISOString(), "2026-03-02T12:30:00.000Z");
        assert.equal(
            soakOnlyRetryAfter(`stack prod@/infra: ${soaking.replace(/\s+/g, " ")}`)?.toISOString(),
            "2026-03-02T12:30:00.000Z",
        );
        const twoGaps = gateRefusal(
            "acme/kpm/staging",
            gate({ record: record({ finishedAt: "2026-03-02T11:30:00Z", nodesVerified: 3 }), minSoakSeconds: 3600 }),
        );
        assert.equal(soakOnlyRetryAfter(twoGaps), undefined);
        assert.equal(soakOnlyRetryAfter(twoGaps.replace(/\s+/g, " ")), undefined);
        assert.equal(soakOnlyRetryAfter(gateRefusal("acme/kpm/staging", gate({ record: undefined }))), undefined);
        assert.equal(soakOnlyRetryAfter("preview failed: boom"), undefined);
    });
    it("an open gate has one note when every node ran the built-in checks", () => {
        assert.equal(gate().notes.length, 1);
    });
    it("a null record is no record", () => {
        assert.deepEqual(gate({ record: null }), {
            open: false,
            missing: [
                "acme/kpm/staging has no promotion record: it has not finished a kube-proxy-mode rollout (run pulumi up there first and let it finish)",
            ],
            notes: [],
        });
    });
    it("a record that is not one names each bad field by its path", () => {
        const v = gate({ record: { ...record(), unverified: [1], nodesTotal: -1 } });
        assert.deepEqual(v.notes, []);
        assert.match(v.missing[0], /\(nodesTotal: .+; unverified\.0: .+\)$/);
    });
    it("a different target lists the differing settings in order, leaves the equal ones out, and says what to do", () => {
        const other = promotionTarget(config({ ...NFT, nodePortAddresses: ["primary"], conntrack: {} }));
        const v = gate({ record: record({ targetHash: other.targetHash, target: other.target }) });
        assert.deepEqual(v.notes, []);
        assert.match(
            v.missing[0],
            /\): conntrack\.tcpBeLiberal: \(unset\) there, true here; nodePortAddresses: \["primary"\] there, \["0\.0\.0\.0\/0"\] here; promote the same settings, or move acme\/kpm\/staging to this target first$/,
        );
    });
    it("a different hash over the same settings (a record of another version) says the settings differ", () => {
        const v = gate({ record: record({ targetHash: "0000000000" }) });
        assert.match(
            v.missing[0],
            /target 0000000000\) than this stack renders \(nftables, target \w+\): settings differ; /,
        );
    });
    it("names at most 10 unverified nodes, then ...; none named when the record lists none", () => {
        const unverified = Array.from({ length: 11 }, (_, i) => `w${i + 1}`);
        const eleven = gate({ record: record({ nodesVerified: 0, nodesTotal: 11, unverified }) });
        assert.match(eleven.missing[0], /\(not verified: w1, w2, .*, w10 \.\.\. and 1 more\); every node/);
        assert.doesNotMatch(eleven.missing[0], /w11/);
        const ten = gate({ record: record({ nodesVerified: 0, nodesTotal: 10, unverified: unverified.slice(0, 10) }) });
        assert.match(ten.missing[0], /\(not verified: w1, .*, w10\); every node/);
        const zero = gate({ record: record({ nodesVerified: 0, nodesChecked: 0, nodesTotal: 0 }) });
        assert.deepEqual(zero, {
            open: false,
            missing: [
                "acme/kpm/staging verified 0 of 0 node(s) on configuration aaaaaaaaaa; every node must be verified by its rollout (a configuration written by hand is not)",
            ],
            notes: [],
        });
    });
    it("counts the nodes verified by hooks only", () => {
        const partly = record({ nodesChecked: 1 });
        assert.match(gate({ record: partly }).missing[0], /verified 3 of 4 node\(s\) with hooks only/);
        assert.match(
            gate({ record: partly, requireNodeChecks: false }).notes[1],
            /verified 3 node\(s\) with hooks only/,
        );
    });
    it("does not consult the upstream when this cluster already runs its target (nothing moves)", () => {
        const v = gate({ record: undefined, alreadyApplied: true });
        assert.equal(v.open, true);
        assert.deepEqual(v.missing, []);
        assert.match(v.notes[0], /already runs its target/);
    });
    it("reads the option: a fully qualified upstream, a required minSoak, no unknown settings", () => {
        assert.deepEqual(parsePromotion({ after: "organization/kube-proxy-mode/staging", minSoak: "24h" }), {
            after: "organization/kube-proxy-mode/staging",
            requireNodeChecks: true,
            minSoakSeconds: 86400,
        });
        assert.throws(
            () => parsePromotion({ after: "staging", minSoak: "1h" }),
            /^Error: promotion\.after must be a fully qualified stack name "<org>\/<project>\/<stack>"/,
        );
        assert.throws(
            () => parsePromotion({ after: "staging", minSoak: "1h", requireNodeChecks: "yes" }),
            /^Error: promotion\.after must be .*; promotion\.requireNodeChecks: /,
        );
        assert.throws(() => parsePromotion({ after: "a/b/c" }), /promotion\.minSoak is required/);
        assert.throws(
            () => parsePromotion({ after: "a/b/c", minSoak: "a day" }),
            /promotion\.minSoak: "a day" is not a duration/,
        );
        assert.throws(
            () => parsePromotion({ after: "a/b/c", minSoak: "1h", soak: "1h" }),
            /promotion: unknown setting\(s\) soak/,
        );
        assert.throws(
            () => parsePromotion({ after: "a/b/c", minSoak: "1h", soak: "1h", gate: true }),
            /promotion: unknown setting\(s\) soak, gate \(/,
        );
    });
});

describe("verification record", () => {
    it("counts the pools' nodes verified on the configuration, and how", () => {
        const r = summarizeVerification(
            [
                { name: "c1", verified: "h1", checks: "built-in+hooks" },
                { name: "w1", verified: "h1", checks: "hooks-only" },
                { name: "w2", verified: "h0", checks: "built-in+hooks" },
                { name: "w3" },
                { name: "win-1" },
            ],
            ["c1", "w1", "w2", "w3"],
            "h1",
        );
        assert.deepEqual(r, { nodesVerified: 2, nodesChecked: 1, nodesTotal: 4, unverified: ["w2", "w3"] });
    });
    it("counts verified and checked nodes apart from the unverified ones", () => {
        const r = summarizeVerification(
            [
                { name: "a", verified: "h1", checks: "built-in+hooks" },
                { name: "b", verified: "h1", checks: "built-in+hooks" },
                { name: "c", verified: "h1", checks: "built-in+hooks" },
                { name: "d", verified: "h1", checks: "hooks-only" },
                { name: "e", verified: "h0", checks: "built-in+hooks" },
            ],
            ["a", "b", "c", "d", "e"],
            "h1",
        );
        assert.deepEqual(r, { nodesVerified: 4, nodesChecked: 3, nodesTotal: 5, unverified: ["e"] });
    });
});

describe("alerts", () => {
    const FACTS_EXPRESSIONS = [
        "sum by (node) (rate(kubeproxy_sync_proxy_rules_nftables_sync_failures_total[5m])) > 0",
        "sum by (node) (rate(kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total[5m])) > 0",
        "time() - max by (node) (kubeproxy_sync_proxy_rules_last_timestamp_seconds) > 300",
    ];
    it("holds the three expressions of docs/facts.md verbatim, and the ipvs alert; docs/alerts.md explains each", () => {
        const rules = alertRules({ nodeLabel: "node", alertLabels: {} });
        assert.deepEqual(
            rules.map((r) => r.alert),
            [
                "KubeProxyNFTablesSyncFailing",
                "KubeProxyNFTablesCleanupFailing",
                "KubeProxyRulesStale",
                "KubeProxyStillOnIPVS",
            ],
        );
        assert.deepEqual(
            rules.slice(0, 3).map((r) => r.expr),
            FACTS_EXPRESSIONS,
        );
        // the repository's own copy of the facts holds each one, line for line
        const facts = readFileSync(join(ROOT, "docs", "facts.md"), "utf8")
            .split("\n")
            .map((l) => l.trim());
        for (const e of FACTS_EXPRESSIONS) assert.ok(facts.includes(e), `docs/facts.md has ${e}`);
        assert.equal(
            rules[3].expr,
            "max by (node) (kubeproxy_sync_proxy_rules_last_timestamp_seconds) unless on (node) max by (node) (kubeproxy_sync_full_proxy_rules_duration_seconds_count)",
        );
        // the runbook annotation points at the alert's own section of docs/alerts.md, which explains it
        const runbook = readFileSync(join(ROOT, "docs", "alerts.md"), "utf8");
        for (const r of rules) {
            assert.equal(r.annotations.runbook, `docs/alerts.md#${r.alert.toLowerCase()}`);
            const at = runbook.indexOf(`\n## ${r.alert}\n`);
            assert.ok(at >= 0, `docs/alerts.md has a section "## ${r.alert}" (anchor #${r.alert.toLowerCase()})`);
            const section = runbook.slice(at + 1).split(/\n## /)[0];
            assert.ok(section.length > 200, `docs/alerts.md's section explains ${r.alert}`);
            assert.ok(runbook.includes("`" + r.expr + "`"), `docs/alerts.md lists ${r.alert}'s rule`);
        }
    });
    it("groups by the node label the user's scrape has", () => {
        const rules = alertRules({ nodeLabel: "instance", alertLabels: {} });
        assert.equal(
            rules[2].expr,
            "time() - max by (instance) (kubeproxy_sync_proxy_rules_last_timestamp_seconds) > 300",
        );
        assert.match(rules[0].annotations.summary, /\{\{ \$labels\.instance \}\}/);
    });
    it("a PrometheusRule labelled for the user's Prometheus, with the user's alert labels on every alert", () => {
        const { rule, findings } = planAlerts(
            { labels: { release: "kube-prometheus-stack" }, alertLabels: { team: "net" } },
            "present",
            "kube-system",
        );
        assert.deepEqual(findings, []);
        assert.equal(rule!.apiVersion, "monitoring.coreos.com/v1");
        assert.equal(rule!.kind, "PrometheusRule");
        assert.deepEqual(rule!.metadata, {
            name: "kube-proxy-mode",
            namespace: "kube-system",
            labels: { "app.kubernetes.io/managed-by": "kube-proxy-mode", release: "kube-prometheus-stack" },
        });
        for (const r of rule!.spec.groups[0].rules) assert.equal(r.labels.team, "net");
    });
    it("is an error on the field alerts when the CRD is absent, and when it cannot be read", () => {
        const absent = planAlerts({}, "absent", "kube-system");
        assert.equal(absent.rule, undefined);
        assert.equal(absent.findings[0].severity, "error");
        assert.equal(absent.findings[0].code, "alerts.noCrd");
        assert.equal(absent.findings[0].field, "alerts");
        assert.match(absent.findings[0].message, /prometheusrules\.monitoring\.coreos\.com is not installed/);
        assert.match(absent.findings[0].fix!, /install the Prometheus Operator/);
        const unreadable = planAlerts({}, "unreadable", "kube-system");
        assert.equal(unreadable.findings[0].severity, "error");
        assert.match(unreadable.findings[0].fix!, /grant get on customresourcedefinitions/);
    });
    it("nothing, and no finding, when alerts are not asked for or disabled", () => {
        assert.deepEqual(planAlerts(undefined, "absent", "kube-system"), { findings: [] });
        assert.deepEqual(planAlerts({ enabled: false }, "absent", "kube-system"), { findings: [] });
    });
    it("bad options are errors naming the field", () => {
        const r = planAlerts(
            { labels: { "bad key!": "x" }, nodeLabel: "no-dash", colour: 1 },
            "present",
            "kube-system",
        );
        const fields = r.findings.map((f) => `${f.severity} ${f.field}`);
        assert.ok(fields.includes("error alerts.labels.bad key!"), fields.join(", "));
        assert.ok(fields.includes("error alerts.nodeLabel"), fields.join(", "));
        assert.ok(r.findings.some((f) => /unknown setting\(s\) colour/.test(f.message)));
    });
});
