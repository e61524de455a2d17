// What the fleet's workflow, its stack activities and the CLI agree on: names on the Temporal
// cluster, the activities' inputs and outcomes, the failure types that are never retried, the
// signals and the status the workflow publishes. Types and constants only, so the workflow's
// sandbox can load it.
import type { Fleet, FleetStack, StackState } from "../core/fleetSchedule.js";
import type { ProxyMode } from "../core/types.js";

/** The task queue the fleet's workers poll. */
export const FLEET_TASK_QUEUE = "kube-proxy-mode-fleet";

/** The workflow's type name (the exported function in workflow.ts). */
export const FLEET_WORKFLOW = "fleetWorkflow";

/** What `fleet up` starts the workflow with. */
export interface FleetInput {
    fleet: Fleet;
    /** each stack's preview must move to this mode; absent: to whatever its own code declares */
    target?: ProxyMode;
    /** the fleet file's absolute path, for status and messages */
    file: string;
    /** activity timing; the defaults suit real stacks, tests shorten them */
    timing?: FleetTiming;
    /** set by the workflow itself when it continues as a new run; absent when `fleet up` starts it */
    carried?: FleetCarried;
}

export interface FleetTiming {
    /** a stack activity not heard from for this long is retried on another worker. Default 60 s. */
    heartbeatSeconds?: number;
    /** attempts of a stack activity whose worker was lost, in all. Default 5. */
    maxAttempts?: number;
    /** the wait before a stack activity's first retry (doubling after each). Default 1 s; tests shorten it. */
    retryInitialSeconds?: number;
    /** past this many history events, the run continues as a new one when no stack is running. Default 1,000. */
    historyQuietEvents?: number;
    /** past this many, no new stack starts until the running ones end, then the run continues. Default 4,000. */
    historyDrainEvents?: number;
}

/**
 * What a run hands to the next when its history grows long (continue-as-new): the state the
 * workflow keeps, so the next run goes on where this one stopped.
 */
export interface FleetCarried {
    stacks: FleetStackStatus[];
    /** keys of stacks previewed since they last became pending */
    previewed: string[];
    soakUntil: Record<string, number>;
    /** stacks whose promotion gate waits for their upstream's soak: when each is previewed again */
    gateUntil: Record<string, number>;
    events: FleetEvent[];
    eventsDropped: number;
    paused: boolean;
    /** runs before this one */
    runs: number;
}

export interface StackInput {
    stack: FleetStack;
    target?: ProxyMode;
}

/** What a stack's preview showed. */
export interface StackPreview {
    key: string;
    cluster: string | null;
    /** "ipvs (3f2a...)": the mode and config hash, as promote prints them */
    from: string | null;
    to: string | null;
    /** nodes that move */
    moving: number | null;
}

/** What a stack's `pulumi up` did. */
export interface StackOutcome extends StackPreview {
    result: "applied" | "unchanged";
    /** "4/4" or "3/4 (1 by hooks only)"; null when the program exports no promotion */
    nodesVerified: string | null;
    durationSeconds: number;
    /** the activity's attempt that returned this (Context.current().info.attempt); the workflow adds it to attempts */
    attempt?: number;
}

/**
 * Why a stack activity failed, as the ApplicationFailure's type. Each is the stack's own verdict
 * and is never retried: a rerun would fail the same way until a human acts (fleet retry/skip).
 * Anything else (a lost worker, a heartbeat timeout, a locked stack) is retried.
 */
export const STACK_FAILURES = {
    /** the preview failed or showed a refusal (a blocking finding, the wrong target) */
    previewRefused: "PreviewRefused",
    /** the component's promotion gate refused: the upstream stack has not finished and soaked */
    gateRefused: "GateRefused",
    /** pulumi up failed: a node failed its checks and was rolled back, or the program failed */
    stackFailed: "StackFailed",
    /** the stack cannot be selected: no project in dir, no such stack */
    stackNotFound: "StackNotFound",
} as const;

export type StackFailureType = (typeof STACK_FAILURES)[keyof typeof STACK_FAILURES];

