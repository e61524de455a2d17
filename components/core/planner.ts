// The planner: assigns every Linux node to exactly one pool, judges the kernels of the nodes that
// will move, and cuts each pool into batches, from the pools as parsed (durations in seconds). Pure.
import { drainOptions, unroutedNodeFindings } from "./drain.js";
import { formatDuration } from "./duration.js";
import { compareNodeNames, nodeVerdict } from "./nodes.js";
import {
    targetPlacement,
    type NodeState,
    type PlannedNode,
    type PoolPlan,
    type RolloutPlan,
    type RolloutTarget,
} from "./plan.js";
import type { Pool } from "./pools.js";
import { matchesSelector, parseSelector } from "./selector.js";
import type { Finding, ProxyMode } from "./types.js";
import { nameList } from "./text.js";
import {
    describeBasis,
    estimateMoving,
    estimatePool,
    WINDOW_WARNING_SECONDS,
    type PoolEstimate,
    type ServiceLoad,
} from "./syncEstimate.js";

type PlanOptions = {
    tcpBeLiberal?: boolean;
    fromMode?: ProxyMode;
    podTimeoutSeconds?: number;
    /** the cluster's Services and endpoints: each pool's move is estimated from them */
    load?: ServiceLoad;
};

/** The pool's Linux nodes in natural name order. */
function poolMembers(pool: Pool, i: number, linux: NodeState[]): NodeState[] {
    const selector = parseSelector(pool.nodeSelector, `pools[${i}].nodeSelector`);
    return linux.filter((n) => matchesSelector(selector, n.labels)).sort((a, b) => compareNodeNames(a.name, b.name));
}

/** A node selected by an earlier pool too: each node must be in exactly one pool. */
function overlapFinding(pool: Pool, i: number, node: string, prior: string): Finding {
    return {
        severity: "error",
        code: "pools.overlap",
        field: `pools[${i}].nodeSelector`,
        nodes: [node],
        message: `node ${node} is selected by pool ${prior} and by pool ${pool.name}: each node must be in exactly one pool`,
        fix: `narrow one of the selectors (e.g. ${pool.nodeSelector},pool!=${prior})`,
    };
}

/**
 * The members a pool owns (those not owned by an earlier pool, which are overlap findings), each
 * planned as done (already verified on the target) or to move, the movers' kernels judged.
 */
function planMembers(
    pool: Pool,
    i: number,
    members: NodeState[],
    owner: Map<string, string>,
    target: RolloutTarget,
    opts: PlanOptions,
): { planned: PlannedNode[]; findings: Finding[] } {
    const wanted = targetPlacement(target);
    const planned: PlannedNode[] = [];
    const findings: Finding[] = [];
    for (const n of members) {
        const prior = owner.get(n.name);
        if (prior) {
            findings.push(overlapFinding(pool, i, n.name, prior));
            continue;
        }
        owner.set(n.name, pool.name);
        const done = n.placement === wanted && (target.canonical || n.verified === target.hash);
        planned.push({ name: n.name, kernel: n.kernelVersion, action: done ? "done" : "move", from: n.placement });
        if (done) continue;
        // members are Linux nodes, so the verdict has no node.notLinux info to leave out
        for (const f of nodeVerdict(n, target.mode, opts).findings)
            findings.push({ ...f, field: `pools[${i}] (${pool.name}) node ${n.name}: ${f.field}` });
    }
    return { planned, findings };
}

/** The names in groups of at most `size`, in order. */
function batchesOf(names: string[], size: number): string[][] {
    const batches: string[][] = [];
    for (let b = 0; b < names.length; b += size) batches.push(names.slice(b, b + size));
    return batches;
}

/**
 * One pool's part of the plan: its members (those not already owned by an earlier pool, in
 * natural name order), which move and which are done, the movers' kernels judged, and batches.
 */
