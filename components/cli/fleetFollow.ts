// Following a fleet's workflow (issue #42): the status it publishes in its memo, read every second
// until the fleet is done or stopped, each new event printed; SIGINT/SIGTERM while it runs; a
// workflow that is not found.
import type { WorkflowHandle } from "@temporalio/client";
import { FLEET_STATUS_MEMO, FLEET_STATUS_QUERY, type FleetStatus } from "../fleet/contract.js";
import { eventPrinter } from "./fleetOutput.js";
import { CliError, EXIT } from "./output.js";
import type { Io } from "./io.js";

/**
 * SIGINT/SIGTERM while `run` runs: `onSignal` is called, to end gracefully; a second signal ends
 * the process at once (the embedded server is still stopped on exit). The handlers are removed after.
 */
async function withSignals<T>(onSignal: (signal: NodeJS.Signals) => void, run: () => Promise<T>): Promise<T> {
    let fired = false;
    const handler = (signal: NodeJS.Signals) => {
        if (fired) process.exit(130);
        fired = true;
        onSignal(signal);
    };
    process.on("SIGINT", handler);
    process.on("SIGTERM", handler);
    try {
        return await run();
    } finally {
        process.removeListener("SIGINT", handler);
        process.removeListener("SIGTERM", handler);
    }
}

/**
 * The status the workflow last published in its memo, its execution's state, and whether a
 * workflow task is pending (a signal, e.g. retry, not yet seen by the workflow: the memo is older).
 */
async function memoStatus(
    handle: WorkflowHandle,
): Promise<{ status?: FleetStatus; execution: string; pending: boolean }> {
    const d = await handle.describe();
    return {
        status: d.memo?.[FLEET_STATUS_MEMO] as FleetStatus | undefined,
        execution: d.status.name,
        pending: Boolean(d.raw.pendingWorkflowTask),
    };
}

/**
 * The full status from a worker (the query), or undefined when none answers within `ms`: the
 * memo lists only the running and failed stacks while stacks move.
 */
async function queriedStatus(handle: WorkflowHandle, ms = 5000): Promise<FleetStatus | undefined> {
    try {
        return await handle.client.withDeadline(Date.now() + ms, () => handle.query<FleetStatus>(FLEET_STATUS_QUERY));
    } catch {
        return undefined;
    }
}

const messageOf = (e: unknown) => ((e as Error)?.message ?? String(e)).split("\n")[0];

/** A workflow that is not found: exit 1 naming it and how it starts. */
function notFound(id: string, e: unknown): CliError {
    return new CliError(
        `fleet: no fleet workflow ${id} on this Temporal server (${messageOf(e)}); kube-proxy-mode fleet up --file F starts it`,
        EXIT.failed,
    );
}

const isNotFound = (e: unknown) => (e as Error)?.name === "WorkflowNotFoundError";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Follows a fleet until it is done or stopped (or `signalled`): prints each new event, reading the
 * status the workflow keeps in its memo every second. The memo, not the status query: describe()
 * needs no worker, and a query abandoned while a restarted worker's sticky queue times out would
 * outlive the connection. A server that does not answer is retried for a minute.
 */
/**
 * Whether `fleet up` has followed the fleet to an end: done, or stopped with no signal pending and
 * no stack still running (its worker may be this process: leaving would strand that stack's up).
 */
function followEnds(status: FleetStatus, pending: boolean): boolean {
    if (status.phase === "done") return true;
    return status.phase === "stopped" && !pending && !status.stacks.some((s) => s.state === "running");
}

async function follow(
    handle: WorkflowHandle,
    io: Io,
    stop: { signalled: boolean },
    fleet?: readonly { key: string; stack: string }[],
): Promise<{ status?: FleetStatus; execution: string }> {
    const print = eventPrinter((l) => io.err(l), fleet);
    let last: FleetStatus | undefined;
    let pausedSaid = false;
    let unanswered = 0;
    for (;;) {
        let read: Awaited<ReturnType<typeof memoStatus>>;
        try {
            read = await memoStatus(handle);
            unanswered = 0;
        } catch (e) {
            if (isNotFound(e) || ++unanswered > 60 || stop.signalled) throw e;
            if (unanswered % 10 === 1) io.err(`fleet: the Temporal server does not answer (${messageOf(e)}); retrying`);
            await sleep(1000);
            continue;
        }
        const { execution } = read;
        let status = read.status;
        if (execution === "COMPLETED")
            status = (await handle.result().catch(() => read.status)) as FleetStatus | undefined;
        if (status) {
            last = status;
            print(status);
            if (status.phase === "paused" && !pausedSaid) {
                pausedSaid = true;
                io.err("fleet: paused; kube-proxy-mode fleet resume continues it (this command keeps following)");
            }
            if (status.phase !== "paused") pausedSaid = false;
            // a stopped fleet with a signal pending (fleet retry, then fleet up) is not stopped yet
            if (followEnds(status, read.pending)) return { status, execution };
        }
        if (execution !== "RUNNING") return { status: last, execution };
        if (stop.signalled) return { status: last, execution };
        await sleep(1000);
    }
}

export {
    follow,
    followEnds,
    memoStatus,
    messageOf,
    notFound,
    queriedStatus,
    withSignals,
    isNotFound as isWorkflowNotFound,
};
