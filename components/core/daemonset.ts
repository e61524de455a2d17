// Pure transforms of the installer's kube-proxy DaemonSet spec that make a per-node rollout
// possible: the canonical DaemonSet stays off nodes that carry the config label, and one
// DaemonSet per target configuration runs only on nodes labelled for it.
import { MARKS, rolloutObjectName } from "./plan.js";

type Spec = Record<string, any>;

function clone<T>(v: T): T {
    return JSON.parse(JSON.stringify(v));
}

/** Adds a node-affinity requirement to every required term (terms are ORed, so each needs it). */
function requireNode(podSpec: Spec, requirement: { key: string; operator: string; values?: string[] }): void {
    podSpec.affinity ??= {};
    podSpec.affinity.nodeAffinity ??= {};
    const na = podSpec.affinity.nodeAffinity;
    na.requiredDuringSchedulingIgnoredDuringExecution ??= { nodeSelectorTerms: [] };
    const terms: Spec[] = na.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
    if (terms.length === 0) terms.push({ matchExpressions: [] });
    for (const term of terms) {
        term.matchExpressions ??= [];
        term.matchExpressions = term.matchExpressions.filter((e: Spec) => e.key !== requirement.key);
        term.matchExpressions.push(requirement);
    }
}

/** The canonical DaemonSet during a rollout: updates only when we delete pods, and never on a labelled node. */
export function canonicalDuringRollout(original: Spec): Spec {
    const spec = clone(original);
    spec.updateStrategy = { type: "OnDelete" };
    requireNode(spec.template.spec, { key: MARKS.configLabel, operator: "DoesNotExist" });
    return spec;
}

/** The DaemonSet that runs one target configuration on the nodes labelled for it. */
export function targetDaemonSetSpec(original: Spec, opts: { hash: string; canonicalConfigMap: string }): Spec {
    const spec = clone(original);
    const hashedConfigMap = rolloutObjectName(opts.canonicalConfigMap, opts.hash);
    spec.selector = {
        ...spec.selector,
        matchLabels: { ...(spec.selector?.matchLabels ?? {}), [MARKS.configLabel]: opts.hash },
    };
    spec.template.metadata ??= {};
    spec.template.metadata.labels = { ...(spec.template.metadata.labels ?? {}), [MARKS.configLabel]: opts.hash };
    let found = false;
    for (const v of spec.template.spec.volumes ?? []) {
        if (v.configMap?.name === opts.canonicalConfigMap) {
            v.configMap.name = hashedConfigMap;
            found = true;
        }
    }
    if (!found)
        throw new Error(
            `the kube-proxy DaemonSet mounts no volume from ConfigMap ${opts.canonicalConfigMap}; it cannot be rolled out per node`,
        );
    spec.updateStrategy = { type: "OnDelete" };
    requireNode(spec.template.spec, { key: MARKS.configLabel, operator: "In", values: [opts.hash] });
    return spec;
}

/** Whether a DaemonSet spec still carries the rollout's changes. */
export function isCanonicalShape(spec: Spec, original: Spec): boolean {
    return (
        JSON.stringify(spec.template) === JSON.stringify(original.template) &&
        JSON.stringify(spec.updateStrategy) === JSON.stringify(original.updateStrategy)
    );
}
