// A node's drain, by kubectl drain's rules (core/drain.ts decides what goes), through the
// Eviction API so PodDisruptionBudgets hold; kept apart from the rollout's other writes to nodes.
import {
    blockingPdbs,
    decideDrain,
    describeRefusal,
    drainDeadline,
    podName,
    type DrainOptions,
    type DrainPod,
} from "../core/drain.js";
import { changesOfPodsOn } from "./changes.js";
import { apiErrorMessage, apiStatus } from "./client.js";
import { isNotFound, type KubeProxyClient } from "./kubeProxyClient.js";

/** Why a drain gave up: the pods still on the node, and what blocked their evictions. */
function drainTimedOut(node: string, timeoutSeconds: number, left: DrainPod[], blockedBy: Map<string, string>): string {
    const blocked = [...blockedBy.entries()].map(([pod, why]) => `${pod}: ${why}`);
    return (
        `drain of ${node} timed out after ${timeoutSeconds}s with ${left.length} pod(s) left (${left.map(podName).join(", ")})` +
        (blocked.length ? `; ${blocked.join("; ")}` : "")
    );
}

export class NodeDrain {
    constructor(private readonly client: KubeProxyClient) {}

    /**
     * Drains a node with kubectl drain's rules (core/drain.ts decides): DaemonSet, mirror and
     * finished pods stay; bare pods and emptyDir pods are refused, naming each, unless the pool's
     * drain options allow them, before anything is evicted. Evictions go through the Eviction API
     * with each pod's own grace period, so PodDisruptionBudgets hold; a blocked eviction names the
     * PDB that covers the pod. Returns when no such pod is left on the node (terminating pods gone).
     * timeoutSeconds 0 waits for ever, as kubectl's.
     */
    async drain(
        node: string,
        timeoutSeconds: number,
        log: (l: string) => void,
        opts: DrainOptions = { force: false, deleteEmptyDirData: false },
    ): Promise<void> {
        const deadline = drainDeadline(Date.now(), timeoutSeconds);
        const onNode = async () =>
            (await this.client.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}` })).items;
        const first = decideDrain(await onNode(), opts);
        if (first.refused.length) throw new Error(describeRefusal(node, first.refused));
        for (const s of first.skipped) log(`drain skips ${s.pod}: ${s.reason}`);
        const changes = changesOfPodsOn(this.client, node);
        await changes.start();
        const blockedBy = new Map<string, string>();
        try {
            for (;;) {
                const decision = decideDrain(await onNode(), opts);
                // a pod that arrived since the first look and is not ours to evict stops the drain too
                if (decision.refused.length) throw new Error(describeRefusal(node, decision.refused));
                const left = decision.evict;
                if (left.length === 0) return;
                if (Date.now() > deadline) throw new Error(drainTimedOut(node, timeoutSeconds, left, blockedBy));
                for (const p of left) if (!p.metadata?.deletionTimestamp) await this.evict(p, blockedBy, log);
                // the watch wakes us when a pod on the node changes; retry a blocked eviction every 5s
                await changes.next(Math.min(5000, Math.max(0, deadline - Date.now()) + 100));
            }
        } finally {
            changes.stop();
        }
    }

    /**
     * Evicts one pod through the Eviction API with its own grace period. An eviction a
     * PodDisruptionBudget refuses (429) is not an error: the first refusal of a pod is recorded in
     * `blockedBy` with the budgets that cover it (and logged); the drain retries it.
     */
    private async evict(pod: DrainPod, blockedBy: Map<string, string>, log: (l: string) => void): Promise<void> {
        const name = pod.metadata!.name!;
        const namespace = pod.metadata!.namespace!;
        try {
            const grace = pod.spec?.terminationGracePeriodSeconds;
            await this.client.core.createNamespacedPodEviction({
                name,
                namespace,
                body: {
                    apiVersion: "policy/v1",
                    kind: "Eviction",
                    metadata: { name, namespace },
                    ...(grace !== undefined ? { deleteOptions: { gracePeriodSeconds: grace } } : {}),
                },
            });
            blockedBy.delete(podName(pod));
            log(`evicted ${podName(pod)}${grace !== undefined ? ` (grace period ${grace}s)` : ""}`);
        } catch (e) {
            if (apiStatus(e) === 429) {
                if (!blockedBy.has(podName(pod))) {
                    const pdbs = blockingPdbs(
                        (await this.client.policy.listNamespacedPodDisruptionBudget({ namespace })).items,
                        pod,
                    );
                    const why = `eviction refused by PodDisruptionBudget ${pdbs.length ? pdbs.join(", ") : "(none found selecting it)"}: ${apiErrorMessage(e)}`;
                    blockedBy.set(podName(pod), why);
                    log(`${podName(pod)}: ${why}; waiting`);
                }
            } else if (!isNotFound(e)) throw e;
        }
    }
}
