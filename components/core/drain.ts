// Which pods a node drain evicts, skips or refuses, with kubectl drain's rules; which
// PodDisruptionBudget blocks an eviction; and the rule for moves that leave a node without
// kube-proxy for a while. Pure: pod and PDB objects in, decisions out.
import { formatDuration } from "./duration.js";
import { describeBasis, UNROUTED_BOUND_SECONDS, type PoolEstimate } from "./syncEstimate.js";
import type { Finding, ProxyMode } from "./types.js";

/** The parts of a Pod a drain decision reads. */
export interface DrainPod {
    metadata?: {
        name?: string;
        namespace?: string;
        labels?: Record<string, string>;
        annotations?: Record<string, string>;
        ownerReferences?: { kind: string; name: string; controller?: boolean }[];
        deletionTimestamp?: unknown;
    };
    spec?: { volumes?: { name: string; emptyDir?: unknown }[]; terminationGracePeriodSeconds?: number };
    status?: { phase?: string };
}

/** How a pool drains: `drain: true` is `{ force: false, deleteEmptyDirData: false }`. */
export interface DrainOptions {
    /** evict pods no controller owns (kubectl drain --force): nothing recreates them */
    force: boolean;
    /** evict pods with emptyDir volumes (kubectl drain --delete-emptydir-data): their data is lost */
    deleteEmptyDirData: boolean;
}

/** A pool's `drain` field as declared: true, false, drain options, or absent (false). */
export type PoolDrain = boolean | Partial<DrainOptions> | undefined;

export const MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror";

export interface DrainRefusal {
    pod: string;
    reason: string;
    /** the pool option that would allow the eviction */
    option: "drain.force" | "drain.deleteEmptyDirData";
}

export interface DrainDecision {
    evict: DrainPod[];
    skipped: { pod: string; reason: string }[];
    refused: DrainRefusal[];
}

export function podName(p: DrainPod): string {
    return `${p.metadata?.namespace ?? ""}/${p.metadata?.name ?? ""}`;
}

/** The pool's `drain` value as options; undefined when the pool does not drain. */
export function drainOptions(drain: PoolDrain): DrainOptions | undefined {
    if (drain === undefined || drain === false) return undefined;
    if (drain === true) return { force: false, deleteEmptyDirData: false };
    return { force: drain.force === true, deleteEmptyDirData: drain.deleteEmptyDirData === true };
}

/** Whether any of these pools drains its nodes (`drain: true` or drain options): then the rollout evicts pods. */
export function anyPoolDrains(pools: readonly { drain?: PoolDrain }[]): boolean {
    return pools.some((p) => drainOptions(p.drain) !== undefined);
}

/**
 * kubectl drain's filters, in its order: mirror pods (the kubelet's static pods) and DaemonSet
 * pods are skipped, finished pods are skipped (they hold nothing), pods without a controller
 * need `force`, pods with an emptyDir volume need `deleteEmptyDirData`. Every pod that is not
 * allowed is refused, each with its reason, so one message names them all.
 */
export function decideDrain(pods: DrainPod[], opts: DrainOptions): DrainDecision {
    const out: DrainDecision = { evict: [], skipped: [], refused: [] };
    for (const p of pods) {
        const name = podName(p);
        if (p.metadata?.annotations?.[MIRROR_POD_ANNOTATION] !== undefined) {
            out.skipped.push({ pod: name, reason: "mirror pod (static pod of the kubelet)" });
            continue;
        }
        const controller = p.metadata?.ownerReferences?.find((o) => o.controller === true);
        if (controller?.kind === "DaemonSet") {
            out.skipped.push({ pod: name, reason: `DaemonSet pod (${controller.name})` });
            continue;
        }
        if (p.status?.phase === "Succeeded" || p.status?.phase === "Failed") {
            out.skipped.push({ pod: name, reason: `finished (${p.status.phase})` });
            continue;
        }
        let allowed = true;
        if (!controller && !opts.force) {
            out.refused.push({
                pod: name,
                reason: "no controller owns it (a bare pod is not recreated elsewhere)",
                option: "drain.force",
            });
            allowed = false;
        }
        const emptyDirs = (p.spec?.volumes ?? [])
            .filter((v) => v.emptyDir !== undefined && v.emptyDir !== null)
            .map((v) => v.name);
        if (emptyDirs.length && !opts.deleteEmptyDirData) {
            out.refused.push({
                pod: name,
                reason: `emptyDir volume(s) ${emptyDirs.join(", ")} (their data is deleted with the pod)`,
                option: "drain.deleteEmptyDirData",
            });
            allowed = false;
        }
        if (allowed) out.evict.push(p);
    }
    return out;
}

