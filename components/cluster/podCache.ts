// kube-proxy's pods on every node, from one list and one watch (a client-node informer) held
// while a run needs them: a node's wait costs the API server one confirming read of its pods
// (KubeProxyCluster.waitForKubeProxy; a hand-back that labels its pod uses that write's answer),
// where a watch and a list per node per change used to.
import * as k8s from "../libraries/kubernetesClient.js";
import { REVISION_LABELS } from "../core/daemonset.js";
import type { KubeProxyPod } from "../rollout/cluster.js";
import { watchRefused } from "./client.js";
import type { ServerRecovery } from "./retry.js";
import { isApiTimeout, type Watcher } from "./timeouts.js";

/** One pod as the runner sees it. */
export function kubeProxyPodOf(p: k8s.V1Pod, node?: string): KubeProxyPod {
    const cs = p.status?.containerStatuses?.[0];
    const problem =
        cs?.state?.waiting?.reason ??
        (cs?.state?.terminated
            ? `${cs.state.terminated.reason ?? "Terminated"} (exit ${cs.state.terminated.exitCode})`
            : undefined);
    return {
        name: p.metadata!.name!,
        node: p.spec?.nodeName ?? node ?? "",
        owner: p.metadata?.ownerReferences?.find((o) => o.kind === "DaemonSet")?.name,
        phase: p.status?.phase,
        ready: p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false,
        restarts: cs?.restartCount ?? 0,
        problem: problem === "ContainerCreating" || problem === "PodInitializing" ? undefined : problem,
        deleting: !!p.metadata?.deletionTimestamp,
        revisionHash: p.metadata?.labels?.[REVISION_LABELS.hash],
    };
}

/**
 * Keeps of a kube-proxy pod only what kubeProxyPodOf and the informer read (its name, namespace,
 * resourceVersion, deletion, revision hash label, DaemonSet owner, node, phase, Ready condition and
 * first container's restarts and state) and drops the rest in place. The pages of the cache's first
 * list are slimmed as they arrive, so that list of every kube-proxy pod is never held whole.
 */
export function slimPod(p: k8s.V1Pod): k8s.V1Pod {
    const m = p.metadata ?? {};
    p.metadata = {
        name: m.name,
        namespace: m.namespace,
        resourceVersion: m.resourceVersion,
        ...(m.deletionTimestamp ? { deletionTimestamp: m.deletionTimestamp } : {}),
        ...(m.labels?.[REVISION_LABELS.hash]
            ? { labels: { [REVISION_LABELS.hash]: m.labels[REVISION_LABELS.hash] } }
            : {}),
        ownerReferences: m.ownerReferences
            ?.filter((o) => o.kind === "DaemonSet")
            .map((o) => ({ kind: o.kind, name: o.name }) as k8s.V1OwnerReference),
    };
    p.spec = { nodeName: p.spec?.nodeName, containers: [] };
    const cs = p.status?.containerStatuses?.[0];
    const { waiting, terminated } = cs?.state ?? {};
    p.status = {
        phase: p.status?.phase,
        conditions: p.status?.conditions
            ?.filter((c) => c.type === "Ready")
            .map((c) => ({ type: c.type, status: c.status })),
        containerStatuses: cs
            ? [
                  {
                      restartCount: cs.restartCount,
                      state: {
                          ...(waiting ? { waiting: { reason: waiting.reason } } : {}),
                          ...(terminated
                              ? { terminated: { reason: terminated.reason, exitCode: terminated.exitCode } }
                              : {}),
                      },
                  } as k8s.V1ContainerStatus,
              ]
            : undefined,
    };
    return p;
}

/**
 * What the informer itself keeps of a pod once the cache has read it: the keys it stores and
 * compares it by (namespace, name, resourceVersion). The cache holds the pod as the runner reads
 * it (KubeProxyPod, a handful of fields) beside it. The spec and status are set to undefined, not
 * deleted: a deleted property turns the object into a dictionary, which took about 470 bytes per
 * pod at 5,000 nodes (2026-12-03).
 */
function keysOnly(p: k8s.V1Pod): void {
    const { name, namespace, resourceVersion } = p.metadata ?? {};
    p.metadata = { name, namespace, resourceVersion };
    p.spec = undefined;
    p.status = undefined;
}

/**
 * The cache. It answers only while it is in sync with the API server: before its first list,
 * and from a dropped watch until it has listed or watched again, `synced` is false and waiters
 * are told nothing but "something may have changed" (a stale cache could show a pod that has
 * since crashed as settled). Reconnects every second while the API server is away. A list or
 * watch the server refuses (401/403, not a restart's warm-up) is a missing permission: it is kept
 * in `refusal`, for the waits to fail with at once, until a later connection succeeds. A watch
 * that went silent past its window is given up and started again (timeouts.ts); a list or a
 * watch's start that the server did not answer within the request timeout is kept in
 * `unanswered`, for the waits to fail with, until a later connection succeeds.
 */
