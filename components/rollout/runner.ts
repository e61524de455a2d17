// The rollout: pools in order, nodes in batches of maxUnavailable, each node moved, verified and
// released, or rolled back; the finish verifies every node, writes the installer's ConfigMap and
// hands the nodes back to the installer's DaemonSet in batches, checked.
//
// The rollout's state lives in the cluster, written before each action (see NodeMove), so a run
// that dies at any instant converges on the next run: every node verified on the target, or
// stopped with every node back on a configuration it was verified on and nothing left cordoned
// that the rollout cordoned. One run per cluster at a time (a Lease).
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { effectiveMode, parseKubeProxyConfiguration } from "../core/config.js";
import { summarizeCleanup } from "../core/cleanup.js";
import {
    recordedBaseline,
    slowSyncProblem,
    withSync,
    type FirstSyncLimits,
    type FullSyncTotals,
    type NodeSyncs,
    type SyncBaseline,
} from "../core/firstSync.js";
import { formatDuration } from "../core/duration.js";
import { anyPoolDrains } from "../core/drain.js";
import {
    configHash,
    MARKS,
    targetPlacement,
    type PoolPlan,
    type RolloutPlan,
    type RolloutTarget,
} from "../core/plan.js";
import { planRollout } from "../core/planner.js";
import { deniedAccessText, GRANT_ACCESS, rolloutAccesses } from "../core/rbac.js";
import { checkStartupLog, judgeProbe, parseProbeOutput, type CheckResult } from "../core/probe.js";
import { capText, nameList } from "../core/text.js";
import type { Finding, ProxyMode } from "../core/types.js";
import {
    podVerdict,
    type Installation,
    type KubeProxyPod,
    type NodeMove,
    type RolloutCluster,
    type RolloutNode,
} from "./cluster.js";
import { copyBridge, movesBridged, removeBridge } from "./bridge.js";
import { BRIDGE_TABLE } from "../core/bridge.js";
import { awaitFirstSync, limitsFor, readFullSyncTotals, readSyncBaseline, type FirstSyncRun } from "./firstSync.js";
import { realClock, type Clock } from "./clock.js";
import { rememberKubeconfigCredentials } from "../cluster/credentials.js";
import { redact } from "../core/redact.js";
import { hookEnvironment, withHookKubeconfig } from "./hookKubeconfig.js";
import type { Hook, RolloutSpec } from "./spec.js";

export type { Clock } from "./clock.js";

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
class CheckFailed extends Error {
    constructor(
        readonly check: string,
        detail: string,
        readonly output?: string,
    ) {
        super(detail);
    }
}

export interface NodeOutcome {
    node: string;
    pool: string;
    result: "verified" | "moved" | "skipped";
    checks: CheckResult[];
}

export interface Context {
    cluster: RolloutCluster;
    spec: RolloutSpec;
    log: Log;
    /** kubeconfig content for hooks (written to a private temp file while they run) */
    kubeconfig?: string;
    /** aborted on SIGINT/SIGTERM: the node in hand is finished or rolled back, then the run stops */
    signal?: AbortSignal;
    /** who runs this rollout, for the lease (default: a new defaultHolder() for each runPools or finish) */
    holder?: string;
    clock?: Clock;
    /** how long the lease lasts without renewal (default 60 s; renewed every third of it) */
    leaseSeconds?: number;
    /**
     * how long a request to the API server may take before it is abandoned (the cluster's request
     * timeout; default 0, a cluster whose calls cannot hang): no write is sent later than this
     * before the lease, as last renewed, expires
     */
    requestTimeoutSeconds?: number;
    /** how often a soak re-checks the pool's nodes (default 30 s) */
    soakCheckSeconds?: number;
}

const clockOf = (ctx: Context) => ctx.clock ?? realClock;

/**
 * A run's lease holder: "<stack or CLI>@<host>/pid <pid>/run <random id>". A lease held by exactly
 * this string is the run's own (taken back at once, renewed); the random id keeps two runs alike in
 * the rest (two containers with one hostname and the same small pid) from sharing the lease.
 */
