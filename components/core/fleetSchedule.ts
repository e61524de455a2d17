// The fleet's scheduler (issue #42): which stacks may start now, from the stacks' states and the
// clock. Imports nothing, so the Temporal workflow's sandbox can load it as it is.

/** A stack of a parsed fleet: `dir` resolved against the fleet file's folder; `key` names it in progress. */
export interface FleetStack {
    dir: string;
    stack: string;
    /** `<stack>@<dir>`: the stack's one name in {@link FleetProgress} and in the workflow's history */
    key: string;
}

export interface FleetWave {
    name: string;
    maxParallel: number;
    soakSeconds: number;
    stacks: FleetStack[];
}

export interface Fleet {
    waves: FleetWave[];
}

export type StackState = "pending" | "running" | "succeeded" | "failed" | "skipped";

/** What the workflow knows: each stack's state (by key; absent = pending), soaks begun, and the clock. */
export interface FleetProgress {
    stacks: Readonly<Record<string, StackState>>;
    /** when each wave's soak ends (epoch ms), as recorded from an earlier "soak" step */
    soakUntil?: Readonly<Record<string, number>>;
    /** epoch ms */
    now: number;
}

/**
 * The scheduler's answer:
 * - `run`: the current wave; `start` may start now (empty when the wave is at maxParallel);
 * - `soak`: the wave succeeded; wait until `until` (record it as the wave's soakUntil, so a
 *   replay waits for the same end);
 * - `stopped`: a stack failed; nothing new starts (`running` are left to finish), later waves never;
 * - `done`: every wave succeeded (or its stacks were skipped).
 */
export type FleetStep =
    | { kind: "run"; wave: string; start: FleetStack[]; running: FleetStack[] }
    | { kind: "soak"; wave: string; until: number }
    | { kind: "stopped"; wave: string; failed: FleetStack[]; running: FleetStack[] }
    | { kind: "done" };

/** The pure scheduler: which stacks may start now, or why none may. */
export function nextSteps(fleet: Fleet, progress: FleetProgress): FleetStep {
    const state = (s: FleetStack): StackState => progress.stacks[s.key] ?? "pending";
    for (const [w, wave] of fleet.waves.entries()) {
        const inState = (st: StackState) => wave.stacks.filter((s) => state(s) === st);
        const running = inState("running");
        const failed = inState("failed");
        if (failed.length > 0) return { kind: "stopped", wave: wave.name, failed, running };
        const pending = inState("pending");
        if (pending.length > 0 || running.length > 0) {
            const start = pending.slice(0, Math.max(0, wave.maxParallel - running.length));
            return { kind: "run", wave: wave.name, start, running };
        }
        const last = w === fleet.waves.length - 1;
        if (last || wave.soakSeconds === 0 || inState("succeeded").length === 0) continue;
        const until = progress.soakUntil?.[wave.name] ?? progress.now + wave.soakSeconds * 1000;
        if (progress.now < until) return { kind: "soak", wave: wave.name, until };
    }
    return { kind: "done" };
}
