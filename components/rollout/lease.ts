// A run's hold on the cluster: its permissions asked first, then the Lease, renewed while it
// runs, with every write fenced so none is sent once the lease may be lost.
import { anyPoolDrains } from "../core/drain.js";
import { deniedAccessText, GRANT_ACCESS, rolloutAccesses } from "../core/rbac.js";

import { Context, defaultHolder } from "./context.js";
import { RolloutRefused, RolloutBusy, RolloutInterrupted, LeaseLost } from "./errors.js";

/**
 * Before the lease and before any node: every permission the run may need (the finish's restore
 * included), asked of the cluster's own authorizers. A missing one refuses the run, naming each,
 * instead of failing a node halfway or the finish after every node moved. When the cluster will
 * not answer the question itself, the run warns and goes on (each call still names a refusal).
 */
async function checkAccess(ctx: Context): Promise<void> {
    const wanted = rolloutAccesses({
        ...ctx.cluster.names,
        drain: anyPoolDrains(ctx.spec.pools),
    });
    const answer = await ctx.cluster.deniedAccesses(wanted).catch((e: unknown) => {
        ctx.log(
            `warning: could not check the rollout's permissions in advance (${(e as Error).message}); a missing one fails the call that needs it`,
        );
    });
    if (answer?.denied.length)
        throw new RolloutRefused(
            `${deniedAccessText("the identity running the rollout", answer)}. Nothing was changed; ${GRANT_ACCESS}, and run again`,
        );
}

/**
 * Holds the cluster's rollout lease while `fn` runs: renewed every third of its duration, released
 * at the end. Every write the run sends to the cluster is fenced by it (RolloutCluster.fenceWrites):
 * once the lease has gone unrenewed for two thirds of its duration (the renew deadline: an API
 * server out of reach, a network partition) or another run took it over, the run stops, and a
 * write it was about to send (or to retry) is refused locally instead, with LeaseLost. Another run
 * takes over only after the whole duration, so a run that lost its lease stops writing at least a
 * third of it (20 s by default) before anyone else may start; what it leaves mid-move is in the
 * move's memory, which the next run finishes or rolls back (S5). A write is also never sent later
 * than the request timeout before the lease's expiry as last renewed: a write the server does not
 * answer (a black-holed network) is abandoned before another run could take over.
 */
export async function withLease<T>(ctx: Context, fn: (ctx: Context) => Promise<T>): Promise<T> {
    await checkAccess(ctx);
    const holder = ctx.holder ?? defaultHolder();
    const seconds = ctx.leaseSeconds ?? 60;
    const timeout = ctx.requestTimeoutSeconds ?? 0;
    const deadlineMs = Math.min(seconds * 2, (seconds - timeout) * 3) * (1000 / 3);
    if (deadlineMs <= 0)
        throw new RolloutRefused(
            `the request timeout (${timeout}s) is not shorter than the rollout lease (${seconds}s): no write could be sent and answered before the lease might be taken over; nothing was written`,
        );
    const got = await ctx.cluster.acquireLease(holder, seconds, ctx.log, ctx.signal);
    if (!got.acquired && ctx.signal?.aborted)
        throw new RolloutInterrupted(
            `the run was stopped (${String(ctx.signal.reason ?? "signal")}) before it held the rollout lease: nothing was written`,
        );
    if (!got.acquired) {
        const c = got.current;
        throw new RolloutBusy(
            `another rollout holds this cluster: ${c.holder} (lease renewed ${c.renewedAt}, lasts ${c.durationSeconds}s). ` +
                `Wait for it to finish; if it died, its lease expires ${c.durationSeconds}s after its last renewal and the next run takes over`,
        );
    }
    // the lease runs at least its duration from when its renewal time was taken (for a renewal:
    // from when it was sent, which is earlier)
    let confirmedAt = got.writtenAt;
    const stop = new AbortController();
    const outer = ctx.signal;
    const onOuter = () => stop.abort(outer?.reason);
    outer?.addEventListener("abort", onOuter, { once: true });
    if (outer?.aborted) stop.abort(outer.reason);
    let lost: LeaseLost | undefined;
    let lastFailure = "";
    const loseLease = (why: string): LeaseLost => {
        lost ??= new LeaseLost(
            `${why}: this run sends no further write to the cluster, so it cannot act beside the run that takes over; ` +
                `a node it had in hand keeps its move memory, and the next run finishes that move or puts the node back`,
        );
        if (!stop.signal.aborted) {
            ctx.log(`stopping: ${lost.message}`);
            stop.abort(lost.message);
        }
        return lost;
    };
    /** Throws LeaseLost once the run may no longer hold the lease: every write is fenced by it. */
    const fence = (): void => {
        if (lost) throw lost;
        const since = performance.now() - confirmedAt;
        if (since > deadlineMs)
            throw loseLease(
                `the rollout lease was not renewed for ${(since / 1000).toFixed(1)}s (it lasts ${seconds}s; a run stops writing ` +
                    `${(deadlineMs / 1000).toFixed(1)}s after its last renewal${timeout ? `, so that a write with a request timeout of ${timeout}s is answered or abandoned before it expires` : ""}` +
                    `${lastFailure ? `; the last renewal failed: ${lastFailure}` : ""})`,
            );
    };
    ctx.cluster.fenceWrites(fence);
    // one renewal at a time; the release waits for the one in flight, so no renewal lands after it
    let renewing: Promise<void> | undefined;
    const timer = setInterval(
        () => {
            try {
                fence();
            } catch {
                return; // lost: the run is stopping, and renews nothing more
            }
            const sentAt = performance.now();
            renewing ??= ctx.cluster
                .renewLease(holder)
                .then(
                    (ok) => {
                        if (ok) confirmedAt = Math.max(confirmedAt, sentAt);
                        else loseLease("the rollout lease was taken over by another run");
                    },
                    (e) => {
                        lastFailure = (e as Error).message;
                        ctx.log(`warning: renewing the rollout lease failed: ${lastFailure}`);
                    },
                )
                .finally(() => (renewing = undefined));
        },
        (seconds * 1000) / 3,
    );
    timer.unref?.();
    try {
        // the lease says who is live: the probe pods of a run that held it before are left over
        await ctx.cluster
            .sweepProbePods(holder, ctx.log)
            .catch((e) => ctx.log(`warning: removing probe pods a dead run left failed: ${(e as Error).message}`));
        return await fn({ ...ctx, holder, signal: stop.signal });
    } finally {
        clearInterval(timer);
        outer?.removeEventListener("abort", onOuter);
        await renewing;
        // the release is a compare-and-swap on the holder: it frees the lease only if it is still ours
        await ctx.cluster
            .releaseLease(holder)
            .catch((e) => ctx.log(`warning: releasing the rollout lease failed: ${(e as Error).message}`));
        ctx.cluster.close();
    }
}
