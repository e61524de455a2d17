// The alerts that watch the weeks after a migration (DOMAIN.md section 3), as a PrometheusRule
// (monitoring.coreos.com/v1). Pure: the component decides from a snapshot fact whether the CRD
// exists and creates the object; this file says what the rule holds and when it is skipped.
import { z } from "../libraries/zod.js";
import type { CrdPresence, Finding } from "./types.js";
import { issueMessage } from "./schema.js";

export const PROMETHEUS_RULE = {
    apiVersion: "monitoring.coreos.com/v1",
    kind: "PrometheusRule",
    crd: "prometheusrules.monitoring.coreos.com",
} as const;

/** Is the PrometheusRule CRD installed? "unreadable": the API refused to say (RBAC, for example). */
export type { CrdPresence };

const PROM_LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
// Kubernetes label keys: optional DNS prefix, then a name of at most 63 characters
const K8S_LABEL_KEY =
    /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const K8S_LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

export const alertsSchema = z
    .object({
        enabled: z
            .boolean()
            .default(true)
            .describe(
                "Create the PrometheusRule; a plain boolean, not an Output (whether the rule exists is part of the resource graph).",
            ),
        namespace: z
            .string()
            .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "alerts.namespace must be a namespace name")
            .optional()
            .describe("Namespace of the PrometheusRule. Default: kube-proxy's namespace (target.namespace)."),
        name: z
            .string()
            .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, "alerts.name must be a DNS name")
            .default("kube-proxy-mode")
            .describe("metadata.name of the PrometheusRule."),
        labels: z
            .record(
                z.string().regex(K8S_LABEL_KEY, "alerts.labels keys must be Kubernetes label keys"),
                z
                    .string()
                    .regex(
                        K8S_LABEL_VALUE,
                        "alerts.labels values must be Kubernetes label values (63 characters, alphanumerics, -_.)",
                    ),
            )
            .default({})
            .describe(
                "Labels on the PrometheusRule: what your Prometheus's ruleSelector matches (kube-prometheus-stack: release: <helm release name>).",
            ),
        alertLabels: z
            .record(z.string().regex(PROM_LABEL, "alerts.alertLabels keys must be Prometheus label names"), z.string())
            .default({})
            .describe("Labels added to every alert (Alertmanager routing: team, severity overrides)."),
        nodeLabel: z
            .string()
            .regex(PROM_LABEL, "alerts.nodeLabel must be a Prometheus label name")
            .default("node")
            .describe("The series label naming the node in your kube-proxy scrape (set it by relabelling)."),
    })
    .strict();
export type AlertsOptions = z.infer<typeof alertsSchema>;

export interface AlertRule {
    alert: string;
    expr: string;
    for: string;
    labels: Record<string, string>;
    annotations: { summary: string; description: string; runbook: string };
}

export interface PrometheusRuleSpec {
    apiVersion: typeof PROMETHEUS_RULE.apiVersion;
    kind: typeof PROMETHEUS_RULE.kind;
    metadata: { name: string; namespace: string; labels: Record<string, string> };
    spec: { groups: { name: string; rules: AlertRule[] }[] };
}

/** The alert names, in the order the rule lists them; docs/alerts.md explains each under this name. */
export const ALERTS = {
    syncFailures: "KubeProxyNFTablesSyncFailing",
    cleanupFailures: "KubeProxyNFTablesCleanupFailing",
    staleRules: "KubeProxyRulesStale",
    stillIpvs: "KubeProxyStillOnIPVS",
} as const;

/** Where an alert's runbook is: its section of docs/alerts.md (a heading named after the alert). */
function runbookOf(alert: string): string {
    return `docs/alerts.md#${alert.toLowerCase()}`;
}

/**
 * The four alerts. The first three are DOMAIN.md section 3's expressions, verbatim with the
 * default nodeLabel "node". kube-proxy exposes no mode metric, so the fourth infers ipvs from
 * what kube-proxy registers per mode (1.31+): every mode sets
 * kubeproxy_sync_proxy_rules_last_timestamp_seconds, iptables and nftables also observe
 * kubeproxy_sync_full_proxy_rules_duration_seconds on every full sync, ipvs never does.
 */
