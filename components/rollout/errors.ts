// How a rollout ends early: a node that failed (and what was done about it), a refusal before
// anything changed, an interruption at a safe point, and a check's failure inside a node's move.
import { nameList } from "../core/text.js";

/** A node that failed, with what was done about it. */
export class RolloutFailure extends Error {
    constructor(
        readonly node: string,
        readonly pool: string,
        readonly check: string,
        readonly detail: string,
        readonly rolledBack: string,
        readonly leftCordoned: string[],
        /** why the nodes left cordoned could not be listed (the API server not answering), when they could not */
        readonly unlisted?: string,
        /** a failed hook's output as kept (its last lines, whole); `detail` has them capped */
        readonly output?: string,
    ) {
        super(
            `node ${node} (pool ${pool}) failed ${check}: ${detail}\n${rolledBack}\n` +
                (unlisted
                    ? `the nodes left cordoned could not be listed: ${unlisted}`
                    : leftCordoned.length
                      ? `nodes left cordoned: ${nameList(leftCordoned)}`
                      : "no node is left cordoned"),
        );
    }
}

/** The run refused to start, before it changed anything (its lease held by another run, a permission denied). */
export class RolloutRefused extends Error {}

/** Another run holds the cluster's rollout lease. */
export class RolloutBusy extends RolloutRefused {}

/** The run was stopped (SIGINT/SIGTERM, or its lease was lost) at a safe point. */
export class RolloutInterrupted extends Error {}

/**
 * The run may no longer hold the cluster's lease (not renewed within its renew deadline, or taken
 * over): it sends no further write, so it can never act beside the run that takes over.
 */
export class LeaseLost extends RolloutInterrupted {}

/** A check of a node failed (carries the check's name). */
export class CheckFailed extends Error {
    constructor(
        readonly check: string,
        detail: string,
        readonly output?: string,
    ) {
        super(detail);
    }
}
