// kube-proxy as it lives in the cluster: the installer's ConfigMap and DaemonSet, node
// placement, cordon/drain, the probe pod. Every mutation the rollout makes goes through here.
import * as k8s from "../libraries/kubernetesClient.js";
import type { DrainOptions } from "../core/drain.js";
import { nodeFacts } from "../core/nodes.js";
import { parseNodeSyncs } from "../core/firstSync.js";
import { LEASE_NAME, MARKS, type NodeState } from "../core/plan.js";
import type { Access, AccessReview } from "../core/rbac.js";
import {
    type KubeProxyPod,
    type LeaseClaim,
    type Names,
    type NodeChange,
    type ProbeRun,
    type NodeMove,
    type RolloutCluster,
    type RolloutNode,
    type WaitOptions,
} from "../rollout/cluster.js";
import { apiStatus, Cluster, clusterName } from "./client.js";
import { asSeen, marksPatch, patchAsRead, type NodeAsSeen, type PatchOperation } from "./nodePatch.js";
import { AccessReviews } from "./accessReview.js";
import { NodeDrain } from "./drain.js";
import { HandBack } from "./handBack.js";
import { InstallerDaemonSet, type Installation } from "./installerDaemonSet.js";
import { RolloutLease } from "./lease.js";
import { ProbePods } from "./probePod.js";
import { KubeProxyPods } from "./kubeProxyPods.js";
import { FIELD_MANAGER, JSON_PATCH, MERGE, NotFound, sleep, type KubeProxyClient } from "./kubeProxyClient.js";

export type { Installation, KubeProxyPod, Names };
export { FIELD_MANAGER, NotFound, sleep };

export { LEASE_NAME };

function parseMove(text: string | undefined): NodeMove | undefined {
    if (!text) return undefined;
    try {
        const m = JSON.parse(text);
        if (m && typeof m === "object" && "to" in m && "from" in m && typeof m.phase === "string") {
            const seconds = m.baseline?.seconds;
            const baseline =
                typeof seconds === "number" && Number.isFinite(seconds) && seconds >= 0
                    ? { seconds, metric: m.baseline.metric === "all" ? ("all" as const) : ("full" as const) }
                    : undefined;
            return { to: m.to, from: m.from, phase: m.phase, ...(baseline ? { baseline } : {}) };
        }
    } catch {
        /* not ours: ignored */
    }
    return undefined;
}

export class KubeProxyCluster extends Cluster implements RolloutCluster {
    /** what the parts of this class share: this cluster's API clients, watch and names */
    private readonly client: KubeProxyClient;
    private readonly installer: InstallerDaemonSet;
    private readonly lease: RolloutLease;
    private readonly accessReviews: AccessReviews;
    private readonly nodeDrain: NodeDrain;
    private readonly probePods: ProbePods;
    private readonly pods: KubeProxyPods;
    private readonly handBack: HandBack;

    constructor(
        kc: k8s.KubeConfig,
        readonly names: Names,
    ) {
        super(kc);
        this.client = {
            names,
            core: this.core,
            podLists: this.podLists,
            apps: this.apps,
            policy: this.policy,
            server: this.server,
            watcher: () => this.watcher(),
            api: (kind) => this.api(kind),
            eachNode: (reduce) => this.eachNode(reduce),
        };
        this.installer = new InstallerDaemonSet(this.client);
        this.lease = new RolloutLease(this.client);
        this.accessReviews = new AccessReviews(this.client);
        this.nodeDrain = new NodeDrain(this.client);
        this.probePods = new ProbePods(this.client);
        // the wait labels through the hand-back, which lists through the pods: the arrow is a function
        this.pods = new KubeProxyPods(this.client, (pod, node) => this.handBack.labelForRestore(pod, node));
        this.handBack = new HandBack(this.client, this.installer, this.pods);
    }

    /** the installer's ConfigMap and DaemonSet (installerDaemonSet.ts) */
    installation(): Promise<Installation> {
        return this.installer.installation();
    }