export function defaultHolder(): string {
    const run = randomBytes(6).toString("hex");
    return `${process.env.KPM_HOLDER || "kube-proxy-mode CLI"}@${hostname()}/pid ${process.pid}/run ${run}`;
}

/** The target as the cluster stands now: canonical when the installer's ConfigMap already holds it. */
export function resolveTarget(inst: Installation, spec: RolloutSpec): RolloutTarget {
    return {
        hash: spec.target.hash,
        mode: spec.target.mode,
        canonical: configHash(inst.current.text) === spec.target.hash && inst.current.text === spec.target.config,
    };
}

export async function currentPlan(
    ctx: Context,
): Promise<{ inst: Installation; plan: RolloutPlan; findings: Finding[]; nodes: RolloutNode[] }> {
    const inst = await ctx.cluster.installation();
    const nodes = await ctx.cluster.nodes();
    const target = resolveTarget(inst, ctx.spec);
    const { plan, findings } = planRollout(ctx.spec.pools, nodes, target, {
        tcpBeLiberal: ctx.spec.tcpBeLiberal,
        fromMode: effectiveMode(inst.current.config),
        podTimeoutSeconds: ctx.spec.verify.podTimeoutSeconds,
    });
    return { inst, plan, findings, nodes };
}

/**
 * The configuration a node can safely go back to: the one it was verified on before this move.
 * From the node's move memory when a run left one; otherwise its placement when it was verified
 * there; otherwise the installer's DaemonSet (what every node ran before any rollout).
 */
export function originOf(n: RolloutNode, wanted: string | null): string | null {
    if (n.move && n.move.to === wanted) return n.move.from;
    if (n.placement !== null && n.placement !== MARKS.holdValue && n.placement !== wanted && n.verified === n.placement)
        return n.placement;
    return null;
}

/**
 * The mode of each rollout configuration asked about, by hash, per cluster client (one per run or
 * command): a hash names its text, so it is read and parsed once, not once per node (a hand-back
 * batch asks it of each of its nodes before their cordons, and a parse is about a millisecond of
 * the event loop); the nodes that ask at once share the one read. A failed read is forgotten, so
 * the next node asks again.
 */
const configurationModes = new WeakMap<RolloutCluster, Map<string, Promise<ProxyMode>>>();

/** The mode the rollout configuration `hash` runs; fails when its ConfigMap is gone. */
export function configurationMode(cluster: RolloutCluster, hash: string): Promise<ProxyMode> {
    let known = configurationModes.get(cluster);
    if (!known) configurationModes.set(cluster, (known = new Map()));
    const asked = known.get(hash);
    if (asked) return asked;
    const mode = cluster.configurationOf(hash).then((text) => {
        if (text === undefined) throw new Error(`the configuration ${hash} is no longer in the cluster`);
        return effectiveMode(parseKubeProxyConfiguration(text, `configuration ${hash}`));
    });
    const forget = known;
    mode.catch(() => forget.delete(hash));
    known.set(hash, mode);
    return mode;
}

function modeOfPlacement(ctx: Context, inst: Installation, placement: string | null): Promise<ProxyMode> {
    if (placement === null || placement === MARKS.holdValue) return Promise.resolve(effectiveMode(inst.current.config));
    return configurationMode(ctx.cluster, placement);
}

function runHook(
    hook: Hook,
    env: Record<string, string>,
    kubeconfig: string | undefined,
    signal?: AbortSignal,
): Promise<{ ok: boolean; output: string; whole?: string; interrupted?: boolean }> {
    const timeout = hook.timeoutSeconds * 1000;
    rememberKubeconfigCredentials(kubeconfig);
    return new Promise((resolve) => {
        execFile(
            hook.command[0],
            hook.command.slice(1),
            {
                env: { ...hookEnvironment(process.env, kubeconfig), ...hook.env, ...env },
                timeout,
                maxBuffer: 4 << 20,
                signal,
            },
            (err, stdout, stderr) => {
                // the hook's output reaches the step's log and its error: never a credential
                const whole = redact(`${stdout}${stderr}`.trim()).split("\n").slice(-20).join("\n");
                // a line of any length would stall the step's log (core/text.ts): the message's are capped
                const output = capText(whole);
                const cut =
                    output === whole
                        ? ""
                        : "\n(long lines cut here; the rollout's --json result has them whole, in `output`)";
                if (!err) return resolve({ ok: true, output });
                if (err.name === "AbortError")
                    return resolve({
                        ok: false,
                        output: `the run was stopped (${String(signal?.reason ?? "signal")}) while the hook ran; the hook was ended`,
                        interrupted: true,
                    });
                const e = err as NodeJS.ErrnoException & { killed?: boolean };
                const why = e.killed
                    ? `timed out after ${timeout / 1000}s`
                    : e.code === "ENOENT"
                      ? `${hook.command[0]} not found`
                      : `exit code ${e.code}`;
                resolve({ ok: false, output: `${why}${output ? `; output:\n${output}${cut}` : ""}`, whole });
            },
        );
    });
}

