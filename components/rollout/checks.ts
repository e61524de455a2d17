// A node's checks: the first-sync wait, the probe pod's built-in checks (with the cleanup of
// leftovers kube-proxy did not remove) and the user's hooks.
import { summarizeCleanup } from "../core/cleanup.js";
import {
    recordedBaseline,
    withSync,
    type FirstSyncLimits,
    type NodeSyncs,
    type SyncBaseline,
} from "../core/firstSync.js";
import { type PoolPlan } from "../core/plan.js";
import { checkStartupLog, judgeProbe, parseProbeOutput, type CheckResult } from "../core/probe.js";
import type { ProxyMode } from "../core/types.js";
import { type RolloutCluster, type RolloutNode } from "./cluster.js";
import { awaitFirstSync, limitsFor, readSyncBaseline } from "./firstSync.js";

import { Log, Context, emit, probeRunSettings } from "./context.js";
import type { StepKind } from "./events.js";
import { CheckFailed } from "./errors.js";

/**
 * Runs the cleanup probe pod on a node and logs what it did. `liveMode`: the mode the node's
 * kube-proxy runs now (its objects are live state, not leftovers); unset while kube-proxy is
 * stopped. IPVS virtual servers on Service addresses are kube-proxy's even when kube-ipvs0 is gone.
 */
export async function cleanNode(
    ctx: Context,
    node: string,
    serviceIPs: string[],
    liveMode: ProxyMode | undefined,
    log: Log,
): Promise<void> {
    const env: Record<string, string> = { KPM_OWNED_IPS: serviceIPs.join(" ") };
    if (liveMode) env.KPM_MODE = liveMode;
    const v = ctx.spec.verify;
    const { output } = await ctx.cluster.runProbe(node, {
        image: v.image,
        action: "cleanup",
        env,
        timeoutSeconds: 120,
        priorityClassName: v.priorityClassName,
        run: ctx.holder,
    });
    const lines = output.split("\n").filter((l) => l && !l.startsWith("###"));
    for (const line of summarizeCleanup(lines)) log(`cleanup: ${line}`);
}

/** The start-up log check of the node's running kube-proxy pod. */
async function startupLogCheck(ctx: Context, node: string, mode: ProxyMode): Promise<CheckResult> {
    const running = (await ctx.cluster.kubeProxyPods(node)).find((p) => !p.deleting);
    if (!running) return { check: "startup-log", ok: false, detail: "no kube-proxy pod on the node" };
    return checkStartupLog(await ctx.cluster.podLog(running.name), mode);
}

/** The probe's environment for the connection check (the Service's address), or the check that failed to read it. */
export async function serviceProbeEnv(
    cluster: Pick<RolloutCluster, "serviceEndpoint">,
    service: string,
): Promise<{ env: Record<string, string>; failed?: CheckResult }> {
    const [namespace, name] = service.split("/");
    try {
        const svc = await cluster.serviceEndpoint(namespace, name);
        return { env: svc ? { KPM_SERVICE_IP: svc.ip, KPM_SERVICE_PORT: String(svc.port) } : {} };
    } catch (e) {
        return {
            env: {},
            failed: {
                check: "connection",
                ok: false,
                detail: `cannot read Service ${service}: ${(e as Error).message}`,
            },
        };
    }
}

/**
 * The first-sync limits of a node about to move, from its old mode's sync: read from its running
 * kube-proxy, else (a move resumed past its restart) the one its move memory or an earlier move
 * recorded (`recorded`); with none, the floor applies.
 */
export async function nodeSyncLimits(
    ctx: Context,
    pool: PoolPlan,
    n: RolloutNode,
    wanted: string | null,
    [fromMode, toMode]: [ProxyMode, ProxyMode],
    log: Log,
): Promise<{ limits: FirstSyncLimits; baseline: SyncBaseline; recorded: boolean }> {
    const run = probeRunSettings(ctx);
    const live = n.placement === wanted ? {} : await readSyncBaseline(run, n.name);
    const recorded = n.move?.to === wanted && n.move.baseline ? n.move.baseline : recordedBaseline(n.syncs, fromMode);
    const baseline = live.seconds !== undefined ? live : recorded;
    if (baseline.seconds !== undefined)
        log(
            `old mode's mean ${baseline.metric === "full" ? "full " : ""}sync: ${baseline.seconds.toFixed(2)}s${baseline === live ? "" : " (recorded before its restart)"}`,
        );
    const limits = limitsFor(run, ctx.spec.pools.find((p) => p.name === pool.name) ?? {}, baseline, {
        from: fromMode,
        to: toMode,
    });
    return { limits, baseline, recorded: baseline !== live };
}

