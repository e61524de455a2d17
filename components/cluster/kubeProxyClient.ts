// The one client that KubeProxyCluster's parts share: its API clients, its watch and its names.
// Each part (installerDaemonSet.ts, kubeProxyPods.ts, drain.ts, ...) gets this, not the Cluster,
// so the parts can reach what Cluster keeps protected without extending it.
import * as k8s from "../libraries/kubernetesClient.js";
import type { Names } from "../rollout/cluster.js";
import { apiStatus } from "./client.js";
import type { NodeJson } from "./nodeJson.js";
import type { ServerRecovery } from "./retry.js";
import type { TimedWatch } from "./timeouts.js";

export interface KubeProxyClient {
    readonly names: Names;
    readonly core: k8s.CoreV1Api;
    /** lists pods as plain JSON (client.ts PlainLists): the pages a list of many pods reads */
    readonly podLists: k8s.CoreV1Api;
    readonly apps: k8s.AppsV1Api;
    readonly policy: k8s.PolicyV1Api;
    /** what the client's calls have seen of the API server (a watch reports to it too) */
    readonly server: ServerRecovery;
    watcher(): TimedWatch;
    /** another API client of the same cluster, with its retries and request timeout (Cluster.api) */
    api<T extends k8s.ApiType>(kind: new (config: k8s.Configuration) => T): T;
    /** every node, reduced a page at a time (Cluster.eachNode) */
    eachNode<T>(reduce: (node: NodeJson) => T): Promise<T[]>;
    /** one node, read whole (KubeProxyCluster.node: every single-node read goes there) */
    node(name: string): Promise<k8s.V1Node>;
}

export const MERGE = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);
export const JSON_PATCH = k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch);
export const FIELD_MANAGER = "kube-proxy-mode";

export class NotFound extends Error {}

export function isNotFound(e: unknown): boolean {
    return apiStatus(e) === 404;
}

/** Creates an object; false when it already exists (the objects are content-addressed, so it is the same one). */
export async function createUnlessExists(create: () => Promise<unknown>): Promise<boolean> {
    try {
        await create();
        return true;
    } catch (e) {
        if (apiStatus(e) === 409) return false;
        throw e;
    }
}

/** Runs fn on every item, at most `limit` at a time; the first failure rejects, and no item starts after it. */
export async function eachAtMost<T>(limit: number, items: T[], fn: (item: T) => Promise<void>): Promise<void> {
    let next = 0;
    let failed = false;
    const worker = async () => {
        while (!failed && next < items.length)
            await fn(items[next++]).catch((e: unknown) => {
                failed = true;
                throw e;
            });
    };
    await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

export function sleep(ms: number): Promise<void> {
    return new Promise((r) => setTimeout(r, ms));
}
