// The fleet's Temporal workflow (issue #42): the waves of a fleet moved stack by stack, each stack
// an activity (contract.ts). The pure scheduler (nextSteps) decides which stacks may start; this
// file runs its answers: previews a wave before its first stack starts, starts up to maxParallel
// stacks, waits out soaks on workflow timers, stops at a failure and waits for a human's signal
// (retry, skip, pause, resume), and publishes its status by query and memo. When its history
// grows long it continues as a new run, carrying its state, so a fleet of hundreds of stacks stays
// inside Temporal's history limits.
//
// Workflow code: deterministic, loaded in Temporal's sandbox. It imports only @temporalio/workflow,
// the scheduler (which imports nothing), the contract (types and constants) and stackFailure.ts. Date.now() here is
// the workflow's time, the same on every replay.
import {
    condition,
    defineQuery,
    defineSignal,
    makeContinueAsNewFunc,
    proxyActivities,
    setHandler,
    upsertMemo,
    workflowInfo,
} from "@temporalio/workflow";
import { nextSteps, type FleetStack, type FleetStep, type StackState } from "../core/fleetSchedule.js";
import {
    FLEET_SIGNALS,
    FLEET_STATUS_MEMO,
    FLEET_STATUS_QUERY,
    type FleetEvent,
    type FleetEventKind,
    type FleetInput,
    type FleetPhase,
    type FleetStackStatus,
    type FleetStatus,
    type StackActivities,
} from "./contract.js";
import { failureOf, STACK_FAILURE_TYPES } from "./stackFailure.js";

/** Events the query returns; older ones are counted in eventsDropped. */
const QUERY_EVENTS = 200;
/** Events the memo keeps: the memo is written into the history at each change, so it stays small. */
const MEMO_EVENTS = 10;
/**
 * Temporal warns past 10,240 history events (or 10 MB) and ends a run at 51,200 (or 50 MB). A
 * run continues as a new one past QUIET_EVENTS when no stack is running (free: between waves,
 * stopped, paused); past DRAIN_EVENTS or DRAIN_BYTES it starts no stack until the running end.
 */
const QUIET_EVENTS = 1_000;
const DRAIN_EVENTS = 4_000;
const DRAIN_BYTES = 6 * 1024 * 1024;
/**
 * A stack whose gate waits for its upstream's soak is previewed again this long after the time
 * the gate named, and at least GATE_MIN_WAIT_MS after it refused: the gate reads the worker's
 * clock, the timer the server's.
 */
const GATE_SLACK_MS = 5_000;
const GATE_MIN_WAIT_MS = 10_000;
/** A preview's bound; the heartbeat, not this, notices a lost worker. */
const PREVIEW_TIMEOUT = "30 minutes";
/** A stack's `pulumi up` may move many nodes; the heartbeat, not this, notices a lost worker. */
const UP_TIMEOUT = "24 hours";

export const pauseSignal = defineSignal(FLEET_SIGNALS.pause);
export const resumeSignal = defineSignal(FLEET_SIGNALS.resume);
/** arg: a stack's key `<stack>@<dir>`, or its bare name when no other stack of the fleet has it */
export const retrySignal = defineSignal<[string]>(FLEET_SIGNALS.retry);
export const skipSignal = defineSignal<[string]>(FLEET_SIGNALS.skip);
export const statusQuery = defineQuery<FleetStatus>(FLEET_STATUS_QUERY);

