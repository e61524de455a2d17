// How the fleet's workflow reads a stack activity's failure (issue #42): the failure type the
// status shows, whether its retries ran out, and when a gate waiting only for its upstream's soak
// may be previewed again. Workflow code: loaded in Temporal's sandbox with workflow.ts.
import { ActivityFailure, ApplicationFailure, TimeoutFailure } from "@temporalio/workflow";
import { STACK_FAILURES, type GateWait, type StackFailureType } from "./contract.js";

/** The failure types the workflow never retries. */
export const STACK_FAILURE_TYPES: readonly string[] = Object.values(STACK_FAILURES);

/**
 * An activity's failure as the status shows it, whether it ran out of attempts, and for a gate
 * that lacks only its upstream's soak, when that soak is held (epoch ms).
 */
export function failureOf(err: unknown): {
    type: StackFailureType | "Unknown";
    message: string;
    exhausted: boolean;
    retryAfter?: number;
} {
    const exhausted = err instanceof ActivityFailure && err.retryState === "MAXIMUM_ATTEMPTS_REACHED";
    const cause = err instanceof ActivityFailure && err.cause ? err.cause : err;
    if (cause instanceof ApplicationFailure) {
        const known = cause.type && STACK_FAILURE_TYPES.includes(cause.type);
        const wait =
            cause.type === STACK_FAILURES.gateRefused ? (cause.details?.[0] as GateWait | undefined) : undefined;
        const retryAfter = wait ? Date.parse(wait.retryAfter) : NaN;
        if (known && !Number.isNaN(retryAfter))
            return { type: cause.type as StackFailureType, message: cause.message, exhausted, retryAfter };
        if (known) return { type: cause.type as StackFailureType, message: cause.message, exhausted };
        return { type: "Unknown", message: `${cause.type ?? "Error"}: ${cause.message}`, exhausted };
    }
    if (cause instanceof TimeoutFailure) {
        return { type: "Unknown", message: `timed out (${cause.timeoutType}): ${cause.message}`, exhausted };
    }
    return { type: "Unknown", message: cause instanceof Error ? cause.message : String(cause), exhausted };
}
