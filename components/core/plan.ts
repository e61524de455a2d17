// The rollout plan: its shape (which nodes move, in which pool, in which batches), the marks the
// rollout leaves in the cluster, and the plan as a reviewer reads it. Pure. The planner that
// makes a plan is core/planner.ts; this module names no parsed input (and so no zod type), since
// the component's public declarations name the plan.
import { createHash } from "node:crypto";
import { type DrainOptions } from "./drain.js";
import { type NodeFacts } from "./nodes.js";
import { type ProxyMode } from "./types.js";
import { formatDuration } from "./duration.js";
import { describeEstimate, type PoolEstimate } from "./syncEstimate.js";
import type { NodeSyncs } from "./firstSync.js";

/** Labels and annotations the rollout keeps on nodes and objects: the rollout's memory lives in the cluster. */
export const MARKS = {
    /** node label: which kube-proxy configuration runs here; absent = the installer's canonical DaemonSet */
    configLabel: "kube-proxy-mode.io/config",
    /** label value that keeps every kube-proxy off a node (while leftovers are cleaned) */
    holdValue: "hold",
    /** node annotation: `<config hash>` once the node was verified on it */
    verifiedAnnotation: "kube-proxy-mode.io/verified",
    /** node annotation beside verifiedAnnotation: how the node was verified */
    checksAnnotation: "kube-proxy-mode.io/checks",
    /** checksAnnotation values: the built-in node checks and the hooks ran, or the hooks only (verify.nodeChecks: false) */
    checksBuiltIn: "built-in+hooks",
    checksHooksOnly: "hooks-only",
    /** node annotation: the move in progress on the node (JSON: to, from, phase), written before each action */
    moveAnnotation: "kube-proxy-mode.io/move",
    /** node annotation: the kube-proxy syncs the rollout measured on the node, by mode (JSON, core/firstSync.ts NodeSyncs) */
    syncAnnotation: "kube-proxy-mode.io/sync",
    /** node annotation: set when the rollout cordoned the node, so it only uncordons its own */
    cordonedAnnotation: "kube-proxy-mode.io/cordoned-by",
    /** DaemonSet annotation: the installer's DaemonSet spec, restored when the rollout finishes */
    originalSpecAnnotation: "kube-proxy-mode.io/original-spec",
    /**
     * ControllerRevision annotation: its own `controller-revision-hash`, kept while the finish's
     * hand-back has it carry the installer's (core/daemonset.ts handBackRevision); the restore
     * puts it back
     */
    revisionHashAnnotation: "kube-proxy-mode.io/revision-hash",
    /** label on every object the rollout creates */
    managedByLabel: "app.kubernetes.io/managed-by",
    managedByValue: "kube-proxy-mode",
    /** label on probe pods: the action (probe, cleanup) */
    probeLabel: "kube-proxy-mode.io/probe",
    /** probe pod label: Unix seconds after which the pod is certainly stale (core/probePods.ts probePodLifetime) */
    staleAfterLabel: "kube-proxy-mode.io/stale-after",
    /** probe pod annotation: the lease holder of the run that made it (absent: a command that holds no lease) */
    runAnnotation: "kube-proxy-mode.io/run",
} as const;

/** The rollout's Lease (in kube-proxy's namespace): one rollout per cluster. */
export const LEASE_NAME = "kube-proxy-mode";

/**
 * The ConfigMap (in kube-proxy's namespace) that owns the rollout's own ConfigMaps and DaemonSets
 * (named by configuration hash, so no Role can name them): the finish deletes it and the garbage
 * collector removes them, so the rollout needs delete on this one name only.
 */
export const ROLLOUT_OWNER = "kube-proxy-mode-rollout";

/** A node as the planner sees it: its facts and where the rollout left it. */
export interface NodeState extends NodeFacts {
    /** value of the config label; null when the node runs the canonical DaemonSet */
    placement: string | null;
    /** config hash the node was last verified on */
    verified?: string;
    /** what earlier moves measured of its kube-proxy's syncs: the preview's estimate uses them */
    syncs?: NodeSyncs;
}

export interface PlannedNode {
    name: string;
    kernel?: string;
    /** move: restart kube-proxy on the target and verify; done: already verified on the target */
    action: "move" | "done";
    from: string | null;
}

export interface PoolPlan {
    name: string;
    nodeSelector: string;
    maxUnavailable: number;
    soakSeconds: number;
    drain: boolean;
    /** what the drain may evict (set when drain is) */
    drainOptions?: DrainOptions;
    drainTimeoutSeconds: number;
    nodes: PlannedNode[];
    /** the nodes to move, in groups of at most maxUnavailable, in natural name order (workers-2 before workers-10) */
    batches: string[][];
    /** how many nodes of the pool move (the others are already verified on the target) */
    moving: number;
    /** what each moving node and the pool are estimated to take at the cluster's load (known at preview) */
    estimate?: PoolEstimate;
}

export interface RolloutTarget {
    /** content hash of the target configuration */
    hash: string;
    mode: ProxyMode;
    /** true when the canonical ConfigMap already holds the target: nodes then return to the installer's DaemonSet */
    canonical: boolean;
}

export interface RolloutPlan {
    target: RolloutTarget;
    pools: PoolPlan[];
    /** how many nodes will move */
    moving: number;
}

/**
 * One pool of the plan as the component outputs it: every name, one string per batch. Node names
 * are DNS subdomains, so a space never occurs in one and `batch.split(" ")` gives them back.
 */
