// kube-proxy's pods: listed a page at a time, watched by one informer per run, and waited on
// until a node runs exactly the kube-proxy its placement wants (podVerdict decides).
import * as k8s from "../libraries/kubernetesClient.js";
import { MARKS, rolloutObjectName } from "../core/plan.js";
import { podVerdict, type KubeProxyPod } from "../core/kubeProxyPods.js";
import type { WaitOptions } from "../rollout/cluster.js";
import { apiErrorMessage, type PodListPage } from "./client.js";
import type { KubeProxyClient } from "./kubeProxyClient.js";
import { KubeProxyPodCache, kubeProxyPodOf, slimPod } from "./podCache.js";

/**
 * kube-proxy pods per page of a list: half kubectl's chunk size, because each page is parsed
 * whole before it is reduced; pages of 500 doubled the list's peak memory (docs/performance.md).
 */
const POD_PAGE = 250;

/**
 * The hand-back's label of a settled pod (handBack.ts HandBack.labelForRestore): the node's pods as
 * the write's answer shows them, or undefined when there was nothing to write.
 */
export type LabelForRestore = (pod: KubeProxyPod, node: string) => Promise<KubeProxyPod[] | undefined>;

export class KubeProxyPods {
    constructor(
        private readonly client: KubeProxyClient,
        private readonly labelForRestore: LabelForRestore,
    ) {}

    /** kube-proxy's pods on one node; without a node, on every node (one list). */
    async list(node?: string): Promise<KubeProxyPod[]> {
        const { items } = await this.each((p) => kubeProxyPodOf(p, node), node ? `spec.nodeName=${node}` : undefined);
        return items;
    }

    /**
     * kube-proxy's pods, a page at a time (`limit`/`continue`: one consistent list), each reduced
     * as its page arrives: a list of every full pod (about 6.4 KB of JSON each) is never held at once.
     * Returns the reduced pods and the list's resourceVersion (a watch starts from it).
     */
    async each<T>(
        reduce: (p: k8s.V1Pod) => T,
        fieldSelector?: string,
    ): Promise<{ items: T[]; resourceVersion?: string }> {
        const items: T[] = [];
        let token: string | undefined;
        let resourceVersion: string | undefined;
        do {
            const page = (await this.client.podLists.listNamespacedPod({
                namespace: this.client.names.namespace,
                labelSelector: this.client.names.podSelector,
                fieldSelector,
                limit: POD_PAGE,
                _continue: token,
            })) as unknown as PodListPage;
            for (const p of page.items) items.push(reduce(p));
            resourceVersion = page.metadata?.resourceVersion;
            token = page.metadata?.continue || undefined;
        } while (token);
        return { items, resourceVersion };
    }

    async podLog(name: string, previous = false): Promise<string> {
        try {
            return await this.client.core.readNamespacedPodLog({
                name,
                namespace: this.client.names.namespace,
                previous,
                tailLines: 200,
            });
        } catch (e) {
            return `(no log: ${apiErrorMessage(e)})`;
        }
    }

    private podCache?: KubeProxyPodCache;

    /** kube-proxy's pods on every node, from one informer started at the run's first wait. */
    private async cached(): Promise<KubeProxyPodCache> {
        const list = async (): Promise<k8s.V1PodList> => {
            const { items, resourceVersion } = await this.each(slimPod);
            return { metadata: { resourceVersion }, items };
        };
        this.podCache ??= new KubeProxyPodCache(
            this.client.watcher(),
            list,
            this.client.names.namespace,
            this.client.names.podSelector,
            this.client.server,
        );
        await this.podCache.start();
        return this.podCache;
    }

    close(): void {
        this.podCache?.close();
        this.podCache = undefined;
    }

    /**
     * Waits until the node runs exactly one kube-proxy, from the DaemonSet for `placement`,
     * Running and Ready (and then still so, with no restart, for `settleSeconds`); or, for
     * "hold", none. Fails early, with kube-proxy's own log, when the new process crashes. Waits
     * on the run's pod informer, woken by its events; the verdict it reaches there is then
     * confirmed by one read of the node's pods, so a watch that died without a word (a network
     * partition keeps its socket open) can delay a wait but never pass it. A hand-back's wait
     * (`labelForRestore`) that labels its pod confirms instead with the answer of that write.
     */
    async waitFor(
        node: string,
        placement: string | null,
        timeoutSeconds: number,
        { settleSeconds = 3, labelForRestore = false }: WaitOptions & { settleSeconds?: number } = {},
    ): Promise<KubeProxyPod | undefined> {
        const owner =
            placement === null
                ? this.client.names.daemonSet
                : rolloutObjectName(this.client.names.daemonSet, placement);
        const hold = placement === MARKS.holdValue;
        const settleMs = settleSeconds * 1000;
        const deadline = Date.now() + timeoutSeconds * 1000;
        const cache = await this.cached();
        let last = "";
        let settledSince: number | undefined;
        for (;;) {
            if (cache.refusal) throw cache.refusal;
            if (cache.unanswered) throw cache.unanswered;
            const verdict = cache.synced ? podVerdict(cache.onNode(node), owner, hold) : undefined;
            let wait = Math.min(5000, deadline - Date.now() + 10);
            if (verdict?.kind === "running") {
                // kube-proxy that cannot run its mode exits within a second or two of starting
                // (unknown gate, old kernel, missing nft): watch it briefly before trusting Ready
                settledSince ??= Date.now();
                wait = settledSince + settleMs - Date.now();
                last = `pod ${verdict.pod.name} is Running, watching it for ${settleSeconds}s`;
            } else settledSince = undefined;
            if (verdict?.kind === "failing") throw await this.failing(node, verdict.pod);
            if (verdict?.kind === "gone" || (verdict?.kind === "running" && wait <= 0)) {
                const labelled =
                    labelForRestore && verdict.kind === "running"
                        ? await this.labelForRestore(verdict.pod, node)
                        : undefined;
                const fresh = podVerdict(labelled ?? (await this.list(node)), owner, hold);
                if (fresh.kind === "failing") throw await this.failing(node, fresh.pod);
                if (fresh.kind === "gone" && verdict.kind === "gone") return undefined;
                if (fresh.kind === "running" && verdict.kind === "running" && fresh.pod.name === verdict.pod.name)
                    return fresh.pod;
                // the API server disagrees with the watch: wait for the watch to catch up
                settledSince = undefined;
                last = `the API server's pods differ from the watch's (${fresh.kind === "waiting" ? fresh.detail : fresh.kind})`;
                wait = 1000;
            } else if (verdict?.kind === "waiting") last = verdict.detail;
            else if (!verdict) last = "the watch of kube-proxy's pods is reconnecting";
            if (Date.now() > deadline)
                throw new Error(`kube-proxy on ${node} did not settle on ${owner} within ${timeoutSeconds}s: ${last}`);
            await cache.next(node, wait);
        }
    }

    /** The error of a kube-proxy pod that crashed or cannot start, with the end of its log. */
    private async failing(node: string, p: KubeProxyPod): Promise<Error> {
        const log = (await this.podLog(p.name, p.restarts > 0)).trim().split("\n").slice(-8).join("\n");
        return new Error(
            `kube-proxy pod ${p.name} on ${node} is failing (${p.problem ?? p.phase}, ${p.restarts} restart(s)); its log ends:\n${log}`,
        );
    }
}
