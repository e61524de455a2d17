// The fleet's stack activities (issue #42): `pulumi preview` and `pulumi up` of one stack through
// the Automation API, in the stack's own project directory with its own workspace (backend,
// config, secrets provider), as `promote` runs them. A failure is classified: the stack's own
// verdict (a refused preview, a gate refusal, a failed rollout, no such stack) is an
// ApplicationFailure that is never retried; a stack locked by another update is retried, after
// upStack has waited for (or cleared) a lock left on this host. Every message is redacted.
//
// Locks: on a DIY backend (file://) a stack under update holds a lock file,
// <backend>/.pulumi/locks/<org>/<project>/<stack>/<uuid>.json, holding the pid, user and hostname
// of the `pulumi` process that took it; another update is refused with "the stack is currently
// locked by N lock(s) ..." and one line per lock ("<url>: created by user@host (pid N) at T").
// The engine of Pulumi 3.276 does not remove a lock whose process died (`pulumi cancel` does), so
// a worker SIGKILLed mid-stack leaves either a running orphan `pulumi up` (its lock is live: wait
// for it) or a dead one (its lock is stale: clear it). Only a lock of this host, on a file://
// backend, whose pid no longer exists is cleared, with a logged line; a lock of another host, or
// on another backend (Pulumi Cloud answers 409 Conflict), is left to Temporal's retries. "This
// host" is the hostname: workers sharing a hostname must share a pid namespace too.
import { readFileSync, rmSync } from "node:fs";
import { hostname } from "node:os";
import { fileURLToPath } from "node:url";
import { Context } from "@temporalio/activity";
import { ApplicationFailure } from "@temporalio/common";
import {
    anyResourceChanged,
    type AutomationStack,
    changeColumns,
    type EngineEvent,
    errorMessage,
    errorDiagnostics,
    failureDetail,
    failureText,
    gateUpstream,
    outputsFrom,
    outputValues,
    nodesVerifiedText,
    selectStack,
    StackSelectError,
    type StackOutputs,
} from "../automation/stacks.js";
import { soakOnlyRetryAfter } from "../core/promotion.js";
import { redact } from "../core/redact.js";
import type { ProxyMode } from "../core/types.js";
import {
    STACK_FAILURES,
    type StackActivities,
    type GateWait,
    type StackFailureType,
    type StackInput,
    type StackOutcome,
    type StackPreview,
} from "./contract.js";

export interface StackActivityOptions {
    /** how often a running preview or update heartbeats. Default 5 s. */
    heartbeatMs?: number;
    /** how long upStack waits for a live lock of this host to go before it leaves the stack to a retry. Default 30 min. */
    lockWaitSeconds?: number;
    /** how often a live lock's process is looked at while waiting. Default 2 s. */
    lockPollMs?: number;
    /** selects the input's stack; default: its project's workspace (tests give a stand-in) */
    select?: (input: StackInput) => Promise<RunnableStack>;
}

/** What the activities use of a selected stack. */
export type RunnableStack = Pick<AutomationStack, "preview" | "up" | "outputs">;

/** The failure type of a stack locked by another update: retried, unlike {@link STACK_FAILURES}. */
export const STACK_LOCKED = "StackLocked";

/** A lock the engine named in its refusal. */
export interface StackLock {
    /** where the lock file is: file:///.../.pulumi/locks/... on a DIY backend */
    url: string;
    user: string;
    hostname: string;
    pid: number;
    /** when it was taken (RFC 3339) */
    at: string;
}

/** What a failed preview or update means for the fleet. */
export type StackVerdict =
    | { kind: "refused"; type: StackFailureType; message: string; details?: GateWait }
    | { kind: "locked"; message: string; locks: StackLock[] };

/** Whether an engine error says the stack is held by another update (DIY lock, Pulumi Cloud's 409). */
export function isStackLocked(text: string): boolean {
    return /the stack is currently locked by|\[409\] Conflict|another update is (?:currently )?in progress/i.test(text);
}

