// Cluster snapshots the component tests hand KubeProxyMode instead of reading a cluster: kubeadm
// 1.37's ipvs configuration (handwritten/ipvs-lc.yaml) and Linux nodes labelled by pool.
import type { ClusterSnapshot } from "../../components/core/migration.js";
import { parseCurrentConfig } from "../../components/core/config.js";
import type { NodeState } from "../../components/core/plan.js";
import { parseKubeVersion } from "../../components/core/versions.js";
import { fixture } from "../helpers.js";

/** A Linux node of a pool, on the installer's DaemonSet. */
export function nodeState(name: string, pool: string, kernel = "6.8.0-51-generic"): NodeState {
    return {
        name,
        labels: { pool, "kubernetes.io/os": "linux" },
        kernelVersion: kernel,
        operatingSystem: "linux",
        placement: null,
    };
}

/** A 1.37.2 cluster on ipvs with the given nodes; `more` overrides any field. */
export function clusterSnapshot(nodes: NodeState[], more: Partial<ClusterSnapshot> = {}): ClusterSnapshot {
    return {
        serverVersion: parseKubeVersion("v1.37.2")!,
        current: parseCurrentConfig(fixture("handwritten/ipvs-lc.yaml")),
        location: "kube-system/kube-proxy config.conf",
        nodes,
        services: [],
        ...more,
    };
}
