// The rollout: pools in order, nodes in batches of maxUnavailable, each node moved,
// verified and released, or rolled back; the finish hands the cluster back to its installer.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { effectiveMode, parseKubeProxyConfiguration } from "../core/config.js";
import { formatDuration, parseDuration } from "../core/duration.js";
import { configHash, MARKS, planRollout, rolloutObjectName, targetPlacement, type PoolPlan, type RolloutPlan, type RolloutTarget } from "../core/plan.js";
import { checkStartupLog, judgeProbe, parseProbeOutput, type CheckResult } from "../core/probe.js";
import type { Finding, ProxyMode } from "../core/types.js";
import { apiErrorMessage } from "../cluster/client.js";
import { KubeProxyCluster, sleep, type Installation } from "../cluster/kubeProxy.js";
import type { Hook, RolloutSpec } from "./spec.js";

export type Log = (line: string) => void;

/** A node that failed, with what was done about it. */
export class RolloutFailure extends Error {
    constructor(
        readonly node: string,
        readonly pool: string,
        readonly check: string,
        readonly detail: string,
        readonly rolledBack: string,
        readonly leftCordoned: string[],
    ) {
        super(
            `node ${node} (pool ${pool}) failed ${check}: ${detail}\n${rolledBack}\n` +
                (leftCordoned.length ? `nodes left cordoned: ${leftCordoned.join(", ")}` : "no node is left cordoned"),
        );
    }
}

export interface NodeOutcome {
    node: string;
    pool: string;
    result: "verified" | "moved" | "skipped";
    checks: CheckResult[];
}

export interface Context {
    cluster: KubeProxyCluster;
    spec: RolloutSpec;
    log: Log;
    /** kubeconfig content for hooks (written to a private temp file while they run) */
    kubeconfig?: string;
}

/** The target as the cluster stands now: canonical when the installer's ConfigMap already holds it. */
export function resolveTarget(inst: Installation, spec: RolloutSpec): RolloutTarget {
    return { hash: spec.target.hash, mode: spec.target.mode, canonical: configHash(inst.current.text) === spec.target.hash && inst.current.text === spec.target.config };
}

export async function currentPlan(ctx: Context): Promise<{ inst: Installation; plan: RolloutPlan; findings: Finding[] }> {
    const inst = await ctx.cluster.installation();
    const nodes = await ctx.cluster.nodeStates();
    const target = resolveTarget(inst, ctx.spec);
    const { plan, findings } = planRollout(ctx.spec.pools, nodes, target, { tcpBeLiberal: ctx.spec.tcpBeLiberal, fromMode: effectiveMode(inst.current.config), podTimeoutSeconds: parseDuration(ctx.spec.verify.podTimeout, "verify.podTimeout") });
    return { inst, plan, findings };
}

async function modeOfPlacement(ctx: Context, inst: Installation, placement: string | null): Promise<ProxyMode> {
    if (placement === null || placement === MARKS.holdValue) return effectiveMode(inst.current.config);
    const name = rolloutObjectName(ctx.cluster.names.configMap, placement);
    const cm = await ctx.cluster.core.readNamespacedConfigMap({ name, namespace: ctx.cluster.names.namespace });
    return effectiveMode(parseKubeProxyConfiguration(cm.data?.[ctx.cluster.names.key] ?? "", `ConfigMap ${name}`));
}

function runHook(hook: Hook, env: Record<string, string>): Promise<{ ok: boolean; output: string }> {
    const timeout = hook.timeout ? parseDuration(hook.timeout, `verify.hooks[${hook.name}].timeout`) * 1000 : 300_000;
    return new Promise((resolve) => {
        execFile(hook.command[0], hook.command.slice(1), { env: { ...process.env, ...hook.env, ...env }, timeout, maxBuffer: 4 << 20 }, (err, stdout, stderr) => {
            const output = `${stdout}${stderr}`.trim().split("\n").slice(-20).join("\n");
            if (!err) return resolve({ ok: true, output });
            const why = (err as any).killed ? `timed out after ${timeout / 1000}s` : (err as any).code === "ENOENT" ? `${hook.command[0]} not found` : `exit code ${(err as any).code}`;
            resolve({ ok: false, output: `${why}${output ? `; output:\n${output}` : ""}` });
        });
    });
}

