// The subcommands that act on a cluster: rollout, status, verify, cleanup.
import { effectiveMode, parseKubeProxyConfiguration } from "../../core/config.js";
import { namesFor, type Flavor } from "../../core/facts.js";
import { configHash, describePlan, MARKS } from "../../core/plan.js";
import { parseProbeOutput } from "../../core/probe.js";
import { STEP_RESULT_PREFIX, summarizeVerification } from "../../core/promotion.js";
import type { ProxyMode } from "../../core/types.js";
import { apiErrorMessage, clusterIdentity, normalizeServer } from "../../cluster/client.js";
import { hookKubeconfig } from "../../cluster/credentials.js";
import { KubeProxyCluster, NotFound } from "../../cluster/kubeProxy.js";
import { requestTimeoutForLease, requestTimeoutFromEnvironment } from "../../cluster/timeouts.js";
import {
    currentPlan,
    defaultHolder,
    finish,
    runPools,
    RolloutRefused,
    RolloutFailure,
    RolloutInterrupted,
    configurationMode,
    serviceProbeEnv,
    verifyNode,
    type Context,
} from "../../rollout/runner.js";
import { describeIssues, rolloutSpecSchema, verifySchema, type RolloutSpec } from "../../rollout/spec.js";
import {
    flag,
    flavorValue,
    modeValue,
    nodeNameValue,
    nonEmptyValue,
    parseFlags,
    poolNameValue,
    readInput,
    requireName,
    serviceValue,
    type Flags,
} from "../args.js";
import { kubeconfigFromFlags, reachCluster } from "../kubeconfig.js";
import { CliError, EXIT, table } from "../output.js";
import { withOutput, type Io } from "../io.js";
import { capStrings, nameList, pieces } from "../../core/text.js";

/** The flags of every command that acts on a cluster: which cluster, and JSON output. */
const ACCESS_FLAGS = {
    kubeconfig: flag.value(),
    context: flag.value(),
    json: flag.switch(),
    output: flag.output(),
};

const ACCESS_HELP = `  --kubeconfig PATH, --context NAME   which cluster (default: $KUBECONFIG or ~/.kube/config;
                                      KPM_KUBECONFIG may hold a kubeconfig's content instead,
                                      KPM_CONTEXT the context)
  --json                              one JSON object on stdout
  -o, --output json|yaml              -o json is --json; -o yaml the same object as YAML

Every request to the API server is abandoned after KPM_API_TIMEOUT_SECONDS (default 15 s; for a
rollout at most a third of its lease): a server that does not answer fails the command, exit 1,
naming the server and the timeout.`;

function connect(
    flags: Flags<typeof ACCESS_FLAGS>,
    flavor: Flavor,
    names?: RolloutSpec["names"],
    reviewed?: RolloutSpec["cluster"],
): { cluster: KubeProxyCluster; kubeconfig?: string } {
    const kc = kubeconfigFromFlags(flags);
    try {
        requestTimeoutFromEnvironment();
    } catch (e) {
        throw new CliError((e as Error).message, EXIT.invalid);
    }
    const here = clusterIdentity(kc);
    if (reviewed && here.server !== normalizeServer(reviewed.server)) {
        throw new CliError(
            `refusing to act: the kubeconfig points at the API server ${here.server} (context ${here.context}), not ${reviewed.server}${reviewed.context ? ` (context ${reviewed.context})` : ""}, the cluster the preview reviewed; ` +
                `pass the kubeconfig and context of that cluster, or preview again against this one`,
            EXIT.invalid,
        );
    }
    // hooks get this very cluster and identity (the context applied), in a private file while they run
    return { cluster: new KubeProxyCluster(kc, namesFor(flavor, names ?? {})), kubeconfig: hookKubeconfig(kc) };
}

function stamp(): string {
    return new Date().toISOString().slice(11, 19);
}

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

