// What the runner tells of each node as it moves: typed events, for a program to read (the CLI's
// --events file, the bench), and the one formatter that makes the log's lines of them. A node's
// move reads, in order: cordoned, kube-proxy running, first sync (built-in checks on), each
// check, released; a batch's event comes
// before its nodes' (its first node may be cordoned before it: see the bench's nodePhases.ts).
import { describePlacement } from "../core/plan.js";
import type { ProxyMode } from "../core/types.js";

/** A pool's step moves its nodes to the target; the finish hands them back to the installer's DaemonSet. */
export type StepKind = "move" | "hand-back";

/** What every event of one node carries: where, in which kind of step, and when (ms, the run's clock: Date.now()). */
interface NodeEventBase {
    pool: string;
    node: string;
    step: StepKind;
    at: number;
}

/** A batch of a pool begins: at most its maxUnavailable nodes, moved at once. */
export interface BatchStarted {
    type: "batch started";
    pool: string;
    step: StepKind;
    /** 1-based, of `of` */
    index: number;
    of: number;
    nodes: string[];
    at: number;
}

/** The move's memory and the cordon written (`ours` false: someone else had cordoned it; it stays so). */
export interface Cordoned extends NodeEventBase {
    type: "cordoned";
    ours: boolean;
}

/** The node's new kube-proxy started and settled on `placement` (a configuration hash, or null: the installer's DaemonSet). */
export interface KubeProxyRunning extends NodeEventBase {
    type: "kube-proxy running";
    /** the pod's name; none when the placement runs no kube-proxy */
    pod?: string;
    placement: string | null;
}

/**
 * The node's new kube-proxy finished its first sync in `mode`, `seconds` into the wait for it
 * (the built-in checks only: without them nothing waits). `old`: the old mode's mean sync, read
 * before the move from the node's kube-proxy (`recorded`: from what an earlier move recorded on
 * the node, kube-proxy having restarted since); `metric` "all" when it reported no full syncs (ipvs).
 */
export interface FirstSynced extends NodeEventBase {
    type: "first sync";
    mode: ProxyMode;
    seconds: number;
    old?: { seconds: number; metric: "full" | "all"; recorded: boolean };
}

/** One check of the node on its new kube-proxy: a built-in one, or a verify hook (`hook`, named "hook <name>"). */
export interface CheckDone extends NodeEventBase {
    type: "check";
    check: string;
    ok: boolean;
    detail: string;
    hook: boolean;
}

/** The node passed: marked verified (or moved, without the built-in checks; or handed back), uncordoned if the rollout cordoned it. */
export interface Released extends NodeEventBase {
    type: "released";
    how: "verified" | "moved" | "handed back";
    /** the verify hooks that passed */
    hooks: number;
}

export type NodeEvent = BatchStarted | Cordoned | KubeProxyRunning | FirstSynced | CheckDone | Released;

/** An event as the runner makes it, before it is stamped with its time. */
export type UnstampedNodeEvent = NodeEvent extends infer E ? (E extends NodeEvent ? Omit<E, "at"> : never) : never;

/** The event's line in the log: the runner's log prints these and nothing else for them. */
export function formatEvent(e: NodeEvent): string {
    if (e.type === "batch started") {
        const names =
            e.nodes.length <= 10
                ? e.nodes.join(", ")
                : `${e.nodes[0]} .. ${e.nodes[e.nodes.length - 1]} (${e.nodes.length} nodes)`;
        return `pool ${e.pool}: batch ${e.index}/${e.of}: ${names}`;
    }
    return `pool ${e.pool} node ${e.node}: ${what(e)}`;
}

/** The line of a first sync done (a move's event, or a rollback's own wait). */
export function firstSyncDone(mode: ProxyMode, seconds: number): string {
    return `first sync in ${mode} mode done ${seconds}s into the wait`;
}

function what(e: Exclude<NodeEvent, BatchStarted>): string {
    switch (e.type) {
        case "cordoned":
            return e.ours ? "cordoned" : "was already cordoned (left so)";
        case "kube-proxy running":
            return `kube-proxy ${e.pod ?? ""} running on ${describePlacement(e.placement)}`;
        case "first sync":
            return firstSyncDone(e.mode, e.seconds);
        case "check":
            // a hook's output is its check's detail in the result; its line names it only
            return e.hook
                ? `${e.ok ? "ok" : "FAILED"} ${e.check}`
                : `${e.ok ? "ok" : "FAILED"} ${e.check}: ${e.detail}`;
        case "released":
            return e.how === "handed back"
                ? "handed back to the installer's DaemonSet, checked"
                : e.how === "verified"
                  ? "verified"
                  : `moved; built-in node checks are off (verify.nodeChecks: false), ${e.hooks} hook(s) passed`;
    }
}

/** The events of a JSON-lines file (rollout --events: components/cli/events.ts), as a program reads them back. Lines that are not JSON objects are skipped. */
export function parseEvents(text: string): NodeEvent[] {
    const out: NodeEvent[] = [];
    for (const line of text.split("\n")) {
        if (!line.trim()) continue;
        try {
            const e = JSON.parse(line) as unknown;
            if (e && typeof e === "object" && typeof (e as { type?: unknown }).type === "string")
                out.push(e as NodeEvent);
        } catch {
            // a line cut short by a run that died mid-write
        }
    }
    return out;
}
