// Putting nodes back: a failed move released or rolled back to its origin, the bridge deleted on
// every path, and what a dead run left made safe before the next one moves anything.
import { type FirstSyncLimits } from "../core/firstSync.js";
import { MARKS } from "../core/plan.js";
import type { ProxyMode } from "../core/types.js";
import { type Installation, type NodeMove, type RolloutNode } from "./cluster.js";
import { copyBridge, movesBridged, removeBridge } from "./bridge.js";
import { BRIDGE_TABLE } from "../core/bridge.js";
import { limitsFor } from "./firstSync.js";

import { firstSync, verifyNode } from "./checks.js";
import { Log, Context, modeOfPlacement, probeRunSettings, describePlacement, checksMark } from "./context.js";
import { LeaseLost, CheckFailed } from "./errors.js";
import { firstSyncDone } from "./events.js";

/** Where a node's move is: each step runs only after the one before it ended. */
export type NodeStep = "start" | "drain" | "bridge" | "cleanup" | "restart" | "verify";

/** Whether kube-proxy may have been restarted at this step (else the node is as it was). */
function restarted(step: NodeStep): boolean {
    return step !== "start" && step !== "drain" && step !== "bridge";
}

/**
 * How a node's cordon ended after the run lifted it as its own, in words. When the cordon's answer
 * was lost the run took the cordon for its own (the node was not cordoned when listed), yet someone
 * may have cordoned the node just before: an uncordon lifts only the rollout's cordon, so then the
 * node is read to tell which happened.
 */
async function uncordonWords(
    ctx: Context,
    node: string,
    unanswered: boolean,
    words: { lifted: string; kept: string },
): Promise<string> {
    if (!unanswered) return words.lifted;
    const now = await ctx.cluster.nodes().then(
        (all) => all.find((n) => n.name === node),
        () => undefined,
    );
    if (!now)
        return `${words.lifted} if its cordon was the rollout's (the cordon's answer was lost, and the node could not be read since)`;
    return now.unschedulable
        ? `${words.kept}: someone else cordoned it just before the rollout's cordon, whose answer was lost, and the rollout lifts only its own cordon`
        : words.lifted;
}

/** Puts a node back on `origin` (the configuration it was verified on) and releases it; the move memory goes last. */
export async function rollBack(
    ctx: Context,
    node: string,
    move: NodeMove,
    originMode: ProxyMode,
    ours: boolean,
    log: Log,
    unanswered = false,
    limits?: FirstSyncLimits,
    bridges = false,
): Promise<string> {
    log(`rolling back to ${describePlacement(move.from)} (${originMode})`);
    let rollback: NodeMove = { ...move, phase: "rolling-back" };
    if (bridges) {
        // a rollback to iptables has the same window as the move: bridged the same way, but a
        // bridge that cannot be made does not stop the rollback (whatever was copied is deleted)
        rollback = { ...rollback, bridge: BRIDGE_TABLE };
        await ctx.cluster.writeNode(node, { move: rollback });
        const v = await copyBridge(probeRunSettings(ctx), node).catch((e: unknown) => ({
            ok: false,
            detail: (e as Error).message,
        }));
        log(v.ok ? v.detail : `rolling back without a bridge: ${v.detail}`);
    }
    await ctx.cluster.writeNode(node, { move: rollback, placement: move.from });
    await ctx.cluster.waitForKubeProxy(node, move.from, ctx.spec.verify.podTimeoutSeconds);
    if (ctx.spec.verify.nodeChecks) {
        const seconds = await firstSync(
            ctx,
            node,
            originMode,
            limits ?? limitsFor(probeRunSettings(ctx), {}, {}),
            log,
            "after rollback: ",
        );
        log(firstSyncDone(originMode, seconds));
    }
    await dropBridge(ctx, node, rollback, log);
    const back = await verifyNode(ctx, node, originMode, { cleanLeftovers: false, log });
    const mode = back.find((c) => c.check === "mode");
    if (mode && !mode.ok) throw new Error(`after rollback: ${mode.detail}`);
    // verified again on a configuration hash it went back to; nothing recorded for the installer's
    await ctx.cluster.writeNode(node, {
        verified: { hash: move.from, checks: move.from === null ? "" : checksMark(ctx) },
        move: null,
        ...(ours ? { uncordon: true as const } : {}),
    });
    const cordon = ours
        ? await uncordonWords(ctx, node, unanswered, { lifted: "uncordoned", kept: "left cordoned" })
        : "left cordoned as it was before";
    return `node ${node} was rolled back to ${originMode} mode (${describePlacement(move.from)}) and ${cordon}`;
}

/** Makes the bridge before a move's restart; a bridge that cannot be made, or is wrong, fails the move before it. */
export async function makeBridge(ctx: Context, node: string, log: Log): Promise<void> {
    const v = await copyBridge(probeRunSettings(ctx), node);
    if (!v.ok) throw new CheckFailed("bridge", v.detail);
    log(v.detail);
}

/** Deletes the bridge a move recorded, then forgets it; throws CheckFailed("bridge") while one is left. */
export async function dropBridge(ctx: Context, node: string, move: NodeMove, log: Log): Promise<NodeMove> {
    if (!move.bridge) return move;
    const v = await removeBridge(probeRunSettings(ctx), node);
    if (!v.ok) throw new CheckFailed("bridge", v.detail);
    log(v.detail);
    const rest: NodeMove = { ...move, bridge: undefined };
    await ctx.cluster.writeNode(node, { move: rest });
    return rest;
}