/** The locks an engine's "the stack is currently locked" error lists, one per line. */
export function parseStackLocks(text: string): StackLock[] {
    const locks: StackLock[] = [];
    for (const m of text.matchAll(/^\s*(\S+): created by (\S*)@(\S*) \(pid (\d+)\) at (\S+)\s*$/gm))
        locks.push({ url: m[1], user: m[2], hostname: m[3], pid: Number(m[4]), at: m[5] });
    return locks;
}

/**
 * Why a preview or update of `stack` failed, from its engine events and the error the Automation
 * API threw: a gate refusal, a lock held by another update, else the phase's own refusal (a
 * preview's) or failure (an update's). The message is the stack's own lines, redacted.
 */
export function classifyStackFailure(
    phase: "preview" | "up",
    stack: string,
    events: EngineEvent[],
    error: unknown,
): StackVerdict {
    const text = failureText(events, error);
    const whole = errorMessage(error);
    if (gateUpstream(text)) {
        const detail = failureDetail(text);
        const retryAfter = soakOnlyRetryAfter(detail);
        return {
            kind: "refused",
            type: STACK_FAILURES.gateRefused,
            message: redact(`stack ${stack}: ${detail}`),
            ...(retryAfter ? { details: { retryAfter: retryAfter.toISOString() } } : {}),
        };
    }
    if ((error as Error)?.name === "ConcurrentUpdateError" || isStackLocked(whole)) {
        const locks = parseStackLocks(whole);
        const held = locks.map((l) => `${l.user}@${l.hostname} (pid ${l.pid}) since ${l.at}`).join("; ");
        return {
            kind: "locked",
            message: redact(`stack ${stack} is locked by another update${held ? `: ${held}` : ""}`),
            locks,
        };
    }
    const type = phase === "preview" ? STACK_FAILURES.previewRefused : STACK_FAILURES.stackFailed;
    const what = phase === "preview" ? "preview failed" : "pulumi up failed";
    // the component's own error names every problem; the engine's text only its first line
    const diagnostics = errorDiagnostics(events).replace(/\s+/g, " ").trim().slice(0, 1500);
    const detail = diagnostics || failureDetail(text);
    return { kind: "refused", type, message: redact(`stack ${stack}: ${what}: ${detail}`) };
}

/**
 * Why a preview that succeeded is refused for a fleet moving to `target`: its change moves
 * elsewhere, or the program exports no KubeProxyMode change to tell. Undefined when it may go on
 * (or the fleet has no target).
 */
export function previewTargetRefusal(
    stack: string,
    outputs: StackOutputs,
    target: ProxyMode | undefined,
): string | undefined {
    if (!target) return undefined;
    const change = outputs.change;
    if (!change || typeof change !== "object" || typeof change.to?.mode !== "string")
        return `stack ${stack}: its program does not export KubeProxyMode's change output, so its move to ${target} cannot be checked (export the component's change as a stack output, as the config-driven program does)`;
    if (change.to.mode !== target) return `stack ${stack} moves to ${change.to.mode}, the fleet's target is ${target}`;
    return undefined;
}

/** What a running update heartbeats: its last resource event, the resources done, its last output line. */
export interface UpProgress {
    /** "kube-proxy create", "kube-proxy created": the last resource's name and its step */
    resource?: string;
    /** resources whose step finished (or failed) */
    done: number;
    /** the engine's last non-empty output line, trimmed (at most 200 characters, redacted) */
    output?: string;
    /** set while upStack waits for another update's lock to go */
    waitingFor?: string;
}

/** Follows an update's engine events and output into the {@link UpProgress} it heartbeats. */
export class UpProgressTracker {
    readonly progress: UpProgress = { done: 0 };

    event(e: EngineEvent): void {
        const started = e.resourcePreEvent?.metadata;
        const finished = e.resOutputsEvent?.metadata ?? e.resOpFailedEvent?.metadata;
        const m = finished ?? started;
        if (!m || m.type === "pulumi:pulumi:Stack" || m.type.startsWith("pulumi:providers:")) return;
        const name = m.urn.split("::").pop() ?? m.urn;
        if (finished) {
            this.progress.done++;
            this.progress.resource = `${name} ${m.op}${e.resOpFailedEvent ? " failed" : " done"}`;
        } else this.progress.resource = `${name} ${m.op}`;
    }

