// One node's move: cordon, drain, bridge or ipvs cleanup, restart on the target, first sync,
// checks, release; on failure, the recovery. Each action is recorded on the node before it runs.
import { type FirstSyncLimits, type NodeSyncs, type SyncBaseline } from "../core/firstSync.js";
import { formatDuration } from "../core/duration.js";
import { MARKS, targetPlacement, type PoolPlan, type RolloutTarget } from "../core/plan.js";
import { type Installation, type NodeMove, type RolloutNode } from "./cluster.js";
import { movesBridged } from "./bridge.js";
import { BRIDGE_TABLE } from "../core/bridge.js";

import { cleanNode, nodeSyncLimits, firstSync, measuredSyncs, checkNode } from "./checks.js";
import {
    Log,
    NodeOutcome,
    Context,
    originOf,
    modeOfPlacement,
    describePlacement,
    checksMark,
    stopIfInterrupted,
    cordonedByRollout,
    emit,
} from "./context.js";
import type { StepKind } from "./events.js";
import { RolloutFailure, LeaseLost, CheckFailed } from "./errors.js";
import { makeBridge, dropBridge, recoverNode, type NodeStep } from "./recovery.js";

/** ipvs -> iptables: iptables mode does not remove ipvs state, so stop kube-proxy on the node, clean, then start the new one. */
async function stopAndCleanIpvs(ctx: Context, node: string, podTimeoutSeconds: number, log: Log): Promise<void> {
    await ctx.cluster.writeNode(node, { placement: MARKS.holdValue });
    await ctx.cluster.waitForKubeProxy(node, MARKS.holdValue, podTimeoutSeconds);
    log("kube-proxy stopped; removing ipvs leftovers (iptables mode does not)");
    await cleanNode(ctx, node, await ctx.cluster.serviceAddresses(), undefined, log);
}

/** Evicts the node's pods as kubectl drain would (the pool's options and timeout). */
async function drainNode(ctx: Context, pool: PoolPlan, node: string, log: Log): Promise<void> {
    log(`draining (timeout ${pool.drainTimeoutSeconds === 0 ? "none" : formatDuration(pool.drainTimeoutSeconds)})`);
    await ctx.cluster.drain(node, pool.drainTimeoutSeconds, log, pool.drainOptions);
    log("drained");
}

/**
 * A node that passed its checks: marked verified (a hand-back keeps the time the node was first
 * verified on this configuration), uncordoned if the rollout cordoned it, its move forgotten.
 */
async function releaseVerified(
    ctx: Context,
    pool: PoolPlan,
    n: RolloutNode,
    target: RolloutTarget,
    how: { handBack: boolean; ours: boolean; syncs?: NodeSyncs },
    log: Log,
): Promise<void> {
    // one write: verified, uncordoned, the move forgotten (a crash before it redoes the checks),
    // and what the move measured, for later previews
    await ctx.cluster.writeNode(n.name, {
        move: null,
        ...(how.handBack && n.verified === target.hash
            ? {}
            : { verified: { hash: target.hash, checks: checksMark(ctx) } }),
        ...(how.ours ? { uncordon: true as const } : {}),
        ...(how.syncs ? { syncs: how.syncs } : {}),
    });
    if (how.ours) log("uncordoned");
    emit(ctx, {
        type: "released",
        pool: pool.name,
        node: n.name,
        step: how.handBack ? "hand-back" : "move",
        how: how.handBack ? "handed back" : ctx.spec.verify.nodeChecks ? "verified" : "moved",
        hooks: ctx.spec.verify.hooks.length,
    });
}

