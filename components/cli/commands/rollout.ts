// kube-proxy-mode rollout: move nodes pool by pool, verify each, roll back on failure, resume.
import { effectiveMode, parseKubeProxyConfiguration } from "../../core/config.js";
import { configHash, describePlan } from "../../core/plan.js";
import { STEP_RESULT_PREFIX, summarizeVerification } from "../../core/promotion.js";
import type { ProxyMode } from "../../core/types.js";
import { apiErrorMessage } from "../../cluster/client.js";
import { KubeProxyCluster, NotFound } from "../../cluster/kubeProxy.js";
import { requestTimeoutForLease } from "../../cluster/timeouts.js";
import {
    currentPlan,
    defaultHolder,
    finish,
    runPools,
    RolloutRefused,
    RolloutFailure,
    RolloutInterrupted,
    type Context,
} from "../../rollout/runner.js";
import { describeIssues, rolloutSpecSchema, type RolloutSpec } from "../../rollout/spec.js";
import { commandFlags, flag, poolNameValue, readInput, type Flags } from "../args.js";
import { reachCluster } from "../kubeconfig.js";
import { CliError, EXIT } from "../output.js";
import type { Io } from "../io.js";
import { capStrings, nameList, pieces } from "../../core/text.js";
import { ACCESS_FLAGS, ACCESS_HELP, connect, stamp } from "./access.js";
import { eventsFileOf, type EventsFile } from "../events.js";

export const ROLLOUT_HELP = `kube-proxy-mode rollout [--spec FILE|-] [--pool NAME]... [--finish] [--plan]

Moves nodes to the target configuration, pool by pool, one batch of at most maxUnavailable
nodes at a time: cordon, drain (if asked), restart kube-proxy on the target, verify, uncordon.
Stops at the first failure (rolling the node back with onFailure: rollback-node). Running it
again resumes: verified nodes are skipped. Prints one line per step.

  --spec FILE|-     the rollout spec (JSON: target, pools, verify, onFailure); default: $KPM_ROLLOUT_SPEC
  --pool NAME       run only this pool (repeatable); default: every pool in order
  --finish          after all pools: write the canonical ConfigMap, hand every node back to the
                    installer's DaemonSet and restore its spec; ends with the verification record
                    ("kube-proxy-mode/result {...}": nodes verified of the pools' nodes, and when;
                    with --json, its "verification") that the finish step keeps as the stack's
                    promotion record
  --plan            print the plan and change nothing
  --events FILE     append each node event (batch started, cordoned, kube-proxy running, first
                    sync, check, released; with its pool, node, step kind and time) to FILE as a
                    JSON line, for a program to read; default: $KPM_EVENTS_FILE (none when unset)

One rollout per cluster: the run holds the Lease kube-system/kube-proxy-mode (renewed every 20 s;
another run refuses, naming the holder, until it is released or expires 60 s after its last
renewal, watched that long on this machine's clock first in case the holder's clock runs behind;
KPM_LEASE_SECONDS changes that). A run whose lease went unrenewed for two thirds of that
(the API server out of reach) or was taken over stops sending writes at once, leaves the node in
hand mid-move for the next run to finish, and exits 1. A request the API server does not answer
within the request timeout (a black-holed network) fails the node the same way; no write is sent
later than that timeout before the lease, as last renewed, expires. SIGINT/SIGTERM: the node in hand finishes
its move or is rolled back, the lease is released, and the command exits 1 naming the node.
${ACCESS_HELP}

A spec with cluster.server (the component records the API server its preview reviewed) is only
run against that API server: a kubeconfig pointing elsewhere is refused (exit 2).

Exit codes: 0 done, 1 a node failed (the message names it, the check and its output), 2 invalid spec.`;

/** rollout's flags. */
export const ROLLOUT_FLAGS = {
    spec: flag.value(),
    pool: flag.list(poolNameValue),
    finish: flag.switch(),
    plan: flag.switch(),
    events: flag.value(),
    ...ACCESS_FLAGS,
};

type RolloutFlags = Flags<typeof ROLLOUT_FLAGS>;

