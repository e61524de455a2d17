// KubeProxyMode: declare the kube-proxy mode in stack code. Preview reads the cluster and shows
// the configuration diff, the plan and the findings; up runs one step per pool (a @pulumi/command
// Command running the project's own `kube-proxy-mode rollout`), then finishes and writes the
// canonical ConfigMap.
import type * as command from "@pulumi/command";
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { createHash } from "node:crypto";
import { ALERTS, PROMETHEUS_RULE, type PrometheusRuleSpec } from "../core/alerts.js";
import { planOutput, type RolloutPlanOutput } from "../core/plan.js";
import { promotionRecordSchema } from "../core/promotion.js";
import {
    KUBE_PROXY_MODE_TYPE,
    type Finding,
    type ModeChange,
    type PromotionRecord,
    type ProxyMode,
} from "../core/types.js";
import { readSnapshot } from "../cluster/snapshot.js";
import { rolloutStep, stepReport, stepResult } from "./commandStep.js";
import {
    chooseCluster,
    collectInputs,
    decide,
    emptyKubeconfig,
    promotionGate,
    providerContext,
    type Decision,
} from "./decide.js";
import { refusalsOf } from "./refusal.js";

export { KUBE_PROXY_MODE_TYPE };

export type {
    AlertsInput,
    EksAddonInput,
    HookInput,
    KubeProxyModeArgs,
    PoolInput,
    PromotionInput,
    SnapshotReader,
    TargetInput,
    VerifyInput,
} from "./kubeProxyModeArgs.js";
import type { AlertsInput, KubeProxyModeArgs, PoolInput, SnapshotReader } from "./kubeProxyModeArgs.js";

/** KubeProxyMode's resource options: Pulumi's, and two for embedding. */
export interface KubeProxyModeOptions extends pulumi.ComponentResourceOptions {
    /**
     * For tests and embedding: how the component reads the cluster (default: the real API). Its
     * types are the engine's, which may change in any release.
     * @internal
     */
    snapshotReader?: SnapshotReader;
    /**
     * The CLI the steps run (its dist/components/cli/main.js), for a component built where the
     * program's directory has no kube-proxy-mode package: the provider plugin serving YAML and
     * Python programs. Passed as KPM_CLI in the steps' environment, which no diff compares.
     */
    stepCli?: string;
}

function isPromiseLike(v: unknown): boolean {
    return typeof (v as { then?: unknown } | null | undefined)?.then === "function";
}

/** sha256 of the sorted node names: a step's trigger for its node set (the plan output keeps the names). */
export function nodeSetDigest(names: string[]): string {
    return createHash("sha256")
        .update([...names].sort().join("\n"))
        .digest("hex");
}

/** "stack <org>/<project>/<stack>", as the rollout lease names its holder (the organization when the engine knows it). */
function stackIdentity(): string {
    let org: string | undefined;
    try {
        org = pulumi.getOrganization();
    } catch {
        // an engine (or a test's mocks) that has no organization
    }
    return `stack ${org ? `${org}/` : ""}${pulumi.getProject()}/${pulumi.getStack()}`;
}

/** The Kubernetes provider given in the options (`provider`, or `providers.kubernetes`), if any. */
function explicitKubernetesProvider(opts: KubeProxyModeOptions): pulumi.ProviderResource | undefined {
    return opts.provider ?? (opts.providers && !Array.isArray(opts.providers) ? opts.providers.kubernetes : undefined);
}

/**
 * The checks that need no Output resolved, made at construction: the kubeconfig with an explicit
 * provider, empty kubeconfig/context, and the pools as plain values with plain names (the resource
 * graph has one step per pool, chained in the declared order). Returns the declared pools.
 */
