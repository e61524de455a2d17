// What KubeProxyMode decides before it builds its resource graph: its inputs checked, the cluster
// read, the migration decided, the promotion gate judged and the review reported. One function per
// step, called in this order by `decide`. Every refusal is a RefusalError against the component
// (refusal.ts): Pulumi shows it on the component, and no step is registered.
import * as pulumi from "@pulumi/pulumi";
import { z } from "../libraries/zod.js";
import { planAlerts, type PrometheusRuleSpec } from "../core/alerts.js";
import { namesFor, type Flavor } from "../core/facts.js";
import { decideMigration, MigrationRefused, type ClusterSnapshot, type Migration } from "../core/migration.js";
import { effectiveMode } from "../core/config.js";
import { configHash } from "../core/plan.js";
import { checkPromotion, gateRefusal, parsePromotion, promotionTarget } from "../core/promotion.js";
import { InputError, type ModeChange, type ProxyMode } from "../core/types.js";
import { accessFindings } from "../core/rbac.js";
import { anyPoolDrains } from "../core/drain.js";
import type { EksAddonSettings } from "../core/eksAddon.js";
import { clusterIdentity, kubeconfigFromSetting, loadKubeConfig, noKubeconfig } from "../cluster/client.js";
import { redact } from "../core/redact.js";
import type { Names } from "../rollout/cluster.js";
import {
    describeIssues,
    poolSchema,
    rolloutSpecInputSchema,
    targetSchema,
    verifyInputSchema,
    type ClusterIdentity,
    type RolloutSpecInput,
    type TargetSpec,
} from "../rollout/spec.js";
import { terminalSafeText } from "../core/text.js";
import type { KubeProxyModeArgs, SnapshotReader } from "./kubeProxyModeArgs.js";
import { eksAddonSchema, issuePath } from "../core/schema.js";
import type { Refuse } from "./refusal.js";

export const emptyKubeconfig =
    "is empty: pass the kubeconfig's content (e.g. config.requireSecret(\"kubeconfig\")), or leave it out to use the stack's kubernetes:kubeconfig or the ambient kubeconfig";

/** The cluster the component acts on: where its kubeconfig comes from, the kubeconfig (secret) and the context. */
export interface ClusterChoice {
    /** names the kubeconfig's origin in errors and in the review */
    source: string;
    /** the kubeconfig content (secret); undefined: the ambient kubeconfig */
    kubeconfig: pulumi.Output<string> | undefined;
    context: pulumi.Input<string> | undefined;
}

/** The parsed promotion gate: `after`, the soak in seconds and whether node checks are required. */
export type Gate = ReturnType<typeof parsePromotion>;

/** What the decision hands the resource graph; it holds no kubeconfig. */
export interface Decision {
    migration: Migration;
    /** the step's spec as stored: durations as written (the CLI parses them into seconds) */
    spec: RolloutSpecInput;
    own: ReturnType<typeof promotionTarget> & { mode: ProxyMode };
    change: ModeChange;
    alertRule: PrometheusRuleSpec | undefined;
    cluster: ClusterIdentity & { context: string };
    names: Names;
}

/** Target names from a validated `target` (see targetSchema): the flavor and its overrides. */
function targetNames(t: TargetSpec | undefined): { flavor: Flavor; names: Partial<Names> } {
    const flavor: Flavor = t?.flavor ?? "kubeadm";
    const names: Partial<Names> = {};
    for (const k of ["namespace", "configMap", "key", "daemonSet", "podSelector"] as const)
        if (t?.[k] !== undefined) names[k] = t[k];
    return { flavor, names };
}

/** An input zod refused: one line per issue, each issue's field named. */
function invalid(refuse: Refuse, issues: Parameters<typeof describeIssues>[0], prefix: string): Error {
    return refuse("input", describeIssues(issues, prefix).join("; "), {
        fields: issues.map((i) => issuePath(i.path, prefix)),
    });
}

/**
 * Which cluster: `kubeconfig` (+ `context`) when given, else the stack's kubernetes:* config, else
 * the ambient kubeconfig and its current context. Resolved once and used by the preview, the
 * Kubernetes provider, the steps' CLI and the hooks alike. With an explicit provider the stack's
 * config is not read (`kubeconfig` is then required, see the constructor's checks).
 */