export class KubeProxyPodCache {
    private readonly informer: k8s.Informer<k8s.V1Pod> & k8s.ObjectCache<k8s.V1Pod>;
    /** kube-proxy's pods as the runner sees them, by pod name (the informer's key in the namespace) and by node */
    private readonly byName = new Map<string, KubeProxyPod>();
    private readonly byNode = new Map<string, KubeProxyPod[]>();
    private readonly waiters = new Map<string, Set<() => void>>();
    private errors = 0;
    private reconnect?: NodeJS.Timeout;
    private closed = false;
    private firstSync?: Promise<void>;
    synced = false;
    /** why the server refuses this cache its list or watch, while it does */
    refusal?: Error;
    /** the request timeout the server's last (re)connection ran into, until one succeeds */
    unanswered?: Error;

    /**
     * `list` lists the pods the informer watches (the namespace's pods with `labelSelector`); it
     * may hand them over already slimmed, page by page (KubeProxyCluster does), so the first list
     * of every kube-proxy pod is never held whole. `watcher` starts the watches (Cluster.watcher:
     * with the request timeout and the watch's windows).
     */
    constructor(
        watcher: Watcher,
        list: () => Promise<k8s.V1PodList>,
        namespace: string,
        labelSelector: string,
        private readonly server: ServerRecovery,
    ) {
        const path = `/api/v1/namespaces/${namespace}/pods`;
        this.informer = new k8s.ListWatch(path, watcher as unknown as k8s.Watch, list, false, labelSelector);
        this.informer.on("add", (p) => this.put(p));
        this.informer.on("update", (p) => this.put(p));
        this.informer.on("delete", (p) => this.remove(p));
        this.informer.on("error", (err) => {
            this.server.saw(err);
            if (this.server.refuses(err))
                // a refused list is already one readable line (the API client's); a watch's says only "Forbidden"
                this.refusal =
                    (err as { body?: unknown }).body !== undefined ? (err as Error) : watchRefused(path, err);
            // a silent watch is started again; a request the server did not answer fails the waits
            if (isApiTimeout(err) && err.kind === "request") this.unanswered = err;
            this.errors++;
            this.synced = false;
            this.wakeAll();
            this.scheduleReconnect();
        });
    }

    /** Starts the informer once; resolves when the first list arrived (or it could not: the waits then time out). */
    start(): Promise<void> {
        return (this.firstSync ??= this.connect());
    }

    private async connect(): Promise<void> {
        const before = this.errors;
        try {
            await this.informer.start();
        } catch {
            this.errors++;
            this.scheduleReconnect();
            return;
        }
        // closed while it listed: the informer opened its watch after the stop; end it
        if (this.closed) return void this.informer.stop();
        if (this.errors === before) {
            this.synced = true;
            this.refusal = undefined;
            this.unanswered = undefined;
            this.wakeAll();
        }
    }

    private scheduleReconnect(): void {
        if (this.closed || this.reconnect) return;
        this.reconnect = setTimeout(() => {
            this.reconnect = undefined;
            void this.connect();
        }, 1000);
        this.reconnect.unref?.();
    }

    /** Reads the pod the informer stored, keeps that read, and leaves the informer only its keys. */
    private put(p: k8s.V1Pod): void {
        const pod = kubeProxyPodOf(p);
        keysOnly(p);
        const was = this.byName.get(pod.name);
        if (was) {
            this.drop(was);
            if (was.node !== pod.node) this.wake(was.node);
        }
        this.byName.set(pod.name, pod);
        const onNode = this.byNode.get(pod.node);
        if (onNode) onNode.push(pod);
        else this.byNode.set(pod.node, [pod]);
        this.wake(pod.node);
    }

    private remove(p: k8s.V1Pod): void {
        const was = this.byName.get(p.metadata?.name ?? "");
        if (!was) return this.wake(p.spec?.nodeName ?? "");
        this.byName.delete(was.name);
        this.drop(was);
        this.wake(was.node);
    }

    private drop(pod: KubeProxyPod): void {
        const onNode = this.byNode.get(pod.node) ?? [];
        const at = onNode.indexOf(pod);
        if (at >= 0) onNode.splice(at, 1);
        if (onNode.length === 0) this.byNode.delete(pod.node);
    }

    private wake(node: string): void {
        for (const w of this.waiters.get(node) ?? []) w();
    }

    private wakeAll(): void {
        for (const node of this.waiters.keys()) this.wake(node);
    }

    /** kube-proxy's pods on the node as the cache has them (meaningful only while `synced`). */
    onNode(node: string): KubeProxyPod[] {
        return [...(this.byNode.get(node) ?? [])];
    }

    /** Resolves at the next change of the node's pods (or of the cache's connection), or after ms. */
    next(node: string, ms: number): Promise<void> {
        return new Promise((resolve) => {
            let set = this.waiters.get(node);
            if (!set) this.waiters.set(node, (set = new Set()));
            const done = () => {
                clearTimeout(t);
                set.delete(done);
                if (set.size === 0 && this.waiters.get(node) === set) this.waiters.delete(node);
                resolve();
            };
            const t = setTimeout(done, Math.max(0, ms));
            set.add(done);
        });
    }

    /** Stops the watch; every waiter is woken (and finds the cache no longer synced). */
    close(): void {
        this.closed = true;
        this.synced = false;
        if (this.reconnect) clearTimeout(this.reconnect);
        this.reconnect = undefined;
        void this.informer.stop();
        this.wakeAll();
    }
}
