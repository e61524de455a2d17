// KubeProxyMode: declare the kube-proxy mode in stack code. Preview reads the cluster and shows
// the configuration diff, the plan and the findings; up runs one RolloutStep per pool (the project's
// own `kube-proxy-mode rollout`), then writes the canonical ConfigMap and finishes.
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { join } from "node:path";
import { ALERTS, planAlerts, type PrometheusRuleSpec } from "../core/alerts.js";
import type { Flavor } from "../core/facts.js";
import { decideMigration, type ClusterSnapshot, type Migration } from "../core/migration.js";
import { effectiveMode } from "../core/config.js";
import { configHash, type PoolSpec, type RolloutPlan } from "../core/plan.js";
import { checkPromotion, gateRefusal, parsePromotion, promotionRecordSchema, promotionTarget, type PromotionRecord } from "../core/promotion.js";
import { KUBE_PROXY_MODE_TYPE, type Finding, type ProxyMode } from "../core/types.js";
import type { ClusterAccess } from "../cluster/client.js";
import { namesFor, type Names } from "../cluster/kubeProxy.js";
import { readSnapshot } from "../cluster/snapshot.js";
import { rolloutSpecSchema, verifySchema, type RolloutSpec } from "../rollout/spec.js";
import { RolloutStep } from "./rolloutStep.js";

export { KUBE_PROXY_MODE_TYPE };

export interface HookInput {
    name: pulumi.Input<string>;
    /** argv of the hook, run without a shell; NODE, POOL, MODE and KUBECONFIG are in its environment */
    command: pulumi.Input<pulumi.Input<string>[]>;
    timeout?: pulumi.Input<string>;
    env?: pulumi.Input<Record<string, pulumi.Input<string>>>;
}

export interface VerifyInput {
    /** run the built-in node checks (probe pod per node); default true */
    nodeChecks?: pulumi.Input<boolean>;
    /** probe image; default busybox:1.36 pinned by digest (the host's tools via chroot /host) */
    image?: pulumi.Input<string>;
    /** priority class of the probe pods; default none */
    priorityClassName?: pulumi.Input<string>;
    /** Service ("namespace/name") each node must reach through its ClusterIP; default default/kubernetes */
    service?: pulumi.Input<string>;
    maxSyncAge?: pulumi.Input<string>;
    podTimeout?: pulumi.Input<string>;
    hooks?: pulumi.Input<pulumi.Input<HookInput>[]>;
}

export interface PoolInput {
    name: pulumi.Input<string>;
    nodeSelector: pulumi.Input<string>;
    maxUnavailable?: pulumi.Input<number>;
    soak?: pulumi.Input<string>;
    /** true, or { force, deleteEmptyDirData } as kubectl drain's --force and --delete-emptydir-data */
    drain?: pulumi.Input<boolean | { force?: pulumi.Input<boolean>; deleteEmptyDirData?: pulumi.Input<boolean> }>;
    /** "0" waits for ever */
    drainTimeout?: pulumi.Input<string>;
    /** ipvs -> iptables without drain: accept each node's gap in Service routing */
    allowUnroutedNode?: pulumi.Input<boolean>;
}

export interface TargetInput {
    flavor?: pulumi.Input<Flavor>;
    namespace?: pulumi.Input<string>;
    configMap?: pulumi.Input<string>;
    key?: pulumi.Input<string>;
    daemonSet?: pulumi.Input<string>;
    podSelector?: pulumi.Input<string>;
}

export interface AlertsInput {
    /** create the PrometheusRule; default true once `alerts` is given */
    enabled?: pulumi.Input<boolean>;
    /** namespace of the PrometheusRule; default: kube-proxy's namespace */
    namespace?: pulumi.Input<string>;
    /** metadata.name of the PrometheusRule; default kube-proxy-mode */
    name?: pulumi.Input<string>;
    /** labels on the PrometheusRule: what your Prometheus's ruleSelector matches (e.g. release: kube-prometheus-stack) */
    labels?: pulumi.Input<Record<string, pulumi.Input<string>>>;
    /** labels added to every alert (Alertmanager routing) */
    alertLabels?: pulumi.Input<Record<string, pulumi.Input<string>>>;
    /** the series label naming the node in your kube-proxy scrape; default node */
    nodeLabel?: pulumi.Input<string>;
}

