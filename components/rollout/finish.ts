// The finish: every node verified on the target, the installer's ConfigMap written, the nodes
// handed back to the installer's DaemonSet in batches, checked, and its spec restored.
import { type PoolPlan, type RolloutPlan } from "../core/plan.js";
import { nameList } from "../core/text.js";
import { podVerdict, type KubeProxyPod } from "../core/kubeProxyPods.js";

import { verifyNode } from "./checks.js";
import { Context, currentPlan } from "./context.js";
import { withLease } from "./lease.js";
import { movePools } from "./pools.js";

/**
 * When every pool is verified: moves any node that is not (a node that joined a pool after its
 * step, a node a dead run left), refuses unless every Linux node of every pool is verified on the
 * target, then writes the installer's ConfigMap, hands each node back to the installer's
 * DaemonSet in batches of its pool's maxUnavailable (each checked like a move), restores the
 * installer's DaemonSet spec, and checks every node once more on it. Takes the cluster's lease.
 */
export async function finish(ctx: Context): Promise<void> {
    return withLease(ctx, async (c) => {
        const plan = await verifyAllThenWriteConfig(c);
        // the ConfigMap holds the target: every node goes back to the installer's DaemonSet, its
        // pods started as of the revision the restore will make current where the cluster allows
        await c.cluster.prepareHandBack(c.log);
        await movePools(c);
        if ((await c.cluster.installation()).inRollout) {
            const podTimeout = c.spec.verify.podTimeoutSeconds;
            await c.cluster.restoreInstallation(c.log);
            await c.cluster.waitForDaemonSetRollout(
                podTimeout *
                    Math.max(
                        1,
                        plan.pools.reduce((s, p) => s + Math.ceil(p.nodes.length / p.maxUnavailable), 0),
                    ),
                c.log,
            );
            await finalCheck(c, plan);
        }
        c.log(`finished: every node runs ${c.spec.target.mode} from the installer's DaemonSet and ConfigMap`);
    });
}

/**
 * The finish's first part: moves any node of a pool that is not verified on the target (with its
 * pool's limits), refuses unless every one is, then writes the installer's ConfigMap. Returns the
 * plan the rest of the finish goes by. Only the plan outlives this: the node lists read here are
 * not held through the hand-back, which reads its own (one list, not two, per node at a time).
 */
async function verifyAllThenWriteConfig(c: Context): Promise<RolloutPlan> {
    const first = await currentPlan(c);
    if (first.plan.target.canonical) return first.plan;
    const late = first.plan.pools.flatMap((p) =>
        p.nodes.filter((n) => n.action === "move").map((n) => `${n.name} (pool ${p.name})`),
    );
    if (late.length)
        c.log(
            `finish: ${late.length} node(s) are not verified on ${c.spec.target.hash} (joined after their pool's step, or left by a run): ${nameList(late)}; moving them now, with their pools' limits (each is logged as it moves)`,
        );
    // the cluster is read again only when this run moved or released a node
    const leftovers = first.nodes.some((n) => n.move || n.cordonedByRollout);
    await movePools(c, undefined, first);
    const again = late.length || leftovers ? await currentPlan(c) : first;
    const notVerified = again.plan.pools.flatMap((p) => p.nodes.filter((n) => n.action !== "done").map((n) => n.name));
    if (notVerified.length) {
        throw new Error(
            `cannot finish: ${notVerified.length} node(s) are not verified on ${c.spec.target.hash} (${nameList(notVerified)}; \`kube-proxy-mode status\` lists every node's verification); the installer's ConfigMap is unchanged`,
        );
    }
    await c.cluster.writeCanonicalConfig(c.spec.target.config);
    c.log(
        `ConfigMap ${c.cluster.names.namespace}/${c.cluster.names.configMap}: ${c.cluster.names.key} now holds configuration ${c.spec.target.hash}`,
    );
    return again.plan;
}

/**
 * After the installer's DaemonSet got its spec back: every node's kube-proxy in the target mode on
 * it. One list of kube-proxy's pods shows every node at once (the pods settled in the hand-back,
 * and the restore restarts none); a node whose pod is not yet as it should be is waited for. With
 * the built-in node checks on, each node's mode and last sync are then probed, in batches.
 */
async function finalCheck(ctx: Context, plan: RolloutPlan): Promise<void> {
    const podTimeout = ctx.spec.verify.podTimeoutSeconds;
    const owner = ctx.cluster.names.daemonSet;
    const byNode = new Map<string, KubeProxyPod[]>();
    for (const p of await ctx.cluster.kubeProxyPods()) byNode.set(p.node, [...(byNode.get(p.node) ?? []), p]);
    const settled = (node: string) => podVerdict(byNode.get(node) ?? [], owner, false).kind === "running";
    for (const pool of plan.pools) {
        const names = pool.nodes.map((n) => n.name);
        await inBatches(
            names.filter((n) => !settled(n)),
            pool.maxUnavailable,
            (node) => ctx.cluster.waitForKubeProxy(node, null, podTimeout),
        );
        if (ctx.spec.verify.nodeChecks)
            await inBatches(names, pool.maxUnavailable, (node) => probeFinal(ctx, pool, node));
        ctx.log(`pool ${pool.name}: ${names.length} node(s) checked on the installer's DaemonSet`);
    }
}

/** fn on every name, `size` at a time: each batch ends before the next starts. */
async function inBatches(names: string[], size: number, fn: (name: string) => Promise<unknown>): Promise<void> {
    for (let i = 0; i < names.length; i += size) await Promise.all(names.slice(i, i + size).map(fn));
}

/** The final check's probe of one node: its mode and its last sync, on the installer's DaemonSet. */
async function probeFinal(ctx: Context, pool: PoolPlan, node: string): Promise<void> {
    const checks = await verifyNode(ctx, node, ctx.spec.target.mode, {
        cleanLeftovers: false,
        log: (l) => ctx.log(`pool ${pool.name} node ${node}: ${l}`),
    });
    const bad = checks.find((c) => !c.ok && (c.check === "mode" || c.check === "sync"));
    if (bad)
        throw new Error(
            `node ${node} (pool ${pool.name}) failed the final check on the installer's DaemonSet: ${bad.check}: ${bad.detail}`,
        );
}
