// One migration, decided from a snapshot of the cluster: the new configuration, the plan and
// every finding. Pure: the Pulumi component and the CLI read the cluster, then call this.
import { effectiveMode, getPath, type CurrentConfig } from "./config.js";
import { describePlan, configHash, type NodeState, type RolloutPlan } from "./plan.js";
import { planRollout } from "./planner.js";
import { parsePools } from "./pools.js";
import { renderConfiguration } from "./render.js";
import { eksAddonFindings, type EksAddonSettings, type ManagedAddon } from "./eksAddon.js";
import { validateDesired } from "./settings.js";
import type { CrdPresence, DesiredSettings, Finding } from "./types.js";
import type { AccessAnswer } from "./rbac.js";
import { parseKubeVersion, type KubeVersion } from "./versions.js";
import { nameList } from "./text.js";
import type { ServiceLoad } from "./syncEstimate.js";

export interface ServiceFacts {
    namespace: string;
    name: string;
    type: string;
    nodePorts: number[];
    sessionAffinity?: string;
}

export interface ClusterSnapshot {
    /** the API server's version */
    serverVersion: KubeVersion;
    current: CurrentConfig;
    /** where the configuration lives, for messages: "kube-system/kube-proxy config.conf" */
    location: string;
    nodes: NodeState[];
    services: ServiceFacts[];
    /** whether the PrometheusRule CRD (monitoring.coreos.com) is installed; absent when not read */
    prometheusRuleCrd?: CrdPresence;
    /** what the cluster answered when asked for the rollout's permissions; absent when not asked */
    access?: AccessAnswer;
    /** which cluster, for summaries: "<kubeconfig cluster name> (<server>)"; absent when not known */
    cluster?: string;
    /** EKS manages kube-proxy as an add-on (its objects' field manager); absent when it does not */
    eksAddon?: ManagedAddon;
    /** Services and endpoints kube-proxy programs: each pool's move is estimated from them; absent when not read */
    load?: ServiceLoad;
}

export interface Migration {
    config: string;
    hash: string;
    mode: DesiredSettings["mode"];
    diff: string;
    changes: ReturnType<typeof renderConfiguration>["changes"];
    plan: RolloutPlan;
    planText: string;
    findings: Finding[];
    kubernetesVersion: string;
}

export class MigrationRefused extends Error {
    constructor(readonly findings: Finding[]) {
        const errors = findings.filter((f) => f.severity === "error");
        super(
            `kube-proxy-mode refuses this change (${errors.length} problem(s)):\n` +
                errors
                    .map(
                        (f) =>
                            `- ${f.field}: ${f.message}${f.nodes?.length ? ` [nodes: ${f.nodes.join(", ")}]` : ""}${f.fix ? `\n  fix: ${f.fix}` : ""}`,
                    )
                    .join("\n"),
        );
        this.name = "MigrationRefused";
    }
}

/**
 * Decides a migration, or throws MigrationRefused naming every violated rule, field and node.
 * `poolsInput`: the pools as declared (parsed here: durations become seconds). `eksAddon`: what
 * the stack says of the EKS add-on's values (validated by eksAddonSchema).
 */
export function decideMigration(
    snapshot: ClusterSnapshot,
    desiredInput: unknown,
    poolsInput: unknown,
    eksAddon?: EksAddonSettings,
): Migration {
    const { settings, findings: shape } = validateDesired(desiredInput);
    if (!settings) throw new MigrationRefused(shape);
    const version = settings.kubernetesVersion ? parseKubeVersion(settings.kubernetesVersion)! : snapshot.serverVersion;
    const findings: Finding[] = [];
    if (settings.kubernetesVersion && version.release !== snapshot.serverVersion.release) {
        findings.push({
            severity: "warning",
            code: "version.mismatch",
            field: "kubernetesVersion",
            message: `kubernetesVersion says ${version.release} but the API server runs ${snapshot.serverVersion.raw}; rules use ${version.release}`,
        });
    }
    const rendered = renderConfiguration(snapshot.current, settings, version);
    const hash = configHash(rendered.config);
    const target = { hash, mode: settings.mode, canonical: rendered.config === snapshot.current.text };
    const { pools, findings: poolFindings } = parsePools(poolsInput);
    // pools that do not parse are refused with their findings; nothing is planned from them
    const { plan, findings: planFindings } = pools
        ? planRollout(pools, snapshot.nodes, target, {
              tcpBeLiberal: getPath(rendered.after, "conntrack.tcpBeLiberal") === true,
              fromMode: effectiveMode(snapshot.current.config),
              load: snapshot.load,
          })
        : { plan: { target, pools: [], moving: 0 }, findings: [] };
    findings.push(
        ...rendered.findings,
        ...poolFindings,
        ...planFindings,
        ...eksAddonFindings(snapshot.eksAddon, eksAddon, settings.mode),
    );
    const exposed = snapshot.services.filter((s) => s.nodePorts.length > 0);
    for (const f of findings) {
        if ((f.code === "nodePort.reach" || f.code === "nodePort.localhost") && exposed.length) {
            f.message += `. ${exposed.length} Service(s) expose NodePorts: ${nameList(
                exposed.map((s) => `${s.namespace}/${s.name} (${s.nodePorts.join(", ")})`),
                8,
            )}`;
        }
    }
    if (findings.some((f) => f.severity === "error")) throw new MigrationRefused(findings);
    return {
        config: rendered.config,
        hash,
        mode: settings.mode,
        diff: rendered.diff,
        changes: rendered.changes,
        plan,
        planText: describePlan(plan),
        findings,
        kubernetesVersion: version.release,
    };
}
