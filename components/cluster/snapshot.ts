// Reads everything a migration is decided from. Read-only: nothing here writes to the cluster.
import { PROMETHEUS_RULE, type CrdPresence } from "../core/alerts.js";
import type { ClusterSnapshot, ServiceFacts } from "../core/migration.js";
import { rolloutAccesses, type AccessAnswer } from "../core/rbac.js";
import { apiErrorMessage, apiStatus, clusterName, loadKubeConfig, type ClusterAccess } from "./client.js";
import { KubeProxyCluster, namesFor, type Names } from "./kubeProxy.js";
import type { Flavor } from "../core/facts.js";

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
    const [serverVersion, inst, nodes, services, prometheusRuleCrd, accessAnswer] = await Promise.all([
        cluster.serverVersion(),
        cluster.installation(),
        cluster.nodeStates(),
        cluster.core.listServiceForAllNamespaces(),
        crdPresence(cluster, PROMETHEUS_RULE.crd),
        cluster
            .deniedAccesses(rolloutAccesses({ namespace: cluster.names.namespace, drain: rollout.drain }))
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