/** Moves the fleet's waves in order; returns when every wave succeeded (or its stacks were skipped). */
export async function fleetWorkflow(input: FleetInput): Promise<FleetStatus> {
    const { fleet, target, file, carried } = input;
    const heartbeatSeconds = input.timing?.heartbeatSeconds ?? 60;
    const maxAttempts = input.timing?.maxAttempts ?? 5;
    const quietEvents = input.timing?.historyQuietEvents ?? QUIET_EVENTS;
    const drainEvents = input.timing?.historyDrainEvents ?? DRAIN_EVENTS;
    const retry = {
        maximumAttempts: maxAttempts,
        initialInterval: (input.timing?.retryInitialSeconds ?? 1) * 1000,
        nonRetryableErrorTypes: [...STACK_FAILURE_TYPES],
    };
    const { previewStack } = proxyActivities<StackActivities>({
        startToCloseTimeout: PREVIEW_TIMEOUT,
        heartbeatTimeout: heartbeatSeconds * 1000,
        retry,
    });
    const { upStack } = proxyActivities<StackActivities>({
        startToCloseTimeout: UP_TIMEOUT,
        heartbeatTimeout: heartbeatSeconds * 1000,
        retry,
    });

    const stacks: FleetStackStatus[] =
        carried?.stacks ??
        fleet.waves.flatMap((w) =>
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
    const previewed = new Set<string>(carried?.previewed ?? []);
    const soakUntil: Record<string, number> = { ...carried?.soakUntil };
    /** stacks whose gate waits for their upstream's soak: when each is previewed again (epoch ms) */
    const gateUntil: Record<string, number> = { ...carried?.gateUntil };
    /** set while every unpreviewed stack of the wave waits for its gate: the first one's time */
    let gateWait: number | undefined;
    const events: FleetEvent[] = [...(carried?.events ?? [])];
    let eventsDropped = carried?.eventsDropped ?? 0;
    const runs = (carried?.runs ?? 0) + 1;
    let paused = carried?.paused ?? false;
    let previewing = false;
    /** the history is long: no new stack starts; the run continues when the running ones end */
    let draining = false;
    let step: FleetStep | undefined;
    /** bumped at each state change; the main loop waits for it to move */
    let version = 0;
    let memoJson = "";

    const event = (kind: FleetEventKind, text: string, stack?: FleetStackStatus | string, until?: number) => {
        const key = typeof stack === "string" ? undefined : stack?.key;
        const wave = typeof stack === "string" ? stack : stack?.wave;
        events.push({
            at: Date.now(),
            kind,
            ...(wave ? { wave } : {}),
            ...(key ? { stack: key } : {}),
            ...(until !== undefined ? { until } : {}),
            text,
        });
        if (events.length > QUERY_EVENTS) eventsDropped += events.splice(0, events.length - QUERY_EVENTS).length;
        version++;
    };

    const phase = (): FleetPhase => {
        if (!step) return "previewing";
        if (step.kind === "done") return "done";
        if (step.kind === "stopped") return "stopped";
        if (paused) return "paused";
        if (step.kind === "soak" || gateWait !== undefined) return "soaking";
        return previewing ? "previewing" : "running";
    };
    const running = () => stacks.some((s) => s.state === "running");
    const counts = (): Record<StackState, number> => {
        const n: Record<StackState, number> = { pending: 0, running: 0, succeeded: 0, failed: 0, skipped: 0 };
        for (const s of stacks) n[s.state]++;
        return n;
    };

    /** The status; `stacksOf` narrows its stacks list (the memo's), `eventsKept` its events. */
    const status = (eventsKept = QUERY_EVENTS, stacksOf?: (s: FleetStackStatus) => boolean): FleetStatus => {
        const kept = events.slice(-eventsKept);
        const dropped = eventsDropped + events.length - kept.length;
        const listed = stacksOf ? stacks.filter(stacksOf) : stacks;
        return {
            phase: phase(),
            paused,
            wave: step ? (step.kind === "done" ? null : step.wave) : (fleet.waves[0]?.name ?? null),
            ...(step?.kind === "soak"
                ? { soakUntil: step.until }
                : gateWait !== undefined
                  ? { soakUntil: gateWait }
                  : {}),
            ...(target ? { target } : {}),
            file,
            stacks: listed.map((s) => ({ ...s })),
            ...(listed.length < stacks.length ? { stacksOmitted: stacks.length - listed.length } : {}),
            counts: counts(),
            events: kept,
            ...(dropped > 0 ? { eventsDropped: dropped } : {}),
            runs,
        };
    };

    /**
     * The memo's status: every stack when the fleet waits for a human or is done with none
     * running (a rare write), else only the running and failed ones (a write at each change).
     */
    const memoView = (): FleetStatus => {
        const resting = ["stopped", "paused", "done"].includes(phase()) && !running();
        return status(MEMO_EVENTS, resting ? undefined : (s) => s.state === "running" || s.state === "failed");
    };

    /** Writes the status into the memo when it changed since the last write. */
    const publish = () => {
        const memo = memoView();
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
            event("signal", `signal ${signal} ignored: it names no stack (give <stack>@<dir> or a stack name)`);
            return undefined;
        }
        const exact = byKey.get(name);
        if (exact) return exact;
        const same = stacks.filter((s) => s.stack === name);
        if (same.length === 1) return same[0];
        if (same.length === 0) {
            event("signal", `signal ${signal} ignored: no stack ${JSON.stringify(name)} in the fleet`);
        } else {
            event(
                "signal",
                `signal ${signal} ignored: ${JSON.stringify(name)} is ambiguous (${same.map((s) => s.key).join(", ")}); give <stack>@<dir>`,
            );
        }
        return undefined;
    };

    setHandler(statusQuery, () => status());
    setHandler(pauseSignal, () => {
        event(
            "signal",
            paused ? "signal pause: already paused" : "paused by signal: no new stack starts; running ones finish",
        );
        paused = true;
    });
    setHandler(resumeSignal, () => {
        event("signal", paused ? "resumed by signal" : "signal resume: not paused");
        paused = false;
    });
    setHandler(retrySignal, (name: string) => {
        const s = named(FLEET_SIGNALS.retry, name);
        if (!s) return;
        if (s.state !== "failed") {
            event("signal", `signal retry ignored: the stack is ${s.state}, not failed`, s);
            return;
        }
        previewed.delete(s.key);
        delete s.failure;
        delete s.outcome;
        delete s.preview;
        setState(s, "pending");
        event("signal", "retry by signal: pending again; previewed again before it runs", s);
    });
    setHandler(skipSignal, (name: string) => {
        const s = named(FLEET_SIGNALS.skip, name);
        if (!s) return;
        if (s.state !== "failed" && s.state !== "pending") {
            event(
                "signal",
                `signal skip ignored: the stack is ${s.state}; only a failed or pending stack can be skipped`,
                s,
            );
            return;
        }
        const was = s.state;
        s.failure = { type: s.failure?.type ?? "Unknown", message: `skipped by signal (was ${was})` };
        setState(s, "skipped");
        event("signal", `skipped by signal (was ${was}); its wave goes on without it`, s);
    });

    /** Previews the stacks; a refusal marks the stack failed, which stops the fleet. */
    const preview = async (wave: string, keys: FleetStack[]) => {
        previewing = true;
        event("previewing", `wave ${wave}: previewing ${keys.length} stack(s) before any of them starts`, wave);
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
                    event("previewed", `previewed: ${p.from ?? "?"} -> ${p.to ?? "?"}${moving}`, s);
                } catch (err) {
                    const f = failureOf(err);
                    if (s.state !== "pending") return;
                    if (f.retryAfter !== undefined) {
                        const at = Math.max(f.retryAfter + GATE_SLACK_MS, Date.now() + GATE_MIN_WAIT_MS);
                        gateUntil[fs.key] = at;
                        event(
                            "gate",
                            `its promotion gate waits for the upstream's soak; previewed again at ${new Date(at).toISOString()} (${f.message})`,
                            s,
                            at,
                        );
                        publish();
                        return;
                    }
                    s.failure = { type: f.type, message: f.message };
                    s.endedAt = Date.now();
                    setState(s, "failed");
                    event("refused", `preview refused (${f.type}): ${f.message}`, s);
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
        event("started", `started (wave ${s.wave})`, s);
        publish();
        try {
            const o = await upStack({ stack: fs, ...(target ? { target } : {}) });
            if (o.attempt && o.attempt > 1) s.attempts += o.attempt - 1;
            s.outcome = o;
            s.endedAt = Date.now();
            setState(s, "succeeded");
            const nodes = o.nodesVerified === null ? "" : `, nodes verified ${o.nodesVerified}`;
            event("succeeded", `succeeded: ${o.result}, ${o.from ?? "?"} -> ${o.to ?? "?"}${nodes}`, s);
        } catch (err) {
            const f = failureOf(err);
            if (f.exhausted) s.attempts += maxAttempts - 1;
            s.failure = { type: f.type, message: f.message };
            s.endedAt = Date.now();
            setState(s, "failed");
            event("failed", `failed (${f.type}): ${f.message}`, s);
        }
        publish();
    };

    /** This run's history, and whether it should continue as a new run now (`quiet`: none running). */
    const historyLong = (quiet: boolean): string | undefined => {
        const info = workflowInfo();
        const figures = `${info.historyLength} events, ${(info.historySize / 1024 / 1024).toFixed(1)} MB`;
        const long =
            info.continueAsNewSuggested || info.historyLength >= drainEvents || info.historySize >= DRAIN_BYTES;
        return long || (quiet && info.historyLength >= quietEvents) ? figures : undefined;
    };

    if (!carried) {
        event(
            "fleet",
            `fleet of ${stacks.length} stack(s) in ${fleet.waves.length} wave(s)${target ? ` to ${target}` : ""}`,
        );
    }
    let lastPhase: FleetPhase | undefined;
    for (;;) {
        const seen = version;
        const states: Record<string, StackState> = {};
        for (const s of stacks) states[s.key] = s.state;
        step = nextSteps(fleet, { stacks: states, soakUntil, now: Date.now() });
        const now = phase();
        if (now !== lastPhase && step.kind === "stopped") {
            event(
                "stopped",
                `stopped: wave ${step.wave}: ${step.failed.map((s) => s.key).join(", ")} failed; waiting for fleet retry or skip`,
                step.wave,
            );
        }
        lastPhase = now;
        if (step.kind === "done") {
            const { succeeded, skipped } = counts();
            event("done", `done: ${succeeded} succeeded, ${skipped} skipped`);
            publish();
            return status();
        }
        if (step.kind === "soak" && soakUntil[step.wave] === undefined) {
            soakUntil[step.wave] = step.until;
            event(
                "soaking",
                `wave ${step.wave}: succeeded; soaking until ${new Date(step.until).toISOString()}`,
                step.wave,
                step.until,
            );
        }
        const quiet = !running() && !previewing;
        const long = historyLong(quiet);
        if (long && quiet) {
            event("continued", `the history is long (${long}): the fleet goes on in run ${runs + 1}`);
            publish();
            const next: FleetInput = {
                ...input,
                carried: {
                    stacks,
                    previewed: [...previewed],
                    soakUntil,
                    gateUntil,
                    events,
                    eventsDropped,
                    paused,
                    runs,
                },
            };
            // the memo goes with it: `fleet status` reads the new run before its first task
            await makeContinueAsNewFunc<typeof fleetWorkflow>({ memo: { [FLEET_STATUS_MEMO]: memoView() } })(next);
        }
        if (long && !draining) {
            draining = true;
            event("continued", `the history is long (${long}): no new stack starts until the running ones end`);
        }
        if (step.kind === "soak") {
            publish();
            const until = step.until;
            await condition(() => version !== seen, Math.max(1, until - Date.now()));
            continue;
        }
        if (step.kind === "run" && !paused && !draining && step.start.length > 0) {
            const wave = step.wave;
            const unpreviewed = (fleet.waves.find((w) => w.name === wave)?.stacks ?? []).filter(
                (fs) => byKey.get(fs.key)!.state === "pending" && !previewed.has(fs.key),
            );
            const due = unpreviewed.filter((fs) => (gateUntil[fs.key] ?? 0) <= Date.now());
            if (due.length > 0) {
                await preview(wave, due);
                continue;
            }
            if (unpreviewed.length > 0) {
                // every stack left to preview waits for its gate: until the first is due, or a change
                const first = Math.min(...unpreviewed.map((fs) => gateUntil[fs.key]));
                gateWait = running() ? undefined : first;
                publish();
                await condition(() => version !== seen, Math.max(1, first - Date.now()));
                gateWait = undefined;
                continue;
            }
            for (const fs of step.start) void up(fs);
            continue;
        }
        // stopped, paused, draining, or the wave at maxParallel: wait for a signal or a stack to end
        publish();
        await condition(() => version !== seen);
    }
}