    configurationOf(hash: string): Promise<string | undefined> {
        return this.installer.configurationOf(hash);
    }

    prepare(target: { hash: string; config: string }, log: (l: string) => void): Promise<void> {
        return this.installer.prepare(target, log);
    }

    writeCanonicalConfig(config: string): Promise<void> {
        return this.installer.writeCanonicalConfig(config);
    }

    waitForDaemonSetRollout(timeoutSeconds: number, log: (l: string) => void): Promise<void> {
        return this.installer.waitForRollout(timeoutSeconds, log);
    }

    get identity(): string | undefined {
        return clusterName(this.kc);
    }

    /** Every node with the rollout's memory of it: placement, verification, the move in progress, cordon. */
    override async nodes(): Promise<RolloutNode[]> {
        return this.eachNode((n) => {
            if (n.metadata?.name) this.seen.set(n.metadata.name, asSeen(n));
            const a = n.metadata?.annotations ?? {};
            const [verified, verifiedAt] = (a[MARKS.verifiedAnnotation] ?? "").split("@");
            return {
                ...nodeFacts(n),
                placement: n.metadata?.labels?.[MARKS.configLabel] ?? null,
                verified: verified || undefined,
                verifiedAt: verifiedAt || undefined,
                checks: a[MARKS.checksAnnotation],
                move: parseMove(a[MARKS.moveAnnotation]),
                syncs: parseNodeSyncs(a[MARKS.syncAnnotation]),
                unschedulable: n.spec?.unschedulable === true,
                cordonedByRollout:
                    n.spec?.unschedulable === true && a[MARKS.cordonedAnnotation] === MARKS.managedByValue,
            };
        });
    }

    async nodeStates(): Promise<NodeState[]> {
        return this.nodes();
    }

    async serviceEndpoint(namespace: string, name: string): Promise<{ ip: string; port: number } | undefined> {
        const svc = await this.core.readNamespacedService({ name, namespace });
        const ip = svc.spec?.clusterIP;
        const port = svc.spec?.ports?.[0]?.port;
        return ip && ip !== "None" && port ? { ip, port } : undefined;
    }

    async serviceAddresses(): Promise<string[]> {
        const out = new Set<string>();
        for (const svc of (await this.core.listServiceForAllNamespaces()).items) {
            for (const ip of [
                ...(svc.spec?.clusterIPs ?? [svc.spec?.clusterIP]),
                ...(svc.spec?.externalIPs ?? []),
                ...(svc.status?.loadBalancer?.ingress ?? []).map((i) => i.ip),
            ]) {
                if (ip && ip !== "None") out.add(ip);
            }
        }
        return [...out];
    }

    async node(name: string): Promise<k8s.V1Node> {
        return this.core.readNode({ name });
    }

    /** each node as this client last saw it (see NodeAsSeen): the base of its next patch made against the node as read */
    private readonly seen = new Map<string, NodeAsSeen>();

    /**
     * The move's memory and the cordon (and the placement, when given) in one patch, made against
     * the node as read (see patchNodeAsRead): a node someone cordons in between is read again, so a
     * cordon that is not the rollout's is never taken for its own.
     */
    async startMove(node: string, move: NodeMove, placement?: string | null): Promise<boolean> {
        let ours = false;
        await this.patchNodeAsRead(node, (n) => {
            ours = !n.unschedulable || n.annotations?.[MARKS.cordonedAnnotation] === MARKS.managedByValue;
            return patchAsRead(
                {
                    move,
                    placement, // undefined: the placement label is left as it is
                    ...(n.unschedulable ? {} : { cordon: true }),
                },
                n,
            );
        });
        return ours;
    }

    /**
     * One patch of the node: the parts of `change` that are given, together. An uncordon is made
     * against the node as read, as the cordon was, since it rewrites the node's taints: a taint
     * someone adds in between is read again, never lost.
     */
    async writeNode(node: string, change: NodeChange): Promise<void> {
        if (!change.uncordon) {
            this.seen.set(node, asSeen(await this.core.patchNode({ name: node, body: marksPatch(change) }, MERGE)));
            return;
        }
        await this.patchNodeAsRead(node, (n) => patchAsRead(change, n));
    }

