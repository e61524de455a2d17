// What `kube-proxy-mode fleet` prints of a fleet (issue #42): the summary table, the event lines,
// the phase lines under the table and the exit code of a phase. Pure: the tests call them
// without Temporal.
import { formatDuration } from "../core/duration.js";
import type { FleetEvent, FleetPhase, FleetStatus } from "../fleet/contract.js";
import { EXIT, table } from "./output.js";

/** The exit code of a fleet's phase: 1 stopped, else 0 (done, or still running for status). */
export function exitCodeOfPhase(phase: FleetPhase): number {
    return phase === "stopped" ? EXIT.failed : EXIT.ok;
}

/**
 * A FleetEvent as one progress line: `[wave/stack] text`; a stack's key (`prod@/path/infra`) is
 * shown by its name where `names` has it (a name no other stack of the fleet has).
 */
export function eventLine(e: FleetEvent, names: ReadonlyMap<string, string> = new Map()): string {
    const stack = e.stack === undefined ? undefined : (names.get(e.stack) ?? e.stack);
    const where = [e.wave, stack].filter((p) => p !== undefined && p !== "").join("/");
    return where ? `[${where}] ${e.text}` : `[fleet] ${e.text}`;
}

/**
 * The printer of a followed fleet: given each status polled, prints the events it has not printed
 * yet, in order (an event is the same event when its time, wave, stack and text are), and a line
 * for those that came and left the status between two reads. A stack is named by its bare name
 * when no other stack of `fleet` (else of the status's list) has it: the memo lists only some
 * stacks while they move.
 */
export function eventPrinter(
    print: (line: string) => void,
    fleet?: readonly { key: string; stack: string }[],
): (status: FleetStatus) => number {
    const seen = new Set<string>();
    /** events the fleet had emitted at the last read (dropped ones included) */
    let total: number | undefined;
    return (status) => {
        const names = shortNames(fleet ?? status.stacks);
        const lines: string[] = [];
        for (const e of status.events) {
            const key = JSON.stringify([e.at, e.wave ?? "", e.stack ?? "", e.text]);
            if (seen.has(key)) continue;
            seen.add(key);
            lines.push(eventLine(e, names));
        }
        const now = (status.eventsDropped ?? 0) + status.events.length;
        const missed = total === undefined ? 0 : now - total - lines.length;
        if (missed > 0) print(`[fleet] ${missed} event(s) came and went between two reads; the web UI has them`);
        total = Math.max(total ?? 0, now);
        for (const l of lines) print(l);
        return lines.length;
    };
}

/** Each stack's key to its bare name, for the names no other stack has. */
function shortNames(stacks: readonly { key: string; stack: string }[]): Map<string, string> {
    const count = new Map<string, number>();
    for (const s of stacks) count.set(s.stack, (count.get(s.stack) ?? 0) + 1);
    return new Map(stacks.filter((s) => count.get(s.stack) === 1).map((s) => [s.key, s.stack]));
}

/** A stack's failure: its type (a StackFailureType) and message; an unclassified one by its message. */
function failureText(f: NonNullable<FleetStatus["stacks"][number]["failure"]>): string {
    return f.type === "Unknown" ? f.message : `${f.type}: ${f.message}`;
}

/** "ipvs (3f2a...) -> nftables (9c1b...)" of a stack, or "-". */
function fromTo(s: FleetStatus["stacks"][number]): string {
    const p = s.outcome ?? s.preview;
    return p?.from && p?.to ? `${p.from} -> ${p.to}` : p?.to ? `-> ${p.to}` : "-";
}

function duration(s: FleetStatus["stacks"][number]): string {
    if (s.outcome) return formatDuration(s.outcome.durationSeconds);
    if (s.startedAt !== undefined && s.endedAt !== undefined)
        return formatDuration(Math.max(0, Math.round((s.endedAt - s.startedAt) / 1000)));
    return "-";
}

function detail(s: FleetStatus["stacks"][number]): string {
    const parts: string[] = [];
    if (s.failure) parts.push(failureText(s.failure));
    else if (s.outcome) parts.push(s.outcome.result);
    else if (s.preview && s.state === "pending")
        parts.push(`previewed${s.preview.moving !== null ? `: ${s.preview.moving} nodes move` : ""}`);
    if (s.attempts > 1) parts.push(`${s.attempts} attempts`);
    return parts.join("; ") || "-";
}

/** The summary table of a fleet's status, one row per stack in wave order. */
export function fleetTable(status: FleetStatus): string {
    return table(
        ["WAVE", "STACK", "DIR", "STATE", "FROM -> TO", "NODES VERIFIED", "DURATION", "DETAIL"],
        status.stacks.map((s) => [
            s.wave,
            s.stack,
            s.dir,
            s.state,
            fromTo(s),
            s.outcome?.nodesVerified ?? "-",
            duration(s),
            detail(s),
        ]),
    );
}

/**
 * The lines under the table: the stacks the table leaves out (a memo's status while stacks move),
 * the phase, and for a stopped fleet its failed stacks and what to do.
 */
export function phaseLines(status: FleetStatus, file?: string): string[] {
    const omitted = status.stacksOmitted
        ? [
              `fleet: ${status.stacksOmitted} more stack(s) not listed (${countsText(status)}): the memo lists the running and failed ones while stacks move; a worker answers with all`,
          ]
        : [];
    return [...omitted, ...phaseOnly(status, file)];
}

/** "3 succeeded, 2 running, 45 pending": the states that have stacks. */
export function countsText(status: FleetStatus): string {
    const order = ["succeeded", "running", "failed", "skipped", "pending"] as const;
    return order
        .filter((st) => (status.counts?.[st] ?? 0) > 0)
        .map((st) => `${status.counts[st]} ${st}`)
        .join(", ");
}

function phaseOnly(status: FleetStatus, file?: string): string[] {
    const f = file ? ` --file ${file}` : "";
    switch (status.phase) {
        case "done":
            return ["fleet: done: every wave succeeded"];
        case "stopped": {
            const failed = status.stacks.filter((s) => s.state === "failed");
            return [
                `fleet: stopped in wave ${status.wave ?? "?"}; later waves are not started`,
                ...failed.map((s) => `  ${s.stack} (${s.key}) failed: ${s.failure ? failureText(s.failure) : "?"}`),
                `fleet: after a fix: kube-proxy-mode fleet retry STACK${f}, or leave it: kube-proxy-mode fleet skip STACK${f}; then kube-proxy-mode fleet up${f}`,
            ];
        }
        case "paused":
            return [`fleet: paused in wave ${status.wave ?? "?"}; kube-proxy-mode fleet resume${f} goes on`];
        case "soaking":
            return [
                `fleet: running: wave ${status.wave ?? "?"} soaking${status.soakUntil ? ` until ${new Date(status.soakUntil).toISOString()}` : ""}`,
            ];
        default:
            return [`fleet: ${status.phase}${status.wave ? ` wave ${status.wave}` : ""}`];
    }
}