export async function rolloutCommand(argv: string[], io: Io): Promise<number> {
    const flags = parseFlags("rollout", argv, ROLLOUT_FLAGS);
    io = withOutput(io, flags.output);
    if (flags.help) {
        io.out(ROLLOUT_HELP);
        return EXIT.ok;
    }
    const spec = readSpec(flags);
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

export const STATUS_HELP = `kube-proxy-mode status [--flavor kubeadm|eks] [--probe]

One row per node: pool label, the configuration it runs (hash, or canonical), the mode of that
configuration, the mode the process reports (with --probe, which runs a probe pod per node),
kernel, and whether and how it was verified.

With --probe it creates a privileged pod on every node (kube-system, host network, the node's
root filesystem mounted at /host); each is deleted afterwards.

  --flavor kubeadm|eks    where the installer keeps kube-proxy (default kubeadm)
  --probe                 run a probe pod per node: the mode its kube-proxy reports and whether a
                          connection to a Service's ClusterIP flows (needs nodes that run pods)
  --service NS/NAME       the Service --probe connects to (default default/kubernetes)
  --image IMAGE           probe image (default: busybox 1.36 pinned by digest)
${ACCESS_HELP}`;

/** What a probe pod on the node reports: the mode its kube-proxy chose, and whether a connection to the Service flowed. */
async function probeStatus(
    cluster: KubeProxyCluster,
    node: string,
    image: string,
    service: string,
    env: Record<string, string>,
): Promise<{ reported: string; traffic: string }> {
    try {
        const { output } = await cluster.runProbe(node, { image, action: "probe", env, timeoutSeconds: 60 });
        const report = parseProbeOutput(output);
        const reported = report.proxyMode ?? `(no answer: ${report.proxyModeError?.slice(0, 40)})`;
        const traffic = !report.connect.attempted
            ? `not tried (no Service ${service})`
            : report.connect.ok
              ? `flowed to ${service}`
              : `FAILED to ${service}`;
        return { reported, traffic };
    } catch (e) {
        return { reported: `(probe failed: ${(e as Error).message.slice(0, 60)})`, traffic: "unknown" };
    }
}

/** One row of `status`: a node, where it runs, and what it reports. */
interface StatusRow {
    node: string;
    pool: string;
    config: string;
    mode: ProxyMode | "none";
    reported: string | null;
    traffic: string | null;
    kernel: string;
    cordoned: boolean;
    verified: string;
}

/** The mode each placement runs (its hashed ConfigMap's, configurationMode); "none" for a held node. */
function placementModes(
    cluster: KubeProxyCluster,
    canonicalMode: ProxyMode,
): (placement: string | null) => Promise<ProxyMode | "none"> {
    return async (placement) => {
        if (placement === MARKS.holdValue) return "none";
        if (!placement) return canonicalMode;
        return configurationMode(cluster, placement).catch(() => canonicalMode);
    };
}

/** The status table on stdout, the canonical ConfigMap's line on stderr. */
function printStatus(
    io: Io,
    rows: StatusRow[],
    canonical: { hash: string; mode: ProxyMode },
    inRollout: boolean,
    probe: boolean,
): void {
    const header = [
        "NODE",
        "POOL",
        "CONFIG",
        "MODE",
        ...(probe ? ["REPORTED", "TRAFFIC"] : []),
        "KERNEL",
        "CORDONED",
        "VERIFIED",
    ];
    const cells = rows.map((r) => [
        r.node,
        r.pool,
        r.config,
        r.mode,
        ...(probe ? [r.reported ?? "", r.traffic ?? ""] : []),
        r.kernel,
        r.cordoned ? "yes" : "no",
        r.verified,
    ]);
    io.out(table(header, cells));
    const rollout = inRollout ? "; a rollout is in progress (the installer's DaemonSet is in rollout shape)" : "";
    io.err(`canonical ConfigMap: ${canonical.mode} (${canonical.hash})${rollout}`);
}

/** status's flags. */
export const STATUS_FLAGS = {
    flavor: flag.value(flavorValue),
    probe: flag.switch(),
    image: flag.value(nonEmptyValue),
    service: flag.value(serviceValue),
    ...ACCESS_FLAGS,
};

export async function statusCommand(argv: string[], io: Io): Promise<number> {
    const flags = parseFlags("status", argv, STATUS_FLAGS);
    io = withOutput(io, flags.output);
    if (flags.help) {
        io.out(STATUS_HELP);
        return EXIT.ok;
    }
    const { cluster } = connect(flags, flags.flavor ?? "kubeadm");
    await reachCluster(cluster, io);
    if (flags.probe)
        io.err(
            "status --probe: creating a privileged probe pod (host network, the node's root at /host) in kube-system on each node",
        );
    try {
        const inst = await cluster.installation();
        const canonicalHash = configHash(inst.current.text);
        const canonicalMode = effectiveMode(inst.current.config);
        const modeOf = placementModes(cluster, canonicalMode);
        const defaults = verifySchema.parse({});
        const service = flags.service ?? defaults.service;
        const probeEnv = flags.probe ? (await serviceProbeEnv(cluster, service)).env : {};
        const rows: StatusRow[] = [];
        for (const n of await cluster.nodeStates()) {
            const placement = n.placement;
            const probed = flags.probe
                ? await probeStatus(cluster, n.name, flags.image ?? defaults.image, service, probeEnv)
                : undefined;
            const verified = n.verified
                ? n.verified === (placement ?? canonicalHash)
                    ? `yes (${n.verified})`
                    : `on ${n.verified}, not this config`
                : "no";
            rows.push({
                node: n.name,
                pool: n.labels["pool"] ?? "",
                config: placement ?? `canonical (${canonicalHash})`,
                mode: await modeOf(placement),
                reported: probed?.reported ?? null,
                traffic: probed?.traffic ?? null,
                kernel: n.kernelVersion ?? "",
                cordoned: n.unschedulable === true,
                verified,
            });
        }
        const canonical = { hash: canonicalHash, mode: canonicalMode };
        if (flags.json) io.json({ canonical, rolloutInProgress: inst.inRollout, nodes: rows });
        else printStatus(io, rows, canonical, inst.inRollout, flags.probe === true);
        return EXIT.ok;
    } catch (e) {
        throw new CliError(`status: ${e instanceof NotFound ? e.message : apiErrorMessage(e)}`, EXIT.failed);
    }
}

export const VERIFY_HELP = `kube-proxy-mode verify --node NAME [--mode MODE]

Runs the built-in checks on one node: the mode the process chose (/proxyMode and its start-up
log line), leftovers of other modes, rule sync health, and a connection to a Service's ClusterIP.
Creates a privileged pod on the node (kube-system, host network, the node's root filesystem
mounted at /host) to run the checks; it is deleted afterwards.

  --node NAME             required
  --mode MODE             the mode expected (default: the mode of the configuration the node runs)
  --service NS/NAME       Service to connect to (default default/kubernetes)
  --image IMAGE           probe image (default: busybox 1.36 pinned by digest)
  --flavor kubeadm|eks
${ACCESS_HELP}

Exit codes: 0 every check passed, 1 a check failed.`;

async function nodeMode(cluster: KubeProxyCluster, node: string): Promise<ProxyMode> {
    const inst = await cluster.installation();
    const n = await cluster.node(node);
    const placement = n.metadata?.labels?.[MARKS.configLabel];
    if (!placement || placement === MARKS.holdValue) return effectiveMode(inst.current.config);
    return configurationMode(cluster, placement);
}

/** verify's flags. */
export const VERIFY_FLAGS = {
    node: flag.value(nodeNameValue),
    mode: flag.value(modeValue),
    service: flag.value(serviceValue),
    image: flag.value(nonEmptyValue),
    flavor: flag.value(flavorValue),
    ...ACCESS_FLAGS,
};

export async function verifyCommand(argv: string[], io: Io): Promise<number> {
    const flags = parseFlags("verify", argv, VERIFY_FLAGS);
    io = withOutput(io, flags.output);
    if (flags.help) {
        io.out(VERIFY_HELP);
        return EXIT.ok;
    }
    const node = requireName(flags.node, "--node");
    const flavor = flags.flavor ?? "kubeadm";
    const mode = flags.mode;
    const verify = verifySchema.parse({
        ...(flags.service ? { service: flags.service } : {}),
        ...(flags.image ? { image: flags.image } : {}),
    });
    const { cluster } = connect(flags, flavor);
    await reachCluster(cluster, io);
    const log = (l: string) => io.err(`[${stamp()}] ${l}`);
    io.err(
        `verify: creating a privileged probe pod (host network, the node's root at /host) in kube-system on ${node}`,
    );
    try {
        const expected = mode ?? (await nodeMode(cluster, node));
        const spec = {
            verify,
            flavor,
            pools: [],
            target: { hash: "", mode: expected, config: "" },
            onFailure: "stop",
        } as unknown as RolloutSpec;
        const checks = await verifyNode({ cluster, spec, log }, node, expected, { cleanLeftovers: false, log });
        const ok = checks.every((c) => c.ok);
        if (flags.json) io.json({ node: node, mode: expected, ok, checks });
        else
            io.out(
                table(
                    ["CHECK", "RESULT", "DETAIL"],
                    checks.map((c) => [c.check, c.ok ? "ok" : "FAILED", c.detail]),
                ),
            );
        return ok ? EXIT.ok : EXIT.failed;
    } catch (e) {
        throw new CliError(
            `verify ${node}: ${e instanceof NotFound ? e.message : ((e as Error).message ?? apiErrorMessage(e))}`,
            EXIT.failed,
        );
    }
}

export const CLEANUP_HELP = `kube-proxy-mode cleanup --node NAME [--image IMAGE]

Removes kube-proxy's leftovers from one node (kube-ipvs0 and the IPVS virtual servers on it,
kube-proxy's ipsets, iptables chains and nftables tables; those of the mode its kube-proxy runs
now stay), and nothing of other agents: their KUBE-* chains, ipsets, virtual servers and tables
are listed as "not ours, left alone". Refuses while the node's kube-proxy runs in ipvs mode.
Creates a privileged pod on the node (kube-system, host network, the node's root filesystem
mounted at /host) to do it; it is deleted afterwards.

  --node NAME       required
  --image IMAGE     probe image (default: busybox 1.36 pinned by digest)
  --flavor kubeadm|eks
${ACCESS_HELP}`;

/** cleanup's flags. */
export const CLEANUP_FLAGS = {
    node: flag.value(nodeNameValue),
    image: flag.value(nonEmptyValue),
    flavor: flag.value(flavorValue),
    ...ACCESS_FLAGS,
};

export async function cleanupCommand(argv: string[], io: Io): Promise<number> {
    const flags = parseFlags("cleanup", argv, CLEANUP_FLAGS);
    io = withOutput(io, flags.output);
    if (flags.help) {
        io.out(CLEANUP_HELP);
        return EXIT.ok;
    }
    const node = requireName(flags.node, "--node");
    const { cluster } = connect(flags, flags.flavor ?? "kubeadm");
    await reachCluster(cluster, io);
    try {
        const running = (await cluster.kubeProxyPods(node)).filter((p) => !p.deleting);
        const mode = running.length ? await nodeMode(cluster, node) : undefined;
        if (mode === "ipvs") {
            throw new CliError(
                `cleanup ${node}: its kube-proxy runs in ipvs mode; move the node first (rollout), or stop kube-proxy there`,
                EXIT.invalid,
            );
        }
        const image = flags.image ?? verifySchema.parse({}).image;
        io.err(`cleanup: creating a privileged pod (host network, the node's root at /host) in kube-system on ${node}`);
        const { output, succeeded } = await cluster.runProbe(node, {
            image,
            action: "cleanup",
            env: mode ? { KPM_MODE: mode } : {},
            timeoutSeconds: 120,
        });
        const lines = output.split("\n").filter((l) => l && !l.startsWith("###"));
        if (flags.json) io.json({ node: node, ok: succeeded, removed: lines });
        else io.out(lines.length ? lines.join("\n") : "nothing to remove");
        return succeeded ? EXIT.ok : EXIT.failed;
    } catch (e) {
        if (e instanceof CliError) throw e;
        throw new CliError(`cleanup ${node}: ${(e as Error).message ?? apiErrorMessage(e)}`, EXIT.failed);
    }
}
