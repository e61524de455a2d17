// What a move costs each node at the cluster's size, before anyone moves: kube-proxy's start-up
// removal of the old mode's rules, its first full sync in the new mode, and the window in which
// new connections through a moving node may fail. Pure.
import { formatDuration } from "./duration.js";
import type { ProxyMode } from "./types.js";

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
    const k = load.endpoints / 1000;
    const round = (s: number) => Math.round(s * 10) / 10;
    const removalSeconds = removes(from, to) ? round(SYNC_COST.removalPer1000[from] * k) : 0;
    const firstSyncSeconds = round(SYNC_COST.startSeconds + SYNC_COST.firstSyncPer1000[to] * k);
    // old iptables rules go in one atomic restore and route until then; ipvs state goes first
    // (kube-ipvs0, the virtual servers), so its removal is inside the window
    const windowSeconds = round(firstSyncSeconds + (from === "ipvs" ? removalSeconds : 0));
    const nodeSeconds = round(SYNC_COST.restartSeconds + removalSeconds + firstSyncSeconds + SYNC_COST.checksSeconds);
    return { removalSeconds, firstSyncSeconds, windowSeconds, nodeSeconds };
}

/** A pool's estimate: its nodes' and its batches'. */
export interface PoolEstimate extends NodeEstimate {
    /** every batch one after another, each as long as one node (its nodes move at once), plus the soak */
    poolSeconds: number;
}

export function estimatePool(node: NodeEstimate, batches: number, soakSeconds: number): PoolEstimate {
    return { ...node, poolSeconds: Math.round(node.nodeSeconds * batches + (batches ? soakSeconds : 0)) };
}

/** The estimate in words, for the plan and the findings. */
export function describeEstimate(e: PoolEstimate, to: ProxyMode): string {
    const removal = e.removalSeconds >= 1 ? `old rules removed ~${formatDuration(e.removalSeconds)}, ` : "";
    return `~${formatDuration(e.nodeSeconds)} per node (${removal}first sync in ${to} mode ~${formatDuration(e.firstSyncSeconds)}; new connections through it may fail for ~${formatDuration(e.windowSeconds)}), ~${formatDuration(e.poolSeconds)} for the pool`;
}

/** The load in words: "2,000 Services, 20,000 endpoints". */
export function describeLoad(load: ServiceLoad): string {
    return `${load.services.toLocaleString("en-US")} Services, ${load.endpoints.toLocaleString("en-US")} endpoints`;
}