    /**
     * A JSON Patch built from the node as this client last saw it (a list, a read, the answer to its
     * own last patch; read now if it has not seen it), whose tests hold what it depends on
     * (nodePatch.ts): when the server refuses it (422, a test failed: the node changed there), the
     * node is read and the patch built again, up to 5 times. So a node is patched without a read
     * unless what the patch depends on changed, and never from a stale view of it; a write of
     * something else (the kubelet's status) does not get in the way.
     */
    private async patchNodeAsRead(node: string, build: (n: NodeAsSeen) => PatchOperation[]): Promise<void> {
        for (let attempt = 1; ; attempt++) {
            const n = (attempt === 1 ? this.seen.get(node) : undefined) ?? asSeen(await this.node(node));
            try {
                this.seen.set(node, asSeen(await this.core.patchNode({ name: node, body: build(n) }, JSON_PATCH)));
                return;
            } catch (e) {
                if (apiStatus(e) !== 422 || attempt >= 5) throw e;
            }
        }
    }

    /** evicts what kubectl drain would (drain.ts NodeDrain) */
    drain(node: string, timeoutSeconds: number, log: (l: string) => void, opts?: DrainOptions): Promise<void> {
        return this.nodeDrain.drain(node, timeoutSeconds, log, opts);
    }

    /** kube-proxy's pods on one node; without a node, on every node (one list). */
    kubeProxyPods(node?: string): Promise<KubeProxyPod[]> {
        return this.pods.list(node);
    }

    podLog(name: string, previous = false): Promise<string> {
        return this.pods.podLog(name, previous);
    }

    /** until the node runs the one settled kube-proxy `placement` wants (kubeProxyPods.ts waitFor) */
    waitForKubeProxy(
        node: string,
        placement: string | null,
        timeoutSeconds: number,
        options?: WaitOptions & { settleSeconds?: number },
    ): Promise<KubeProxyPod | undefined> {
        return this.pods.waitFor(node, placement, timeoutSeconds, options);
    }

    /** Stops the run's pod informer. */
    close(): void {
        this.pods.close();
    }

    /** the probe pod's tolerations: the installer DaemonSet's (probePod.ts) */
    probeTolerations(): Promise<k8s.V1Toleration[]> {
        return this.probePods.tolerations();
    }

    runProbe(node: string, opts: ProbeRun): Promise<{ output: string; succeeded: boolean }> {
        return this.probePods.run(node, opts);
    }

    sweepProbePods(holder: string, log: (line: string) => void): Promise<void> {
        return this.probePods.sweep(holder, log);
    }

    /** the finish (handBack.ts) */
    prepareHandBack(log: (l: string) => void): Promise<void> {
        return this.handBack.prepare(log);
    }

    restoreInstallation(log: (l: string) => void): Promise<void> {
        return this.handBack.restore(log);
    }

    deniedAccesses(wanted: Access[]): Promise<AccessReview> {
        return this.accessReviews.denied(wanted);
    }

    private extensionsApi?: k8s.ApiextensionsV1Api;

    /** Reads a CustomResourceDefinition (the preview asks whether PrometheusRule's exists). */
    async readCustomResourceDefinition(name: string): Promise<k8s.V1CustomResourceDefinition> {
        return (this.extensionsApi ??= this.api(k8s.ApiextensionsV1Api)).readCustomResourceDefinition({ name });
    }

    acquireLease(
        holder: string,
        durationSeconds: number,
        log?: (line: string) => void,
        signal?: AbortSignal,
    ): Promise<LeaseClaim> {
        return this.lease.acquire(holder, durationSeconds, log, signal);
    }

    renewLease(holder: string): Promise<boolean> {
        return this.lease.renew(holder);
    }

    releaseLease(holder: string): Promise<void> {
        return this.lease.release(holder);
    }
}