function checkConstruction(name: string, args: KubeProxyModeArgs, explicitProvider: boolean): PoolInput[] {
    const refuse = (propertyPath: string, reason: string) =>
        new pulumi.InputPropertyError({ propertyPath, reason: `KubeProxyMode ${name}: ${propertyPath}: ${reason}` });
    if (explicitProvider && args.kubeconfig === undefined) {
        throw new pulumi.InputPropertyError({
            propertyPath: "kubeconfig",
            reason: `KubeProxyMode ${name}: kubeconfig is required with an explicit Kubernetes provider: pass the same kubeconfig you gave the provider (it is kept secret); the component reads the cluster itself and a provider's kubeconfig cannot be read back`,
        });
    }
    if (args.kubeconfig === "") throw refuse("kubeconfig", emptyKubeconfig);
    if (args.context === "")
        throw refuse(
            "context",
            "is empty: name a context of the kubeconfig, or leave context out for the kubeconfig's current context",
        );
    if (pulumi.Output.isInstance(args.alerts) || isPromiseLike(args.alerts))
        throw refuse(
            "alerts",
            "is an Output: whether the PrometheusRule exists is part of the resource graph, built when the component is constructed; pass a plain object (its fields other than enabled may be Outputs)",
        );
    if (args.alerts !== undefined && args.alerts !== null) {
        const enabled: unknown = (args.alerts as { enabled?: unknown }).enabled;
        if (pulumi.Output.isInstance(enabled) || isPromiseLike(enabled))
            throw refuse(
                "alerts.enabled",
                "is an Output: whether the PrometheusRule exists is part of the resource graph, built when the component is constructed; pass a plain boolean",
            );
    }
    const graphNeeds =
        "the rollout has one step per pool, chained in order, and Pulumi's resource graph is built when the component is constructed, before any Output resolves";
    if (pulumi.Output.isInstance(args.pools) || isPromiseLike(args.pools)) {
        throw refuse(
            "pools",
            `is an Output: ${graphNeeds}; pass a plain array (in a config-driven stack: config.requireObject("pools")). A pool's other fields may be Outputs`,
        );
    }
    if (!Array.isArray(args.pools))
        throw refuse(
            "pools",
            'must be a list of pools, e.g. [{ name: "all", nodeSelector: "kubernetes.io/os=linux" }]',
        );
    const declared = args.pools as unknown[];
    declared.forEach((pool, i) => {
        if (pulumi.Output.isInstance(pool) || isPromiseLike(pool))
            throw refuse(
                `pools[${i}]`,
                `is an Output: ${graphNeeds}; pass the pool as a plain object (its fields other than name may be Outputs)`,
            );
        const poolName = (pool as { name?: unknown } | null | undefined)?.name;
        if (pulumi.Output.isInstance(poolName) || isPromiseLike(poolName))
            throw refuse(
                `pools[${i}].name`,
                `is an Output: ${graphNeeds}, and the pool's name names its step; pass a plain string`,
            );
    });
    return declared as PoolInput[];
}

/**
 * What the steps' CLI is given: the spec (with the reviewed cluster's identity), the kubeconfig
 * content when there is one, and the context. It changes with a rotated token; a step's diff
 * ignores its environment (commandStep.ts), so that re-runs nothing. A new Output per step.
 */
function stepEnvironment(
    decided: pulumi.Output<Decision>,
    kubeconfig: pulumi.Output<string> | undefined,
    stepCli: string | undefined,
): pulumi.Output<Record<string, string>> {
    const env: Record<string, pulumi.Input<string>> = {
        KPM_ROLLOUT_SPEC: decided.apply((d) => d.spec).apply((s) => JSON.stringify(s)),
        KPM_CONTEXT: decided.apply((d) => d.cluster.context),
        // who holds the cluster's rollout lease while a step runs (named when another run refuses)
        KPM_HOLDER: stackIdentity(),
    };
    if (kubeconfig) env.KPM_KUBECONFIG = kubeconfig;
    if (stepCli) env.KPM_CLI = stepCli;
    return pulumi.secret(env);
}

/**
 * One step per pool, chained in the declared order. A step changes only when what it moves
 * changes: the configuration, the pool's settings, its node set (as a digest) and the cluster (its API server).
 */
function poolSteps(
    name: string,
    parent: pulumi.Resource,
    pools: PoolInput[],
    decided: pulumi.Output<Decision>,
    environment: () => pulumi.Output<Record<string, string>>,
): pulumi.Resource[] {
    let previous: pulumi.Resource | undefined;
    const steps: pulumi.Resource[] = [];
    for (const pool of pools) {
        const poolName = String(pool.name);
        const triggers = decided.apply((d) => {
            const p = d.migration.plan.pools.find((x) => x.name === poolName);
            return [
                d.migration.hash,
                JSON.stringify(d.spec.pools.find((x) => x.name === poolName) ?? {}),
                nodeSetDigest((p?.nodes ?? []).map((n) => n.name)),
                d.cluster.server,
            ];
        });
        const step = rolloutStep(
            `${name}-pool-${poolName}`,
            { args: [`--pool=${poolName}`], environment: environment(), triggers },
            { parent, dependsOn: previous ? [previous] : [] },
        );
        steps.push(step);
        previous = step;
    }
    return steps;
}

/** The finish: verifies every node of every pool, then writes the installer's ConfigMap and hands the nodes back; after every pool step. */
function finishStep(
    name: string,
    parent: pulumi.Resource,
    decided: pulumi.Output<Decision>,
    environment: pulumi.Output<Record<string, string>>,
    steps: pulumi.Resource[],
): command.local.Command {
    return rolloutStep(
        `${name}-finish`,
        { args: ["--finish"], environment, triggers: decided.apply((d) => [d.migration.hash, d.cluster.server]) },
        { parent, dependsOn: steps },
    );
}