export function alertRules(options: Pick<AlertsOptions, "nodeLabel" | "alertLabels">): AlertRule[] {
    const n = options.nodeLabel;
    const where = `{{ $labels.${n} }}`;
    const rule = (
        alert: string,
        expr: string,
        wait: string,
        severity: string,
        summary: string,
        description: string,
    ): AlertRule => ({
        alert,
        expr,
        for: wait,
        labels: { severity, ...options.alertLabels },
        annotations: { summary, description, runbook: runbookOf(alert) },
    });
    return [
        rule(
            ALERTS.syncFailures,
            `sum by (${n}) (rate(kubeproxy_sync_proxy_rules_nftables_sync_failures_total[5m])) > 0`,
            "5m",
            "critical",
            `kube-proxy on ${where} fails to write its nftables rules`,
            `kube-proxy on ${where} has failed nftables syncs for 5 minutes: Services changed since the last good sync do not work on this node.`,
        ),
        rule(
            ALERTS.cleanupFailures,
            `sum by (${n}) (rate(kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total[5m])) > 0`,
            "30m",
            "warning",
            `kube-proxy on ${where} cannot clean up stale nftables objects`,
            `kube-proxy on ${where} has failed to delete stale nftables objects for 30 minutes; rules still work but leftovers accumulate.`,
        ),
        rule(
            ALERTS.staleRules,
            `time() - max by (${n}) (kubeproxy_sync_proxy_rules_last_timestamp_seconds) > 300`,
            "5m",
            "critical",
            `kube-proxy on ${where} has not synced its rules for more than 5 minutes`,
            `The last successful rule sync of kube-proxy on ${where} is {{ $value | humanizeDuration }} old: new Services and endpoints do not reach this node's rules.`,
        ),
        rule(
            ALERTS.stillIpvs,
            `max by (${n}) (kubeproxy_sync_proxy_rules_last_timestamp_seconds) unless on (${n}) max by (${n}) (kubeproxy_sync_full_proxy_rules_duration_seconds_count)`,
            "1h",
            "warning",
            `kube-proxy on ${where} still runs in ipvs mode`,
            `kube-proxy on ${where} syncs rules but has never run a full iptables/nftables sync: it runs ipvs, which Kubernetes 1.40 turns off by default and 1.43 deletes.`,
        ),
    ];
}

/**
 * What to create for `alerts`: the PrometheusRule, or nothing with the finding that says why.
 * `defaultNamespace` is where kube-proxy lives (kube-system for kubeadm and EKS).
 */
export function planAlerts(
    input: unknown,
    crd: CrdPresence | undefined,
    defaultNamespace: string,
): { rule?: PrometheusRuleSpec; findings: Finding[] } {
    if (input === undefined || input === null) return { findings: [] };
    const parsed = alertsSchema.safeParse(input);
    if (!parsed.success) {
        return {
            findings: parsed.error.issues.map((i) => ({
                severity: "error",
                code: "alerts.shape",
                field: ["alerts", ...i.path.map(String)].join("."),
                message: i.code === "unrecognized_keys" ? `unknown setting(s) ${i.keys.join(", ")}` : issueMessage(i),
                fix: "alerts takes enabled, namespace, name, labels, alertLabels and nodeLabel",
            })),
        };
    }
    const o = parsed.data;
    if (!o.enabled) return { findings: [] };
    if (crd !== "present") {
        const why =
            crd === "unreadable" || crd === undefined
                ? `cannot tell whether the CustomResourceDefinition ${PROMETHEUS_RULE.crd} exists (reading it was refused)`
                : `the CustomResourceDefinition ${PROMETHEUS_RULE.crd} is not installed (no Prometheus Operator in this cluster)`;
        // an error, not a warning: alerts asked for and silently absent would leave the weeks after
        // the migration unwatched while the stack says they are (a warning scrolls by in a preview)
        return {
            findings: [
                {
                    severity: "error",
                    code: "alerts.noCrd",
                    field: "alerts",
                    message: `the PrometheusRule ${o.name} cannot be created: ${why}`,
                    fix:
                        crd === "absent"
                            ? `install the Prometheus Operator (its CRDs), or copy the four alerts from docs/alerts.md into your monitoring, or set alerts.enabled: false`
                            : `grant get on customresourcedefinitions.apiextensions.k8s.io/${PROMETHEUS_RULE.crd}, or set alerts.enabled: false`,
                },
            ],
        };
    }
    return {
        rule: {
            apiVersion: PROMETHEUS_RULE.apiVersion,
            kind: PROMETHEUS_RULE.kind,
            metadata: {
                name: o.name,
                namespace: o.namespace ?? defaultNamespace,
                labels: { "app.kubernetes.io/managed-by": "kube-proxy-mode", ...o.labels },
            },
            spec: { groups: [{ name: "kube-proxy-mode", rules: alertRules(o) }] },
        },
        findings: [],
    };
}