/** Waits for the node's first sync in `mode` and returns its seconds into the wait; throws CheckFailed ("first-sync") when it fails. */
export async function firstSync(
    ctx: Context,
    node: string,
    mode: ProxyMode,
    limits: FirstSyncLimits,
    log: Log,
    prefix = "",
): Promise<number> {
    const verdict = await awaitFirstSync(probeRunSettings(ctx), node, mode, limits, log);
    if (verdict.kind === "failed") throw new CheckFailed(verdict.check, `${prefix}${verdict.detail}`);
    if (verdict.kind === "waiting")
        throw new CheckFailed(
            "first-sync",
            `${prefix}the first-sync sampler on ${node} ended after ${verdict.seconds}s without a verdict`,
        );
    return verdict.seconds;
}

/** The node's recorded syncs with what this move measured (undefined: it measured nothing). */
export function measuredSyncs(
    recorded: NodeSyncs | undefined,
    from: { mode: ProxyMode; baseline: SyncBaseline },
    to: { mode: ProxyMode; firstSeconds?: number },
): NodeSyncs | undefined {
    let syncs = recorded;
    if (from.baseline.seconds !== undefined)
        syncs = withSync(syncs, from.mode, { mean: from.baseline.seconds, metric: from.baseline.metric });
    if (to.firstSeconds !== undefined) syncs = withSync(syncs, to.mode, { first: to.firstSeconds });
    return syncs === recorded ? undefined : syncs;
}

/** The built-in checks of one node: probe pod (mode, leftovers, rules, sync, connection) and kube-proxy's start-up log. */
export async function verifyNode(
    ctx: Context,
    node: string,
    mode: ProxyMode,
    opts: { cleanLeftovers: boolean; log: Log },
): Promise<CheckResult[]> {
    const v = ctx.spec.verify;
    // every built-in check reads the node's own state: without node checks (nodes that run no
    // real kube-proxy, such as kwok's) none of them can run, and none is reported as passed
    if (!v.nodeChecks) return [];
    const results: CheckResult[] = [await startupLogCheck(ctx, node, mode)];
    const { env, failed } = await serviceProbeEnv(ctx.cluster, v.service);
    if (failed) results.push(failed);
    const serviceIPs = await ctx.cluster.serviceAddresses();
    const expect = {
        mode,
        maxSyncAgeSeconds: v.maxSyncAgeSeconds,
        connect: env.KPM_SERVICE_IP !== undefined,
        node,
        serviceIPs,
    };
    const probe = async () => {
        const { output } = await ctx.cluster.runProbe(node, {
            image: v.image,
            action: "probe",
            env,
            timeoutSeconds: 120,
            priorityClassName: v.priorityClassName,
            run: ctx.holder,
        });
        return judgeProbe(parseProbeOutput(output), expect);
    };
    let checks = await probe();
    const leftovers = checks.find((c) => c.check === "leftovers");
    if (leftovers && !leftovers.ok && opts.cleanLeftovers) {
        opts.log(`kube-proxy left ${leftovers.detail.replace(/^left behind: /, "")}; removing them`);
        await cleanNode(ctx, node, serviceIPs, mode, opts.log);
        checks = await probe();
    }
    return [...results, ...checks];
}

/** The hook's and the built-in checks of a node that runs `mode`; throws CheckFailed at the first failure. */
export async function checkNode(
    ctx: Context,
    pool: PoolPlan,
    node: string,
    mode: ProxyMode,
    step: StepKind,
    log: Log,
): Promise<CheckResult[]> {
    const checks = await verifyNode(ctx, node, mode, { cleanLeftovers: mode !== "ipvs", log });
    for (const c of checks) emit(ctx, { type: "check", pool: pool.name, node, step, ...c, hook: false });
    const bad = checks.find((r) => !r.ok);
    if (bad) throw new CheckFailed(bad.check, bad.detail);
    for (const hook of ctx.spec.verify.hooks) {
        const r = await ctx.cluster.runHook(
            hook,
            { NODE: node, POOL: pool.name, MODE: mode },
            ctx.kubeconfig,
            ctx.signal,
        );
        if (r.interrupted) throw new CheckFailed("interrupted", `${r.output} (hook ${hook.name})`);
        if (!r.ok) throw new CheckFailed(`hook ${hook.name}`, r.output, r.whole);
        const passed = { check: `hook ${hook.name}`, ok: true, detail: r.output.split("\n").slice(-1)[0] ?? "" };
        emit(ctx, { type: "check", pool: pool.name, node, step, ...passed, hook: true });
        checks.push(passed);
    }
    return checks;
}
