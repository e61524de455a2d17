// kube-proxy as it lives in the cluster, as the rollout sees it (RolloutCluster): every mutation
// the rollout makes goes through here. One client (kubeProxyClient.ts) shared by one part per
// concern: installerDaemonSet.ts, rolloutNodes.ts, drain.ts, kubeProxyPods.ts, probePod.ts,
// handBack.ts, lease.ts, accessReview.ts; changes.ts wakes their waits. The verify hooks run
// beside it (hooks.ts): the one process the rollout starts on this machine.
import * as k8s from "../libraries/kubernetesClient.js";
import type { DrainOptions } from "../core/drain.js";
import { LEASE_NAME, type NodeState } from "../core/plan.js";
import type { Access, AccessReview } from "../core/rbac.js";
import type {
    HookCommand,
    HookResult,
    KubeProxyPod,
    LeaseClaim,
    Names,
    NodeChange,
    NodeMove,
    ProbeRun,
    RolloutCluster,
    RolloutNode,
    WaitOptions,
} from "../rollout/cluster.js";
import { AccessReviews } from "./accessReview.js";
import { Cluster, clusterName } from "./client.js";
import { NodeDrain } from "./drain.js";
import { HandBack } from "./handBack.js";
import { runHook } from "./hooks.js";
import { InstallerDaemonSet, type InstallerObjects } from "./installerDaemonSet.js";
import { FIELD_MANAGER, NotFound, sleep, type KubeProxyClient } from "./kubeProxyClient.js";
import { KubeProxyPods } from "./kubeProxyPods.js";
import { RolloutLease } from "./lease.js";
import { ProbePods } from "./probePod.js";
import { RolloutNodes } from "./rolloutNodes.js";

// the names its importers took from this file before its parts had files of their own
export type { InstallerObjects, KubeProxyPod, Names };
export { FIELD_MANAGER, LEASE_NAME, NotFound, sleep };

export class KubeProxyCluster extends Cluster implements RolloutCluster {
    /** what the parts of this class share: this cluster's API clients, watch and names */
    private readonly client: KubeProxyClient;
    private readonly installer: InstallerDaemonSet;
    private readonly rolloutNodes: RolloutNodes;
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
            node: (name) => this.node(name),
        };
        this.installer = new InstallerDaemonSet(this.client);
        this.rolloutNodes = new RolloutNodes(this.client);
        this.lease = new RolloutLease(this.client);
        this.accessReviews = new AccessReviews(this.client);
        this.nodeDrain = new NodeDrain(this.client);
        this.probePods = new ProbePods(this.client);
        // the pods' wait labels through the hand-back, which lists the pods: a function, not an import, carries the first
        this.pods = new KubeProxyPods(this.client, (pod, node) => this.handBack.labelForRestore(pod, node));
        this.handBack = new HandBack(this.client, this.installer, this.pods);
    }

    /** the installer's ConfigMap and DaemonSet (installerDaemonSet.ts) */
    installation(): Promise<InstallerObjects> {
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

    /** a verify hook, as a process on this machine (hooks.ts) */
    runHook(
        hook: HookCommand,
        env: Record<string, string>,
        kubeconfig: string | undefined,
        signal?: AbortSignal,
    ): Promise<HookResult> {
        return runHook(hook, env, kubeconfig, signal);
    }

    get identity(): string | undefined {
        return clusterName(this.kc);
    }

    /** every node with the rollout's memory of it (rolloutNodes.ts) */
    override async nodes(): Promise<RolloutNode[]> {
        return this.rolloutNodes.list();
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

    startMove(node: string, move: NodeMove, placement?: string | null): Promise<boolean> {
        return this.rolloutNodes.startMove(node, move, placement);
    }

    writeNode(node: string, change: NodeChange): Promise<void> {
        return this.rolloutNodes.write(node, change);
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