/**
 * The ConfigMap change as Pulumi shows it in `preview --diff` and keeps in its state: applied after
 * the finish, which already wrote the same data, so it never writes ahead of the verification;
 * retainOnDelete keeps it when the stack goes.
 */
function canonicalConfig(
    name: string,
    parent: pulumi.Resource,
    decided: pulumi.Output<Decision>,
    finish: pulumi.Resource,
    providerOpts: pulumi.CustomResourceOptions,
): void {
    const names = decided.apply((d) => d.names);
    new k8s.core.v1.ConfigMapPatch(
        `${name}-canonical-config`,
        {
            metadata: {
                name: names.apply((n) => n.configMap),
                namespace: names.apply((n) => n.namespace),
                annotations: { "pulumi.com/patchForce": "true" },
            },
            data: pulumi.all([names, decided]).apply(([n, d]) => ({ [n.key]: d.migration.config })),
        },
        { parent, dependsOn: [finish], retainOnDelete: true, ...providerOpts },
    );
}

/** The promotion record: only for the configuration the finish step finished (the CLI prints no credential: not secret). */
function promotionRecord(
    decided: pulumi.Output<Decision>,
    finish: command.local.Command,
): pulumi.Output<PromotionRecord | undefined> {
    return pulumi.all([decided, pulumi.unsecret(finish.stdout)]).apply(([d, stdout]) => {
        const r = stepResult(stdout);
        if (!r || r.configHash !== d.migration.hash || typeof r.finishedAt !== "string") return undefined;
        return promotionRecordSchema.parse({
            ...r,
            targetHash: d.own.targetHash,
            target: d.own.target,
            mode: d.migration.mode,
        });
    });
}

/** Whether `alerts` asks for the PrometheusRule: known when the component is constructed, as the graph needs. */
function alertsWanted(alerts: AlertsInput | undefined): boolean {
    return alerts !== undefined && alerts !== null && alerts.enabled !== false;
}

/**
 * The PrometheusRule, registered when the component is constructed whenever `alerts` asks for it
 * (so a preview with unknown inputs shows it too); its metadata and rules come from the decision,
 * which refuses when the cluster has no PrometheusRule CRD.
 */
function alertsRule(
    name: string,
    parent: pulumi.Resource,
    wanted: boolean,
    decided: pulumi.Output<Decision>,
    providerOpts: pulumi.CustomResourceOptions,
): KubeProxyMode["alerts"] {
    if (!wanted) return pulumi.output(null);
    const rule = decided.apply((d): PrometheusRuleSpec => {
        // the decision plans a rule whenever alerts are wanted, or refuses: a missing one is a bug here
        if (!d.alertRule)
            throw new Error(`KubeProxyMode ${name}: alerts are enabled but no PrometheusRule was planned`);
        return d.alertRule;
    });
    new k8s.apiextensions.CustomResource(
        `${name}-alerts`,
        {
            apiVersion: PROMETHEUS_RULE.apiVersion,
            kind: PROMETHEUS_RULE.kind,
            metadata: rule.apply((r) => r.metadata),
            spec: rule.apply((r) => r.spec),
        },
        { parent, ...providerOpts },
    );
    return rule.apply((r) => ({
        namespace: r.metadata.namespace,
        name: r.metadata.name,
        alerts: Object.values(ALERTS),
    }));
}

/** The PrometheusRule KubeProxyMode created for `alerts` (its `alerts` output). */
export interface AlertsOutput {
    namespace: string;
    name: string;
    /** the alert names the rule holds */
    alerts: string[];
}

/**
 * Moves a cluster's kube-proxy to another proxy mode (iptables, ipvs or nftables), pool by pool.
 * `pulumi preview` reads the cluster and shows the configuration diff, the plan and the findings;
 * `pulumi up` moves each pool's nodes, verifies them (rolling a failed node back), then writes the
 * installer's ConfigMap. Inputs: {@link KubeProxyModeArgs}.
 *
 * @example
 * ```ts
 * import * as pulumi from "@pulumi/pulumi";
 * import { KubeProxyMode } from "kube-proxy-mode";
 *
 * const kp = new KubeProxyMode("kube-proxy", {
 *     mode: "nftables",
 *     target: { flavor: "kubeadm" },
 *     pools: [
 *         { name: "canary", nodeSelector: "pool=canary", maxUnavailable: 1, soak: "10m" },
 *         { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2, drain: true },
 *     ],
 *     kubeconfig: new pulumi.Config().requireSecret("kubeconfig"),
 * });
 * export const configDiff = kp.configDiff;
 * export const plan = kp.plan;
 * ```
 */