/**
 * A GateRefused failure's details when the gate lacks only the upstream's soak: the workflow
 * previews the stack again after `retryAfter` (ISO time) instead of stopping the fleet.
 */
export interface GateWait {
    retryAfter: string;
}

/** The activities a fleet worker registers. */
export interface StackActivities {
    /** `pulumi preview` of the stack; throws a non-retryable failure when it is refused */
    previewStack(input: StackInput): Promise<StackPreview>;
    /** `pulumi up` of the stack, heartbeating the engine's progress */
    upStack(input: StackInput): Promise<StackOutcome>;
}

/** Signal names; each is recorded in the workflow's history. */
export const FLEET_SIGNALS = {
    /** no new stack starts; running ones finish */
    pause: "pause",
    resume: "resume",
    /** a failed stack (by key or name) becomes pending again: previewed, then moved */
    retry: "retry",
    /** a failed or pending stack is left as it is; its wave goes on without it */
    skip: "skip",
} as const;

/** The query name of {@link FleetStatus}. */
export const FLEET_STATUS_QUERY = "status";

/**
 * The memo key under which the workflow keeps its latest {@link FleetStatus}, readable with no
 * worker. Each write goes into the history, so while stacks move the memo lists only the running
 * and failed ones (`stacksOmitted` counts the rest); stopped, paused or done with none running,
 * it lists them all.
 */
export const FLEET_STATUS_MEMO = "status";

export type FleetPhase = "previewing" | "running" | "soaking" | "paused" | "stopped" | "done";

export interface FleetStackStatus {
    key: string;
    wave: string;
    dir: string;
    stack: string;
    state: StackState;
    /**
     * upStack attempts so far (a lost worker's retry counts): 1 per call, plus the retries the
     * workflow can see (an outcome's `attempt`, or maxAttempts when a call ran out of attempts)
     */
    attempts: number;
    preview?: StackPreview;
    outcome?: StackOutcome;
    /** the failure's type and message, or why it was skipped */
    failure?: { type: StackFailureType | "Unknown"; message: string };
    /** epoch ms */
    startedAt?: number;
    endedAt?: number;
}

/** What an event records, for machines (the text says it for people). */
export type FleetEventKind =
    | "fleet" // the fleet started
    | "previewing" // a wave's stacks are previewed before any of them starts
    | "previewed"
    | "refused" // a stack's preview refused
    | "gate" // a stack's promotion gate waits for its upstream's soak; `until`: when it is previewed again
    | "started"
    | "succeeded"
    | "failed"
    | "soaking" // a wave succeeded; `until` is the soak's end
    | "stopped" // a stack failed: nothing new starts until retry or skip
    | "signal" // pause, resume, retry or skip, taken or ignored
    | "continued" // the history grew long: the fleet goes on in a new run
    | "done";

/** One line of the fleet's progress: each state change, in order. */
export interface FleetEvent {
    /** epoch ms (workflow time) */
    at: number;
    kind: FleetEventKind;
    wave?: string;
    stack?: string;
    /** epoch ms: a soak's end, or when a stack whose gate waits is previewed again */
    until?: number;
    text: string;
}

/** What the workflow publishes (query and memo) and returns when done. */
export interface FleetStatus {
    phase: FleetPhase;
    paused: boolean;
    /** the wave running, soaking or stopped; null when done */
    wave: string | null;
    /** epoch ms, while soaking: the wave's soak, or the first stack's gate waiting for its upstream's */
    soakUntil?: number;
    target?: ProxyMode;
    file: string;
    stacks: FleetStackStatus[];
    /** stacks left out of `stacks` (the memo's, while stacks move); the query and the result list all */
    stacksOmitted?: number;
    /** how many stacks are in each state */
    counts: Record<StackState, number>;
    /** the latest events, oldest first: the query keeps the last 200, the memo the last 10 */
    events: FleetEvent[];
    /** events older than `events[0]`, left out to keep the status (and the memo) small */
    eventsDropped?: number;
    /** runs of the workflow so far, this one included (it continues as a new run when its history grows) */
    runs: number;
}
