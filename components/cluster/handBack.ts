// The finish: the hand-back's pods made current for the restore, the installer's DaemonSet put
// back byte for byte, and the rollout's objects removed, restarting no node a third time.
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
import { MARKS, ROLLOUT_OWNER } from "../core/plan.js";
import type { KubeProxyPod } from "../rollout/cluster.js";
import { apiStatus } from "./client.js";
import type { InstallerDaemonSet } from "./installerDaemonSet.js";
import { eachAtMost, FIELD_MANAGER, isNotFound, MERGE, sleep, type KubeProxyClient } from "./kubeProxyClient.js";
import type { KubeProxyPods } from "./kubeProxyPods.js";
import { kubeProxyPodOf } from "./podCache.js";

/** How many of the restore's pod label patches (those the hand-back did not make) are in flight at once. */
const POD_PATCHES_AT_ONCE = 16;

export class HandBack {
    constructor(
        private readonly client: KubeProxyClient,
        private readonly installer: InstallerDaemonSet,
        private readonly pods: KubeProxyPods,
    ) {}

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
    async prepare(log: (l: string) => void): Promise<void> {
        const { namespace } = this.client.names;
        const ds = await this.client.apps.readNamespacedDaemonSet({ name: this.client.names.daemonSet, namespace });
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
                `DaemonSet ${namespace}/${this.client.names.daemonSet}: no ControllerRevision records the installer's own template (revisionHistoryLimit ${ds.spec?.revisionHistoryLimit ?? "unset"}); each hand-back labels its pod for the restore`,
            );
            return;
        }
        if (relabel) {
            await this.client.apps.patchNamespacedControllerRevision(
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
        const { namespace } = this.client.names;
        for (const r of await this.installer.revisionsOf(ds)) {
            const own = r.metadata?.annotations?.[MARKS.revisionHashAnnotation];
            if (!own) continue;
            await this.client.apps.patchNamespacedControllerRevision(
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
    async labelForRestore(pod: KubeProxyPod, node: string): Promise<KubeProxyPod[] | undefined> {
        const { namespace } = this.client.names;
        // started with the hash the restore counts current (prepareHandBack): nothing to write
        if (this.restoreHash && pod.revisionHash === this.restoreHash) return undefined;
        this.generationAfterRestore ??= this.client.apps
            .readNamespacedDaemonSet({ name: this.client.names.daemonSet, namespace })
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
            const labelled = await this.client.core.patchNamespacedPod(
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
    async restore(log: (l: string) => void): Promise<void> {
        const { namespace } = this.client.names;
        const ds = await this.client.apps.readNamespacedDaemonSet({ name: this.client.names.daemonSet, namespace });
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
                `DaemonSet ${namespace}/${this.client.names.daemonSet}: restored to the installer's spec (${kept} running pod(s) kept: they already run its configuration; ${labelled} of them labelled as of its revision now, the others were of it already: started with its hash, or labelled at their hand-back)`,
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
        const { namespace } = this.client.names;
        const selector = `${MARKS.managedByLabel}=${MARKS.managedByValue},${MARKS.configLabel}`;
        const owned = (o: k8s.V1ObjectMeta | undefined) =>
            o?.ownerReferences?.some((r) => r.kind === "ConfigMap" && r.name === ROLLOUT_OWNER) === true;
        const left = async () => [
            ...(await this.client.apps.listNamespacedDaemonSet({ namespace, labelSelector: selector })).items.map(
                (d) => ({
                    kind: "DaemonSet",
                    meta: d.metadata,
                }),
            ),
            ...(await this.client.core.listNamespacedConfigMap({ namespace, labelSelector: selector })).items.map(
                (c) => ({
                    kind: "ConfigMap",
                    meta: c.metadata,
                }),
            ),
        ];
        const first = await left();
        for (const o of first.filter((x) => !owned(x.meta))) {
            const name = o.meta!.name!;
            if (o.kind === "DaemonSet") await this.client.apps.deleteNamespacedDaemonSet({ name, namespace });
            else await this.client.core.deleteNamespacedConfigMap({ name, namespace });
        }
        try {
            await this.client.core.deleteNamespacedConfigMap({
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
        const { namespace } = this.client.names;
        // the controller has seen the template once its status says so (woken by a watch)
        const live = await this.installer.until(
            (d) => (d.status?.observedGeneration ?? 0) >= (ds.metadata?.generation ?? 0),
            60,
            () =>
                `the DaemonSet controller did not record the installer's revision of ${namespace}/${this.client.names.daemonSet} within 60s`,
        );
        const newest = async () => (await this.installer.revisionsOf(live)).sort((x, y) => y.revision - x.revision)[0];
        let controllerRevision = await newest();
        for (let tries = 1; !controllerRevision && tries < 20; tries++) {
            await sleep(500);
            controllerRevision = await newest();
        }
        if (!controllerRevision)
            throw new Error(
                `the DaemonSet ${namespace}/${this.client.names.daemonSet} has no ControllerRevision of its own`,
            );
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
                    m?.ownerReferences?.some((o) => o.kind === "DaemonSet" && o.name === this.client.names.daemonSet);
                if (!installers || !m?.name) return undefined;
                return { name: m.name, current: podIsOfRevision(m.labels, revision) };
            })
        ).items.filter((p) => p !== undefined);
        const stale = pods.filter((p) => !p.current);
        // one patch per pod, a few at a time rather than one round trip after another
        await eachAtMost(POD_PATCHES_AT_ONCE, stale, async (p) => {
            await this.client.core.patchNamespacedPod(
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
}