function readSpec(flags: RolloutFlags): RolloutSpec {
    const text = flags.spec !== undefined ? readInput(flags.spec, "--spec") : process.env.KPM_ROLLOUT_SPEC;
    if (!text) throw new CliError("no rollout spec: pass --spec FILE or set KPM_ROLLOUT_SPEC");
    let raw: unknown;
    try {
        raw = JSON.parse(text);
    } catch (e) {
        throw new CliError(`the rollout spec is not JSON: ${(e as Error).message}`);
    }
    const parsed = rolloutSpecSchema.safeParse(raw);
    if (!parsed.success) {
        throw new CliError(
            "the rollout spec is invalid",
            EXIT.invalid,
            describeIssues(parsed.error.issues, "").map((line) => `error: ${line}`),
        );
    }
    const spec = parsed.data;
    if (configHash(spec.target.config) !== spec.target.hash)
        throw new CliError(
            `the rollout spec's target.hash ${spec.target.hash} does not match its configuration (${configHash(spec.target.config)})`,
        );
    const config = parseKubeProxyConfiguration(spec.target.config, "target.config");
    if (effectiveMode(config) !== spec.target.mode)
        throw new CliError(
            `target.mode ${spec.target.mode} does not match the configuration's mode ${effectiveMode(config)}`,
        );
    return spec;
}

/** KPM_LEASE_SECONDS: how long the rollout's Lease holds after its last renewal; undefined for the default. */
function leaseSecondsFromEnv(): number | undefined {
    const text = process.env.KPM_LEASE_SECONDS;
    if (!text) return undefined;
    const seconds = Number(text);
    if (!(Number.isInteger(seconds) && seconds >= 2))
        throw new CliError(`KPM_LEASE_SECONDS ${JSON.stringify(text)} must be a whole number of seconds, at least 2`);
    return seconds;
}

/** The run's request timeout: KPM_API_TIMEOUT_SECONDS (default 15 s), at most a third of its lease. */
function requestTimeoutOfRun(leaseSeconds = 60): number {
    try {
        return requestTimeoutForLease(leaseSeconds);
    } catch (e) {
        throw new CliError((e as Error).message, EXIT.invalid);
    }
}

/**
 * SIGINT/SIGTERM while the rollout runs: the node in hand is finished or rolled back, the lease
 * released, then the command exits 1. `release` removes the handlers.
 */
function stopOnSignal(log: (l: string) => void): { signal: AbortSignal; release: () => void } {
    const stop = new AbortController();
    const onSignal = (signal: NodeJS.Signals) => {
        if (stop.signal.aborted) return;
        log(`${signal} received: finishing or rolling back the node(s) in hand, then stopping`);
        stop.abort(signal);
    };
    process.on("SIGINT", onSignal).on("SIGTERM", onSignal);
    return { signal: stop.signal, release: () => void process.off("SIGINT", onSignal).off("SIGTERM", onSignal) };
}

/** --plan: the plan on stdout, its findings on stderr (or both as JSON); exit 1 on an error finding. */
async function printRolloutPlan(ctx: Context, io: Io, json: boolean): Promise<number> {
    const { plan, findings } = await currentPlan(ctx);
    if (json) io.json(capStrings({ plan, findings }));
    else {
        io.out(describePlan(plan));
        for (const f of findings) io.finding(`${f.severity}: ${f.field}: ${f.message}`);
    }
    return findings.some((f) => f.severity === "error") ? EXIT.failed : EXIT.ok;
}

/** --finish: the canonical hand-back, then the verification record (logged, and printed as the step's result line). */
async function finishRollout(ctx: Context, io: Io, json: boolean): Promise<VerificationRecord> {
    await finish(ctx);
    const verification = await verificationRecord(ctx);
    ctx.log(
        `verified ${verification.nodesVerified} of ${verification.nodesTotal} node(s) on configuration ${ctx.spec.target.hash} ` +
            `(${verification.nodesChecked} by the built-in node checks)${verification.unverified.length ? `; not verified: ${nameList(verification.unverified)}` : ""}`,
    );
    // the finish step records this line as the stack's promotion record (see core/promotion.ts)
    if (!json) io.out(`${STEP_RESULT_PREFIX}${JSON.stringify(verification)}`);
    return verification;
}

/** The pools asked for (every pool without --pool, none for a lone --finish), then the finish if asked. */
async function moveAndFinish(ctx: Context, flags: RolloutFlags, io: Io): Promise<number> {
    const outcomes = flags.pool || !flags.finish ? await runPools(ctx, flags.pool) : [];
    if (ctx.signal?.aborted)
        throw new RolloutInterrupted(
            `the rollout was stopped (${String(ctx.signal.reason)}) after its last node finished: every node it moved is verified and released`,
        );
    const verification = flags.finish ? await finishRollout(ctx, io, flags.json === true) : undefined;
    if (flags.json) {
        const { spec } = ctx;
        const report = {
            ok: true,
            target: spec.target.hash,
            mode: spec.target.mode,
            nodes: outcomes,
            ...(verification ? { verification } : {}),
        };
        io.json(capStrings(report));
    }
    return EXIT.ok;
}

