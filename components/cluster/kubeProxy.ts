// kube-proxy as it lives in the cluster: the installer's ConfigMap and DaemonSet, node
// placement, cordon/drain, the probe pod. Every mutation the rollout makes goes through here.
import * as k8s from "../libraries/kubernetesClient.js";
import {
    handBackRevision,
    podIsOfRevision,
    REVISION_LABELS,
    revisionLabels,
    templateGenerationAfterRestore,
    templateGenerationOf,
    templateOfRevisionData,
    type TemplateRevision,
} from "../core/daemonset.js";
import type { DrainOptions } from "../core/drain.js";
import { nodeFacts } from "../core/nodes.js";
import { parseNodeSyncs } from "../core/firstSync.js";
import { LEASE_NAME, MARKS, ROLLOUT_OWNER, type NodeState } from "../core/plan.js";
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
import { InstallerDaemonSet, type Installation } from "./installerDaemonSet.js";
import { RolloutLease } from "./lease.js";
import { ProbePods } from "./probePod.js";
import { KubeProxyPods } from "./kubeProxyPods.js";
import { kubeProxyPodOf } from "./podCache.js";
import {
    eachAtMost,
    FIELD_MANAGER,
    isNotFound,
    JSON_PATCH,
    MERGE,
    NotFound,
    sleep,
    type KubeProxyClient,
} from "./kubeProxyClient.js";

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

/** How many of the restore's pod label patches (those the hand-back did not make) are in flight at once. */
const POD_PATCHES_AT_ONCE = 16;

export class KubeProxyCluster extends Cluster implements RolloutCluster {
    /** what the parts of this class share: this cluster's API clients, watch and names */
    private readonly client: KubeProxyClient;
    private readonly installer: InstallerDaemonSet;
    private readonly lease: RolloutLease;
    private readonly accessReviews: AccessReviews;
    private readonly nodeDrain: NodeDrain;
    private readonly probePods: ProbePods;
    private readonly pods: KubeProxyPods;

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
        this.pods = new KubeProxyPods(this.client, (pod, node) => this.labelForRestore(pod, node));
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

    /** The template generation the restore will give the installer's DaemonSet, read once per run. */
    private generationAfterRestore?: Promise<string | undefined>;
    /** The revision hash the restore will count current, once prepareHandBack has made the pods the hand-back starts carry it. */
    private restoreHash?: string;

    /**
     * Before the finish's hand-back: makes the DaemonSet controller start the hand-back's pods
     * with the revision hash the restore will count current (core/daemonset.ts handBackRevision),
     * by relabelling the installer DaemonSet's current revision (its template in the rollout's
     * shape) with the hash of the revision that recorded the installer's own template. Its own hash
     * is kept in an annotation, and the restore puts it back. Then the hand-back writes to no pod;
     * a pod started with another hash (before the controller saw the relabel, or by a rollback)
     * is labelled with the template generation as before. Nothing is written when the installer's
     * revision is gone (the log says so) or the DaemonSet is not in the rollout's shape.
     */
    async prepareHandBack(log: (l: string) => void): Promise<void> {
        const { namespace } = this.names;
        const ds = await this.apps.readNamespacedDaemonSet({ name: this.names.daemonSet, namespace });
        const saved = ds.metadata?.annotations?.[MARKS.originalSpecAnnotation];
        if (!saved) return;
        const installers = JSON.parse(saved) as k8s.V1DaemonSetSpec;
        const revisions: TemplateRevision[] = (await this.installer.revisionsOf(ds)).map((r) => ({
            name: r.metadata!.name!,
            hash: r.metadata?.labels?.[REVISION_LABELS.hash],
            revision: r.revision,
            template: templateOfRevisionData(r.data),
        }));
        const { relabel, restoreHash } = handBackRevision(revisions, ds.spec?.template, installers.template);
        if (!restoreHash) {
            log(
                `DaemonSet ${namespace}/${this.names.daemonSet}: no ControllerRevision records the installer's own template (revisionHistoryLimit ${ds.spec?.revisionHistoryLimit ?? "unset"}); each hand-back labels its pod for the restore`,
            );
            return;
        }
        if (relabel) {
            await this.apps.patchNamespacedControllerRevision(
                {
                    name: relabel.name,
                    namespace,
                    body: {
                        metadata: {
                            labels: { [REVISION_LABELS.hash]: relabel.to },
                            annotations: { [MARKS.revisionHashAnnotation]: relabel.from },
                        },
                    },
                    fieldManager: FIELD_MANAGER,
                },
                MERGE,
            );
            log(
                `ControllerRevision ${namespace}/${relabel.name}: the pods the hand-back starts get hash ${relabel.to}, the installer's revision's, so the restore writes to none (its own ${relabel.from} is put back then)`,
            );
        }
        this.restoreHash = restoreHash;
    }

