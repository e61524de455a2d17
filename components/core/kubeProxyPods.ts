// A node's kube-proxy pods as the rollout reads them, and the one rule of a node's kube-proxy
// being as its placement wants. Pure.

export interface KubeProxyPod {
    name: string;
    node: string;
    owner?: string;
    phase?: string;
    ready: boolean;
    restarts: number;
    /** waiting/terminated reason of the container, e.g. CrashLoopBackOff, Error */
    problem?: string;
    deleting: boolean;
    /** its `controller-revision-hash` label: the DaemonSet revision its controller started it as */
    revisionHash?: string;
}

/** What a node's kube-proxy pods say about the wait for one DaemonSet's pod (for "hold": for none). */
export type PodVerdict =
    | { kind: "gone" }
    | { kind: "failing"; pod: KubeProxyPod }
    | { kind: "running"; pod: KubeProxyPod }
    | { kind: "waiting"; detail: string };

/**
 * The one rule of a node's kube-proxy being as it should: exactly one pod, of `owner`'s DaemonSet
 * (the DaemonSet of the placement), not being deleted, Running and Ready, never restarted and not
 * crash-looping ("failing" when it is). For the hold placement (MARKS.holdValue), no pod at all.
 */
export function podVerdict(pods: KubeProxyPod[], owner: string, hold: boolean): PodVerdict {
    if (hold)
        return pods.length === 0
            ? { kind: "gone" }
            : { kind: "waiting", detail: `${pods.length} kube-proxy pod(s) still on the node` };
    const others = pods.filter((p) => p.owner !== owner || p.deleting);
    const mine = pods.filter((p) => p.owner === owner && !p.deleting);
    if (others.length > 0 || mine.length !== 1)
        return { kind: "waiting", detail: `${others.length} old and ${mine.length} new kube-proxy pod(s) on the node` };
    const p = mine[0];
    if (p.problem || p.restarts > 0 || p.phase === "Failed") return { kind: "failing", pod: p };
    if (p.phase === "Running" && p.ready) return { kind: "running", pod: p };
    return { kind: "waiting", detail: `pod ${p.name} is ${p.phase}${p.ready ? "" : ", not ready"}` };
}