function planPool(
    pool: Pool,
    i: number,
    linux: NodeState[],
    owner: Map<string, string>,
    target: RolloutTarget,
    opts: PlanOptions,
): { pool: PoolPlan; findings: Finding[] } {
    const members = poolMembers(pool, i, linux);
    const { planned, findings } = planMembers(pool, i, members, owner, target, opts);
    if (members.length === 0) {
        findings.push({
            severity: "warning",
            code: "pools.noNodes",
            field: `pools[${i}].nodeSelector`,
            message: `pool ${pool.name} (${pool.nodeSelector}) selects no node`,
        });
    }
    const maxUnavailable = pool.maxUnavailable ?? 1;
    const moving = planned.filter((p) => p.action === "move").map((p) => p.name);
    const drain = drainOptions(pool.drain);
    const plan: PoolPlan = {
        name: pool.name,
        nodeSelector: pool.nodeSelector,
        maxUnavailable,
        soakSeconds: pool.soakSeconds,
        drain: drain !== undefined,
        drainOptions: drain,
        drainTimeoutSeconds: pool.drainTimeoutSeconds,
        nodes: planned,
        batches: batchesOf(moving, maxUnavailable),
        moving: moving.length,
    };
    const movingNames = new Set(moving);
    const movers = members.filter((n) => movingNames.has(n.name));
    const estimate =
        opts.fromMode && moving.length
            ? estimateMoving(
                  opts.fromMode,
                  target.mode,
                  movers.map((n) => n.syncs),
                  opts.load,
              )
            : undefined;
    if (estimate) {
        plan.estimate = estimatePool(estimate.node, plan.batches.length, pool.soakSeconds, estimate.basis);
        if (plan.estimate.windowSeconds > WINDOW_WARNING_SECONDS)
            findings.push(windowFinding(pool, i, plan.estimate, target.mode));
    }
    return { pool: plan, findings };
}

/** A pool whose moving nodes are estimated to route no new connection for long: the ways to shorten or contain it. */
function windowFinding(pool: Pool, i: number, e: PoolEstimate, to: ProxyMode): Finding {
    return {
        severity: "warning",
        code: "pools.syncWindow",
        field: `pools[${i}]`,
        message: `pool ${pool.name}: ${describeBasis(e.basis)} each moving node is estimated to route no new connection for ~${formatDuration(e.windowSeconds)} (its first sync in ${to} mode), the pool to take ~${formatDuration(e.poolSeconds)}`,
        fix: `drain the pool (drain: true) so its pods leave each node first, move fewer nodes at once (maxUnavailable), plan a maintenance window of ~${formatDuration(e.poolSeconds)}, and keep the mode's minSyncPeriod at its default so later syncs stay partial`,
    };
}

/** Linux nodes in no pool: they would switch mode unverified at their next restart once the ConfigMap changes. */
function unassignedFinding(orphans: string[]): Finding {
    return {
        severity: "error",
        code: "pools.unassigned",
        field: "pools",
        nodes: orphans,
        message:
            `${orphans.length} node(s) run kube-proxy but are in no pool: ${nameList(orphans, 10)}. ` +
            `When the rollout finishes the canonical ConfigMap changes, and they would switch mode unverified at their next restart`,
        fix: 'add a pool that selects them (a last pool such as { name: "rest", nodeSelector: "kubernetes.io/os=linux" } must not overlap the others: use pool!=... requirements)',
    };
}

/**
 * Assigns every Linux node to exactly one pool, judges the kernels of the nodes that
 * will move, and cuts each pool into batches. Throws nothing: problems are findings.
 * The pools are parsed ones (parsePools, or the rollout spec's schema).
 */
export function planRollout(
    pools: Pool[],
    nodes: NodeState[],
    target: RolloutTarget,
    opts: PlanOptions = {},
): { plan: RolloutPlan; findings: Finding[] } {
    const plan: RolloutPlan = { target, pools: [], moving: 0 };
    const findings: Finding[] = [];
    const linux = nodes.filter((n) => !n.operatingSystem || n.operatingSystem === "linux");
    const owner = new Map<string, string>();
    for (const [i, spec] of pools.entries()) {
        const { pool, findings: poolFindings } = planPool(spec, i, linux, owner, target, opts);
        findings.push(...poolFindings);
        plan.pools.push(pool);
        plan.moving += pool.moving;
    }
    // the unrouted-node rule follows each pool's estimate, so it comes after the pools' plans
    const unrouted = unroutedNodeFindings(pools, opts.fromMode, target.mode, {
        podTimeoutSeconds: opts.podTimeoutSeconds,
        estimates: plan.pools.map((p) => p.estimate),
    });
    if (unrouted.some((f) => f.severity === "error"))
        return { plan: { target, pools: [], moving: 0 }, findings: unrouted };
    const orphans = linux.filter((n) => !owner.has(n.name)).map((n) => n.name);
    if (orphans.length > 0) findings.push(unassignedFinding(orphans));
    return { plan, findings: [...unrouted, ...findings] };
}