    /** Puts back the hash of every revision prepareHandBack relabelled (the restore's last step). */
    private async putBackRevisionHashes(ds: k8s.V1DaemonSet, log: (l: string) => void): Promise<void> {
        const { namespace } = this.names;
        for (const r of await this.installer.revisionsOf(ds)) {
            const own = r.metadata?.annotations?.[MARKS.revisionHashAnnotation];
            if (!own) continue;
            await this.apps.patchNamespacedControllerRevision(
                {
                    name: r.metadata!.name!,
                    namespace,
                    body: {
                        metadata: {
                            labels: { [REVISION_LABELS.hash]: own },
                            annotations: { [MARKS.revisionHashAnnotation]: null },
                        },
                    },
                    fieldManager: FIELD_MANAGER,
                },
                MERGE,
            );
            log(`ControllerRevision ${namespace}/${r.metadata!.name}: its own hash ${own} put back`);
        }
    }

    /**
     * Labels a kube-proxy pod the hand-back started, unless it was born with the hash the restore
     * counts current (prepareHandBack), with the template generation the restore will give the
     * installer's DaemonSet (templateGenerationAfterRestore), so the restore finds it current by
     * the controller's rule (podIsOfRevision) and does not write to it: the finish's label
     * patches happen inside the hand-back's batches, not after them. Until the restore the label
     * changes nothing for the controller; if the DaemonSet's template changes in between, the
     * label does not match the restore's generation and the restore labels the pod as it does any
     * other.
     *
     * Returns the node's kube-proxy pods as the write's answer shows them: the pod as the API
     * server holds it now, or none when it is gone (404). That answer confirms the hand-back's
     * wait in place of a read of the node's pods: it is as fresh as a read of this pod, and the
     * watch that showed no other pod on the node had delivered every event up to this pod's
     * settling (a pod created after that would pass a read made now as well; the finish's final
     * check lists every node's pods once more after the restore). Undefined when there is no
     * label to write (the pod was born current, or the DaemonSet is not in the rollout's shape):
     * the wait then reads the pods.
     */
    private async labelForRestore(pod: KubeProxyPod, node: string): Promise<KubeProxyPod[] | undefined> {
        const { namespace } = this.names;
        // started with the hash the restore counts current (prepareHandBack): nothing to write
        if (this.restoreHash && pod.revisionHash === this.restoreHash) return undefined;
        this.generationAfterRestore ??= this.apps
            .readNamespacedDaemonSet({ name: this.names.daemonSet, namespace })
            .then((ds) =>
                ds.metadata?.annotations?.[MARKS.originalSpecAnnotation]
                    ? templateGenerationAfterRestore(ds.metadata.annotations)
                    : undefined,
            );
        const generation = await this.generationAfterRestore.catch((e: unknown) => {
            this.generationAfterRestore = undefined;
            throw e;
        });
        if (!generation) return undefined;
        try {
            const labelled = await this.core.patchNamespacedPod(
                {
                    name: pod.name,
                    namespace,
                    body: { metadata: { labels: revisionLabels({ templateGeneration: generation }) } },
                },
                MERGE,
            );
            return [kubeProxyPodOf(labelled, node)];
        } catch (e) {
            // a pod deleted since the watch showed it settled: not confirmed, the wait goes on
            if (apiStatus(e) === 404) return [];
            throw e;
        }
    }

    /** Puts the installer's DaemonSet spec back and removes the rollout's DaemonSets and ConfigMaps. */
    async restoreInstallation(log: (l: string) => void): Promise<void> {
        const { namespace } = this.names;
        const ds = await this.apps.readNamespacedDaemonSet({ name: this.names.daemonSet, namespace });
        const saved = ds.metadata?.annotations?.[MARKS.originalSpecAnnotation];
        if (saved) {
            const original = JSON.parse(saved);
            // 1. the installer's template under OnDelete: the controller records its revision and
            //    replaces no pod (every node already runs the installer's pod on this ConfigMap)
            const staged = await this.installer.update((d) => {
                d.spec = { ...original, updateStrategy: { type: "OnDelete" } };
            });
            // 2. the pods differ from that template only by the rollout's node-affinity term, which a
            //    running pod never reads again: mark them as of the installer's revision, so putting
            //    its update strategy back restarts no node a third time
            const { kept, labelled } = await this.markPodsCurrent(staged);
            // 3. the installer's spec, byte for byte
            await this.installer.update((d) => {
                d.spec = original;
                delete d.metadata!.annotations![MARKS.originalSpecAnnotation];
            });
            log(
                `DaemonSet ${namespace}/${this.names.daemonSet}: restored to the installer's spec (${kept} running pod(s) kept: they already run its configuration; ${labelled} of them labelled as of its revision now, the others were of it already: started with its hash, or labelled at their hand-back)`,
            );
        }
        // the revision the hand-back relabelled gets its own hash back (also when a run that died
        // after the restore's last write left it)
        await this.putBackRevisionHashes(ds, log);
        await this.removeRolloutObjects(log);
    }