export class KubeProxyMode extends pulumi.ComponentResource {
    /** unified diff of the kube-proxy configuration */
    public readonly configDiff: pulumi.Output<string>;
    /** pools in order: node counts, batches (every name, one string per batch), soak, drain */
    public readonly plan: pulumi.Output<RolloutPlanOutput>;
    /** warnings and notes the reviewer should read (errors fail the preview) */
    public readonly findings: pulumi.Output<Finding[]>;
    /**
     * the finish step's report once `up` completed: the last 60 lines it printed (its progress per
     * node, free text, not a fixed set of values); unknown during preview
     */
    public readonly status: pulumi.Output<string>;
    /** content hash of the target configuration */
    public readonly configHash: pulumi.Output<string>;
    /** the target configuration text */
    public readonly config: pulumi.Output<string>;
    /** the target mode */
    public readonly mode: pulumi.Output<ProxyMode>;
    /**
     * What a downstream promotion gate reads (export it as the stack output `promotion`): the
     * target, when the finish step completed and how many nodes were verified. Undefined until
     * the finish step has completed on the current target.
     */
    public readonly promotion: pulumi.Output<PromotionRecord | undefined>;
    /** what this run moves: the cluster, its current configuration and the target (for summaries such as `kube-proxy-mode promote`) */
    public readonly change: pulumi.Output<ModeChange>;
    /** the PrometheusRule created for `alerts`, or null */
    public readonly alerts: pulumi.Output<AlertsOutput | null>;

    /**
     * @param name the component's name; its resources' names start with it
     * @param args the target mode, the pools and how nodes are verified
     * @param opts Pulumi's resource options; with an explicit Kubernetes provider, pass the same `kubeconfig` in `args`
     */
    constructor(name: string, args: KubeProxyModeArgs, opts: KubeProxyModeOptions = {}) {
        super(KUBE_PROXY_MODE_TYPE, name, {}, opts);
        const explicitProvider = explicitKubernetesProvider(opts);
        const pools = checkConstruction(name, args, explicitProvider !== undefined);
        const choice = chooseCluster(args, explicitProvider !== undefined);
        const inputs = collectInputs(args, choice.context);
        // every refusal from here on is a RefusalError against this component (refusal.ts)
        const refuse = refusalsOf(this, name);
        const promotion = promotionGate(name, args.promotion, this, refuse);
        const decided = decide(refuse, this, opts.snapshotReader ?? readSnapshot, inputs, choice, promotion);

        const environment = () => stepEnvironment(decided, choice.kubeconfig, opts.stepCli);
        const steps = poolSteps(name, this, pools, decided, environment);
        const providerOpts: pulumi.CustomResourceOptions = explicitProvider
            ? { provider: explicitProvider }
            : {
                  provider: new k8s.Provider(
                      `${name}-k8s`,
                      {
                          kubeconfig: choice.kubeconfig,
                          // not from the decision, so the provider starts while the cluster is read; a
                          // context's name is no secret (the preview prints it); undefined (a kubeconfig
                          // the decision refuses) leaves it unset
                          context: pulumi.unsecret(
                              pulumi
                                  .all([choice.kubeconfig, choice.context])
                                  .apply(([kc, context]) => providerContext(kc, context)),
                          ) as pulumi.Output<string>,
                      },
                      { parent: this },
                  ),
              };
        const finish = finishStep(name, this, decided, environment(), steps);
        canonicalConfig(name, this, decided, finish, providerOpts);

        this.configDiff = decided.apply((d) => d.migration.diff);
        this.plan = decided.apply((d) => planOutput(d.migration.plan));
        this.findings = decided.apply((d) => d.migration.findings);
        this.configHash = decided.apply((d) => d.migration.hash);
        this.config = decided.apply((d) => d.migration.config);
        this.mode = decided.apply((d) => d.migration.mode);
        this.status = pulumi.unsecret(finish.stderr).apply((e) => stepReport(e));
        this.change = decided.apply((d) => d.change);
        this.promotion = promotionRecord(decided, finish);
        this.alerts = alertsRule(name, this, alertsWanted(args.alerts), decided, providerOpts);
        this.registerOutputs({
            configDiff: this.configDiff,
            plan: this.plan,
            findings: this.findings,
            status: this.status,
            configHash: this.configHash,
            config: this.config,
            mode: this.mode,
            promotion: this.promotion,
            change: this.change,
            alerts: this.alerts,
        });
    }
}
