// The installer's kube-proxy: its ConfigMap and DaemonSet as the rollout reads and reshapes them
// (prepare), the rollout's own per-configuration copies, and the waits on that DaemonSet.
import * as k8s from "../libraries/kubernetesClient.js";
import { parseCurrentConfig, type CurrentConfig } from "../core/config.js";
import { canonicalDuringRollout, targetDaemonSetSpec } from "../core/daemonset.js";
import { MARKS, ROLLOUT_OWNER, rolloutObjectName } from "../core/plan.js";
import type { Installation } from "../rollout/cluster.js";
import { Changes } from "./changes.js";
import { apiStatus } from "./client.js";
import {
    createUnlessExists,
    FIELD_MANAGER,
    isNotFound,
    MERGE,
    NotFound,
    type KubeProxyClient,
} from "./kubeProxyClient.js";

/** The installer's kube-proxy as this adapter reads it: the seam's Installation with the objects it reshapes. */
export interface InstallerObjects extends Installation {
    configMap: k8s.V1ConfigMap;
    daemonSet: k8s.V1DaemonSet;
    current: CurrentConfig;
    /** the installer's DaemonSet spec (saved at the first rollout step, else the live one) */
    originalSpec: k8s.V1DaemonSetSpec;
}

export class InstallerDaemonSet {
    constructor(private readonly client: KubeProxyClient) {}

    async installation(): Promise<InstallerObjects> {
        const { namespace, configMap: cmName, daemonSet: dsName } = this.client.names;
        let daemonSet: k8s.V1DaemonSet;
        try {
            daemonSet = await this.client.apps.readNamespacedDaemonSet({ name: dsName, namespace });
        } catch (e) {
            if (isNotFound(e)) {
                throw new NotFound(
                    `no DaemonSet ${namespace}/${dsName}: kube-proxy is not installed here (a CNI such as Cilium or Calico eBPF may implement Services), so there is nothing to migrate; if it runs under another name, set target.daemonSet`,
                );
            }
            throw e;
        }
        let configMap: k8s.V1ConfigMap;
        try {
            configMap = await this.client.core.readNamespacedConfigMap({ name: cmName, namespace });
        } catch (e) {
            if (isNotFound(e))
                throw new NotFound(
                    `no ConfigMap ${namespace}/${cmName}: set target.flavor (kubeadm keeps kube-proxy, EKS kube-proxy-config) or target.configMap`,
                );
            throw e;
        }
        const current = parseCurrentConfig(
            JSON.stringify({ ...configMap, kind: "ConfigMap" }),
            `ConfigMap ${namespace}/${cmName}`,
        );
        const saved = daemonSet.metadata?.annotations?.[MARKS.originalSpecAnnotation];
        return {
            names: this.client.names,
            configMap,
            daemonSet,
            current,
            originalSpec: saved ? (JSON.parse(saved) as k8s.V1DaemonSetSpec) : daemonSet.spec!,
            inRollout: saved !== undefined,
        };
    }

    /** one read a call: the runner keeps each configuration's mode (configurationMode in rollout/runner.ts) */
    async configurationOf(hash: string): Promise<string | undefined> {
        try {
            const cm = await this.client.core.readNamespacedConfigMap({
                name: rolloutObjectName(this.client.names.configMap, hash),
                namespace: this.client.names.namespace,
            });
            return cm.data?.[this.client.names.key];
        } catch (e) {
            if (isNotFound(e)) return undefined;
            throw e;
        }
    }

    /** Makes the per-node rollout possible: the canonical DaemonSet leaves labelled nodes alone, and the target's ConfigMap and DaemonSet exist. Idempotent. */
    async prepare(target: { hash: string; config: string }, log: (l: string) => void): Promise<void> {
        const { namespace } = this.client.names;
        const inst = await this.installation();
        if (!inst.inRollout) {
            await this.update((ds) => {
                // saved once: a second run never saves the rollout's shape as the installer's
                if (ds.metadata?.annotations?.[MARKS.originalSpecAnnotation]) return;
                ds.metadata!.annotations = {
                    ...(ds.metadata!.annotations ?? {}),
                    [MARKS.originalSpecAnnotation]: JSON.stringify(ds.spec),
                };
                ds.spec = canonicalDuringRollout(ds.spec!);
            });
            log(
                `DaemonSet ${namespace}/${this.client.names.daemonSet}: switched to OnDelete and kept off nodes labelled ${MARKS.configLabel} (its spec is saved for the finish)`,
            );
        }
        const cmName = rolloutObjectName(this.client.names.configMap, target.hash);
        const labels = { [MARKS.managedByLabel]: MARKS.managedByValue, [MARKS.configLabel]: target.hash };
        const ownerReferences = [await this.rolloutOwner()];
        const cmCreated = await createUnlessExists(() =>
            this.client.core.createNamespacedConfigMap({
                namespace,
                fieldManager: FIELD_MANAGER,
                body: {
                    metadata: { name: cmName, namespace, labels, ownerReferences },
                    data: { ...(inst.configMap.data ?? {}), [this.client.names.key]: target.config },
                },
            }),
        );
        if (cmCreated) log(`ConfigMap ${namespace}/${cmName}: created with the target configuration`);
        const dsName = rolloutObjectName(this.client.names.daemonSet, target.hash);
        const dsCreated = await createUnlessExists(() =>
            this.client.apps.createNamespacedDaemonSet({
                namespace,
                fieldManager: FIELD_MANAGER,
                body: {
                    metadata: {
                        name: dsName,
                        namespace,
                        labels: { ...(inst.daemonSet.metadata?.labels ?? {}), ...labels },
                        ownerReferences,
                    },
                    spec: targetDaemonSetSpec(inst.originalSpec, {
                        hash: target.hash,
                        canonicalConfigMap: this.client.names.configMap,
                    }),
                },
            }),
        );
        if (dsCreated)
            log(
                `DaemonSet ${namespace}/${dsName}: created; it runs only on nodes labelled ${MARKS.configLabel}=${target.hash}`,
            );
    }

