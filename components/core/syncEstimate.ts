// What a move costs each node at the cluster's size, before anyone moves: kube-proxy's start-up
// removal of the old mode's rules, its first full sync in the new mode, and the window in which
// new connections through a moving node may fail. Pure.
import { formatDuration } from "./duration.js";
import type { ProxyMode } from "./types.js";
import type { NodeSyncs } from "./firstSync.js";

/** The cluster's load, as the preview counts it. */
export interface ServiceLoad {
    services: number;
    /** endpoints over every EndpointSlice */
    endpoints: number;
}

/**
 * Seconds of kube-proxy work on one node per 1,000 Service endpoints, by mode: its first full
 * sync, and the removal of that mode's rules (by the next mode's start-up, or the tool's ipvs
 * cleanup). Measured on the reference cluster's real nodes (docs/performance.md); a host with
 * more CPU is faster, so the estimate errs long.
 */
export const SYNC_COST = {
    // ipvs: not measured (no IPVS in the reference cluster's kernel), a guess between the others
    firstSyncPer1000: { iptables: 3.5, nftables: 0.4, ipvs: 2 },
    removalPer1000: { iptables: 0.15, nftables: 0.1, ipvs: 0.5 },
    /** the process's start and its informers' first list */
    startSeconds: 3,
    /** the pod's restart, and the checks after the first sync */
    restartSeconds: 3,
    checksSeconds: 2,
} as const;

/**
 * How much slower a first sync in `to` is than a sync in `from` at the same load, at least 1: a
 * first-sync deadline scaled from the old mode's sync must not undercut a slower new mode
 * (nftables -> iptables: about 9 times).
 */
export function slowerBy(from: ProxyMode, to: ProxyMode): number {
    return Math.max(1, SYNC_COST.firstSyncPer1000[to] / SYNC_COST.firstSyncPer1000[from]);
}

/** A moving node's window above which a pool that keeps its pods must drain or accept it. */
export const UNROUTED_BOUND_SECONDS = 15;
/** A pool whose moving node's window passes this gets a warning with the ways to shorten it. */
export const WINDOW_WARNING_SECONDS = 30;

/** One node's move, estimated. */
export interface NodeEstimate {
    /** the old mode's rules removed (by kube-proxy's start-up, or the tool for ipvs -> iptables) */
    removalSeconds: number;
    firstSyncSeconds: number;
    /** new connections through the node may fail this long: no mode's rules route them */
    windowSeconds: number;
    /** cordon to release: restart, removal, first sync, checks */
    nodeSeconds: number;
}

/** Which old rules the new mode's start removes: nftables removes iptables and ipvs state; the others remove nftables's. ipvs -> iptables: the tool does. */
function removes(from: ProxyMode, to: ProxyMode): boolean {
    if (from === to) return false;
    if (to === "nftables") return true;
    return from === "nftables" || (from === "ipvs" && to === "iptables");
}

/** The estimate of one node's move from `from` to `to` at `load`. */
export function estimateNode(from: ProxyMode, to: ProxyMode, load: ServiceLoad): NodeEstimate {
    return estimateAt(from, to, load.endpoints / 1000);
}

/** The estimate at `k` thousand endpoints, at the reference costs. */
function estimateAt(from: ProxyMode, to: ProxyMode, k: number): NodeEstimate {
    const removalSeconds = removes(from, to) ? SYNC_COST.removalPer1000[from] * k : 0;
    return nodeEstimate(from, removalSeconds, SYNC_COST.startSeconds + SYNC_COST.firstSyncPer1000[to] * k);
}

const round = (s: number) => Math.round(s * 10) / 10;

/** A node's estimate from its removal and first sync. */
function nodeEstimate(from: ProxyMode, removal: number, firstSync: number): NodeEstimate {
    const removalSeconds = round(removal);
    const firstSyncSeconds = round(firstSync);
    // old iptables rules go in one atomic restore and route until then; ipvs state goes first
    // (kube-ipvs0, the virtual servers), so its removal is inside the window
    const windowSeconds = round(firstSyncSeconds + (from === "ipvs" ? removalSeconds : 0));
    const nodeSeconds = round(SYNC_COST.restartSeconds + removalSeconds + firstSyncSeconds + SYNC_COST.checksSeconds);
    return { removalSeconds, firstSyncSeconds, windowSeconds, nodeSeconds };
}