    /**
     * Removes the rollout's DaemonSets and ConfigMaps: deletes their owner (ROLLOUT_OWNER), then
     * waits until the garbage collector has removed them, naming each. One made before they had an
     * owner (an earlier version of the tool) is deleted by name, which the shipped role no longer
     * allows: the refusal names it.
     */
    private async removeRolloutObjects(log: (l: string) => void, timeoutSeconds = 60): Promise<void> {
        const { namespace } = this.names;
        const selector = `${MARKS.managedByLabel}=${MARKS.managedByValue},${MARKS.configLabel}`;
        const owned = (o: k8s.V1ObjectMeta | undefined) =>
            o?.ownerReferences?.some((r) => r.kind === "ConfigMap" && r.name === ROLLOUT_OWNER) === true;
        const left = async () => [
            ...(await this.apps.listNamespacedDaemonSet({ namespace, labelSelector: selector })).items.map((d) => ({
                kind: "DaemonSet",
                meta: d.metadata,
            })),
            ...(await this.core.listNamespacedConfigMap({ namespace, labelSelector: selector })).items.map((c) => ({
                kind: "ConfigMap",
                meta: c.metadata,
            })),
        ];
        const first = await left();
        for (const o of first.filter((x) => !owned(x.meta))) {
            const name = o.meta!.name!;
            if (o.kind === "DaemonSet") await this.apps.deleteNamespacedDaemonSet({ name, namespace });
            else await this.core.deleteNamespacedConfigMap({ name, namespace });
        }
        try {
            await this.core.deleteNamespacedConfigMap({
                name: ROLLOUT_OWNER,
                namespace,
                propagationPolicy: "Background",
            });
        } catch (e) {
            if (!isNotFound(e)) throw e;
        }
        const deadline = Date.now() + timeoutSeconds * 1000;
        for (let now = first; ;) {
            const names = new Set(now.map((o) => `${o.kind} ${namespace}/${o.meta?.name}`));
            if (!names.size) break;
            if (Date.now() > deadline)
                throw new Error(
                    `the garbage collector did not remove the rollout's ${[...names].join(", ")} within ${timeoutSeconds}s of the deletion of their owner ConfigMap ${namespace}/${ROLLOUT_OWNER} (is kube-controller-manager's garbage collector running?)`,
                );
            await sleep(500);
            now = await left();
        }
        for (const o of first) log(`${o.kind} ${namespace}/${o.meta?.name}: deleted`);
    }

    /**
     * Labels the installer DaemonSet's running pods that its controller does not yet count as of
     * its current revision (podIsOfRevision: the hash or the template generation), once the
     * controller has recorded that revision. Returns how many pods it found and how many it labelled.
     */
    private async markPodsCurrent(ds: k8s.V1DaemonSet): Promise<{ kept: number; labelled: number }> {
        const { namespace } = this.names;
        // the controller has seen the template once its status says so (woken by a watch)
        const live = await this.installer.until(
            (d) => (d.status?.observedGeneration ?? 0) >= (ds.metadata?.generation ?? 0),
            60,
            () =>
                `the DaemonSet controller did not record the installer's revision of ${namespace}/${this.names.daemonSet} within 60s`,
        );
        const newest = async () => (await this.installer.revisionsOf(live)).sort((x, y) => y.revision - x.revision)[0];
        let controllerRevision = await newest();
        for (let tries = 1; !controllerRevision && tries < 20; tries++) {
            await sleep(500);
            controllerRevision = await newest();
        }
        if (!controllerRevision)
            throw new Error(`the DaemonSet ${namespace}/${this.names.daemonSet} has no ControllerRevision of its own`);
        const hash = controllerRevision.metadata?.labels?.[REVISION_LABELS.hash];
        if (!hash)
            throw new Error(
                `ControllerRevision ${controllerRevision.metadata?.name} has no ${REVISION_LABELS.hash} label`,
            );
        const revision = {
            hash,
            templateGeneration: templateGenerationOf(live.metadata?.annotations),
        };
        // the installer's pods, each reduced to its name and whether the controller counts it current
        const pods = (
            await this.pods.each((p) => {
                const m = p.metadata;
                const installers =
                    !m?.deletionTimestamp &&
                    m?.ownerReferences?.some((o) => o.kind === "DaemonSet" && o.name === this.names.daemonSet);
                if (!installers || !m?.name) return undefined;
                return { name: m.name, current: podIsOfRevision(m.labels, revision) };
            })
        ).items.filter((p) => p !== undefined);
        const stale = pods.filter((p) => !p.current);
        // one patch per pod, a few at a time rather than one round trip after another
        await eachAtMost(POD_PATCHES_AT_ONCE, stale, async (p) => {
            await this.core.patchNamespacedPod(
                {
                    name: p.name,
                    namespace,
                    body: { metadata: { labels: revisionLabels(revision) } },
                },
                MERGE,
            );
        });
        return { kept: pods.length, labelled: stale.length };
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
