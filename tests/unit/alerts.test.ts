// components/core/alerts.ts, pure: how long each alert waits, how loud it is, that every alert names
// the node, and when no PrometheusRule is planned (tests/unit/componentGates.test.ts: the component).
import assert from "node:assert/strict";
import { ALERTS, alertRules, planAlerts } from "../../components/core/alerts.js";

describe("alertRules: the four alerts", () => {
    it("each waits and is as severe as DOMAIN.md section 3 says", () => {
        const rules = alertRules({ nodeLabel: "node", alertLabels: {} });
        assert.deepEqual(
            rules.map((r) => [r.alert, r.for, r.labels.severity]),
            [
                [ALERTS.syncFailures, "5m", "critical"],
                [ALERTS.cleanupFailures, "30m", "warning"],
                [ALERTS.staleRules, "5m", "critical"],
                [ALERTS.stillIpvs, "1h", "warning"],
            ],
        );
    });
    it("each summary and description names the node through the configured node label", () => {
        for (const r of alertRules({ nodeLabel: "instance_node", alertLabels: {} })) {
            assert.match(r.annotations.summary, /^kube-proxy on \{\{ \$labels\.instance_node \}\} \S/, r.alert);
            assert.match(r.annotations.description, /kube-proxy on \{\{ \$labels\.instance_node \}\} \S/, r.alert);
            assert.equal(r.annotations.runbook, `docs/alerts.md#${r.alert.toLowerCase()}`);
        }
    });
    it("each says what fails; the stale-rules alert says how old the last sync is", () => {
        const [sync, cleanup, stale, ipvs] = alertRules({ nodeLabel: "node", alertLabels: {} });
        assert.match(sync.annotations.summary, /fails to write its nftables rules/);
        assert.match(sync.annotations.description, /failed nftables syncs for 5 minutes/);
        assert.match(cleanup.annotations.summary, /cannot clean up stale nftables objects/);
        assert.match(cleanup.annotations.description, /for 30 minutes/);
        assert.match(stale.annotations.summary, /has not synced its rules for more than 5 minutes/);
        assert.match(stale.annotations.description, /\{\{ \$value \| humanizeDuration \}\} old/);
        assert.match(ipvs.annotations.summary, /still runs in ipvs mode/);
        assert.match(ipvs.annotations.description, /it runs ipvs, which Kubernetes 1\.40 turns off by default/);
    });
    it("the user's alert labels go on every alert without replacing its severity unless asked", () => {
        const rules = alertRules({ nodeLabel: "node", alertLabels: { team: "network", severity: "page" } });
        for (const r of rules) assert.deepEqual(r.labels, { severity: "page", team: "network" });
    });
});

describe("planAlerts: the PrometheusRule, or why there is none", () => {
    it("no alerts (undefined or null): no rule and nothing to say", () => {
        assert.deepEqual(planAlerts(undefined, "present", "kube-system"), { findings: [] });
        assert.deepEqual(planAlerts(null, "present", "kube-system"), { findings: [] });
    });
    it("alerts.enabled false: no rule and nothing to say, whatever the CRD", () => {
        assert.deepEqual(planAlerts({ enabled: false }, "absent", "kube-system"), { findings: [] });
    });
    it("the rule's one group is named after the tool, in the namespace given or kube-proxy's", () => {
        const planned = planAlerts({}, "present", "kube-system");
        assert.deepEqual(planned.findings, []);
        const inKubeProxys = planned.rule!;
        assert.equal(inKubeProxys.metadata.namespace, "kube-system");
        assert.deepEqual(
            inKubeProxys.spec.groups.map((g) => [g.name, g.rules.length]),
            [["kube-proxy-mode", 4]],
        );
        assert.deepEqual(inKubeProxys.metadata.labels, { "app.kubernetes.io/managed-by": "kube-proxy-mode" });
        assert.equal(
            planAlerts({ namespace: "monitoring" }, "present", "kube-system").rule!.metadata.namespace,
            "monitoring",
        );
    });
    it("an unknown setting is refused as alerts.shape, naming it and listing the settings", () => {
        const { rule, findings } = planAlerts({ severity: "high", team: "x" }, "present", "kube-system");
        assert.equal(rule, undefined);
        assert.equal(findings.length, 1);
        assert.equal(findings[0].severity, "error");
        assert.equal(findings[0].code, "alerts.shape");
        assert.equal(findings[0].message, "unknown setting(s) severity, team");
        assert.match(findings[0].fix!, /enabled, namespace, name, labels, alertLabels and nodeLabel/);
    });
    it("a bad value is refused at its field with its rule", () => {
        const { findings } = planAlerts({ labels: { release: "not a value" } }, "present", "kube-system");
        assert.deepEqual(
            findings.map((f) => [f.code, f.field]),
            [["alerts.shape", "alerts.labels.release"]],
        );
        assert.match(findings[0].message, /^alerts\.labels values must be Kubernetes label values/);
    });
    it("a bad label key or alert label name is refused at its field with its rule, not zod's generic words", () => {
        const { findings } = planAlerts(
            { labels: { "bad key!": "x" }, alertLabels: { "9team": "y" } },
            "present",
            "kube-system",
        );
        assert.deepEqual(
            findings.map((f) => [f.field, f.message]),
            [
                ["alerts.labels.bad key!", "alerts.labels keys must be Kubernetes label keys"],
                ["alerts.alertLabels.9team", "alerts.alertLabels keys must be Prometheus label names"],
            ],
        );
    });
    for (const crd of ["unreadable", undefined] as const) {
        it(`the CRD ${crd === undefined ? "not read at all" : crd}: refused as not knowable, with the RBAC fix`, () => {
            const { rule, findings } = planAlerts({}, crd, "kube-system");
            assert.equal(rule, undefined);
            // an error, not a warning: alerts asked for and silently absent leave the migration unwatched
            assert.deepEqual(
                [findings[0].severity, findings[0].code, findings[0].field],
                ["error", "alerts.noCrd", "alerts"],
            );
            assert.match(findings[0].message, /cannot tell whether the CustomResourceDefinition/);
            assert.match(findings[0].fix!, /^grant get on customresourcedefinitions/);
        });
    }
    it("the CRD absent: refused as not installed, with the install fix", () => {
        const { findings } = planAlerts({}, "absent", "kube-system");
        assert.match(findings[0].message, /is not installed/);
        assert.match(findings[0].fix!, /^install the Prometheus Operator/);
    });
});