    output(text: string): void {
        const last = text
            .split("\n")
            .map((l) => l.trim())
            .filter((l) => l.length > 0)
            .pop();
        if (last) this.progress.output = redact(last).slice(0, 200);
    }
}

/** Whether a process of this host is alive (signal 0; EPERM means it exists, owned by another user). */
function processAlive(pid: number): boolean {
    try {
        process.kill(pid, 0);
        return true;
    } catch (e) {
        return (e as NodeJS.ErrnoException).code === "EPERM";
    }
}

/**
 * The locks of `locks` that this process may clear: on a file:// backend, taken on this host, by a
 * process that no longer exists, and whose file still says so (read back before it is removed).
 * Returns the cleared ones' paths; a lock it cannot read or remove is left as it is.
 */
export function clearDeadLocks(
    locks: StackLock[],
    host = hostname(),
    alive: (pid: number) => boolean = processAlive,
): string[] {
    const cleared: string[] = [];
    for (const lock of locks) {
        if (!lock.url.startsWith("file://") || lock.hostname !== host || alive(lock.pid)) continue;
        try {
            const path = fileURLToPath(lock.url);
            const held = JSON.parse(readFileSync(path, "utf8")) as { pid?: number; hostname?: string };
            if (held.pid !== lock.pid || held.hostname !== host) continue;
            rmSync(path);
            cleared.push(path);
        } catch {
            // gone already, or not a path this process can read: left to the engine and a retry
        }
    }
    return cleared;
}

/** A running preview or update's heartbeat: now, then every `ms` until stopped. */
function heartbeating(ctx: Context, ms: number, details: () => unknown): () => void {
    const beat = () => ctx.heartbeat(details());
    beat();
    const timer = setInterval(beat, ms);
    return () => clearInterval(timer);
}

/** Waits `ms`, or less when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
        const done = () => {
            clearTimeout(timer);
            signal.removeEventListener("abort", done);
            resolve();
        };
        const timer = setTimeout(done, ms);
        signal.addEventListener("abort", done, { once: true });
    });
}

/** The stack of the input, or a StackNotFound failure. */
async function selectInput(input: StackInput): Promise<RunnableStack> {
    try {
        return await selectStack(input.stack.dir, input.stack.stack);
    } catch (e) {
        if (e instanceof StackSelectError)
            throw ApplicationFailure.nonRetryable(
                redact(`stack ${input.stack.key}: ${e.message}`),
                STACK_FAILURES.stackNotFound,
            );
        throw e;
    }
}

/** The activity's failure for a verdict: retryable when the stack is locked, else never retried. */
export function stackFailure(verdict: StackVerdict): ApplicationFailure {
    if (verdict.kind === "locked") return ApplicationFailure.retryable(verdict.message, STACK_LOCKED);
    return ApplicationFailure.nonRetryable(
        verdict.message,
        verdict.type,
        ...(verdict.details ? [verdict.details] : []),
    );
}

