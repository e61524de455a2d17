// A node's first sync in its new mode, on the cluster: the old mode's sync read from the node
// before the move, then a sampler pod on the node judged by core/firstSync.ts until kube-proxy
// has synced, stalled, crashed or run out of time.
import {
    firstSyncLimits,
    fullSyncTotals,
    type FullSyncTotals,
    judgeFirstSync,
    parseSyncSample,
    syncBaseline,
    type FirstSyncLimits,
    type FirstSyncVerdict,
    type SyncBaseline,
    type SyncSample,
} from "../core/firstSync.js";
import { formatDuration } from "../core/duration.js";
import { slowerBy } from "../core/syncEstimate.js";
import { parseProbeOutput } from "../core/probe.js";
import type { ProxyMode } from "../core/types.js";
import type { ProbeRunSettings } from "./context.js";

/** Progress lines of a long wait: at these seconds, then every doubling, so a wait of any length logs a few. */
const FIRST_PROGRESS_SECONDS = 15;

/** The node's kube-proxy metrics, from a probe. */
async function metricsOf(run: ProbeRunSettings, node: string): Promise<Record<string, number>> {
    const { output } = await run.cluster.runProbe(node, {
        image: run.verify.image,
        action: "probe",
        env: {},
        timeoutSeconds: 120,
        priorityClassName: run.verify.priorityClassName,
        run: run.holder,
    });
    return parseProbeOutput(output).metrics;
}

/** The node's old-mode sync, from its running kube-proxy's metrics. */
export async function readSyncBaseline(run: ProbeRunSettings, node: string): Promise<SyncBaseline> {
    return syncBaseline(await metricsOf(run, node));
}

/** The node's full-sync totals so far, from its running kube-proxy's metrics (a soak's start and end). */
export async function readFullSyncTotals(run: ProbeRunSettings, node: string): Promise<FullSyncTotals | undefined> {
    return fullSyncTotals(await metricsOf(run, node));
}

/**
 * The first-sync limits of a node of `pool` moving `from` -> `to`, from its baseline (the old
 * mode's sync, scaled up when the new mode is slower) and the run's verify settings.
 */
export function limitsFor(
    run: ProbeRunSettings,
    pool: { firstSyncTimeoutSeconds?: number },
    baseline: SyncBaseline,
    pair?: { from: ProxyMode; to: ProxyMode },
) {
    const by = pair ? slowerBy(pair.from, pair.to) : 1;
    return firstSyncLimits(baseline, {
        factor: run.verify.firstSyncFactor,
        minSeconds: run.verify.firstSyncMinSeconds,
        stallSeconds: run.verify.firstSyncStallSeconds,
        overrideSeconds: pool.firstSyncTimeoutSeconds,
        ...(pair && by > 1 ? { slower: { by, why: `${pair.to} syncs slower than ${pair.from}` } } : {}),
    });
}

/**
 * Samples the node's kube-proxy until core/firstSync.ts judges its first sync in `mode` done or
 * failed; logs the wait's start and a few progress lines. Returns the last verdict.
 */
export async function awaitFirstSync(
    run: ProbeRunSettings,
    node: string,
    mode: ProxyMode,
    limits: FirstSyncLimits,
    log: (line: string) => void,
): Promise<FirstSyncVerdict> {
    log(
        `waiting for the first sync in ${mode} mode (deadline ${formatDuration(limits.deadlineSeconds)}: ${limits.why}; a stall of ${formatDuration(limits.stallSeconds)} fails it)`,
    );
    const samples: SyncSample[] = [];
    let verdict = { kind: "waiting", seconds: 0 } as FirstSyncVerdict;
    let nextProgress = FIRST_PROGRESS_SECONDS;
    await run.cluster.runProbe(node, {
        image: run.verify.image,
        action: "await-sync",
        env: {},
        // the pod's own limit, past the judge's deadline: the judge ends the wait first
        timeoutSeconds: limits.deadlineSeconds + limits.stallSeconds + 60,
        priorityClassName: run.verify.priorityClassName,
        run: run.holder,
        onLine: (line) => {
            const sample = parseSyncSample(line);
            if (!sample) return false;
            samples.push(sample);
            verdict = judgeFirstSync(samples, mode, limits);
            if (verdict.kind === "waiting" && verdict.seconds >= nextProgress) {
                nextProgress *= 2;
                const busy = verdict.busy === undefined ? "" : verdict.busy ? ", kube-proxy busy" : ", kube-proxy idle";
                log(
                    `first sync: waiting ${verdict.seconds}s, /proxyMode ${sample.mode ? `says ${sample.mode}` : "not answering"}${busy}`,
                );
            }
            return verdict.kind !== "waiting";
        },
    });
    // its end is the caller's line: a move's "first sync" event, a rollback's own (events.ts)
    return verdict;
}
