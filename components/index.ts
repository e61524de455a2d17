// kube-proxy-mode's public API: the KubeProxyMode component with its input and output types, and
// the two pure library entry points behind `kube-proxy-mode render` and `kube-proxy-mode precheck`.
// Everything else (the engine in core/, the cluster client, the runner, the CLI, the policy pack)
// is internal and may change in any release. Types here are the package's own: no declaration
// reachable from this file's signatures names a third-party type other than @pulumi/pulumi's
// (tests/unit/publicApi.test.ts checks the list; tests/e2e/consumer.e2e.test.ts typechecks a
// consumer in a default Pulumi tsconfig).
import { parseCurrentConfig } from "./core/config.js";
import { nodeFacts, nodeVerdict } from "./core/nodes.js";
import { renderConfiguration } from "./core/render.js";
import { validateDesired } from "./core/settings.js";
import {
    hasErrors,
    InputError,
    type Change,
    type DesiredSettings,
    type Finding,
    type ProxyMode,
} from "./core/types.js";
import type { NodeVerdict } from "./core/nodes.js";

export { KubeProxyMode, KUBE_PROXY_MODE_TYPE } from "./pulumi/kubeProxyMode.js";
export type {
    KubeProxyModeArgs,
    KubeProxyModeOptions,
    PoolInput,
    VerifyInput,
    HookInput,
    TargetInput,
    AlertsInput,
    PromotionInput,
    EksAddonInput,
    AlertsOutput,
} from "./pulumi/kubeProxyMode.js";
export { kubeProxyModeRbac, type KubeProxyModeRbac } from "./pulumi/rbac.js";
export { renderRbacManifest, type RbacOptions } from "./core/rbac.js";
export { PROXY_MODES, InputError } from "./core/types.js";
export type {
    ProxyMode,
    Severity,
    Finding,
    FindingCode,
    Change,
    DesiredSettings,
    ModeChange,
    PromotionRecord,
} from "./core/types.js";
export type { Flavor } from "./core/facts.js";
export type {
    RolloutPlanOutput,
    RolloutPlan,
    RolloutTarget,
    PoolPlan,
    PoolPlanOutput,
    PlannedNode,
} from "./core/plan.js";
export type { DrainOptions } from "./core/drain.js";
export type { PoolEstimate, NodeEstimate, EstimateBasis, ServiceLoad } from "./core/syncEstimate.js";
export type { NodeVerdict, Verdict } from "./core/nodes.js";
export { IPVS_TIMELINE } from "./core/facts.js";

/** What {@link renderKubeProxyConfig} returns: the new configuration, or why there is none. */
export interface RenderResult {
    /** false when a rule is violated: `config` and `diff` are then the unchanged input and no diff */
    ok: boolean;
    /** the new KubeProxyConfiguration text (the input text with the minimal edits) */
    config: string;
    /** a unified diff of the configuration text; "" when nothing changes */
    diff: string;
    /** every edit, with its reason */
    changes: Change[];
    /** violated rules (severity "error"), risks ("warning") and facts for review ("info") */
    findings: Finding[];
    /** the Kubernetes release the rules were checked for ("1.37"), when known */
    kubernetesVersion?: string;
}

/**
 * The engine of `kube-proxy-mode render`, without I/O: the kube-proxy configuration `current`
 * (a kube-proxy ConfigMap as YAML or JSON, e.g. `kubectl get cm -n kube-system kube-proxy -o yaml`,
 * or a bare KubeProxyConfiguration) rendered for `desired`.
 *
 * @throws {InputError} when `current` cannot be read, or `desired` is not valid (the message names the field)
 */
export function renderKubeProxyConfig(current: string, desired: DesiredSettings): RenderResult {
    const validated = validateDesired(desired);
    if (!validated.settings) {
        const first = validated.findings.find((f) => f.severity === "error");
        throw new InputError(
            validated.findings.map((f) => `${f.field}: ${f.message}`).join("; "),
            first?.field ?? "desired",
        );
    }
    const parsed = parseCurrentConfig(current, "current");
    const r = renderConfiguration(parsed, validated.settings);
    const ok = !hasErrors(r.findings);
    return {
        ok,
        config: ok ? r.config : parsed.text,
        diff: ok ? r.diff : "",
        changes: r.changes,
        findings: r.findings,
        kubernetesVersion: r.version?.release,
    };
}

/**
 * The engine of `kube-proxy-mode precheck`, without I/O: for each Kubernetes Node object (as
 * `kubectl get nodes -o json` lists them in `items`), whether it can run `mode`, judged by the
 * kernel the node reports. Non-Linux nodes are "skip".
 *
 * @param opts.tcpBeLiberal whether the target sets conntrack.tcpBeLiberal (no conntrack warning on kernels older than 6.1)
 */
export function precheckNodes(
    nodes: readonly object[],
    mode: ProxyMode,
    opts: { tcpBeLiberal?: boolean } = {},
): NodeVerdict[] {
    return nodes.map((n) => nodeVerdict(nodeFacts(n), mode, opts));
}