/** The activities a fleet worker registers: each runs one stack's preview or update. */
export function stackActivities(options: StackActivityOptions = {}): StackActivities {
    const heartbeatMs = options.heartbeatMs ?? 5000;
    const lockWaitMs = (options.lockWaitSeconds ?? 1800) * 1000;
    const lockPollMs = options.lockPollMs ?? 2000;
    const select = options.select ?? selectInput;
    const cleared = (ctx: Context, key: string, locks: StackLock[]) => {
        for (const path of clearDeadLocks(locks))
            ctx.log.info(`stack ${key}: cleared the lock ${path}: its pulumi process is gone from this host`);
    };

    async function previewStack(input: StackInput): Promise<StackPreview> {
        const ctx = Context.current();
        const { key } = input.stack;
        const events: EngineEvent[] = [];
        // from the start: selecting the stack may outlast the workflow's heartbeat timeout
        const stop = heartbeating(ctx, heartbeatMs, () => ({ phase: "preview", events: events.length }));
        try {
            const stack = await select(input);
            try {
                await stack.preview({ onEvent: (e) => events.push(e), signal: ctx.cancellationSignal });
            } catch (e) {
                if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason;
                throw stackFailure(classifyStackFailure("preview", key, events, e));
            }
            const outputs = outputsFrom(events);
            const refusal = previewTargetRefusal(key, outputs, input.target);
            if (refusal) throw ApplicationFailure.nonRetryable(redact(refusal), STACK_FAILURES.previewRefused);
            const preview: StackPreview = { key, ...changeColumns(outputs.change) };
            if (preview.cluster === null) {
                // the last update's view of the cluster, when this preview could not say
                const last: Record<string, { value: unknown }> = await stack.outputs().catch(() => ({}));
                preview.cluster = (last.change?.value as StackOutputs["change"])?.cluster ?? null;
            }
            return preview;
        } finally {
            stop();
        }
    }

    /** Waits, heartbeating, until the live locks' processes of this host end; false when they outlast the wait. */
    async function awaitLocks(ctx: Context, locks: StackLock[], progress: UpProgress): Promise<boolean> {
        const until = Date.now() + lockWaitMs;
        const live = () => locks.filter((l) => processAlive(l.pid));
        progress.waitingFor = locks.map((l) => `pid ${l.pid}`).join(", ");
        while (live().length > 0 && Date.now() < until && !ctx.cancellationSignal.aborted)
            await sleep(lockPollMs, ctx.cancellationSignal);
        progress.waitingFor = undefined;
        if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason;
        return live().length === 0;
    }

    async function upStack(input: StackInput): Promise<StackOutcome> {
        const ctx = Context.current();
        const { key } = input.stack;
        const started = Date.now();
        const tracker = new UpProgressTracker();
        const stop = heartbeating(ctx, heartbeatMs, () => ({ ...tracker.progress }));
        const host = hostname();
        // the locks this activity has waited for or cleared: each once, then a retry decides
        const handled = new Set<string>();
        try {
            const stack = await select(input);
            for (;;) {
                const events: EngineEvent[] = [];
                try {
                    const r = await stack.up({
                        onEvent: (e) => {
                            events.push(e);
                            tracker.event(e);
                        },
                        onOutput: (s) => tracker.output(s),
                        signal: ctx.cancellationSignal,
                    });
                    const outputs = outputValues(r.outputs);
                    return {
                        key,
                        ...changeColumns(outputs.change ?? outputsFrom(events).change),
                        result: anyResourceChanged(r.summary.resourceChanges) ? "applied" : "unchanged",
                        nodesVerified: nodesVerifiedText(outputs.promotion),
                        durationSeconds: Math.round((Date.now() - started) / 1000),
                        // a lost worker's retry is a later attempt: the fleet's status counts them
                        attempt: ctx.info.attempt,
                    };
                } catch (e) {
                    if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason;
                    const verdict = classifyStackFailure("up", key, events, e);
                    if (verdict.kind !== "locked") throw stackFailure(verdict);
                    const here = verdict.locks.filter((l) => l.url.startsWith("file://") && l.hostname === host);
                    const fresh = here.filter((l) => !handled.has(l.url));
                    // a lock of another host or backend, or one already waited for: Temporal's retry
                    if (here.length === 0 || here.length < verdict.locks.length || fresh.length < here.length)
                        throw stackFailure(verdict);
                    for (const l of here) handled.add(l.url);
                    cleared(ctx, key, here);
                    const live = here.filter((l) => processAlive(l.pid));
                    if (live.length > 0) {
                        ctx.log.info(
                            `stack ${key}: waiting for another update on this host (${live.map((l) => `pid ${l.pid}`).join(", ")}) to release the stack`,
                        );
                        if (!(await awaitLocks(ctx, live, tracker.progress))) throw stackFailure(verdict);
                        // ended without releasing it (killed): cleared as above
                        cleared(ctx, key, live);
                    }
                }
            }
        } finally {
            stop();
        }
    }

    return { previewStack, upStack };
}
