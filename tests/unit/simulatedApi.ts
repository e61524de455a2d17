// What the tests against a SIMULATED API server (a small HTTP server on 127.0.0.1) share.
import * as k8s from "@kubernetes/client-node";
import { KubeProxyCluster, namesFor } from "../../components/cluster/kubeProxy.js";

/** The tool's cluster client pointed at a SIMULATED API server (plain HTTP, no credentials). */
export function clusterOn(server: string): KubeProxyCluster {
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
        clusters: [{ name: "sim", server, skipTLSVerify: true }],
        users: [{ name: "sim" }],
        contexts: [{ name: "sim", cluster: "sim", user: "sim" }],
        currentContext: "sim",
    });
    return new KubeProxyCluster(kc, namesFor("kubeadm"));
}