/** The built-in checks of one node: probe pod (mode, leftovers, rules, sync, connection) and kube-proxy's start-up log. */
export async function verifyNode(ctx: Context, node: string, mode: ProxyMode, opts: { cleanLeftovers: boolean; log: Log }): Promise<CheckResult[]> {
    const v = ctx.spec.verify;
    // every built-in check reads the node's own state: without node checks (nodes that run no
    // real kube-proxy, such as kwok's) none of them can run, and none is reported as passed
    if (!v.nodeChecks) return [];
    const results: CheckResult[] = [];
    const pods = await ctx.cluster.kubeProxyPods(node);
    const running = pods.find((p) => !p.deleting);
    if (running) results.push(checkStartupLog(await ctx.cluster.podLog(running.name), mode));
    else results.push({ check: "startup-log", ok: false, detail: "no kube-proxy pod on the node" });

    const env: Record<string, string> = {};
    const [svcNs, svcName] = v.service.split("/");
    try {
        const svc = await ctx.cluster.core.readNamespacedService({ name: svcName, namespace: svcNs });
        const ip = svc.spec?.clusterIP;
        const port = svc.spec?.ports?.[0]?.port;
        if (ip && ip !== "None" && port) Object.assign(env, { KPM_SERVICE_IP: ip, KPM_SERVICE_PORT: String(port) });
    } catch (e) {
        results.push({ check: "connection", ok: false, detail: `cannot read Service ${v.service}: ${apiErrorMessage(e)}` });
    }
    const expect = { mode, maxSyncAgeSeconds: parseDuration(v.maxSyncAge, "verify.maxSyncAge"), connect: env.KPM_SERVICE_IP !== undefined };
    const probe = async () => {
        const { output } = await ctx.cluster.runProbe(node, { image: v.image, action: "probe", env, timeoutSeconds: 120, priorityClassName: v.priorityClassName });
        return judgeProbe(parseProbeOutput(output), expect);
    };
    let checks = await probe();
    const leftovers = checks.find((c) => c.check === "leftovers");
    if (leftovers && !leftovers.ok && opts.cleanLeftovers) {
        opts.log(`kube-proxy left ${leftovers.detail.replace(/^left behind: /, "")}; removing them`);
        const { output } = await ctx.cluster.runProbe(node, { image: v.image, action: "cleanup", env: {}, timeoutSeconds: 120, priorityClassName: v.priorityClassName });
        for (const line of output.split("\n").filter((l) => l && !l.startsWith("###"))) opts.log(`cleanup: ${line}`);
        checks = await probe();
    }
    return [...results, ...checks];
}

async function withKubeconfigFile<T>(content: string | undefined, fn: (path: string | undefined) => Promise<T>): Promise<T> {
    if (!content) return fn(process.env.KUBECONFIG);
    const dir = mkdtempSync(join(tmpdir(), "kpm-"));
    const path = join(dir, "kubeconfig");
    writeFileSync(path, content, { mode: 0o600 });
    try {
        return await fn(path);
    } finally {
        rmSync(dir, { recursive: true, force: true });
    }
}

function failed(results: CheckResult[]): CheckResult | undefined {
    return results.find((r) => !r.ok);
}

