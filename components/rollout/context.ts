// What every step of a rollout shares: the run's context (cluster, spec, log, lease holder),
// the target and the plan, and the small questions asked of them (a placement's mode, a node's origin).
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { effectiveMode, parseKubeProxyConfiguration } from "../core/config.js";
import { configHash, describePlacement, MARKS, type RolloutPlan, type RolloutTarget } from "../core/plan.js";
import { planRollout } from "../core/planner.js";
import { type CheckResult } from "../core/probe.js";
import type { Finding, ProxyMode } from "../core/types.js";
import { type Installation, type RolloutCluster, type RolloutNode } from "./cluster.js";
import { realClock, type Clock } from "./clock.js";
import type { RolloutSpec, VerifySpec } from "./spec.js";

import { CheckFailed } from "./errors.js";
import { formatEvent, type NodeEvent, type UnstampedNodeEvent } from "./events.js";

// a placement's name in the log lives with the placements (core/plan.ts); its importers here take it from here
export { describePlacement };

export type Log = (line: string) => void;

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
    /** each node event as it happens (events.ts), besides its line in `log` */
    onEvent?: (event: NodeEvent) => void;
}

export const clockOf = (ctx: Context) => ctx.clock ?? realClock;

/** Tells a node event: its line to the log (formatEvent), the event itself to onEvent, stamped with the run's clock. */
export function emit(ctx: Context, event: UnstampedNodeEvent): void {
    const e: NodeEvent = { ...event, at: clockOf(ctx).now() };
    ctx.log(formatEvent(e));
    ctx.onEvent?.(e);
}

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

export function modeOfPlacement(ctx: Context, inst: Installation, placement: string | null): Promise<ProxyMode> {
    if (placement === null || placement === MARKS.holdValue) return Promise.resolve(effectiveMode(inst.current.config));
    return configurationMode(ctx.cluster, placement);
}

export function checksMark(ctx: Context): string {
    return ctx.spec.verify.nodeChecks ? MARKS.checksBuiltIn : MARKS.checksHooksOnly;
}

/**
 * What a probe pod run on a node needs of the rollout: the first-sync wait's sampler and metrics
 * reads, and the bridge's copy and delete, take these rather than the whole context.
 */
export interface ProbeRunSettings {
    cluster: Pick<RolloutCluster, "runProbe">;
    /** the probe's image and priority class, and the first-sync wait's limits */
    verify: VerifySpec;
    /** the lease holder, kept on the pods for the next run's sweep */
    holder?: string;
}

export function probeRunSettings(ctx: Context): ProbeRunSettings {
    return { cluster: ctx.cluster, verify: ctx.spec.verify, holder: ctx.holder };
}

/** Throws the "interrupted" check failure once the run was told to stop (SIGINT/SIGTERM). */
export function stopIfInterrupted(ctx: Context): void {
    if (ctx.signal?.aborted)
        throw new CheckFailed(
            "interrupted",
            `the run was stopped (${String(ctx.signal.reason ?? "signal")}) before the node's move finished`,
        );
}

export async function cordonedByRollout(ctx: Context): Promise<string[]> {
    return (await ctx.cluster.nodes()).filter((n) => n.unschedulable && n.cordonedByRollout).map((n) => n.name);
}
