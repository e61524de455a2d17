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
 * yet, in order (an event is the same event when its time, wave, stack and text are).
 */
export function eventPrinter(print: (line: string) => void): (status: FleetStatus) => number {
    const seen = new Set<string>();
    return (status) => {
        const count = new Map<string, number>();
        for (const s of status.stacks) count.set(s.stack, (count.get(s.stack) ?? 0) + 1);
        const names = new Map(status.stacks.filter((s) => count.get(s.stack) === 1).map((s) => [s.key, s.stack]));
        let printed = 0;
        for (const e of status.events) {
            const key = JSON.stringify([e.at, e.wave ?? "", e.stack ?? "", e.text]);
            if (seen.has(key)) continue;
            seen.add(key);
            print(eventLine(e, names));
            printed++;
        }
        return printed;
    };
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

/** The line under the table: the phase, and for a stopped fleet its failed stacks and what to do. */
export function phaseLines(status: FleetStatus, file?: string): string[] {
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
