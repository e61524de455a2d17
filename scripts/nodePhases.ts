// Where a node's time goes in `pulumi up`, from the rollout's node events (pure: no I/O). The
// bench has each step's CLI append them to one file (rollout --events, via KPM_EVENTS_FILE in the
// engine's environment: components/cli/events.ts), each stamped by the runner as it happens; a
// node's move reads, in order (components/rollout/events.ts):
//   cordoned              the move's memory and the cordon written
//   kube-proxy running    the new kube-proxy started and settled
//   first sync            its first sync in the new mode (built-in checks on; the figures: kubeProxySamples.ts)
//   check ...             each built-in check (and hook)
//   released              uncordoned, the memory cleared: verified, moved, or handed back
// and a batch's "batch started" before its nodes'. No log line is read.

import type { NodeEvent, StepKind } from "../components/rollout/events.js";
import { markdownTable } from "./markdownTable.js";

/** One node's move or hand-back, in seconds. */
export interface NodePhase {
    node: string;
    pool: string;
    /** "move" (a pool step, or a node the finish moves late) or "hand-back" (the finish) */
    kind: StepKind;
    /** cordoned to kube-proxy running: the restart, kube-proxy's start and its settling */
    restartSeconds: number;
    /** kube-proxy running to released: the checks, the hooks and the release */
    checksSeconds: number;
    /** cordoned to released */
    totalSeconds: number;
}

/** Each node's phases, in the order the nodes were released; a node whose events are incomplete (a failure) is left out. */
export function nodePhases(events: readonly NodeEvent[]): NodePhase[] {
    const out: NodePhase[] = [];
    walk(events, (p) => out.push(p));
    return out;
}

/** One batch of a pool's step or of the finish's hand-back, in seconds. */
export interface BatchPhase {
    pool: string;
    kind: StepKind;
    /** its number in its pool (1-based) */
    index: number;
    /** how many of its nodes were released */
    nodes: number;
    /** its start to its last node released */
    seconds: number;
    /**
     * its slowest node's own move, cordoned to released: that node's kube-proxy restart (the cordon
     * carries its placement, which triggers it), start, settling and checks. The batch cannot end
     * sooner; the rest of the batch is the rollout's own time (its writes before that cordon).
     */
    slowestNodeSeconds: number;
}

/**
 * Each batch that released at least one node, in the order the batches began, timed from its
 * start (or its first cordon, when that came first). A node belongs to the batch last started for
 * its pool and kind when the node was cordoned.
 */
export function batchPhases(events: readonly NodeEvent[]): BatchPhase[] {
    type Open = BatchPhase & { began: number };
    const out: Open[] = [];
    const current = new Map<string, Open>();
    walk<Open | undefined>(
        events,
        (p, at, b) => {
            if (!b) return;
            b.nodes += 1;
            b.seconds = Math.max(b.seconds, (at - b.began) / 1000);
            b.slowestNodeSeconds = Math.max(b.slowestNodeSeconds, p.totalSeconds);
        },
        (e) => {
            const key = `${e.step} ${e.pool}`;
            // a node cordoned before any batch of its pool started: it belongs to the one started next
            if (!current.has(key)) current.set(key, newBatch(e.pool, e.step, 0, e.at));
            return current.get(key);
        },
        (e) => {
            const key = `${e.step} ${e.pool}`;
            const early = current.get(key);
            const b = early?.index === 0 ? early : newBatch(e.pool, e.step, e.index, e.at);
            b.index = e.index;
            current.set(key, b);
            out.push(b);
        },
    );
    return out.filter((b) => b.nodes > 0).map(({ began: _, ...b }) => b);
}

/** Index 0: a batch whose first node was cordoned before it started; its start gives its number. */
function newBatch(pool: string, kind: StepKind, index: number, began: number): BatchPhase & { began: number } {
    return { pool, kind, index, nodes: 0, seconds: 0, slowestNodeSeconds: 0, began };
}

/**
 * Reads the events once: each node released as a phase, with what `cordoned` returned at its cordon
 * (the batch it belongs to), and each batch's start to `batch`.
 */
function walk<T>(
    events: readonly NodeEvent[],
    released: (p: NodePhase, at: number, tag: T | undefined) => void,
    cordoned: (e: NodeEvent & { type: "cordoned" }) => T | undefined = () => undefined,
    batch: (e: NodeEvent & { type: "batch started" }) => void = () => undefined,
): void {
    const open = new Map<string, { cordoned?: number; running?: number; tag?: T }>();
    for (const e of events) {
        if (e.type === "batch started") {
            batch(e);
            continue;
        }
        const key = `${e.step} ${e.node}`;
        const seen = open.get(key) ?? {};
        open.set(key, seen);
        if (e.type === "cordoned") {
            seen.cordoned = e.at;
            seen.running = undefined;
            seen.tag = cordoned(e);
        } else if (e.type === "kube-proxy running") seen.running ??= e.at;
        else if (e.type === "released" && seen.cordoned !== undefined && seen.running !== undefined) {
            released(
                {
                    node: e.node,
                    pool: e.pool,
                    kind: e.step,
                    restartSeconds: (seen.running - seen.cordoned) / 1000,
                    checksSeconds: (e.at - seen.running) / 1000,
                    totalSeconds: (e.at - seen.cordoned) / 1000,
                },
                e.at,
                seen.tag,
            );
            open.delete(key);
        }
    }
}

/** Batches of one kind, summed. */
export interface BatchFigures {
    count: number;
    /** their time, each from its line to its last release */
    seconds: number;
    /** their floors: each its slowest node's own move */
    floorSeconds: number;
}

/**
 * The floor the up is set against, from its node events: each pool batch's slowest node's own move
 * (cordoned to released: its kube-proxy's restart, start, settling and checks; the batch cannot end
 * sooner), summed, plus each pool's soak. What the pools take beyond it is the rollout's own: its
 * steps' start-up, the writes before a batch's last cordon, the time between batches. The finish's
 * hand-back batches are summed the same way, apart.
 */
export function floorOf(
    events: readonly NodeEvent[],
    pools: readonly { batches: readonly unknown[]; soakSeconds: number }[],
): { floorSeconds: number; batches: Record<"move" | "hand-back", BatchFigures> } {
    const all = batchPhases(events);
    const of = (kind: "move" | "hand-back"): BatchFigures => {
        const bs = all.filter((b) => b.kind === kind);
        return {
            count: bs.length,
            seconds: bs.reduce((t, b) => t + b.seconds, 0),
            floorSeconds: bs.reduce((t, b) => t + b.slowestNodeSeconds, 0),
        };
    };
    const batches = { move: of("move"), "hand-back": of("hand-back") };
    const soak = pools.reduce((t, p) => t + (p.batches.length ? p.soakSeconds : 0), 0);
    return { floorSeconds: batches.move.floorSeconds + soak, batches };
}

/** The phases as a markdown table, a row per node and kind. */
export function nodePhasesTable(phases: readonly NodePhase[]): string {
    const head = [
        "node",
        "pool",
        "kind",
        "restart s (cordon to kube-proxy running)",
        "checks s (to released)",
        "total s",
    ];
    const rows = phases.map((p) => [
        p.node,
        p.pool,
        p.kind,
        p.restartSeconds.toFixed(1),
        p.checksSeconds.toFixed(1),
        p.totalSeconds.toFixed(1),
    ]);
    return markdownTable(head, rows);
}
