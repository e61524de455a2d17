// The fleet's Temporal workflow (issue #42): the waves of a fleet moved stack by stack, each stack
// an activity (contract.ts). The pure scheduler (nextSteps) decides which stacks may start; this
// file runs its answers: previews a wave before its first stack starts, starts up to maxParallel
// stacks, waits out soaks on workflow timers, stops at a failure and waits for a human's signal
// (retry, skip, pause, resume), and publishes its status by query and memo.
//
// Workflow code: deterministic, loaded in Temporal's sandbox. It imports only @temporalio/workflow,
// the scheduler (which imports nothing) and the contract (types and constants). Date.now() here is
// the workflow's time, the same on every replay.
import {
    ActivityFailure,
    ApplicationFailure,
    condition,
    defineQuery,
    defineSignal,
    proxyActivities,
    setHandler,
    TimeoutFailure,
    upsertMemo,
} from "@temporalio/workflow";
import { nextSteps, type FleetStack, type FleetStep, type StackState } from "../core/fleetSchedule.js";
import {
    FLEET_SIGNALS,
    FLEET_STATUS_MEMO,
    FLEET_STATUS_QUERY,
    STACK_FAILURES,
    type FleetEvent,
    type FleetInput,
    type FleetPhase,
    type FleetStackStatus,
    type FleetStatus,
    type StackActivities,
    type StackFailureType,
} from "./contract.js";

/** Events the query returns; older ones are counted in eventsDropped. */
const QUERY_EVENTS = 200;
/** Events the memo keeps: the memo is written into the history at each change, so it stays small. */
const MEMO_EVENTS = 50;
/** A preview does not heartbeat; one whose worker was lost is retried after this long. */
const PREVIEW_TIMEOUT = "30 minutes";
/** A stack's `pulumi up` may move many nodes; the heartbeat, not this, notices a lost worker. */
const UP_TIMEOUT = "24 hours";

export const pauseSignal = defineSignal(FLEET_SIGNALS.pause);
export const resumeSignal = defineSignal(FLEET_SIGNALS.resume);
/** arg: a stack's key `<stack>@<dir>`, or its bare name when no other stack of the fleet has it */
export const retrySignal = defineSignal<[string]>(FLEET_SIGNALS.retry);
export const skipSignal = defineSignal<[string]>(FLEET_SIGNALS.skip);
export const statusQuery = defineQuery<FleetStatus>(FLEET_STATUS_QUERY);

const STACK_FAILURE_TYPES: readonly string[] = Object.values(STACK_FAILURES);

/** An activity's failure as the status shows it, and whether it ran out of attempts. */
function failureOf(err: unknown): { type: StackFailureType | "Unknown"; message: string; exhausted: boolean } {
    const exhausted = err instanceof ActivityFailure && err.retryState === "MAXIMUM_ATTEMPTS_REACHED";
    const cause = err instanceof ActivityFailure && err.cause ? err.cause : err;
    if (cause instanceof ApplicationFailure) {
        const known = cause.type && STACK_FAILURE_TYPES.includes(cause.type);
        if (known) return { type: cause.type as StackFailureType, message: cause.message, exhausted };
        return { type: "Unknown", message: `${cause.type ?? "Error"}: ${cause.message}`, exhausted };
    }
    if (cause instanceof TimeoutFailure) {
        return { type: "Unknown", message: `timed out (${cause.timeoutType}): ${cause.message}`, exhausted };
    }
    return { type: "Unknown", message: cause instanceof Error ? cause.message : String(cause), exhausted };
}

