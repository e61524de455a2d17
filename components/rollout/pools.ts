// Pools in order, nodes in batches of maxUnavailable, then the pool's soak; a regression in the
// soak fails the pool like a failed node.
import { slowSyncProblem, type FullSyncTotals } from "../core/firstSync.js";
import { formatDuration } from "../core/duration.js";
import { targetPlacement, type PoolPlan, type RolloutTarget } from "../core/plan.js";
import { nameList } from "../core/text.js";
import { type Installation, type KubeProxyPod, type NodeMove, type RolloutNode } from "./cluster.js";
import { readFullSyncTotals } from "./firstSync.js";

import { verifyNode } from "./checks.js";
import {
    Log,
    NodeOutcome,
    Context,
    clockOf,
    currentPlan,
    modeOfPlacement,
    probeRunSettings,
    describePlacement,
    cordonedByRollout,
    emit,
} from "./context.js";
import { RolloutFailure, RolloutInterrupted } from "./errors.js";
import { withLease } from "./lease.js";
import { moveNode } from "./nodeMove.js";
import { rollBack, rollbackBridges, reconcile } from "./recovery.js";

/** Runs the named pools (all when none is named), in the declared order. Takes the cluster's lease. */
export async function runPools(ctx: Context, only?: string[]): Promise<NodeOutcome[]> {
    return withLease(ctx, (c) => movePools(c, only));
}

/** One pool: its skipped nodes named, its batches moved in order (stopping at the first failure), progress, and its soak. */
async function movePool(
    ctx: Context,
    inst: Installation,
    pool: PoolPlan,
    byName: Map<string, RolloutNode>,
    target: RolloutTarget,
    last: boolean,
): Promise<NodeOutcome[]> {
    const outcomes: NodeOutcome[] = [];
    const started = clockOf(ctx).now();
    const toMove = pool.batches.flat().length;
    ctx.log(
        `pool ${pool.name}: ${pool.nodes.length} node(s), ${toMove} to move, at most ${pool.maxUnavailable} at a time`,
    );
    for (const n of pool.nodes.filter((x) => x.action === "done"))
        outcomes.push({ node: n.name, pool: pool.name, result: "skipped", checks: [] });
    const done = pool.nodes.filter((x) => x.action === "done").map((x) => x.name);
    // every skipped node named, up to a screenful; beyond that, how many
    const state = (d: string) => (byName.get(d)?.verified === target.hash ? "already verified on" : "already runs");
    if (done.length <= 50)
        for (const d of done) ctx.log(`pool ${pool.name} node ${d}: ${state(d)} ${target.hash}, skipped`);
    else
        ctx.log(
            `pool ${pool.name}: ${done.length} node(s) already on ${describePlacement(targetPlacement(target))}, skipped (${done[0]} ... ${done[done.length - 1]})`,
        );
    let moved = 0;
    for (const [i, batch] of pool.batches.entries()) {
        if (ctx.signal?.aborted) throw interruptedError(ctx, pool, batch);
        emit(ctx, {
            type: "batch started",
            pool: pool.name,
            step: target.canonical ? "hand-back" : "move",
            index: i + 1,
            of: pool.batches.length,
            nodes: batch,
        });
        const settled = await Promise.allSettled(
            batch.map((node) => moveNode(ctx, inst, pool, byName.get(node)!, target)),
        );
        const failure = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
        for (const s of settled) if (s.status === "fulfilled") outcomes.push(s.value);
        if (failure) {
            ctx.log(`pool ${pool.name}: stopped at the first failure; later batches and pools are untouched`);
            throw failure.reason;
        }
        moved += batch.length;
        ctx.log(progressLine(pool, moved, toMove, clockOf(ctx).now() - started));
    }
    if (ctx.signal?.aborted && !last) throw interruptedError(ctx, pool, []);
    if (pool.soakSeconds > 0 && !target.canonical) await soak(ctx, inst, pool, target);
    ctx.log(`pool ${pool.name}: done in ${formatDuration(Math.round((clockOf(ctx).now() - started) / 1000))}`);
    return outcomes;
}