/** The refusal as one message naming each pod and the option that would allow it. */
export function describeRefusal(node: string, refused: DrainRefusal[]): string {
    const options = [...new Set(refused.map((r) => r.option))];
    const set = options.map((o) => (o === "drain.force" ? "force: true" : "deleteEmptyDirData: true")).join(", ");
    return (
        `drain of ${node} refused: ${refused.map((r) => `${r.pod}: ${r.reason}, allowed by ${r.option}`).join("; ")}. ` +
        `Set drain: { ${set} } on the pool to evict them (kubectl drain ${options.map((o) => (o === "drain.force" ? "--force" : "--delete-emptydir-data")).join(" ")}), or move these pods off the node first`
    );
}

/** The parts of a PodDisruptionBudget that say which pods it covers. */
export interface DrainPdb {
    metadata?: { name?: string; namespace?: string };
    spec?: {
        selector?: {
            matchLabels?: Record<string, string>;
            matchExpressions?: { key: string; operator: string; values?: string[] }[];
        };
    };
}

/** Whether a PDB's label selector selects the pod (an empty selector selects every pod in policy/v1). */
export function pdbSelects(pdb: DrainPdb, pod: DrainPod): boolean {
    if (
        pdb.metadata?.namespace !== undefined &&
        pod.metadata?.namespace !== undefined &&
        pdb.metadata.namespace !== pod.metadata.namespace
    )
        return false;
    const sel = pdb.spec?.selector;
    if (!sel) return false; // policy/v1: a null selector selects nothing
    const labels = pod.metadata?.labels ?? {};
    for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
    for (const e of sel.matchExpressions ?? []) {
        const has = Object.prototype.hasOwnProperty.call(labels, e.key);
        const values = e.values ?? [];
        if (e.operator === "In" && !(has && values.includes(labels[e.key]))) return false;
        if (e.operator === "NotIn" && has && values.includes(labels[e.key])) return false;
        if (e.operator === "Exists" && !has) return false;
        if (e.operator === "DoesNotExist" && has) return false;
    }
    return true;
}

/** The names of the PDBs that cover a pod. */
export function blockingPdbs(pdbs: DrainPdb[], pod: DrainPod): string[] {
    return pdbs.filter((b) => pdbSelects(b, pod)).map((b) => `${b.metadata?.namespace}/${b.metadata?.name}`);
}

/** kubectl's meaning of a drain timeout: 0 waits for ever. */
export function drainDeadline(startMs: number, timeoutSeconds: number): number {
    return timeoutSeconds === 0 ? Number.POSITIVE_INFINITY : startMs + timeoutSeconds * 1000;
}

/**
 * A moving node whose pods stay have no Service routing while neither mode's rules are in place:
 * ipvs -> iptables always (kube-proxy is stopped, the ipvs state removed, then the iptables one
 * started), and any pool whose estimated window (core/syncEstimate.ts, `estimates` by pool
 * index) passes UNROUTED_BOUND_SECONDS. A pool that does not drain must say it accepts that
 * (`allowUnroutedNode: true`).
 */
export function unroutedNodeFindings(
    pools: { name: string; drain?: PoolDrain; allowUnroutedNode?: boolean }[],
    from: ProxyMode | undefined,
    to: ProxyMode,
    opts: { podTimeoutSeconds?: number; cleanupTimeoutSeconds?: number; estimates?: (PoolEstimate | undefined)[] } = {},
): Finding[] {
    if (from === undefined || from === to) return [];
    const stopped = from === "ipvs" && to === "iptables";
    const podTimeout = opts.podTimeoutSeconds ?? 180;
    const cleanup = opts.cleanupTimeoutSeconds ?? 120;
    const how = stopped
        ? `on each node kube-proxy is stopped, the ipvs state removed, then the iptables kube-proxy started`
        : `on each node the new kube-proxy programs no rule until its first sync in ${to} mode`;
    const out: Finding[] = [];
    pools.forEach((p, i) => {
        if (drainOptions(p.drain) !== undefined || p.allowUnroutedNode === true) return;
        const estimate = opts.estimates?.[i];
        if (!stopped && !(estimate && estimate.windowSeconds > UNROUTED_BOUND_SECONDS)) return;
        const howLong = estimate
            ? `about ${formatDuration(estimate.windowSeconds)} ${describeBasis(estimate.basis)}, estimated`
            : `usually tens of seconds; at most ${cleanup}s for the cleanup plus ${podTimeout}s for each kube-proxy to stop and start, verify.podTimeout`;
        out.push({
            severity: "error",
            code: "pools.unroutedNode",
            field: `pools[${i}].drain`,
            message: `pool ${p.name} moves ${from} -> ${to} without draining: ${how}, so the node's pods have no Service routing for that time (${howLong})`,
            fix: `set drain: true on pool ${p.name} (its pods leave the node first), or allowUnroutedNode: true to accept the gap`,
        });
    });
    return out;
}