/** Moves one node to the target, verifies it, and releases it; rolls it back on failure. */
async function moveNode(ctx: Context, inst: Installation, pool: PoolPlan, node: string, from: string | null, target: RolloutTarget): Promise<NodeOutcome> {
    const log: Log = (l) => ctx.log(`pool ${pool.name} node ${node}: ${l}`);
    const wanted = targetPlacement(target);
    const rollbackTo = from === MARKS.holdValue ? null : from;
    const fromMode = await modeOfPlacement(ctx, inst, rollbackTo);
    const ours = await ctx.cluster.cordon(node);
    log(ours ? "cordoned" : "was already cordoned (left so)");
    const release = async () => {
        if (ours) {
            await ctx.cluster.uncordon(node);
            log("uncordoned");
        }
    };
    let step = "drain";
    try {
        if (pool.drain) {
            log(`draining (timeout ${pool.drainTimeoutSeconds === 0 ? "none" : formatDuration(pool.drainTimeoutSeconds)})`);
            await ctx.cluster.drain(node, pool.drainTimeoutSeconds, log, pool.drainOptions);
            log("drained");
        }
        const podTimeout = parseDuration(ctx.spec.verify.podTimeout, "verify.podTimeout");
        if (fromMode === "ipvs" && target.mode === "iptables" && ctx.spec.verify.nodeChecks) {
            step = "cleanup";
            // iptables mode does not remove ipvs state: stop kube-proxy on the node, clean, then start the new one
            await ctx.cluster.setPlacement(node, MARKS.holdValue);
            await ctx.cluster.waitForKubeProxy(node, MARKS.holdValue, podTimeout);
            log("kube-proxy stopped; removing ipvs leftovers (iptables mode does not)");
            const { output } = await ctx.cluster.runProbe(node, { image: ctx.spec.verify.image, action: "cleanup", env: {}, timeoutSeconds: 120 });
            for (const line of output.split("\n").filter((l) => l && !l.startsWith("###"))) log(`cleanup: ${line}`);
        }
        step = "restart";
        await ctx.cluster.setPlacement(node, wanted);
        const pod = await ctx.cluster.waitForKubeProxy(node, wanted, podTimeout);
        log(`kube-proxy ${pod?.name} running on ${target.canonical ? "the installer's DaemonSet" : `configuration ${target.hash}`}`);
        step = "verify";
        const checks = await verifyNode(ctx, node, target.mode, { cleanLeftovers: target.mode !== "ipvs", log });
        for (const c of checks) log(`${c.ok ? "ok" : "FAILED"} ${c.check}: ${c.detail}`);
        const bad = failed(checks);
        if (bad) throw Object.assign(new Error(bad.detail), { check: bad.check });
        for (const hook of ctx.spec.verify.hooks) {
            step = `hook ${hook.name}`;
            const r = await withKubeconfigFile(ctx.kubeconfig, (kubeconfig) =>
                runHook(hook, { NODE: node, POOL: pool.name, MODE: target.mode, ...(kubeconfig ? { KUBECONFIG: kubeconfig } : {}) }),
            );
            if (!r.ok) throw Object.assign(new Error(r.output), { check: `hook ${hook.name}` });
            log(`ok hook ${hook.name}`);
            checks.push({ check: `hook ${hook.name}`, ok: true, detail: r.output.split("\n").slice(-1)[0] ?? "" });
        }
        await ctx.cluster.markVerified(node, target.hash, ctx.spec.verify.nodeChecks ? MARKS.checksBuiltIn : MARKS.checksHooksOnly);
        await release();
        log(ctx.spec.verify.nodeChecks ? "verified" : `moved; built-in node checks are off (verify.nodeChecks: false), ${ctx.spec.verify.hooks.length} hook(s) passed`);
        return { node, pool: pool.name, result: ctx.spec.verify.nodeChecks ? "verified" : "moved", checks };
    } catch (e) {
        const check = (e as any).check ?? step;
        const detail = (e as Error).message ?? apiErrorMessage(e);
        log(`FAILED ${check}: ${detail.split("\n")[0]}`);
        let rolledBack: string;
        if (ctx.spec.onFailure === "rollback-node" && step !== "drain") {
            try {
                log(`rolling back to ${rollbackTo === null ? "the installer's DaemonSet" : `configuration ${rollbackTo}`} (${fromMode})`);
                await ctx.cluster.setPlacement(node, rollbackTo);
                await ctx.cluster.waitForKubeProxy(node, rollbackTo, parseDuration(ctx.spec.verify.podTimeout, "verify.podTimeout"));
                const back = await verifyNode(ctx, node, fromMode, { cleanLeftovers: false, log });
                const mode = back.find((c) => c.check === "mode");
                if (mode && !mode.ok) throw new Error(`after rollback: ${mode.detail}`);
                await ctx.cluster.markVerified(node, null, "");
                await release();
                rolledBack = `node ${node} was rolled back to ${fromMode} mode and ${ours ? "uncordoned" : "left cordoned as it was before"}`;
                log(rolledBack);
            } catch (re) {
                rolledBack = `ROLLBACK OF ${node} FAILED: ${(re as Error).message}; the node is left cordoned for inspection`;
                log(rolledBack);
            }
        } else if (step === "drain") {
            await release();
            rolledBack = `node ${node} was not changed (its drain failed) and ${ours ? "was uncordoned" : "stays cordoned as before"}`;
        } else {
            rolledBack = `onFailure is "stop": node ${node} is left on the new configuration and cordoned for inspection`;
        }
        const leftCordoned = await ctx.cluster.cordonedByRollout().catch(() => [] as string[]);
        throw new RolloutFailure(node, pool.name, check, detail, rolledBack, leftCordoned);
    }
}