/**
 * Whether putting a node back on its origin bridges: it runs nftables mode (on `current`) and
 * goes back to iptables mode, with node checks on (the probe pod makes the copy).
 */
export async function rollbackBridges(
    ctx: Context,
    inst: Installation,
    current: string | null,
    move: NodeMove,
    originMode: ProxyMode,
): Promise<boolean> {
    if (!ctx.spec.verify.nodeChecks || originMode !== "iptables") return false;
    if (current === move.from || current === MARKS.holdValue) return false;
    return movesBridged(await modeOfPlacement(ctx, inst, current), originMode);
}

/**
 * After a failed move: a node not yet restarted is released unchanged; one restarted is rolled
 * back to its origin (onFailure rollback-node, or an interruption) or left cordoned (stop).
 * Returns what happened, in words; a failing rollback is reported, never thrown.
 */
export async function recoverNode(
    ctx: Context,
    inst: Installation,
    move: NodeMove,
    at: {
        node: string;
        step: NodeStep;
        check: string;
        ours: boolean;
        cordoned: boolean;
        unanswered: boolean;
        limits?: FirstSyncLimits;
    },
    log: Log,
): Promise<string> {
    const { node, step, check, ours, cordoned, unanswered, limits } = at;
    try {
        if (!restarted(step)) {
            // kube-proxy was not restarted: delete any copy, release the node, forget the move
            await dropBridge(ctx, node, move, log);
            await ctx.cluster.writeNode(node, { move: null, ...(ours ? { uncordon: true as const } : {}) });
            const cordon = ours
                ? await uncordonWords(ctx, node, unanswered, { lifted: "was uncordoned", kept: "stays cordoned" })
                : cordoned
                  ? "stays cordoned as before"
                  : "was not cordoned";
            const what = step === "drain" ? "drain" : step === "bridge" ? "bridge" : "move";
            return `node ${node} was not changed (${check === "interrupted" ? "stopped before its restart" : `its ${what} failed`}) and ${cordon}`;
        }
        if (ctx.spec.onFailure === "rollback-node" || check === "interrupted") {
            const originMode = await modeOfPlacement(ctx, inst, move.from);
            const bridges = await rollbackBridges(ctx, inst, move.to, move, originMode);
            return await rollBack(ctx, node, move, originMode, ours, log, unanswered, limits, bridges);
        }
        // left for inspection on the failed mode: a copy of the old rules must not route there for good
        const bridge = await dropBridge(ctx, node, move, log).then(
            () => "",
            (be: unknown) =>
                `; ITS BRIDGE COULD NOT BE REMOVED (${(be as Error).message}): nftables table ${move.bridge} routes stale rules until the next run removes it`,
        );
        return `onFailure is "stop": node ${node} is left on ${describePlacement(move.to)} and cordoned for inspection; the next run rolls it back to ${describePlacement(move.from)} if it fails again${bridge}`;
    } catch (re) {
        if (re instanceof LeaseLost)
            return `node ${node} is left as it is, mid-move and cordoned (the rollout lease was lost, so nothing more was written); the next run finishes its move or puts it back on ${describePlacement(move.from)}`;
        return `ROLLBACK OF ${node} FAILED: ${(re as Error).message}; the node is left cordoned for inspection, and the next run puts it back on ${describePlacement(move.from)}`;
    }
}

/**
 * What a dead run left on the nodes of these pools, made safe before anything else moves: a move
 * towards another placement (an older target) is undone to its origin; a node verified on the
 * target but still cordoned by the rollout is released. Moves towards the current target are
 * left to the plan, which resumes them with their recorded origin.
 */
export async function reconcile(
    ctx: Context,
    inst: Installation,
    nodes: RolloutNode[],
    wanted: string | null,
    hash: string,
): Promise<void> {
    for (const n of nodes) {
        const log: Log = (l) => ctx.log(`node ${n.name}: ${l}`);
        const doneHere = n.placement === wanted && (wanted === null || n.verified === hash);
        if (n.move && n.move.to !== wanted) {
            log(
                `a previous run left a move to ${describePlacement(n.move.to)} (phase ${n.move.phase}); putting the node back on ${describePlacement(n.move.from)}`,
            );
            if (n.placement !== n.move.from) {
                const mode = await modeOfPlacement(ctx, inst, n.move.from);
                const bridges = await rollbackBridges(ctx, inst, n.placement, n.move, mode);
                log(await rollBack(ctx, n.name, n.move, mode, n.cordonedByRollout, log, false, undefined, bridges));
            } else {
                await dropBridge(ctx, n.name, n.move, log);
                await ctx.cluster.writeNode(n.name, {
                    move: null,
                    ...(n.cordonedByRollout ? { uncordon: true as const } : {}),
                });
            }
        } else if (n.move && n.move.phase === "rolling-back") {
            // the previous run had judged the move failed: finish that rollback; the plan retries the node
            log(`a previous run was rolling the node back; finishing that`);
            const mode = await modeOfPlacement(ctx, inst, n.move.from);
            const bridges = await rollbackBridges(ctx, inst, n.placement, n.move, mode);
            log(await rollBack(ctx, n.name, n.move, mode, n.cordonedByRollout, log, false, undefined, bridges));
        } else if (doneHere && (n.move || n.cordonedByRollout)) {
            if (n.move) await dropBridge(ctx, n.name, n.move, log);
            await ctx.cluster.writeNode(n.name, {
                ...(n.move ? { move: null } : {}),
                ...(n.cordonedByRollout ? { uncordon: true as const } : {}),
            });
            if (n.cordonedByRollout)
                log("verified on the target by a previous run, which did not release it: uncordoned");
        }
    }
}