/**
 * A node's failure as `rollout --json` prints it: every line short (core/text.ts), the lists whole
 * (one name a line), and a failed hook's output whole in `output`, in pieces (`jq -j '.output[]'`).
 */
export function failureDocument(e: RolloutFailure): Record<string, unknown> {
    const { node, pool, check, detail, rolledBack, leftCordoned, output } = e;
    return {
        ...capStrings({ ok: false, node, pool, check, detail, rolledBack, leftCordoned }),
        ...(output === undefined ? {} : { output: pieces(output) }),
    };
}

/** A failed rollout as the CLI reports it: a node's failure (exit 1, with --json its record), or a CliError. */
function rolloutError(e: unknown, io: Io, json: boolean): number {
    if (e instanceof RolloutFailure) {
        if (json) io.json(failureDocument(e));
        io.err(`rollout failed: ${e.message}`);
        return EXIT.failed;
    }
    if (e instanceof NotFound) throw new CliError(e.message, EXIT.failed);
    if (e instanceof RolloutRefused || e instanceof RolloutInterrupted)
        throw new CliError(`rollout ${e instanceof RolloutRefused ? "refused" : "stopped"}: ${e.message}`, EXIT.failed);
    const fromApi = typeof (e as { code?: unknown })?.code === "number" || !(e instanceof Error);
    throw new CliError(`rollout failed: ${fromApi ? apiErrorMessage(e) : e.message}`, EXIT.failed);
}

export async function rolloutCommand(argv: string[], given: Io): Promise<number> {
    const command = commandFlags("rollout", argv, given, ROLLOUT_FLAGS, ROLLOUT_HELP);
    if (!command) return EXIT.ok;
    const { flags, io } = command;
    const spec = readSpec(flags);
    // before the cluster is reached: a file that cannot be written refuses the run at once
    const events = flags.plan ? undefined : eventsFileOf(flags.events);
    try {
        return await runRollout(flags, spec, io, events);
    } finally {
        events?.close();
    }
}

/** The command once its spec is read: the cluster reached, then the plan, or the pools and the finish asked for. */
async function runRollout(
    flags: RolloutFlags,
    spec: RolloutSpec,
    io: Io,
    events: EventsFile | undefined,
): Promise<number> {
    const { cluster, kubeconfig } = connect(flags, spec.flavor, spec.names, spec.cluster);
    const log = (l: string) => (flags.json ? io.err(`[${stamp()}] ${l}`) : io.out(`[${stamp()}] ${l}`));
    cluster.onRetry = (call, attempt, e, delay) =>
        log(
            `API ${call} failed (${apiErrorMessage(e)}); retrying in ${(delay / 1000).toFixed(1)}s (attempt ${attempt + 1})`,
        );
    const leaseSeconds = leaseSecondsFromEnv();
    const requestTimeoutSeconds = requestTimeoutOfRun(leaseSeconds);
    cluster.requestTimeoutMs = requestTimeoutSeconds * 1000;
    await reachCluster(cluster, io);
    const stop = stopOnSignal(log);
    // one holder for the whole command: its finish takes back at once a lease its pools could not release
    const holder = defaultHolder();
    const ctx: Context = {
        cluster,
        spec,
        log,
        kubeconfig,
        signal: stop.signal,
        leaseSeconds,
        requestTimeoutSeconds,
        holder,
        onEvent: events && ((e) => events.write(e)),
    };
    try {
        return flags.plan ? await printRolloutPlan(ctx, io, flags.json === true) : await moveAndFinish(ctx, flags, io);
    } catch (e) {
        return rolloutError(e, io, flags.json === true);
    } finally {
        stop.release();
    }
}

/** After the finish: which nodes of the pools are verified on the target, and how (the promotion record's counts). */
async function verificationRecord(ctx: Context): Promise<VerificationRecord> {
    // one read of the cluster: the plan's node list is the one the record counts
    const { plan, nodes } = await currentPlan(ctx);
    const poolNodes = plan.pools.flatMap((p) => p.nodes.map((n) => n.name));
    return {
        configHash: ctx.spec.target.hash,
        mode: ctx.spec.target.mode,
        ...summarizeVerification(nodes, poolNodes, ctx.spec.target.hash),
        cluster: ctx.cluster.identity,
        /** when the finish completed: the promotion record's finishedAt */
        finishedAt: new Date().toISOString(),
    };
}

/** What the finish reports and the promotion record is made of. */
interface VerificationRecord extends ReturnType<typeof summarizeVerification> {
    configHash: string;
    mode: ProxyMode;
    cluster: KubeProxyCluster["identity"];
    finishedAt: string;
}