export interface PromotionInput {
    /** the stack that must have finished this target first: "<org>/<project>/<stack>" */
    after: pulumi.Input<string>;
    /** how long it must have held the target, e.g. "24h" ("0s": finished is enough) */
    minSoak: pulumi.Input<string>;
    /** refuse an upstream whose nodes were verified by hooks only (verify.nodeChecks: false); default true */
    requireNodeChecks?: pulumi.Input<boolean>;
}

export interface KubeProxyModeArgs {
    mode: pulumi.Input<ProxyMode>;
    featureGates?: pulumi.Input<Record<string, pulumi.Input<boolean>>>;
    nodePortAddresses?: pulumi.Input<pulumi.Input<string>[]>;
    conntrack?: pulumi.Input<{ tcpBeLiberal?: pulumi.Input<boolean> }>;
    /** the cluster's release; detected from the API server when absent */
    kubernetesVersion?: pulumi.Input<string>;
    allowUnknownFeatureGates?: pulumi.Input<boolean>;
    target?: pulumi.Input<TargetInput>;
    /** rolled out in this order; every Linux node must be in exactly one */
    pools: pulumi.Input<pulumi.Input<PoolInput>[]>;
    verify?: pulumi.Input<VerifyInput>;
    onFailure?: pulumi.Input<"rollback-node" | "stop">;
    /**
     * Kubeconfig content for the cluster (kept secret). Required with an explicit k8s.Provider
     * (pass the same kubeconfig): the component reads the cluster itself, and a provider's
     * kubeconfig cannot be read back. Absent: the ambient kubeconfig.
     */
    kubeconfig?: pulumi.Input<string>;
    context?: pulumi.Input<string>;
    /** a PrometheusRule with the alerts for the weeks after the migration (skipped, with a finding, without the CRD) */
    alerts?: pulumi.Input<AlertsInput>;
    /** a promotion gate: refuse to move until the `after` stack finished the same target and held it for minSoak */
    promotion?: pulumi.Input<PromotionInput>;
}

/** For tests and embedding: how the component reads the cluster (default: the real API). */
export type SnapshotReader = (access: ClusterAccess, flavor: Flavor, names: Partial<Names>) => Promise<ClusterSnapshot>;

export interface KubeProxyModeOptions extends pulumi.ComponentResourceOptions {
    snapshotReader?: SnapshotReader;
    /** the kube-proxy-mode CLI the rollout steps run; default: this package's bin */
    cliPath?: string;
}

const FLAVORS: Flavor[] = ["kubeadm", "eks"];
const CLI = join(__dirname, "..", "..", "..", "bin", "kube-proxy-mode");

function targetNames(t: any): { flavor: Flavor; names: Partial<Names> } {
    const flavor: Flavor = t?.flavor ?? "kubeadm";
    if (!FLAVORS.includes(flavor)) throw new Error(`target.flavor ${JSON.stringify(t?.flavor)} is not supported: use kubeadm or eks`);
    const names: Partial<Names> = {};
    for (const k of ["namespace", "configMap", "key", "daemonSet", "podSelector"] as const) if (t?.[k] !== undefined) names[k] = t[k];
    return { flavor, names };
}

function parseOr<T>(name: string, parse: () => T): T {
    try {
        return parse();
    } catch (e) {
        throw new Error(`KubeProxyMode ${name}: ${(e as Error).message}`);
    }
}

export class KubeProxyMode extends pulumi.ComponentResource {
    /** unified diff of the kube-proxy configuration */
    public readonly configDiff: pulumi.Output<string>;
    /** pools in order, nodes per pool, batches, soak */
    public readonly plan: pulumi.Output<RolloutPlan>;
    /** warnings and notes the reviewer should read (errors fail the preview) */
    public readonly findings: pulumi.Output<Finding[]>;
    /** the finish step's report once `up` completed; unknown during preview */
    public readonly status: pulumi.Output<string>;
    /** content hash of the target configuration */
    public readonly configHash: pulumi.Output<string>;
    /** the target configuration text */
    public readonly config: pulumi.Output<string>;
    public readonly mode: pulumi.Output<ProxyMode>;
    /**
     * What a downstream promotion gate reads (export it as the stack output `promotion`): the
     * target, when the finish step completed and how many nodes were verified. Undefined until
     * the finish step has completed on the current target.
     */
    public readonly promotion: pulumi.Output<PromotionRecord | undefined>;
    /** what this run moves: the cluster, its current configuration and the target (for summaries such as `kube-proxy-mode promote`) */
    public readonly change: pulumi.Output<{ cluster: string | null; from: { mode: ProxyMode; configHash: string }; to: { mode: ProxyMode; configHash: string }; moving: number }>;
    /** the PrometheusRule created for `alerts` ({ namespace, name, alerts }), or null */
    public readonly alerts: pulumi.Output<{ namespace: string; name: string; alerts: string[] } | null>;