/** Moves the fleet's waves in order; returns when every wave succeeded (or its stacks were skipped). */
export async function fleetWorkflow(input: FleetInput): Promise<FleetStatus> {
    const { fleet, target, file } = input;
    const heartbeatSeconds = input.timing?.heartbeatSeconds ?? 60;
    const maxAttempts = input.timing?.maxAttempts ?? 5;
    const retry = {
        maximumAttempts: maxAttempts,
        initialInterval: (input.timing?.retryInitialSeconds ?? 1) * 1000,
        nonRetryableErrorTypes: [...STACK_FAILURE_TYPES],
    };
    const { previewStack } = proxyActivities<StackActivities>({ startToCloseTimeout: PREVIEW_TIMEOUT, retry });
    const { upStack } = proxyActivities<StackActivities>({
        startToCloseTimeout: UP_TIMEOUT,
        heartbeatTimeout: heartbeatSeconds * 1000,
        retry,
    });

    const stacks: FleetStackStatus[] = fleet.waves.flatMap((w) =>
        w.stacks.map((s) => ({
            key: s.key,
            wave: w.name,
            dir: s.dir,
            stack: s.stack,
            state: "pending",
            attempts: 0,
        })),
    );
    const byKey = new Map(stacks.map((s) => [s.key, s]));
    /** stacks whose preview passed since they last became pending; only these may start */
    const previewed = new Set<string>();
    const soakUntil: Record<string, number> = {};
    const events: FleetEvent[] = [];
    let eventsDropped = 0;
    let paused = false;
    let previewing = false;
    let step: FleetStep | undefined;
    /** bumped at each state change; the main loop waits for it to move */
    let version = 0;
    let memoJson = "";

    const event = (text: string, stack?: FleetStackStatus | string) => {
        const key = typeof stack === "string" ? undefined : stack?.key;
        const wave = typeof stack === "string" ? stack : stack?.wave;
        events.push({ at: Date.now(), ...(wave ? { wave } : {}), ...(key ? { stack: key } : {}), text });
        if (events.length > QUERY_EVENTS) eventsDropped += events.splice(0, events.length - QUERY_EVENTS).length;
        version++;
    };

    const phase = (): FleetPhase => {
        if (!step) return "previewing";
        if (step.kind === "done") return "done";
        if (step.kind === "stopped") return "stopped";
        if (paused) return "paused";
        if (step.kind === "soak") return "soaking";
        return previewing ? "previewing" : "running";
    };

    const status = (eventsKept = QUERY_EVENTS): FleetStatus => {
        const kept = events.slice(-eventsKept);
        const dropped = eventsDropped + events.length - kept.length;
        return {
            phase: phase(),
            paused,
            wave: step ? (step.kind === "done" ? null : step.wave) : (fleet.waves[0]?.name ?? null),
            ...(step?.kind === "soak" ? { soakUntil: step.until } : {}),
            ...(target ? { target } : {}),
            file,
            stacks: stacks.map((s) => ({ ...s })),
            events: kept,
            ...(dropped > 0 ? { eventsDropped: dropped } : {}),
        };
    };

    /** Writes the status into the memo when it changed since the last write. */
    const publish = () => {
        const memo = status(MEMO_EVENTS);
        const json = JSON.stringify(memo);
        if (json === memoJson) return;
        memoJson = json;
        upsertMemo({ [FLEET_STATUS_MEMO]: memo });
    };

    const setState = (s: FleetStackStatus, state: StackState) => {
        s.state = state;
        version++;
    };

    /** The stack a signal names: its key, or its bare name when unique; else why not (an event). */
    const named = (signal: string, name: unknown): FleetStackStatus | undefined => {
        if (typeof name !== "string" || name.trim() === "") {
            event(`signal ${signal} ignored: it names no stack (give <stack>@<dir> or a stack name)`);
            return undefined;
        }
        const exact = byKey.get(name);
        if (exact) return exact;
        const same = stacks.filter((s) => s.stack === name);
        if (same.length === 1) return same[0];
        if (same.length === 0) {
            event(`signal ${signal} ignored: no stack ${JSON.stringify(name)} in the fleet`);
        } else {
            event(
                `signal ${signal} ignored: ${JSON.stringify(name)} is ambiguous (${same.map((s) => s.key).join(", ")}); give <stack>@<dir>`,
            );
        }
        return undefined;
    };

    setHandler(statusQuery, () => status());
    setHandler(pauseSignal, () => {
        event(paused ? "signal pause: already paused" : "paused by signal: no new stack starts; running ones finish");
        paused = true;
    });
    setHandler(resumeSignal, () => {
        event(paused ? "resumed by signal" : "signal resume: not paused");
        paused = false;
    });
    setHandler(retrySignal, (name: string) => {
        const s = named(FLEET_SIGNALS.retry, name);
        if (!s) return;
        if (s.state !== "failed") {
            event(`signal retry ignored: the stack is ${s.state}, not failed`, s);
            return;
        }
        previewed.delete(s.key);
        delete s.failure;
        delete s.outcome;
        delete s.preview;
        setState(s, "pending");
        event("retry by signal: pending again; previewed again before it runs", s);
    });
    setHandler(skipSignal, (name: string) => {
        const s = named(FLEET_SIGNALS.skip, name);
        if (!s) return;
        if (s.state !== "failed" && s.state !== "pending") {
            event(`signal skip ignored: the stack is ${s.state}; only a failed or pending stack can be skipped`, s);
            return;
        }
        const was = s.state;
        s.failure = { type: s.failure?.type ?? "Unknown", message: `skipped by signal (was ${was})` };
        setState(s, "skipped");
        event(`skipped by signal (was ${was}); its wave goes on without it`, s);
    });

    /** Previews the stacks; a refusal marks the stack failed, which stops the fleet. */
    const preview = async (wave: string, keys: FleetStack[]) => {
        previewing = true;
        event(`wave ${wave}: previewing ${keys.length} stack(s) before any of them starts`, wave);
        publish();
        await Promise.all(
            keys.map(async (fs) => {
                const s = byKey.get(fs.key)!;
                try {
                    const p = await previewStack({ stack: fs, ...(target ? { target } : {}) });
                    if (s.state !== "pending") return;
                    s.preview = p;
                    previewed.add(fs.key);
                    const moving = p.moving === null ? "" : `, ${p.moving} node(s) to move`;
                    event(`previewed: ${p.from ?? "?"} -> ${p.to ?? "?"}${moving}`, s);
                } catch (err) {
                    const f = failureOf(err);
                    if (s.state !== "pending") return;
                    s.failure = { type: f.type, message: f.message };
                    s.endedAt = Date.now();
                    setState(s, "failed");
                    event(`preview refused (${f.type}): ${f.message}`, s);
                }
                publish();
            }),
        );
        previewing = false;
        version++;
    };

    /** Runs one stack's `pulumi up`; never rejects. */
    const up = async (fs: FleetStack) => {
        const s = byKey.get(fs.key)!;
        s.attempts += 1;
        s.startedAt = Date.now();
        delete s.endedAt;
        setState(s, "running");
        event(`started (wave ${s.wave})`, s);
        publish();
        try {
            const o = await upStack({ stack: fs, ...(target ? { target } : {}) });
            if (o.attempt && o.attempt > 1) s.attempts += o.attempt - 1;
            s.outcome = o;
            s.endedAt = Date.now();
            setState(s, "succeeded");
            const nodes = o.nodesVerified === null ? "" : `, nodes verified ${o.nodesVerified}`;
            event(`succeeded: ${o.result}, ${o.from ?? "?"} -> ${o.to ?? "?"}${nodes}`, s);
        } catch (err) {
            const f = failureOf(err);
            if (f.exhausted) s.attempts += maxAttempts - 1;
            s.failure = { type: f.type, message: f.message };
            s.endedAt = Date.now();
            setState(s, "failed");
            event(`failed (${f.type}): ${f.message}`, s);
        }
        publish();
    };

    event(`fleet of ${stacks.length} stack(s) in ${fleet.waves.length} wave(s)${target ? ` to ${target}` : ""}`);
    let lastPhase: FleetPhase | undefined;
    for (;;) {
        const seen = version;
        const states: Record<string, StackState> = {};
        for (const s of stacks) states[s.key] = s.state;
        step = nextSteps(fleet, { stacks: states, soakUntil, now: Date.now() });
        const now = phase();
        if (now !== lastPhase && step.kind === "stopped") {
            event(
                `stopped: wave ${step.wave}: ${step.failed.map((s) => s.key).join(", ")} failed; waiting for fleet retry or skip`,
                step.wave,
            );
        }
        lastPhase = now;
        if (step.kind === "done") {
            const count = (st: StackState) => stacks.filter((s) => s.state === st).length;
            event(`done: ${count("succeeded")} succeeded, ${count("skipped")} skipped`);
            publish();
            return status();
        }
        if (step.kind === "soak") {
            if (soakUntil[step.wave] === undefined) {
                soakUntil[step.wave] = step.until;
                event(`wave ${step.wave}: succeeded; soaking until ${new Date(step.until).toISOString()}`, step.wave);
            }
            publish();
            const until = step.until;
            await condition(() => version !== seen, Math.max(1, until - Date.now()));
            continue;
        }
        if (step.kind === "run" && !paused && step.start.length > 0) {
            const wave = step.wave;
            const unpreviewed = (fleet.waves.find((w) => w.name === wave)?.stacks ?? []).filter(
                (fs) => byKey.get(fs.key)!.state === "pending" && !previewed.has(fs.key),
            );
            if (unpreviewed.length > 0) {
                await preview(wave, unpreviewed);
                continue;
            }
            for (const fs of step.start) void up(fs);
            continue;
        }
        // stopped, paused, or the wave at maxParallel: wait for a signal or a stack to end
        publish();
        await condition(() => version !== seen);
    }
}