export async function movePools(
    ctx: Context,
    only?: string[],
    read?: Awaited<ReturnType<typeof currentPlan>>,
): Promise<NodeOutcome[]> {
    let { inst, plan, findings, nodes } = read ?? (await currentPlan(ctx));
    const errors = findings.filter((f) => f.severity === "error");
    if (errors.length)
        throw new Error(
            `the rollout plan is not valid:\n${errors.map((e) => `- ${e.field}: ${e.message}`).join("\n")}`,
        );
    const unknown = (only ?? []).filter((n) => !plan.pools.some((p) => p.name === n));
    if (unknown.length)
        throw new Error(`no pool named ${unknown.join(", ")}; pools: ${plan.pools.map((p) => p.name).join(", ")}`);
    const selected = (p: PoolPlan) => !only || only.includes(p.name);
    const members = new Set(plan.pools.filter(selected).flatMap((p) => p.nodes.map((n) => n.name)));
    const wanted = targetPlacement(plan.target);
    const leftovers = nodes.filter((n) => members.has(n.name) && (n.move || n.cordonedByRollout));
    if (leftovers.length) {
        await reconcile(ctx, inst, leftovers, wanted, plan.target.hash);
        ({ inst, plan, findings, nodes } = await currentPlan(ctx));
    }
    const target = plan.target;
    const pools = plan.pools.filter(selected);
    const byName = new Map(nodes.map((n) => [n.name, n]));
    const outcomes: NodeOutcome[] = [];
    if (pools.every((p) => p.batches.length === 0)) {
        ctx.log(
            `nothing to move in pool(s) ${pools.map((p) => p.name).join(", ")}: every node already runs ${target.mode} on configuration ${target.hash}`,
        );
    } else if (!target.canonical)
        await ctx.cluster.prepare({ hash: target.hash, config: ctx.spec.target.config }, ctx.log);
    for (const [i, pool] of pools.entries()) {
        outcomes.push(...(await movePool(ctx, inst, pool, byName, target, i === pools.length - 1)));
    }
    return outcomes;
}

function progressLine(pool: PoolPlan, done: number, total: number, elapsedMs: number): string {
    const rate = done / Math.max(elapsedMs / 1000, 0.001);
    const eta = rate > 0 ? Math.round((total - done) / rate) : 0;
    return `pool ${pool.name}: ${done}/${total} node(s) moved, ${(rate * 60).toFixed(1)}/min${done < total ? `, about ${formatDuration(eta)} left` : ""}`;
}

function interruptedError(ctx: Context, pool: PoolPlan, next: string[]): RolloutInterrupted {
    return new RolloutInterrupted(
        `the rollout was stopped (${String(ctx.signal?.reason ?? "signal")}) ${next.length ? `between batches of pool ${pool.name}` : `after pool ${pool.name}`}: every node moved so far is verified and released; ` +
            `${next.length ? `next were ${nameList(next)}; ` : ""}run it again to resume`,
    );
}

/**
 * The soak after a pool: its clock starts when the pool's last node was verified (recorded on the
 * nodes), so a resumed run waits only the remainder. Meanwhile the pool's kube-proxy pods are
 * watched (a restart, a crash, a pod not ready is a regression), and at the end every node of the
 * pool is checked again (mode, last sync). A regression fails the pool and rolls the node back.
 */