    constructor(name: string, args: KubeProxyModeArgs, opts: KubeProxyModeOptions = {}) {
        super(KUBE_PROXY_MODE_TYPE, name, {}, opts);
        const reader = opts.snapshotReader ?? readSnapshot;
        const explicitProvider = opts.provider ?? (opts.providers && !Array.isArray(opts.providers) ? (opts.providers as any).kubernetes : undefined);
        if (explicitProvider && args.kubeconfig === undefined) {
            throw new Error(
                `KubeProxyMode ${name}: kubeconfig is required with an explicit Kubernetes provider: pass the same kubeconfig you gave the provider (it is kept secret); the component reads the cluster itself and a provider's kubeconfig cannot be read back`,
            );
        }
        const kubeconfig = args.kubeconfig === undefined ? undefined : pulumi.secret(args.kubeconfig);

        const inputs = pulumi.output({
            mode: args.mode,
            featureGates: args.featureGates,
            nodePortAddresses: args.nodePortAddresses,
            conntrack: args.conntrack,
            kubernetesVersion: args.kubernetesVersion,
            allowUnknown: args.allowUnknownFeatureGates,
            target: args.target,
            pools: args.pools,
            verify: args.verify,
            onFailure: args.onFailure,
            context: args.context,
            alerts: args.alerts,
        });

        // the promotion gate, parsed once; the upstream stack's record is read in preview and up alike
        const gateOption = args.promotion === undefined ? undefined : pulumi.output(args.promotion).apply((p) => parseOr(name, () => parsePromotion(p)));
        const gateOrNone = gateOption ?? pulumi.output(undefined);
        const upstreamRecord: pulumi.Output<unknown> =
            gateOption === undefined
                ? pulumi.output(undefined)
                : pulumi.unsecret(new pulumi.StackReference(`${name}-promotion-upstream`, { name: gateOption.apply((g) => g.after) }, { parent: this }).getOutput("promotion"));

        // the kubeconfig is only read here; what comes out of the decision holds none of it, so it
        // is not secret (the reviewer must see the diff and the plan)
        const decidedWithSecret = pulumi.all([inputs, kubeconfig ?? pulumi.output(undefined as string | undefined), gateOrNone, upstreamRecord]).apply(async ([i, kc, gate, upstream]) => {
            const { mode, featureGates, nodePortAddresses, conntrack, kubernetesVersion, allowUnknown, target, pools, verify, onFailure, context, alerts } = i as any;
            const desired: Record<string, unknown> = { mode };
            if (featureGates !== undefined) desired.featureGates = featureGates;
            if (nodePortAddresses !== undefined) desired.nodePortAddresses = nodePortAddresses;
            if (conntrack !== undefined) desired.conntrack = conntrack;
            if (kubernetesVersion !== undefined) desired.kubernetesVersion = kubernetesVersion;
            if (allowUnknown !== undefined) desired.allowUnknownFeatureGates = allowUnknown;
            const { flavor, names } = targetNames(target);
            const verifyParsed = verifySchema.safeParse(verify ?? {});
            if (!verifyParsed.success) throw new Error(`KubeProxyMode ${name}: ${verifyParsed.error.issues.map((i) => `verify.${i.path.join(".")}: ${i.message}`).join("; ")}`);
            if (onFailure !== undefined && onFailure !== "rollback-node" && onFailure !== "stop") {
                throw new Error(`KubeProxyMode ${name}: onFailure ${JSON.stringify(onFailure)} must be "rollback-node" or "stop"`);
            }
            let snapshot: ClusterSnapshot;
            try {
                snapshot = await reader({ kubeconfigContent: kc, context }, flavor, names);
            } catch (e) {
                throw new Error(`KubeProxyMode ${name}: cannot read the cluster: ${(e as Error).message.split("\n")[0]}`);
            }
            let migration: Migration;
            try {
                migration = decideMigration(snapshot, desired, (pools ?? []) as PoolSpec[]);
            } catch (e) {
                throw new Error(`KubeProxyMode ${name}: ${(e as Error).message}`);
            }
            const spec: RolloutSpec = rolloutSpecSchema.parse({
                flavor,
                names,
                target: { hash: migration.hash, mode: migration.mode, config: migration.config },
                pools,
                verify: verifyParsed.data,
                onFailure: onFailure ?? "rollback-node",
                tcpBeLiberal: (conntrack as any)?.tcpBeLiberal,
            });
            const alertPlan = planAlerts(alerts, snapshot.prometheusRuleCrd, namesFor(flavor, names).namespace);
            const alertErrors = alertPlan.findings.filter((f) => f.severity === "error");
            if (alertErrors.length) throw new Error(`KubeProxyMode ${name}: ${alertErrors.map((f) => `${f.field}: ${f.message}`).join("; ")}`);
            migration.findings.push(...alertPlan.findings);
            const own = { ...promotionTarget(migration.config), mode: migration.mode };
            this.report(migration, snapshot.location);
            if (gate) {
                const verdict = checkPromotion({
                    upstream: gate.after,
                    record: upstream,
                    own,
                    alreadyApplied: migration.plan.moving === 0 && migration.plan.target.canonical,
                    minSoakSeconds: gate.minSoakSeconds,
                    requireNodeChecks: gate.requireNodeChecks,
                    now: new Date(),
                });
                if (!verdict.open) throw new Error(`KubeProxyMode ${name}: ${gateRefusal(gate.after, verdict)}`);
                for (const note of verdict.notes) pulumi.log.info(`promotion gate open: ${note}`, this);
            }
            const change = {
                cluster: snapshot.cluster ?? null,
                from: { mode: effectiveMode(snapshot.current.config), configHash: configHash(snapshot.current.text) },
                to: { mode: migration.mode, configHash: migration.hash },
                moving: migration.plan.moving,
            };
            return { migration, spec, own, change, alertRule: alertPlan.rule };
        });
        const decided = pulumi.unsecret(decidedWithSecret);

        const cli = opts.cliPath ?? CLI;
        const environment = (spec: pulumi.Output<RolloutSpec>) => {
            // kept out of the preview display (it repeats the whole configuration for every step); the
            // reviewer reads the diff and the plan above, and the ConfigMap change below
            const env: Record<string, pulumi.Input<string>> = { KPM_ROLLOUT_SPEC: pulumi.secret(spec.apply((s) => JSON.stringify(s))) };
            if (kubeconfig) env.KPM_KUBECONFIG = kubeconfig;
            return env;
        };
        const spec = decided.apply((d) => d.spec);

        // One step per pool, chained in the declared order. Pools are known at construction
        // (they are program inputs); their names must be plain values for the resource graph.
        const declared = Array.isArray(args.pools) ? (args.pools as PoolInput[]) : [];
        let previous: pulumi.Resource | undefined;
        const steps: RolloutStep[] = [];
        declared.forEach((pool, i) => {
            const poolName = typeof pool.name === "string" ? pool.name : `pool-${i}`;
            const triggers = decided.apply((d) => {
                const p = d.migration.plan.pools.find((x) => x.name === poolName);
                return [d.migration.hash, JSON.stringify(d.spec.pools.find((x) => x.name === poolName) ?? {}), (p?.nodes ?? []).map((n) => n.name).join(",")];
            });
            const step = new RolloutStep(
                `${name}-pool-${poolName}`,
                {
                    // argv, no shell: node <cli> rollout --pool=<name>
                    argv: [process.execPath, cli, "rollout", `--pool=${poolName}`],
                    environment: environment(spec),
                    triggers,
                    description: decided.apply((d) => `rollout of pool ${poolName} to ${d.migration.mode} (configuration ${d.migration.hash})`),
                },
                { parent: this, dependsOn: previous ? [previous] : [] },
            );
            steps.push(step);
            previous = step;
        });

        const names = pulumi.output(args.target).apply((t) => {
            const { flavor, names: n } = targetNames(t);
            return namesFor(flavor, n);
        });
        const providerOpts: pulumi.CustomResourceOptions = explicitProvider
            ? { provider: explicitProvider }
            : kubeconfig
              ? { provider: new k8s.Provider(`${name}-k8s`, { kubeconfig, context: args.context }, { parent: this }) }
              : {};
        // The canonical ConfigMap gets the new configuration only after every pool is verified.
        // Pulumi shows this diff in `preview --diff`; retainOnDelete keeps it when the stack goes.
        const canonical = new k8s.core.v1.ConfigMapPatch(
            `${name}-canonical-config`,
            {
                metadata: {
                    name: names.apply((n) => n.configMap),
                    namespace: names.apply((n) => n.namespace),
                    annotations: { "pulumi.com/patchForce": "true" },
                },
                data: pulumi.all([names, decided]).apply(([n, d]) => ({ [n.key]: d.migration.config })),
            },
            { parent: this, dependsOn: steps, retainOnDelete: true, ...providerOpts },
        );
        const finishStep = new RolloutStep(
            `${name}-finish`,
            {
                argv: [process.execPath, cli, "rollout", "--finish"],
                environment: environment(spec),
                triggers: decided.apply((d) => [d.migration.hash]),
                description: decided.apply((d) => `finish of the rollout to ${d.migration.mode} (configuration ${d.migration.hash})`),
            },
            { parent: this, dependsOn: [canonical] },
        );

        this.configDiff = decided.apply((d) => d.migration.diff);
        this.plan = decided.apply((d) => d.migration.plan);
        this.findings = decided.apply((d) => d.migration.findings);
        this.configHash = decided.apply((d) => d.migration.hash);
        this.config = decided.apply((d) => d.migration.config);
        this.mode = decided.apply((d) => d.migration.mode);
        this.status = finishStep.output;
        this.change = decided.apply((d) => d.change);
        this.promotion = pulumi.all([decided, finishStep.result, finishStep.finishedAt]).apply(([d, result, finishedAt]) => {
            const r = result as Record<string, unknown> | null | undefined;
            // a record belongs to the configuration the finish step finished, and only to it
            if (!r || r.configHash !== d.migration.hash || !finishedAt) return undefined;
            return promotionRecordSchema.parse({ ...r, targetHash: d.own.targetHash, target: d.own.target, mode: d.migration.mode, finishedAt });
        });
        // created only when the CRD is there (a snapshot fact); otherwise a finding says why not
        this.alerts = decided.apply((d) => {
            const rule: PrometheusRuleSpec | undefined = d.alertRule;
            if (!rule) return null;
            new k8s.apiextensions.CustomResource(`${name}-alerts`, { ...rule }, { parent: this, ...providerOpts });
            return { namespace: rule.metadata.namespace, name: rule.metadata.name, alerts: Object.values(ALERTS) };
        });
        this.registerOutputs({
            configDiff: this.configDiff,
            plan: this.plan,
            findings: this.findings,
            status: this.status,
            configHash: this.configHash,
            mode: this.mode,
            promotion: this.promotion,
            change: this.change,
            alerts: this.alerts,
        });
    }

    /** What a reviewer reads in `pulumi preview`: diagnostics on this component. */
    private report(m: Migration, location: string): void {
        const changes = m.changes.map((c) => `  ${c.path}: ${JSON.stringify(c.from)} -> ${JSON.stringify(c.to)} (${c.reason})`).join("\n");
        pulumi.log.info(
            `kube-proxy configuration (${location}) -> ${m.mode}, configuration ${m.hash}, Kubernetes ${m.kubernetesVersion}\n` +
                (m.diff ? `${m.diff}\nchanges:\n${changes}` : "no configuration change") +
                `\n${m.planText}`,
            this,
        );
        for (const f of m.findings) {
            const text = `${f.field}: ${f.message}${f.fix ? ` Fix: ${f.fix}` : ""}`;
            if (f.severity === "warning") pulumi.log.warn(text, this);
            else pulumi.log.info(text, this);
        }
    }
}
