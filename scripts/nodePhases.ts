// Where a node's time goes in `pulumi up`, from the rollout steps' own log lines (pure: no I/O).
// The bench timestamps each line as the engine hands it over (the command provider streams a step's
// lines as they come); a node's move reads, in order:
//   pool P node N: cordoned                      the move's memory and the cordon written
//   pool P node N: kube-proxy X running on ...   the new kube-proxy started and settled
//   pool P node N: ok <check>: ...               each built-in check (and hook)
//   pool P node N: verified | moved ...          released: uncordoned, the memory cleared
// and the finish's hand-back the same, ending "handed back to the installer's DaemonSet, checked".

import { markdownTable } from "./markdownTable.js";

/** A step's log line and when the bench saw it (ms, any clock). */
export interface StepLine {
    t: number;
    /** "pool-<name>" or "finish": which step printed it */
    step: string;
    text: string;
}

/** One node's move or hand-back, in seconds. */
export interface NodePhase {
    node: string;
    pool: string;
    /** "move" (a pool step) or "hand-back" (the finish) */
    kind: "move" | "hand-back";
    /** cordoned to kube-proxy running: the restart, kube-proxy's start and its settling */
    restartSeconds: number;
    /** kube-proxy running to released: the checks, the hooks and the release */
    checksSeconds: number;
    /** cordoned to released */
    totalSeconds: number;
}

const NODE_LINE = /pool (\S+) node (\S+): (.*)$/;
const RELEASED = /^(verified|moved\b|handed back\b)/;

/** A line of the finish's step is a hand-back's; a pool step's, a move's. */
const kindOf = (step: string): "move" | "hand-back" => (step === "finish" ? "hand-back" : "move");

/** Each node's phases, in the order the nodes were released; a node whose lines are incomplete (a failure) is left out. */
export function nodePhases(lines: readonly StepLine[]): NodePhase[] {
    const out: NodePhase[] = [];
    walk(lines, (p) => out.push(p));
    return out;
}

/** One batch of a pool's step or of the finish's hand-back, in seconds. */
export interface BatchPhase {
    /** "pool-<name>" or "finish": which step ran it */
    step: string;
    pool: string;
    kind: "move" | "hand-back";
    /** its number in its pool, as printed (1-based) */
    index: number;
    /** how many of its nodes were released */
    nodes: number;
    /** its "batch i/n" line to its last node released */
    seconds: number;
    /**
     * its slowest node's own move, cordoned to released: that node's kube-proxy restart (the cordon
     * carries its placement, which triggers it), start, settling and checks. The batch cannot end
     * sooner; the rest of the batch is the rollout's own time (its writes before that cordon).
     */
    slowestNodeSeconds: number;
}

const BATCH_LINE = /^pool (\S+): batch (\d+)\/\d+: /;

/**
 * Each batch that released at least one node, in the order the batches began, timed from its line
 * (or its first cordon, when that came first). A node belongs to the batch its step had announced
 * last for its pool when the node was cordoned (a step starts a batch only once the one before
 * released all its nodes, but may print the new batch's line before the last release of the old one).
 */
export function batchPhases(lines: readonly StepLine[]): BatchPhase[] {
    type Open = BatchPhase & { began: number };
    const out: Open[] = [];
    const current = new Map<string, Open>();
    walk<Open | undefined>(
        lines,
        (p, line, b) => {
            if (!b) return;
            b.nodes += 1;
            b.seconds = Math.max(b.seconds, (line.t - b.began) / 1000);
            b.slowestNodeSeconds = Math.max(b.slowestNodeSeconds, p.totalSeconds);
        },
        (line, pool) => {
            const key = `${line.step} ${pool}`;
            // the first node of a rollout is cordoned before the rollout's DaemonSet is set up,
            // so before its batch's line: it belongs to the batch announced next
            if (!current.has(key)) current.set(key, newBatch(line, pool, 0));
            return current.get(key);
        },
        (text, line) => {
            const m = BATCH_LINE.exec(text);
            if (!m) return;
            const key = `${line.step} ${m[1]}`;
            const early = current.get(key);
            const b = early?.index === 0 ? early : newBatch(line, m[1], Number(m[2]));
            b.index = Number(m[2]);
            current.set(key, b);
            out.push(b);
        },
    );
    return out.filter((b) => b.nodes > 0).map(({ began: _, ...b }) => b);
}

/** Index 0: a batch whose first node was cordoned before its line; the line gives its number. */
function newBatch(line: StepLine, pool: string, index: number): BatchPhase & { began: number } {
    return {
        step: line.step,
        pool,
        kind: kindOf(line.step),
        index,
        nodes: 0,
        seconds: 0,
        slowestNodeSeconds: 0,
        began: line.t,
    };
}

/**
 * Reads the lines once: each node released as a phase, with what `cordoned` returned at its cordon
 * (the batch it belongs to), and every other line (trimmed, without the runner's clock) to `other`.
 */
function walk<T>(
    lines: readonly StepLine[],
    released: (p: NodePhase, line: StepLine, tag: T | undefined) => void,
    cordoned: (line: StepLine, pool: string) => T | undefined = () => undefined,
    other: (text: string, line: StepLine) => void = () => undefined,
): void {
    const open = new Map<string, { cordoned?: number; running?: number; tag?: T }>();
    for (const line of lines) {
        for (const text of line.text.split("\n")) {
            const m = NODE_LINE.exec(text.trim());
            if (!m) {
                other(text.trim().replace(/^\[[0-9:]+\] /, ""), line);
                continue;
            }
            const [, pool, node, what] = m;
            const key = `${line.step} ${node}`;
            const seen = open.get(key) ?? {};
            open.set(key, seen);
            if (/^(cordoned|was already cordoned)/.test(what)) {
                seen.cordoned = line.t;
                seen.running = undefined;
                seen.tag = cordoned(line, pool);
            } else if (/^kube-proxy \S* ?running on /.test(what)) seen.running ??= line.t;
            else if (RELEASED.test(what) && seen.cordoned !== undefined && seen.running !== undefined) {
                released(
                    {
                        node,
                        pool,
                        kind: kindOf(line.step),
                        restartSeconds: (seen.running - seen.cordoned) / 1000,
                        checksSeconds: (line.t - seen.running) / 1000,
                        totalSeconds: (line.t - seen.cordoned) / 1000,
                    },
                    line,
                    seen.tag,
                );
                open.delete(key);
            }
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
 * The floor the up is set against, from its steps' lines: each pool batch's slowest node's own move
 * (cordoned to released: its kube-proxy's restart, start, settling and checks; the batch cannot end
 * sooner), summed, plus each pool's soak. What the pools take beyond it is the rollout's own: its
 * steps' start-up, the writes before a batch's last cordon, the time between batches. The finish's
 * hand-back batches are summed the same way, apart.
 */
export function floorOf(
    lines: readonly StepLine[],
    pools: readonly { batches: readonly unknown[]; soakSeconds: number }[],
): { floorSeconds: number; batches: Record<"move" | "hand-back", BatchFigures> } {
    const all = batchPhases(lines);
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