/**
 * One node's move estimated from what earlier moves measured on it: its first sync in `to` when
 * one was measured (from its pod running, so the start-up removal is inside it); else its mean
 * sync in `to` (a node that ran it before) or in `from`, read as the node's own speed at the
 * cluster's own load (the endpoints the reference host syncs in that time). undefined when
 * nothing of use was measured.
 */
export function estimateMeasured(
    from: ProxyMode,
    to: ProxyMode,
    syncs: NodeSyncs | undefined,
): NodeEstimate | undefined {
    const first = syncs?.[to]?.first;
    if (first !== undefined) return nodeEstimate(from, 0, first);
    const mode = [to, from].find((m) => syncs?.[m]?.mean !== undefined);
    if (mode === undefined) return undefined;
    return estimateAt(from, to, syncs![mode]!.mean! / SYNC_COST.firstSyncPer1000[mode]);
}

/** What a pool's estimate rests on. */
export interface EstimateBasis {
    /** the cluster's counts, for the nodes with no measurement */
    load?: ServiceLoad;
    /** how many of the moving nodes were estimated from their own measured syncs */
    measured: number;
    moving: number;
}

/**
 * The slowest of a pool's moving nodes, each estimated from its own measured syncs, else from the
 * cluster's load; undefined when a node has neither (no load read, nothing measured).
 */
export function estimateMoving(
    from: ProxyMode,
    to: ProxyMode,
    nodes: (NodeSyncs | undefined)[],
    load: ServiceLoad | undefined,
): { node: NodeEstimate; basis: EstimateBasis } | undefined {
    let slowest: NodeEstimate | undefined;
    let measured = 0;
    for (const syncs of nodes) {
        const own = estimateMeasured(from, to, syncs);
        if (own) measured++;
        const e = own ?? (load ? estimateNode(from, to, load) : undefined);
        if (!e) return undefined;
        if (!slowest || e.nodeSeconds > slowest.nodeSeconds) slowest = e;
    }
    if (!slowest) return undefined;
    return { node: slowest, basis: { ...(load ? { load } : {}), measured, moving: nodes.length } };
}

/** A pool's estimate: its slowest node's, and its batches'. */
export interface PoolEstimate extends NodeEstimate {
    /** every batch one after another, each as long as one node (its nodes move at once), plus the soak */
    poolSeconds: number;
    basis: EstimateBasis;
}

export function estimatePool(
    node: NodeEstimate,
    batches: number,
    soakSeconds: number,
    basis: EstimateBasis,
): PoolEstimate {
    return { ...node, poolSeconds: Math.round(node.nodeSeconds * batches + (batches ? soakSeconds : 0)), basis };
}

/** What the estimate rests on, in words: "at 2,000 Services, 20,000 endpoints", "from 2 of 3 nodes' measured syncs". */
export function describeBasis(b: EstimateBasis): string {
    const counts = b.load ? `at ${describeLoad(b.load)}` : "";
    if (b.measured === 0) return counts;
    const own =
        b.measured === b.moving
            ? `from the moving nodes' measured syncs`
            : `from ${b.measured} of ${b.moving} moving nodes' measured syncs`;
    return b.measured === b.moving || !counts ? own : `${own}, the others ${counts}`;
}

/** The estimate in words, for the plan and the findings. */
export function describeEstimate(e: PoolEstimate, to: ProxyMode): string {
    const removal = e.removalSeconds >= 1 ? `old rules removed ~${formatDuration(e.removalSeconds)}, ` : "";
    const basis = describeBasis(e.basis);
    return `~${formatDuration(e.nodeSeconds)} per node (${removal}first sync in ${to} mode ~${formatDuration(e.firstSyncSeconds)}; new connections through it may fail for ~${formatDuration(e.windowSeconds)}), ~${formatDuration(e.poolSeconds)} for the pool${basis ? `, ${basis}` : ""}`;
}

/** The load in words: "2,000 Services, 20,000 endpoints". */
export function describeLoad(load: ServiceLoad): string {
    return `${load.services.toLocaleString("en-US")} Services, ${load.endpoints.toLocaleString("en-US")} endpoints`;
}