export interface PoolPlanOutput extends Omit<PoolPlan, "nodes" | "batches"> {
    /** how many nodes the pool has */
    nodes: number;
    /** the nodes to move: one string per batch of at most maxUnavailable, names separated by a space, in natural name order */
    batches: string[];
    /** the nodes already verified on the target, separated by a space */
    done: string;
}

/**
 * The plan as the component outputs it (`plan`). The engine keeps a stack's outputs in its state
 * and diffs them on every preview: one value per node (name, kernel, action, origin, and the name
 * again in its batch) cost the engine 84 MB and the program 36 MB at 5,000 nodes; a few strings per
 * pool carry the same names. Each node with its kernel, action and origin: `kube-proxy-mode rollout --plan --json`.
 */
export interface RolloutPlanOutput extends Omit<RolloutPlan, "pools"> {
    pools: PoolPlanOutput[];
}

export function planOutput(plan: RolloutPlan): RolloutPlanOutput {
    return {
        target: plan.target,
        moving: plan.moving,
        pools: plan.pools.map(({ nodes, batches, ...pool }) => ({
            ...pool,
            nodes: nodes.length,
            batches: batches.map((b) => b.join(" ")),
            done: nodes
                .filter((n) => n.action === "done")
                .map((n) => n.name)
                .join(" "),
        })),
    };
}

export function configHash(config: string): string {
    return createHash("sha256").update(config).digest("hex").slice(0, 10);
}

/** The node label value a node has once it runs the target. */
export function targetPlacement(target: RolloutTarget): string | null {
    return target.canonical ? null : target.hash;
}

/** A placement as the log names it: a configuration hash, or null for the installer's DaemonSet. */
export function describePlacement(p: string | null): string {
    return p === null ? "the installer's DaemonSet" : `configuration ${p}`;
}

/** The names of the hashed ConfigMap and DaemonSet that carry a configuration during the rollout. */
export function rolloutObjectName(base: string, hash: string): string {
    return `${base}-${hash}`;
}

/** How much of a plan the text names: beyond these, batches are summarized (the plan object keeps every name). */
export const PLAN_TEXT_LIMITS = {
    /** a pool moving at most this many nodes has every name listed */
    namesPerPool: 20,
    /** a pool with more batches than this shows the first and last ones and counts the rest */
    batchesPerPool: 10,
    /** when summarized: how many batches are shown from the start, and from the end */
    headBatches: 5,
    tailBatches: 2,
} as const;

function plural(n: number, one: string, many = `${one}s`): string {
    return `${n} ${n === 1 ? one : many}`;
}

/** The lines of one pool's batches: every name when the pool is small, `first .. last (n nodes)` per batch beyond that. */
function batchLines(p: PoolPlan): string[] {
    const moving = p.batches.reduce((n, b) => n + b.length, 0);
    const named = moving <= PLAN_TEXT_LIMITS.namesPerPool;
    const line = (b: string[], j: number) =>
        `       batch ${j + 1}: ${named || b.length <= 2 ? b.join(", ") : `${b[0]} .. ${b[b.length - 1]} (${b.length} nodes)`}`;
    if (p.batches.length <= PLAN_TEXT_LIMITS.batchesPerPool) return p.batches.map(line);
    const { headBatches: head, tailBatches: tail } = PLAN_TEXT_LIMITS;
    const hidden = p.batches.slice(head, p.batches.length - tail);
    const hiddenNodes = hidden.reduce((n, b) => n + b.length, 0);
    return [
        ...p.batches.slice(0, head).map(line),
        `       ... ${plural(hidden.length, "more batch", "more batches")} (${plural(hiddenNodes, "node")}: ${hidden[0][0]} .. ${hidden[hidden.length - 1].at(-1)}) ...`,
        ...p.batches.slice(p.batches.length - tail).map((b, k) => line(b, p.batches.length - tail + k)),
    ];
}

/**
 * The rollout plan as a reviewer reads it, at any size: per pool the node count, batch count and
 * size, drain and soak; the nodes named when a pool moves few, each batch as its first and last
 * node when it moves many, and only the first and last batches when there are many. Names are
 * in natural order. The full list is in the plan object (the `plan` output, `--json`).
 */
export function describePlan(plan: RolloutPlan): string {
    const lines: string[] = [];
    const where = plan.target.canonical
        ? "the installer's DaemonSet (canonical ConfigMap)"
        : `configuration ${plan.target.hash}`;
    lines.push(`rollout to ${plan.target.mode} (${where}): ${plan.moving} node(s) move, pools in this order:`);
    plan.pools.forEach((p, i) => {
        const done = p.nodes.filter((n) => n.action === "done").length;
        lines.push(
            `  ${i + 1}. pool ${p.name} (${p.nodeSelector}): ${p.nodes.length} node(s)${done ? `, ${done} already verified` : ""}, ` +
                `max ${p.maxUnavailable} at a time in ${plural(p.batches.length, "batch", "batches")}${p.drain ? `, drain first${p.drainOptions?.force ? ", bare pods too" : ""}${p.drainOptions?.deleteEmptyDirData ? ", emptyDir data deleted" : ""}` : ""}${p.soakSeconds ? `, soak ${p.soakSeconds}s after` : ""}`,
        );
        if (p.estimate) lines.push(`     estimate: ${describeEstimate(p.estimate, plan.target.mode)}`);
        lines.push(...batchLines(p));
    });
    const estimated = plan.pools.filter((p) => p.estimate);
    if (estimated.length)
        lines.push(
            `estimate in total: ~${formatDuration(estimated.reduce((a, p) => a + p.estimate!.poolSeconds, 0))} for ${plural(estimated.length, "pool", "pools")}`,
        );
    return lines.join("\n");
}
