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

/** Each node's phases, in the order the nodes were released; a node whose lines are incomplete (a failure) is left out. */
export function nodePhases(lines: readonly StepLine[]): NodePhase[] {
    const open = new Map<string, { cordoned?: number; running?: number }>();
    const out: NodePhase[] = [];
    for (const line of lines) {
        for (const text of line.text.split("\n")) {
            const m = NODE_LINE.exec(text.trim());
            if (!m) continue;
            const [, pool, node, what] = m;
            const key = `${line.step} ${node}`;
            const seen = open.get(key) ?? {};
            open.set(key, seen);
            if (/^(cordoned|was already cordoned)/.test(what)) {
                seen.cordoned = line.t;
                seen.running = undefined;
            } else if (/^kube-proxy \S* ?running on /.test(what)) seen.running ??= line.t;
            else if (RELEASED.test(what) && seen.cordoned !== undefined && seen.running !== undefined) {
                out.push({
                    node,
                    pool,
                    kind: line.step === "finish" ? "hand-back" : "move",
                    restartSeconds: (seen.running - seen.cordoned) / 1000,
                    checksSeconds: (line.t - seen.running) / 1000,
                    totalSeconds: (line.t - seen.cordoned) / 1000,
                });
                open.delete(key);
            }
        }
    }
    return out;
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