/** Runs the named pools (all when none is named), in the declared order. */
export async function runPools(ctx: Context, only?: string[]): Promise<NodeOutcome[]> {
    const { inst, plan, findings } = await currentPlan(ctx);
    const errors = findings.filter((f) => f.severity === "error");
    if (errors.length) throw new Error(`the rollout plan is not valid:\n${errors.map((e) => `- ${e.field}: ${e.message}`).join("\n")}`);
    const target = plan.target;
    const unknown = (only ?? []).filter((n) => !plan.pools.some((p) => p.name === n));
    if (unknown.length) throw new Error(`no pool named ${unknown.join(", ")}; pools: ${plan.pools.map((p) => p.name).join(", ")}`);
    const pools = plan.pools.filter((p) => !only || only.includes(p.name));
    if (pools.every((p) => p.batches.length === 0)) {
        for (const p of pools) for (const n of p.nodes) ctx.log(`pool ${p.name} node ${n.name}: already verified on ${target.hash}, skipped`);
        ctx.log(`nothing to move in pool(s) ${pools.map((p) => p.name).join(", ")}: every node already runs ${target.mode} on configuration ${target.hash}`);
        return pools.flatMap((p) => p.nodes.map((n) => ({ node: n.name, pool: p.name, result: "skipped" as const, checks: [] })));
    }
    if (!target.canonical) await ctx.cluster.prepare(inst, { hash: target.hash, config: ctx.spec.target.config }, ctx.log);
    const outcomes: NodeOutcome[] = [];
    for (const pool of pools) {
        const started = Date.now();
        ctx.log(`pool ${pool.name}: ${pool.nodes.length} node(s), ${pool.batches.flat().length} to move, at most ${pool.maxUnavailable} at a time`);
        for (const n of pool.nodes.filter((x) => x.action === "done")) {
            ctx.log(`pool ${pool.name} node ${n.name}: already verified on ${target.hash}, skipped`);
            outcomes.push({ node: n.name, pool: pool.name, result: "skipped", checks: [] });
        }
        for (const [i, batch] of pool.batches.entries()) {
            ctx.log(`pool ${pool.name}: batch ${i + 1}/${pool.batches.length}: ${batch.join(", ")}`);
            const from = new Map(pool.nodes.map((n) => [n.name, n.from]));
            const settled = await Promise.allSettled(batch.map((node) => moveNode(ctx, inst, pool, node, from.get(node) ?? null, target)));
            const failure = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
            for (const s of settled) if (s.status === "fulfilled") outcomes.push(s.value);
            if (failure) {
                ctx.log(`pool ${pool.name}: stopped at the first failure; later batches and pools are untouched`);
                throw failure.reason;
            }
        }
        if (pool.soakSeconds > 0 && pool.batches.length > 0) {
            ctx.log(`pool ${pool.name}: soaking ${formatDuration(pool.soakSeconds)} before the next pool`);
            const until = Date.now() + pool.soakSeconds * 1000;
            while (Date.now() < until) {
                await sleep(Math.min(30_000, until - Date.now()));
                if (Date.now() < until) ctx.log(`pool ${pool.name}: soaking, ${formatDuration(Math.ceil((until - Date.now()) / 1000))} left`);
            }
        }
        ctx.log(`pool ${pool.name}: done in ${formatDuration(Math.round((Date.now() - started) / 1000))}`);
    }
    return outcomes;
}

/**
 * When every pool is verified: the canonical ConfigMap holds the target, each node goes
 * back to the installer's DaemonSet (one at a time, checked), and that DaemonSet gets its
 * installer's spec back, so the next `kubeadm upgrade` keeps the result.
 */
export async function finish(ctx: Context): Promise<void> {
    const { inst, plan, findings } = await currentPlan(ctx);
    const errors = findings.filter((f) => f.severity === "error");
    if (errors.length) throw new Error(`cannot finish:\n${errors.map((e) => `- ${e.field}: ${e.message}`).join("\n")}`);
    const nodes = await ctx.cluster.nodeStates();
    const notVerified = nodes.filter((n) => plan.pools.some((p) => p.nodes.some((x) => x.name === n.name)) && n.placement !== null && n.verified !== ctx.spec.target.hash);
    if (!plan.target.canonical && notVerified.length) {
        throw new Error(`cannot finish: ${notVerified.length} node(s) are not verified on ${ctx.spec.target.hash} yet (${notVerified.map((n) => n.name).join(", ")}); run the pools first`);
    }
    const unmoved = plan.pools.flatMap((p) => p.nodes).filter((n) => n.from === null && n.action === "move");
    if (!plan.target.canonical && unmoved.length) {
        throw new Error(`cannot finish: ${unmoved.length} node(s) still run the old configuration (${unmoved.map((n) => n.name).join(", ")}); run the pools first`);
    }
    if (!plan.target.canonical) {
        await ctx.cluster.writeCanonicalConfig(ctx.spec.target.config);
        ctx.log(`ConfigMap ${ctx.cluster.names.namespace}/${ctx.cluster.names.configMap}: ${ctx.cluster.names.key} now holds configuration ${ctx.spec.target.hash}`);
    }
    const podTimeout = parseDuration(ctx.spec.verify.podTimeout, "verify.podTimeout");
    for (const pool of plan.pools) {
        for (const n of pool.nodes) {
            const state = nodes.find((x) => x.name === n.name);
            if (!state || state.placement === null) continue;
            await ctx.cluster.setPlacement(n.name, null);
            await ctx.cluster.waitForKubeProxy(n.name, null, podTimeout);
            ctx.log(`pool ${pool.name} node ${n.name}: handed back to the installer's DaemonSet`);
        }
    }
    if (inst.inRollout) {
        await ctx.cluster.restoreInstallation(ctx.log);
        await ctx.cluster.waitForDaemonSetRollout(podTimeout * Math.max(1, nodes.length), ctx.log);
    }
    ctx.log(`finished: every node runs ${ctx.spec.target.mode} from the installer's DaemonSet and ConfigMap`);
}
