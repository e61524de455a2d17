// Reads everything a migration is decided from. Read-only: nothing here writes to the cluster.
import type * as k8s from "../libraries/kubernetesClient.js";
import { PROMETHEUS_RULE, type CrdPresence } from "../core/alerts.js";
import type { ClusterSnapshot, ServiceFacts } from "../core/migration.js";
import { rolloutAccesses, type AccessAnswer } from "../core/rbac.js";
import { apiErrorMessage, apiStatus, clusterName, loadKubeConfig, type ClusterAccess } from "./client.js";
import { KubeProxyCluster, type Names } from "./kubeProxy.js";
import { namesFor, type Flavor } from "../core/facts.js";
import { managedAddonOf, type ObjectMetadata } from "../core/eksAddon.js";

/**
 * `rollout.drain`: whether a pool drains, so the permissions asked for are the ones this rollout
 * will use (SelfSubjectAccessReviews, with the kubeconfig the steps run with).
 */
export async function readSnapshot(
    access: ClusterAccess,
    flavor: Flavor,
    names: Partial<Names> = {},
    rollout: { drain: boolean } = { drain: false },
): Promise<ClusterSnapshot> {
    const cluster = new KubeProxyCluster(loadKubeConfig(access), namesFor(flavor, names));
    const [serverVersion, inst, nodes, services, endpoints, prometheusRuleCrd, accessAnswer] = await Promise.all([
        cluster.serverVersion(),
        cluster.installation(),
        cluster.nodeStates(),
        cluster.core.listServiceForAllNamespaces(),
        countEndpoints(cluster),
        crdPresence(cluster, PROMETHEUS_RULE.crd),
        cluster
            .deniedAccesses(rolloutAccesses({ ...cluster.names, drain: rollout.drain }))
            .catch((e: unknown): AccessAnswer => ({ unanswered: apiErrorMessage(e) })),
    ]);
    const facts: ServiceFacts[] = services.items.map((s) => ({
        namespace: s.metadata!.namespace!,
        name: s.metadata!.name!,
        type: s.spec?.type ?? "ClusterIP",
        nodePorts: (s.spec?.ports ?? []).map((p) => p.nodePort).filter((p): p is number => typeof p === "number"),
        sessionAffinity: s.spec?.sessionAffinity,
    }));
    return {
        serverVersion,
        current: inst.current,
        location: `${cluster.names.namespace}/${cluster.names.configMap} ${cluster.names.key}`,
        nodes,
        services: facts,
        prometheusRuleCrd,
        access: accessAnswer,
        cluster: clusterName(cluster.kc),
        eksAddon: managedAddonOf([metadataOf("ConfigMap", inst.configMap), metadataOf("DaemonSet", inst.daemonSet)]),
        ...(endpoints !== undefined ? { load: { services: services.items.length, endpoints } } : {}),
    };
}

/**
 * Every EndpointSlice's endpoints, counted page by page (a cluster at 250,000 endpoints is never
 * held whole); undefined when they cannot be listed: the preview then makes no estimate.
 */
async function countEndpoints(cluster: KubeProxyCluster): Promise<number | undefined> {
    let total = 0;
    let _continue: string | undefined;
    try {
        do {
            const page = await cluster.discovery.listEndpointSliceForAllNamespaces({ limit: 500, _continue });
            for (const slice of page.items) total += slice.endpoints?.length ?? 0;
            _continue = page.metadata?._continue || undefined;
        } while (_continue);
    } catch {
        return undefined;
    }
    return total;
}

/** What the EKS add-on detection reads of an object: its name, labels and field managers. */
function metadataOf(kind: string, o: { metadata?: k8s.V1ObjectMeta }): ObjectMetadata {
    const m = o.metadata ?? {};
    return {
        kind,
        namespace: m.namespace,
        name: m.name,
        labels: m.labels,
        managedFields: (m.managedFields ?? []).map((f) => ({ manager: f.manager, operation: f.operation })),
    };
}

/** Whether a CustomResourceDefinition exists; "unreadable" when the API will not say (RBAC). */
async function crdPresence(cluster: KubeProxyCluster, name: string): Promise<CrdPresence> {
    try {
        await cluster.readCustomResourceDefinition(name);
        return "present";
    } catch (e) {
        return apiStatus(e) === 404 ? "absent" : "unreadable";
    }
}
