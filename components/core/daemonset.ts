// Pure transforms of the installer's kube-proxy DaemonSet spec that make a per-node rollout
// possible: the canonical DaemonSet stays off nodes that carry the config label, and one
// DaemonSet per target configuration runs only on nodes labelled for it.
// Types only: the Kubernetes object shapes, not the client (the core does no I/O).
import type { V1DaemonSetSpec, V1NodeSelectorRequirement, V1PodSpec } from "@kubernetes/client-node";
import { MARKS, rolloutObjectName } from "./plan.js";

type Spec = V1DaemonSetSpec;

function clone<T>(v: T): T {
    return JSON.parse(JSON.stringify(v)) as T;
}

/** Adds a node-affinity requirement to every required term (terms are ORed, so each needs it). */
function requireNode(podSpec: V1PodSpec | undefined, requirement: V1NodeSelectorRequirement): void {
    if (!podSpec) throw new Error("the kube-proxy DaemonSet has no pod template spec");
    podSpec.affinity ??= {};
    podSpec.affinity.nodeAffinity ??= {};
    const na = podSpec.affinity.nodeAffinity;
    na.requiredDuringSchedulingIgnoredDuringExecution ??= { nodeSelectorTerms: [] };
    const terms = na.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
    if (terms.length === 0) terms.push({ matchExpressions: [] });
    for (const term of terms) {
        term.matchExpressions = (term.matchExpressions ?? []).filter((e) => e.key !== requirement.key);
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
    for (const v of spec.template.spec?.volumes ?? []) {
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

/** A DaemonSet revision as its controller compares pods with it. */
export interface DaemonSetRevision {
    /** the ControllerRevision's `controller-revision-hash` */
    hash?: string;
    /** the DaemonSet's `deprecated.daemonset.template.generation` annotation */
    templateGeneration?: string;
}

/** The pod labels the DaemonSet controller compares with its revision. */
export const REVISION_LABELS = {
    hash: "controller-revision-hash",
    templateGeneration: "pod-template-generation",
} as const;

/**
 * Whether the DaemonSet controller counts a pod with these labels as of the revision (so it
 * neither replaces it under RollingUpdate nor counts it out of `updatedNumberScheduled`): its hash
 * OR its template generation matches, the controller's own rule (IsPodUpdated in
 * pkg/controller/daemon/util).
 */
export function podIsOfRevision(labels: Record<string, string> | undefined, revision: DaemonSetRevision): boolean {
    const l = labels ?? {};
    return (
        (!!revision.hash && l[REVISION_LABELS.hash] === revision.hash) ||
        (!!revision.templateGeneration && l[REVISION_LABELS.templateGeneration] === revision.templateGeneration)
    );
}

/** The labels that mark a pod as of the revision (the parts it has). */
export function revisionLabels(revision: DaemonSetRevision): Record<string, string> {
    return {
        ...(revision.hash ? { [REVISION_LABELS.hash]: revision.hash } : {}),
        ...(revision.templateGeneration ? { [REVISION_LABELS.templateGeneration]: revision.templateGeneration } : {}),
    };
}

/** The DaemonSet's template generation, from the annotation the API server keeps on it. */
export function templateGenerationOf(annotations: Record<string, string> | undefined): string | undefined {
    return annotations?.["deprecated.daemonset.template.generation"];
}

/**
 * The template generation the installer's DaemonSet gets from the restore's first write: the
 * API server adds one to it on every change of the pod template, and the restore changes the
 * template once (back to the installer's). Undefined when the DaemonSet carries none.
 */
export function templateGenerationAfterRestore(annotations: Record<string, string> | undefined): string | undefined {
    const now = templateGenerationOf(annotations);
    return now && /^\d+$/.test(now) ? String(Number(now) + 1) : undefined;
}