export function chooseCluster(args: KubeProxyModeArgs, explicitProvider: boolean): ClusterChoice {
    const stackK8s = new pulumi.Config("kubernetes");
    const stackKubeconfig =
        args.kubeconfig === undefined && !explicitProvider ? stackK8s.getSecret("kubeconfig") : undefined;
    const source =
        args.kubeconfig !== undefined
            ? "kubeconfig"
            : stackKubeconfig !== undefined
              ? "the stack's kubernetes:kubeconfig"
              : "the ambient kubeconfig";
    const kubeconfig: pulumi.Output<string> | undefined =
        args.kubeconfig !== undefined
            ? pulumi.secret(args.kubeconfig)
            : stackKubeconfig !== undefined
              ? pulumi.secret(stackKubeconfig.apply((v) => (v === "" ? v : kubeconfigFromSetting(v))))
              : undefined;
    const context =
        args.context ?? (args.kubeconfig === undefined && !explicitProvider ? stackK8s.get("context") : undefined);
    return { source, kubeconfig, context };
}

/** The inputs the decision reads, as one Output. */
export function collectInputs(args: KubeProxyModeArgs, context: pulumi.Input<string> | undefined) {
    return pulumi.output({
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
        context,
        alerts: args.alerts,
        eksAddon: args.eksAddon,
    });
}

/** The resolved inputs (see collectInputs). */
export type DecisionInputs = ReturnType<typeof collectInputs> extends pulumi.Output<infer T> ? T : never;

/** The promotion gate, parsed once, and the upstream stack's record (read in preview and up alike). */
export function promotionGate(
    name: string,
    promotion: KubeProxyModeArgs["promotion"],
    parent: pulumi.Resource,
    refuse: Refuse,
): { gate: pulumi.Output<Gate | undefined>; upstream: pulumi.Output<unknown> } {
    if (promotion === undefined) return { gate: pulumi.output(undefined), upstream: pulumi.output(undefined) };
    const gate = pulumi.output(promotion).apply((p) => {
        try {
            return parsePromotion(p);
        } catch (e) {
            throw refuse("input", (e as Error).message, { fields: ["promotion"] });
        }
    });
    const upstream = pulumi.unsecret(
        new pulumi.StackReference(
            `${name}-promotion-upstream`,
            { name: gate.apply((g) => g.after) },
            { parent },
        ).getOutput("promotion"),
    );
    return { gate, upstream };
}

/** Every input checked before the cluster is read, so nothing can fail later at up. */
function checkInputs(refuse: Refuse, i: DecisionInputs, kc: string | undefined, source: string) {
    const {
        mode,
        featureGates,
        nodePortAddresses,
        conntrack,
        kubernetesVersion,
        allowUnknown,
        target,
        pools,
        verify,
        onFailure,
        context,
        eksAddon,
    } = i;
    const desired: Record<string, unknown> = { mode };
    if (featureGates !== undefined) desired.featureGates = featureGates;
    if (nodePortAddresses !== undefined) desired.nodePortAddresses = nodePortAddresses;
    if (conntrack !== undefined) desired.conntrack = conntrack;
    if (kubernetesVersion !== undefined) desired.kubernetesVersion = kubernetesVersion;
    if (allowUnknown !== undefined) desired.allowUnknownFeatureGates = allowUnknown;
    const targetParsed = targetSchema.safeParse(target ?? {});
    if (!targetParsed.success) throw invalid(refuse, targetParsed.error.issues, "target");
    const verifyParsed = verifyInputSchema.safeParse(verify ?? {});
    if (!verifyParsed.success) throw invalid(refuse, verifyParsed.error.issues, "verify");
    if (Array.isArray(pools) && pools.length > 0) {
        const poolsParsed = z.array(poolSchema).safeParse(pools);
        if (!poolsParsed.success) throw invalid(refuse, poolsParsed.error.issues, "pools");
    }
    if (onFailure !== undefined && onFailure !== "rollback-node" && onFailure !== "stop") {
        throw refuse("input", `onFailure ${JSON.stringify(onFailure)} must be "rollback-node" or "stop"`, {
            fields: ["onFailure"],
        });
    }
    let eksAddonParsed: EksAddonSettings | undefined;
    if (eksAddon !== undefined && eksAddon !== null) {
        const parsed = eksAddonSchema.safeParse(eksAddon);
        if (!parsed.success) throw invalid(refuse, parsed.error.issues, "eksAddon");
        eksAddonParsed = parsed.data;
    }
    if (kc === "") throw refuse("input", `${source}: ${emptyKubeconfig}`, { fields: ["kubeconfig"] });
    if (context === "")
        throw refuse("input", "context is empty: name a context of the kubeconfig, or leave it out", {
            fields: ["context"],
        });
    return { desired, ...targetNames(targetParsed.data), verify: verifyParsed.data, eksAddon: eksAddonParsed };
}