export async function soak(ctx: Context, inst: Installation, pool: PoolPlan, target: RolloutTarget): Promise<void> {
    const clock = clockOf(ctx);
    const names = new Set(pool.nodes.map((n) => n.name));
    const nodes = (await ctx.cluster.nodes()).filter((n) => names.has(n.name));
    const times = nodes.map((n) => (n.verifiedAt ? Date.parse(n.verifiedAt) : NaN)).filter((t) => !Number.isNaN(t));
    const start = times.length ? Math.max(...times) : clock.now();
    const until = start + pool.soakSeconds * 1000;
    const left = until - clock.now();
    if (left <= 0) {
        ctx.log(
            `pool ${pool.name}: soak of ${formatDuration(pool.soakSeconds)} already held (the pool finished ${new Date(start).toISOString()})`,
        );
        return;
    }
    const resumed = left < pool.soakSeconds * 1000 - 5000;
    ctx.log(
        `pool ${pool.name}: soaking ${formatDuration(Math.ceil(left / 1000))}${resumed ? ` (the remainder of ${formatDuration(pool.soakSeconds)} that started ${new Date(start).toISOString()})` : ""} before the next pool`,
    );
    // one list of kube-proxy's pods per check, whatever the pool's size
    const podsByNode = async () => {
        const byNode = new Map<string, KubeProxyPod[]>(nodes.map((n) => [n.name, []]));
        for (const p of await ctx.cluster.kubeProxyPods()) byNode.get(p.node)?.push(p);
        return byNode;
    };
    const baseline = new Map<string, { name: string; restarts: number }>();
    for (const [node, pods] of await podsByNode())
        for (const p of pods) if (!p.deleting) baseline.set(node, { name: p.name, restarts: p.restarts });
    // the full syncs' totals at the start: a node whose syncs slow down during the soak fails it
    const syncsAtStart = new Map<string, FullSyncTotals | undefined>();
    if (ctx.spec.verify.nodeChecks)
        for (const n of nodes) syncsAtStart.set(n.name, await readFullSyncTotals(probeRunSettings(ctx), n.name));
    const every = (ctx.soakCheckSeconds ?? 30) * 1000;
    for (;;) {
        const remaining = until - clock.now();
        if (remaining > 0) await clock.sleep(Math.min(every, remaining), ctx.signal);
        if (ctx.signal?.aborted) {
            throw new RolloutInterrupted(
                `the rollout was stopped (${String(ctx.signal.reason ?? "signal")}) during the soak of pool ${pool.name}: its nodes are verified and released; the next run waits the remainder`,
            );
        }
        const current = await podsByNode();
        for (const n of nodes) {
            const problem = podRegression(current.get(n.name) ?? [], baseline.get(n.name));
            if (problem) await soakFailure(ctx, inst, pool, n, problem);
        }
        if (clock.now() >= until) break;
        ctx.log(
            `pool ${pool.name}: soaking, ${formatDuration(Math.ceil((until - clock.now()) / 1000))} left; ${nodes.length} node(s) steady`,
        );
    }
    if (ctx.spec.verify.nodeChecks) {
        for (const n of nodes) {
            const checks = await verifyNode(ctx, n.name, target.mode, {
                cleanLeftovers: false,
                log: (l) => ctx.log(`pool ${pool.name} node ${n.name}: ${l}`),
            });
            const bad = checks.find((c) => !c.ok && (c.check === "mode" || c.check === "sync" || c.check === "rules"));
            if (bad) await soakFailure(ctx, inst, pool, n, `${bad.check}: ${bad.detail}`);
            const slow = slowSyncProblem(
                syncsAtStart.get(n.name),
                await readFullSyncTotals(probeRunSettings(ctx), n.name),
                ctx.spec.verify.firstSyncMinSeconds,
            );
            if (slow) await soakFailure(ctx, inst, pool, n, `sync: ${slow}`);
        }
    }
    ctx.log(`pool ${pool.name}: soak held, every node still on ${target.mode}`);
}

/** What went wrong with a node's kube-proxy since the soak began: a restart, a replaced pod, a pod not running. */
function podRegression(
    pods: { name: string; restarts: number; ready: boolean; phase?: string; problem?: string; deleting: boolean }[],
    baseline: { name: string; restarts: number } | undefined,
): string | undefined {
    const live = pods.filter((p) => !p.deleting);
    if (live.length !== 1) return `${live.length} kube-proxy pods on the node`;
    const p = live[0];
    if (baseline && p.name !== baseline.name)
        return `kube-proxy pod ${baseline.name} was replaced by ${p.name} during the soak`;
    if (baseline && p.restarts > baseline.restarts)
        return `kube-proxy pod ${p.name} restarted (${p.restarts - baseline.restarts} time(s) during the soak)`;
    if (p.problem || p.phase !== "Running" || !p.ready)
        return `kube-proxy pod ${p.name} is ${p.problem ?? p.phase}${p.ready ? "" : ", not ready"}`;
    return undefined;
}

async function soakFailure(
    ctx: Context,
    inst: Installation,
    pool: PoolPlan,
    n: RolloutNode,
    problem: string,
): Promise<never> {
    const log: Log = (l) => ctx.log(`pool ${pool.name} node ${n.name}: ${l}`);
    log(`FAILED soak: ${problem}`);
    let rolledBack: string;
    if (ctx.spec.onFailure === "rollback-node") {
        try {
            // a verified node's move memory is gone: its origin is the installer's DaemonSet, which
            // still runs the configuration every node ran before the rollout
            const move: NodeMove = { to: n.placement, from: null, phase: "rolling-back" };
            const ours = await ctx.cluster.startMove(n.name, move);
            const originMode = await modeOfPlacement(ctx, inst, null);
            const bridges = await rollbackBridges(ctx, inst, n.placement, move, originMode);
            rolledBack = await rollBack(ctx, n.name, move, originMode, ours, log, false, undefined, bridges);
        } catch (re) {
            rolledBack = `ROLLBACK OF ${n.name} FAILED: ${(re as Error).message}; the node is left cordoned for inspection`;
        }
    } else rolledBack = `onFailure is "stop": node ${n.name} is left on ${describePlacement(n.placement)}`;
    log(rolledBack);
    // a list that fails is said so, never "no node is left cordoned"
    let unlisted: string | undefined;
    const leftCordoned = await cordonedByRollout(ctx).catch((le: unknown) => {
        unlisted = (le as Error).message;
        return [] as string[];
    });
    throw new RolloutFailure(n.name, pool.name, "soak", problem, rolledBack, leftCordoned, unlisted);
}
