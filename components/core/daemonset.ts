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
        matchLabels: { ...(spec.selector.matchLabels ?? {}), [MARKS.configLabel]: opts.hash },
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

/** A DaemonSet's ControllerRevision as the rollout reads it: the pod template it records. */
export interface TemplateRevision {
    name: string;
    /** its `controller-revision-hash` label: the hash the controller gives the pods it starts while it is current */
    hash?: string;
    revision: number;
    /** the pod template it records (its data's `spec.template`) */
    template: unknown;
}

/** JSON with keys in order and null, undefined and `$patch` left out: a template as the controller compares it. */
function canonicalJson(v: unknown): unknown {
    if (Array.isArray(v)) return v.map(canonicalJson);
    if (v === null || typeof v !== "object") return v;
    return Object.fromEntries(
        Object.entries(v)
            .filter(([k, x]) => x !== null && x !== undefined && k !== "$patch")
            .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
            .map(([k, x]) => [k, canonicalJson(x)]),
    );
}

/** The pod template a ControllerRevision's data records (`{"spec":{"template":...}}`, how the DaemonSet controller writes it). */
export function templateOfRevisionData(data: unknown): unknown {
    return (data as { spec?: { template?: unknown } } | undefined)?.spec?.template;
}

/**
 * The revision that records this pod template (the newest, if several do), as the DaemonSet
 * controller finds its current revision (Match in pkg/controller/daemon/update.go compares the
 * recorded template with the DaemonSet's). Templates compare as JSON, key order and null fields
 * aside.
 */
export function revisionOfTemplate(revisions: TemplateRevision[], template: unknown): TemplateRevision | undefined {
    if (template === undefined) return undefined;
    const want = JSON.stringify(canonicalJson(JSON.parse(JSON.stringify(template))));
    return revisions
        .filter((r) => r.template !== undefined && JSON.stringify(canonicalJson(r.template)) === want)
        .sort((a, b) => b.revision - a.revision)[0];
}

/**
 * How the finish's hand-back can start pods the restore finds current without a write to each.
 * The DaemonSet controller gives every pod it starts the `controller-revision-hash` label of its
 * current ControllerRevision, read from that revision's label, not computed (constructHistory in
 * pkg/controller/daemon/update.go); after the restore its current revision is the one that
 * recorded the installer's own template before the rollout (the controller finds it by its
 * template and reuses it). So while the installer's DaemonSet is in the rollout's shape, its
 * current revision relabelled with that revision's hash makes every pod the hand-back starts
 * carry the hash the restore will count as current.
 *
 * `relabel`: the current revision (the rollout's shape), its own hash (`from`: its label, or its
 * name when it has none, as the controller labels such a revision) and the hash it gets; none
 * when it already carries it. `restoreHash`: the hash the pods should carry. Both undefined when the
 * installer's revision is gone (a DaemonSet with `revisionHistoryLimit: 0`, or one the controller
 * pruned) or the current one is not found: each hand-back then labels its pod with the template
 * generation instead (templateGenerationAfterRestore).
 */
export function handBackRevision(
    revisions: TemplateRevision[],
    currentTemplate: unknown,
    installersTemplate: unknown,
): { relabel?: { name: string; from: string; to: string }; restoreHash?: string } {
    const now = revisionOfTemplate(revisions, currentTemplate);
    const restored = revisionOfTemplate(revisions, installersTemplate);
    if (!now || !restored?.hash || now.name === restored.name) return {};
    return {
        restoreHash: restored.hash,
        ...(now.hash === restored.hash
            ? {}
            : { relabel: { name: now.name, from: now.hash ?? now.name, to: restored.hash } }),
    };
}
