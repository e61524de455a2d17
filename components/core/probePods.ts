// Probe pods a dead run leaves behind: each pod's deadline and stale-after time, and which pods a
// run that holds the rollout lease deletes. Pure: the cluster adapter lists and deletes.

/**
 * How long a probe pod may run past its own timeout before the kubelet stops it
 * (activeDeadlineSeconds): the run's own wait gives up first and deletes the pod, so the deadline
 * only ends a pod whose run died.
 */
export const PROBE_DEADLINE_MARGIN_SECONDS = 30;

/**
 * Past its deadline, how long until a probe pod is certainly stale: the deadline counts from when
 * its node's kubelet starts it, not from its creation, and the run that sweeps it may read another
 * machine's clock than the one that wrote its stale-after label.
 */
export const PROBE_STALE_MARGIN_SECONDS = 600;

/** A probe pod without a stale-after label (made before it existed) is stale this long after its creation. */
export const UNLABELLED_PROBE_STALE_SECONDS = 3600;

/** The probe pod's deadline (activeDeadlineSeconds) and when it is certainly stale (Unix seconds), from its timeout. */
export function probePodLifetime(
    timeoutSeconds: number,
    nowMs: number,
): { activeDeadlineSeconds: number; staleAfter: number } {
    const activeDeadlineSeconds = Math.ceil(timeoutSeconds) + PROBE_DEADLINE_MARGIN_SECONDS;
    return {
        activeDeadlineSeconds,
        staleAfter: Math.ceil(nowMs / 1000) + activeDeadlineSeconds + PROBE_STALE_MARGIN_SECONDS,
    };
}

/** A probe pod as the sweep sees it: its stale-after label and the run (lease holder) that made it, as written. */
export interface ProbePodSeen {
    name: string;
    /** the stale-after label: Unix seconds */
    staleAfter?: string;
    /** the run annotation: the lease holder of the run that made it; absent for a lease-less command (status --probe, verify) */
    run?: string;
    /** metadata.creationTimestamp (ISO 8601) */
    createdAt?: string;
}

/**
 * The probe pods a run that holds the rollout lease (`holder`) deletes, and why. The lease says
 * who is live: a pod made under the lease by another run is that run's, which holds the lease no
 * longer, so it is left over whatever its age. A pod made without the lease (status --probe,
 * verify) may belong to a command running now: it goes only once past its stale-after time.
 */
export function probePodsToSweep(
    pods: ProbePodSeen[],
    opts: { holder: string; nowMs: number },
): { name: string; why: string }[] {
    const out: { name: string; why: string }[] = [];
    for (const p of pods) {
        if (p.run !== undefined && p.run !== opts.holder) {
            out.push({ name: p.name, why: `left by the run ${p.run}, which no longer holds the rollout lease` });
            continue;
        }
        if (p.run === opts.holder) continue;
        const label = p.staleAfter !== undefined && /^[0-9]{1,12}$/.test(p.staleAfter) ? Number(p.staleAfter) : NaN;
        const created = p.createdAt ? Date.parse(p.createdAt) : NaN;
        const staleAt = Number.isFinite(label)
            ? label * 1000
            : Number.isFinite(created)
              ? created + UNLABELLED_PROBE_STALE_SECONDS * 1000
              : NaN;
        if (Number.isFinite(staleAt) && staleAt < opts.nowMs)
            out.push({ name: p.name, why: `stale since ${new Date(staleAt).toISOString()}` });
    }
    return out;
}