/**
 * The context the Kubernetes provider is given, from the kubeconfig and the context input alone
 * (the same resolution as the decision's, in cluster/client.ts), so the provider plugin starts
 * while the cluster is read instead of after the decision. Undefined when the kubeconfig cannot be
 * read: the decision refuses that, naming it, and this Output must never reject with it (a
 * provider whose input rejects gets the refusal reported a second time, at great cost).
 */
export function providerContext(kc: string | undefined, context: string | undefined): string | undefined {
    try {
        return clusterIdentity(loadKubeConfig({ kubeconfigContent: kc, context })).context;
    } catch {
        return undefined;
    }
}

/** The cluster's identity (API server, context) from the kubeconfig; a parser's message, which could quote it, is never shown. */
function identify(
    refuse: Refuse,
    kc: string | undefined,
    context: string | undefined,
    source: string,
): ClusterIdentity & { context: string } {
    // Without a kubeconfig in kubectl's places the client library falls back to
    // http://localhost:8080, whose only error is that plain HTTP is not allowed: say what is missing.
    const missing = kc === undefined ? noKubeconfig() : undefined;
    if (missing)
        throw refuse(
            "input",
            `no kubeconfig: the kubeconfig input is not set, the stack has no kubernetes:kubeconfig, and there is no ambient kubeconfig (${missing}); pass kubeconfig (e.g. kubeconfig: config.requireSecret("kubeconfig")), set kubernetes:kubeconfig (pulumi config set --secret kubernetes:kubeconfig ...), or point KUBECONFIG at a kubeconfig file`,
            { fields: ["kubeconfig"] },
        );
    try {
        return clusterIdentity(loadKubeConfig({ kubeconfigContent: kc, context }));
    } catch (e) {
        const m = (e as Error).message ?? "";
        throw refuse(
            "cluster",
            `cannot use ${source}: ${/^the kubeconfig /.test(m) ? m.split("\n")[0] : "it is not a readable kubeconfig"}`,
        );
    }
}

async function readCluster(
    refuse: Refuse,
    reader: SnapshotReader,
    kc: string | undefined,
    cluster: ClusterIdentity & { context: string },
    flavor: Flavor,
    names: Partial<Names>,
    rollout: { drain: boolean },
): Promise<ClusterSnapshot> {
    try {
        return await reader({ kubeconfigContent: kc, context: cluster.context }, flavor, names, rollout);
    } catch (e) {
        throw refuse(
            "cluster",
            `cannot read the cluster at ${cluster.server} (context ${cluster.context}): ${(e as Error).message.split("\n")[0]}`,
        );
    }
}

/** The alerts' plan; an error finding refuses the run, the others join the migration's findings. */
function planAlertsOrRefuse(
    refuse: Refuse,
    alerts: DecisionInputs["alerts"],
    snapshot: ClusterSnapshot,
    namespace: string,
): ReturnType<typeof planAlerts> {
    const alertPlan = planAlerts(alerts, snapshot.prometheusRuleCrd, namespace);
    const alertErrors = alertPlan.findings.filter((f) => f.severity === "error");
    if (alertErrors.length)
        throw refuse(
            "alerts",
            alertErrors.map((f) => `${f.field}: ${f.message}${f.fix ? `; fix: ${f.fix}` : ""}`).join("; "),
            {
                findings: alertErrors,
            },
        );
    return alertPlan;
}

/** The promotion gate's verdict: refuses the run when closed, notes why it is open. */
function openGate(
    refuse: Refuse,
    parent: pulumi.Resource,
    gate: Gate,
    upstream: unknown,
    migration: Migration,
    own: Decision["own"],
): void {
    const verdict = checkPromotion({
        upstream: gate.after,
        record: upstream,
        own,
        alreadyApplied: migration.plan.moving === 0 && migration.plan.target.canonical,
        minSoakSeconds: gate.minSoakSeconds,
        requireNodeChecks: gate.requireNodeChecks,
        now: new Date(),
    });
    if (!verdict.open) throw refuse("promotion", gateRefusal(gate.after, verdict), { fields: ["promotion"] });
    for (const note of verdict.notes) void pulumi.log.info(`promotion gate open: ${note}`, parent);
}

/** What this run moves: the cluster, its current configuration and the target. */
function changeOf(snapshot: ClusterSnapshot, migration: Migration): Decision["change"] {
    return {
        cluster: snapshot.cluster ?? null,
        from: { mode: effectiveMode(snapshot.current.config), configHash: configHash(snapshot.current.text) },
        to: { mode: migration.mode, configHash: migration.hash },
        moving: migration.plan.moving,
    };
}

/** A diagnostic as the engine shows it: through the one redactor, terminal-safe. */
const shown = (text: string) => terminalSafeText(redact(text));