/** Moves one node to the target, verifies it, and releases it; rolls it back to its origin on failure. */
export async function moveNode(
    ctx: Context,
    inst: Installation,
    pool: PoolPlan,
    n: RolloutNode,
    target: RolloutTarget,
): Promise<NodeOutcome> {
    const node = n.name;
    const log: Log = (l) => ctx.log(`pool ${pool.name} node ${node}: ${l}`);
    const wanted = targetPlacement(target);
    const origin = originOf(n, wanted);
    // the finish's hand-back: the same configuration, from its own DaemonSet to the installer's
    const handBack = target.canonical && origin === target.hash;
    const kind: StepKind = handBack ? "hand-back" : "move";
    // the move's memory as last written (or about to be): its phase, its baseline, its bridge; what
    // recovery puts back or rolls back from
    let move: NodeMove = { to: wanted, from: origin, phase: "started" };
    const interrupted = () => stopIfInterrupted(ctx);
    // whether the cordon is the rollout's: from the cordon's write on, what it would answer for the
    // node as listed, kept when its answer is lost (an uncordon lifts only the rollout's own cordon,
    // as the node is read, so a cordon someone made since the listing is kept either way)
    let ours = n.cordonedByRollout;
    let cordoned = n.unschedulable;
    // the cordon's write sent and not answered (yet, or its answer lost)
    let unanswered = false;
    const cordon = () => {
        ours = !n.unschedulable || n.cordonedByRollout;
        cordoned = true;
        unanswered = true;
    };
    let step: NodeStep = "start";
    let limits: FirstSyncLimits | undefined;
    try {
        const fromMode = await modeOfPlacement(ctx, inst, origin);
        let baseline: SyncBaseline = {};
        let recorded = false;
        if (ctx.spec.verify.nodeChecks)
            ({ limits, baseline, recorded } = await nodeSyncLimits(ctx, pool, n, wanted, [fromMode, target.mode], log));
        if (baseline.seconds !== undefined) move = { ...move, baseline };
        // the bridge is recorded before it is made; a move resumed past its restart keeps the one it made
        const bridges = ctx.spec.verify.nodeChecks && movesBridged(fromMode, target.mode) && n.placement !== wanted;
        if (bridges) move = { ...move, bridge: BRIDGE_TABLE };
        else if (n.move?.to === wanted && n.move.bridge) move = { ...move, bridge: n.move.bridge };
        if (n.move?.to === wanted)
            log(`resuming a move a previous run left in phase ${n.move.phase} (origin ${describePlacement(origin)})`);
        const podTimeout = ctx.spec.verify.podTimeoutSeconds;
        const drains = pool.drain && !handBack;
        const cleansIpvs =
            fromMode === "ipvs" && target.mode === "iptables" && ctx.spec.verify.nodeChecks && n.placement !== wanted;
        if (!drains && !cleansIpvs && !bridges) {
            // nothing to do between the cordon and the restart: the memory (already switching), the
            // cordon and the placement in one write. An answer lost on the way is handled as a
            // restart that failed: rolled back to the origin (harmless if the write never landed)
            step = "restart";
            cordon();
            move = { ...move, phase: "switching" };
            ours = await ctx.cluster.startMove(node, move, wanted);
            unanswered = false;
            emit(ctx, { type: "cordoned", pool: pool.name, node, step: kind, ours });
        } else {
            // the move's memory and the cordon, in one write
            cordon();
            ours = await ctx.cluster.startMove(node, move);
            unanswered = false;
            interrupted();
            step = "drain";
            emit(ctx, { type: "cordoned", pool: pool.name, node, step: kind, ours });
            if (drains) await drainNode(ctx, pool, node, log);
            interrupted();
            step = "restart";
            if (cleansIpvs) {
                step = "cleanup";
                move = { ...move, phase: "switching" };
                await ctx.cluster.writeNode(node, { move });
                await stopAndCleanIpvs(ctx, node, podTimeout, log);
                step = "restart";
                await ctx.cluster.writeNode(node, { placement: wanted });
            } else {
                if (bridges) {
                    step = "bridge";
                    await makeBridge(ctx, node, log);
                    interrupted();
                    step = "restart";
                }
                // the phase and the placement in one write: the memory never lags the label
                move = { ...move, phase: "switching" };
                await ctx.cluster.writeNode(node, { move, placement: wanted });
            }
        }
        // a hand-back's pod is of the restore's revision when its batch ends (started so, or labelled
        // here), so the restore after the last one has no pod left to label
        const pod = await ctx.cluster.waitForKubeProxy(node, wanted, podTimeout, { labelForRestore: handBack });
        emit(ctx, { type: "kube-proxy running", pool: pool.name, node, step: kind, pod: pod?.name, placement: wanted });
        interrupted();
        step = "verify";
        const firstSeconds = limits ? await firstSync(ctx, node, target.mode, limits, log) : undefined;
        if (firstSeconds !== undefined) {
            const { seconds, metric } = baseline;
            const old = seconds === undefined ? {} : { old: { seconds, metric: metric ?? "all", recorded } };
            emit(ctx, {
                type: "first sync",
                pool: pool.name,
                node,
                step: kind,
                mode: target.mode,
                seconds: firstSeconds,
                ...old,
            });
        }
        // the new mode routes: the bridge goes before the checks, which count it as left behind;
        // the memory forgets it only once its delete is confirmed
        move = await dropBridge(ctx, node, move, log);
        interrupted();
        const checks = await checkNode(ctx, pool, node, target.mode, kind, log);
        // from here on the node is good: an interruption lets it finish
        const syncs = measuredSyncs(n.syncs, { mode: fromMode, baseline }, { mode: target.mode, firstSeconds });
        await releaseVerified(ctx, pool, n, target, { handBack, ours, syncs }, log);
        return { node, pool: pool.name, result: ctx.spec.verify.nodeChecks ? "verified" : "moved", checks };
    } catch (e) {
        const check = e instanceof CheckFailed ? e.check : e instanceof LeaseLost ? "lease" : step;
        const detail = (e as Error).message;
        log(`FAILED ${check}: ${detail.split("\n")[0]}`);
        const rolledBack = await recoverNode(
            ctx,
            inst,
            move,
            { node, step, check, ours, cordoned, unanswered, limits },
            log,
        );
        log(rolledBack);
        let unlisted: string | undefined;
        const leftCordoned = await cordonedByRollout(ctx).catch((le: unknown) => {
            unlisted = (le as Error).message;
            return [] as string[];
        });
        const output = e instanceof CheckFailed ? e.output : undefined;
        throw new RolloutFailure(node, pool.name, check, detail, rolledBack, leftCordoned, unlisted, output);
    }
}