    /** The owner of the rollout's ConfigMaps and DaemonSets (core/plan.ts ROLLOUT_OWNER), created when missing. */
    private async rolloutOwner(): Promise<k8s.V1OwnerReference> {
        const { namespace } = this.client.names;
        let owner: k8s.V1ConfigMap | undefined;
        await createUnlessExists(async () => {
            owner = await this.client.core.createNamespacedConfigMap({
                namespace,
                fieldManager: FIELD_MANAGER,
                body: {
                    metadata: {
                        name: ROLLOUT_OWNER,
                        namespace,
                        labels: { [MARKS.managedByLabel]: MARKS.managedByValue },
                    },
                    data: {
                        purpose:
                            "owns the rollout's ConfigMaps and DaemonSets; kube-proxy-mode's finish deletes it, and with it them. Deleting it mid-rollout removes the kube-proxy of every node not yet handed back.",
                    },
                },
            });
        });
        owner ??= await this.client.core.readNamespacedConfigMap({ name: ROLLOUT_OWNER, namespace });
        return { apiVersion: "v1", kind: "ConfigMap", name: ROLLOUT_OWNER, uid: owner.metadata!.uid! };
    }

    /** Writes the canonical ConfigMap's configuration key. */
    async writeCanonicalConfig(config: string): Promise<void> {
        await this.client.core.patchNamespacedConfigMap(
            {
                name: this.client.names.configMap,
                namespace: this.client.names.namespace,
                body: { data: { [this.client.names.key]: config } },
                fieldManager: FIELD_MANAGER,
            },
            MERGE,
        );
    }

    /** The installer DaemonSet's ControllerRevisions (those it owns, by its uid). */
    async revisionsOf(ds: k8s.V1DaemonSet): Promise<k8s.V1ControllerRevision[]> {
        return (
            await this.client.apps.listNamespacedControllerRevision({ namespace: this.client.names.namespace })
        ).items.filter((r) => r.metadata?.ownerReferences?.some((o) => o.uid === ds.metadata?.uid));
    }

    /** Read-modify-replace of the installer's DaemonSet, read again when its controller wrote in between (409). */
    async update(mutate: (ds: k8s.V1DaemonSet) => void): Promise<k8s.V1DaemonSet> {
        const { namespace } = this.client.names;
        for (let attempt = 1; ; attempt++) {
            const ds = await this.client.apps.readNamespacedDaemonSet({ name: this.client.names.daemonSet, namespace });
            mutate(ds);
            try {
                return await this.client.apps.replaceNamespacedDaemonSet({
                    name: this.client.names.daemonSet,
                    namespace,
                    body: ds,
                    fieldManager: FIELD_MANAGER,
                });
            } catch (e) {
                if (apiStatus(e) !== 409 || attempt >= 10) throw e;
            }
        }
    }

    /** Waits until the installer's DaemonSet has rolled every pod to its current spec (woken by a watch). */
    async waitForRollout(timeoutSeconds: number, log: (l: string) => void): Promise<void> {
        let said = "";
        const line = (ds: k8s.V1DaemonSet) => {
            const s = ds.status;
            return `DaemonSet ${this.client.names.daemonSet}: ${s?.updatedNumberScheduled ?? 0}/${s?.desiredNumberScheduled ?? 0} updated, ${s?.numberAvailable ?? 0} available`;
        };
        const done = (ds: k8s.V1DaemonSet) => {
            const s = ds.status;
            const want = s?.desiredNumberScheduled ?? 0;
            const now = line(ds);
            if (now !== said) log((said = now));
            return (
                (s?.observedGeneration ?? 0) >= (ds.metadata?.generation ?? 0) &&
                (s?.updatedNumberScheduled ?? 0) === want &&
                (s?.numberAvailable ?? 0) === want
            );
        };
        await this.until(
            done,
            timeoutSeconds,
            () =>
                `the installer's DaemonSet did not finish rolling within ${timeoutSeconds}s: ${said || "no status yet"}`,
        );
    }

    /**
     * The installer's DaemonSet once `ready` holds for it: read, then read again at each change a
     * watch of that one object reports (at most 5 s apart); `timedOut` words the error after
     * `timeoutSeconds`.
     */
    async until(
        ready: (ds: k8s.V1DaemonSet) => boolean,
        timeoutSeconds: number,
        timedOut: () => string,
    ): Promise<k8s.V1DaemonSet> {
        const { namespace, daemonSet: name } = this.client.names;
        const deadline = Date.now() + timeoutSeconds * 1000;
        const changes = new Changes(
            this.client.watcher(),
            `/apis/apps/v1/namespaces/${namespace}/daemonsets`,
            `metadata.name=${name}`,
            this.client.server,
        );
        await changes.start();
        try {
            for (;;) {
                const ds = await this.client.apps.readNamespacedDaemonSet({ name, namespace });
                if (ready(ds)) return ds;
                if (Date.now() > deadline) throw new Error(timedOut());
                await changes.next(Math.min(5000, Math.max(0, deadline - Date.now())));
            }
        } finally {
            changes.stop();
        }
    }
}