/** What a reviewer reads in `pulumi preview`: diagnostics on the component. */
function report(
    parent: pulumi.Resource,
    m: Migration,
    location: string,
    cluster: { server: string; context: string },
    source: string,
): void {
    const changes = m.changes
        .map((c) => `  ${c.path}: ${JSON.stringify(c.from)} -> ${JSON.stringify(c.to)} (${c.reason})`)
        .join("\n");
    void pulumi.log.info(
        shown(
            `cluster ${cluster.server} (context ${cluster.context}, from ${source}): the cluster this preview reviewed and up acts on`,
        ),
        parent,
    );
    // every value that came from the cluster (node names, kernels, labels) is made terminal-safe
    void pulumi.log.info(
        shown(
            `kube-proxy configuration (${location}) -> ${m.mode}, configuration ${m.hash}, Kubernetes ${m.kubernetesVersion}\n` +
                (m.diff ? `${m.diff}\nchanges:\n${changes}` : "no configuration change") +
                `\n${m.planText}`,
        ),
        parent,
    );
    for (const f of m.findings) {
        const text = `${f.field}: ${f.message}${f.fix ? ` Fix: ${f.fix}` : ""}`;
        if (f.severity === "warning") void pulumi.log.warn(shown(text), parent);
        else void pulumi.log.info(shown(text), parent);
    }
}

/** The migration decided, or refused with the rules it breaks (a refusal of the migration carries its error findings). */
function migrate(
    refuse: Refuse,
    snapshot: ClusterSnapshot,
    desired: Record<string, unknown>,
    pools: Parameters<typeof decideMigration>[2],
    eksAddon: EksAddonSettings | undefined,
): Migration {
    try {
        return decideMigration(snapshot, desired, pools, eksAddon);
    } catch (e) {
        if (e instanceof MigrationRefused)
            throw refuse("migration", e.message, { findings: e.findings.filter((f) => f.severity === "error") });
        if (e instanceof InputError) throw refuse("input", e.message, { fields: [e.field] });
        throw e;
    }
}

/** One decision from resolved inputs: check, read the cluster, decide, plan the alerts, report, judge the gate. */
async function decideOnce(
    refuse: Refuse,
    parent: pulumi.Resource,
    reader: SnapshotReader,
    source: string,
    i: DecisionInputs,
    kc: string | undefined,
    gate: Gate | undefined,
    upstream: unknown,
): Promise<Decision> {
    const { desired, flavor, names, verify, eksAddon } = checkInputs(refuse, i, kc, source);
    const cluster = identify(refuse, kc, i.context, source);
    const snapshot = await readCluster(refuse, reader, kc, cluster, flavor, names, {
        drain: anyPoolDrains(i.pools ?? []),
    });
    const migration = migrate(refuse, snapshot, desired, i.pools ?? [], eksAddon);
    const spec: RolloutSpecInput = rolloutSpecInputSchema.parse({
        flavor,
        names,
        target: { hash: migration.hash, mode: migration.mode, config: migration.config },
        pools: i.pools,
        verify,
        onFailure: i.onFailure ?? "rollback-node",
        tcpBeLiberal: i.conntrack?.tcpBeLiberal,
        cluster,
    });
    const resolvedNames = namesFor(flavor, names);
    const alertPlan = planAlertsOrRefuse(refuse, i.alerts, snapshot, resolvedNames.namespace);
    migration.findings.push(...alertPlan.findings, ...accessFindings(snapshot.access));
    const own = { ...promotionTarget(migration.config), mode: migration.mode };
    report(parent, migration, snapshot.location, cluster, source);
    if (gate) openGate(refuse, parent, gate, upstream, migration, own);
    return {
        migration,
        spec,
        own,
        change: changeOf(snapshot, migration),
        alertRule: alertPlan.rule,
        cluster,
        names: resolvedNames,
    };
}

/**
 * The decision as an Output. The kubeconfig is only read here; what comes out holds none of it,
 * so it is not secret (the reviewer must see the diff and the plan).
 */
export function decide(
    refuse: Refuse,
    parent: pulumi.Resource,
    reader: SnapshotReader,
    inputs: pulumi.Output<DecisionInputs>,
    choice: ClusterChoice,
    promotion: { gate: pulumi.Output<Gate | undefined>; upstream: pulumi.Output<unknown> },
): pulumi.Output<Decision> {
    const kubeconfig = choice.kubeconfig ?? pulumi.output(undefined as string | undefined);
    const withSecret = pulumi
        .all([inputs, kubeconfig, promotion.gate, promotion.upstream])
        .apply(([i, kc, gate, upstream]) => decideOnce(refuse, parent, reader, choice.source, i, kc, gate, upstream));
    return pulumi.unsecret(withSecret);
}