/**
 * Runs the cleanup probe pod on a node and logs what it did. `liveMode`: the mode the node's
 * kube-proxy runs now (its objects are live state, not leftovers); unset while kube-proxy is
 * stopped. IPVS virtual servers on Service addresses are kube-proxy's even when kube-ipvs0 is gone.
 */
async function cleanNode(
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

function firstSyncRun(ctx: Context): FirstSyncRun {
    return { cluster: ctx.cluster, verify: ctx.spec.verify, holder: ctx.holder };
}

/**
 * The first-sync limits of a node about to move, from its old mode's sync: read from its running
 * kube-proxy, else (a move resumed past its restart) the one its move memory or an earlier move
 * recorded; with none, the floor applies.
 */
async function nodeSyncLimits(
    ctx: Context,
    pool: PoolPlan,
    n: RolloutNode,
    wanted: string | null,
    [fromMode, toMode]: [ProxyMode, ProxyMode],
    log: Log,
): Promise<{ limits: FirstSyncLimits; baseline: SyncBaseline }> {
    const run = firstSyncRun(ctx);
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
    return { limits, baseline };
}

/** Waits for the node's first sync in `mode`; throws CheckFailed ("first-sync") when it fails. */
async function firstSync(
    ctx: Context,
    node: string,
    mode: ProxyMode,
    limits: FirstSyncLimits,
    log: Log,
    prefix = "",
): Promise<number> {
    const verdict = await awaitFirstSync(firstSyncRun(ctx), node, mode, limits, log);
    if (verdict.kind === "failed") throw new CheckFailed(verdict.check, `${prefix}${verdict.detail}`);
    if (verdict.kind === "waiting")
        throw new CheckFailed(
            "first-sync",
            `${prefix}the first-sync sampler on ${node} ended after ${verdict.seconds}s without a verdict`,
        );
    return verdict.seconds;
}

/** The node's recorded syncs with what this move measured (undefined: it measured nothing). */
function measuredSyncs(
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

function describePlacement(p: string | null): string {
    return p === null ? "the installer's DaemonSet" : `configuration ${p}`;
}

/** The hook's and the built-in checks of a node that runs `mode`; throws CheckFailed at the first failure. */
async function checkNode(
    ctx: Context,
    pool: PoolPlan,
    node: string,
    mode: ProxyMode,
    log: Log,
): Promise<CheckResult[]> {
    const checks = await verifyNode(ctx, node, mode, { cleanLeftovers: mode !== "ipvs", log });
    for (const c of checks) log(`${c.ok ? "ok" : "FAILED"} ${c.check}: ${c.detail}`);
    const bad = checks.find((r) => !r.ok);
    if (bad) throw new CheckFailed(bad.check, bad.detail);
    for (const hook of ctx.spec.verify.hooks) {
        const r = await withHookKubeconfig(ctx.kubeconfig, hook.timeoutSeconds, (kubeconfig) =>
            runHook(
                hook,
                { NODE: node, POOL: pool.name, MODE: mode, ...(kubeconfig ? { KUBECONFIG: kubeconfig } : {}) },
                ctx.kubeconfig,
                ctx.signal,
            ),
        );
        if (r.interrupted) throw new CheckFailed("interrupted", `${r.output} (hook ${hook.name})`);
        if (!r.ok) throw new CheckFailed(`hook ${hook.name}`, r.output, r.whole);
        log(`ok hook ${hook.name}`);
        checks.push({ check: `hook ${hook.name}`, ok: true, detail: r.output.split("\n").slice(-1)[0] ?? "" });
    }
    return checks;
}

function checksMark(ctx: Context): string {
    return ctx.spec.verify.nodeChecks ? MARKS.checksBuiltIn : MARKS.checksHooksOnly;
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
async function rollBack(
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
        const v = await copyBridge(firstSyncRun(ctx), node).catch((e: unknown) => ({
            ok: false,
            detail: (e as Error).message,
        }));
        log(v.ok ? v.detail : `rolling back without a bridge: ${v.detail}`);
    }
    await ctx.cluster.writeNode(node, { move: rollback, placement: move.from });
    await ctx.cluster.waitForKubeProxy(node, move.from, ctx.spec.verify.podTimeoutSeconds);
    if (ctx.spec.verify.nodeChecks)
        await firstSync(ctx, node, originMode, limits ?? limitsFor(firstSyncRun(ctx), {}, {}), log, "after rollback: ");
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
async function makeBridge(ctx: Context, node: string, log: Log): Promise<void> {
    const v = await copyBridge(firstSyncRun(ctx), node);
    if (!v.ok) throw new CheckFailed("bridge", v.detail);
    log(v.detail);
}

/** Deletes the bridge a move recorded, then forgets it; throws CheckFailed("bridge") while one is left. */
async function dropBridge(ctx: Context, node: string, move: NodeMove, log: Log): Promise<NodeMove> {
    if (!move.bridge) return move;
    const v = await removeBridge(firstSyncRun(ctx), node);
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
async function rollbackBridges(
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

/** ipvs -> iptables: iptables mode does not remove ipvs state, so stop kube-proxy on the node, clean, then start the new one. */
async function stopAndCleanIpvs(ctx: Context, node: string, podTimeoutSeconds: number, log: Log): Promise<void> {
    await ctx.cluster.writeNode(node, { placement: MARKS.holdValue });
    await ctx.cluster.waitForKubeProxy(node, MARKS.holdValue, podTimeoutSeconds);
    log("kube-proxy stopped; removing ipvs leftovers (iptables mode does not)");
    await cleanNode(ctx, node, await ctx.cluster.serviceAddresses(), undefined, log);
}

/**
 * After a failed move: a node not yet restarted is released unchanged; one restarted is rolled
 * back to its origin (onFailure rollback-node, or an interruption) or left cordoned (stop).
 * Returns what happened, in words; a failing rollback is reported, never thrown.
 */
async function recoverNode(
    ctx: Context,
    inst: Installation,
    move: NodeMove,
    at: {
        node: string;
        step: string;
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
        if (step === "start" || step === "drain" || step === "bridge") {
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

/** Throws the "interrupted" check failure once the run was told to stop (SIGINT/SIGTERM). */
function stopIfInterrupted(ctx: Context): void {
    if (ctx.signal?.aborted)
        throw new CheckFailed(
            "interrupted",
            `the run was stopped (${String(ctx.signal.reason ?? "signal")}) before the node's move finished`,
        );
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
    const hooks = ctx.spec.verify.hooks.length;
    log(
        how.handBack
            ? "handed back to the installer's DaemonSet, checked"
            : ctx.spec.verify.nodeChecks
              ? "verified"
              : `moved; built-in node checks are off (verify.nodeChecks: false), ${hooks} hook(s) passed`,
    );
}

/** Moves one node to the target, verifies it, and releases it; rolls it back to its origin on failure. */
async function moveNode(
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
    let step = "start";
    let limits: FirstSyncLimits | undefined;
    try {
        const fromMode = await modeOfPlacement(ctx, inst, origin);
        let baseline: SyncBaseline = {};
        if (ctx.spec.verify.nodeChecks)
            ({ limits, baseline } = await nodeSyncLimits(ctx, pool, n, wanted, [fromMode, target.mode], log));
        if (baseline.seconds !== undefined) move = { ...move, baseline };
        // the bridge is recorded before it is made; a move resumed past its restart keeps the one it made
        const bridges = ctx.spec.verify.nodeChecks && movesBridged(fromMode, target.mode) && n.placement !== wanted;
        if (bridges) move = { ...move, bridge: BRIDGE_TABLE };
        else if (n.move?.to === wanted && n.move.bridge) move = { ...move, bridge: n.move.bridge };
        if (n.move?.to === wanted)
            log(`resuming a move a previous run left in phase ${n.move.phase} (origin ${describePlacement(origin)})`);
        const podTimeout = ctx.spec.verify.podTimeoutSeconds;
        let switching: NodeMove = { ...move, phase: "switching" };
        const drains = pool.drain && !handBack;
        const cleansIpvs =
            fromMode === "ipvs" && target.mode === "iptables" && ctx.spec.verify.nodeChecks && n.placement !== wanted;
        if (!drains && !cleansIpvs && !bridges) {
            // nothing to do between the cordon and the restart: the memory (already switching), the
            // cordon and the placement in one write. An answer lost on the way is handled as a
            // restart that failed: rolled back to the origin (harmless if the write never landed)
            step = "restart";
            cordon();
            ours = await ctx.cluster.startMove(node, switching, wanted);
            unanswered = false;
            log(ours ? "cordoned" : "was already cordoned (left so)");
        } else {
            // the move's memory and the cordon, in one write
            cordon();
            ours = await ctx.cluster.startMove(node, move);
            unanswered = false;
            interrupted();
            step = "drain";
            log(ours ? "cordoned" : "was already cordoned (left so)");
            if (drains) await drainNode(ctx, pool, node, log);
            interrupted();
            step = "restart";
            if (cleansIpvs) {
                step = "cleanup";
                await ctx.cluster.writeNode(node, { move: switching });
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
                await ctx.cluster.writeNode(node, { move: switching, placement: wanted });
            }
        }
        // a hand-back's pod is of the restore's revision when its batch ends (started so, or labelled
        // here), so the restore after the last one has no pod left to label
        const pod = await ctx.cluster.waitForKubeProxy(node, wanted, podTimeout, { labelForRestore: handBack });
        log(`kube-proxy ${pod?.name ?? ""} running on ${describePlacement(wanted)}`);
        interrupted();
        step = "verify";
        const firstSeconds = limits ? await firstSync(ctx, node, target.mode, limits, log) : undefined;
        // the new mode routes: the bridge goes before the checks, which count it as left behind
        if (switching.bridge) {
            switching = await dropBridge(ctx, node, switching, log);
            move = { ...move, bridge: undefined };
        }
        interrupted();
        const checks = await checkNode(ctx, pool, node, target.mode, log);
        // from here on the node is good: an interruption lets it finish
        const syncs = measuredSyncs(n.syncs, { mode: fromMode, baseline }, { mode: target.mode, firstSeconds });
        await releaseVerified(ctx, n, target, { handBack, ours, syncs }, log);
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

async function cordonedByRollout(ctx: Context): Promise<string[]> {
    return (await ctx.cluster.nodes()).filter((n) => n.unschedulable && n.cordonedByRollout).map((n) => n.name);
}

/**
 * What a dead run left on the nodes of these pools, made safe before anything else moves: a move
 * towards another placement (an older target) is undone to its origin; a node verified on the
 * target but still cordoned by the rollout is released. Moves towards the current target are
 * left to the plan, which resumes them with their recorded origin.
 */
async function reconcile(
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
async function withLease<T>(ctx: Context, fn: (ctx: Context) => Promise<T>): Promise<T> {
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
        ctx.log(
            `pool ${pool.name}: batch ${i + 1}/${pool.batches.length}: ${batch.length <= 10 ? batch.join(", ") : `${batch[0]} .. ${batch[batch.length - 1]} (${batch.length} nodes)`}`,
        );
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

async function movePools(
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
async function soak(ctx: Context, inst: Installation, pool: PoolPlan, target: RolloutTarget): Promise<void> {
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
        for (const n of nodes) syncsAtStart.set(n.name, await readFullSyncTotals(firstSyncRun(ctx), n.name));
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
                await readFullSyncTotals(firstSyncRun(ctx), n.name),
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
