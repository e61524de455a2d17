// Move a kubeadm cluster's kube-proxy to nftables, canary pool first (README.md quotes this file).
import * as pulumi from "@pulumi/pulumi";
import { KubeProxyMode } from "kube-proxy-mode";

const cfg = new pulumi.Config();

const kp = new KubeProxyMode("kube-proxy", {
    mode: "nftables", // required: iptables | ipvs | nftables
    featureGates: { KubeProxyNFTablesLocalhostNodePorts: true },
    nodePortAddresses: ["primary", "localhost"],
    conntrack: { tcpBeLiberal: true },
    kubernetesVersion: "1.37", // optional: read from the API server
    target: { flavor: "kubeadm" }, // "kubeadm" | "eks"; namespace, configMap, key, daemonSet, podSelector overridable
    pools: [
        // rolled out in this order; every Linux node in exactly one
        { name: "canary", nodeSelector: "pool=canary", maxUnavailable: 1, soak: "10m" },
        { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2, drain: true, drainTimeout: "10m" },
        // drain: { force: true, deleteEmptyDirData: true } evicts bare and emptyDir pods too (kubectl --force --delete-emptydir-data)
    ],
    verify: {
        service: "default/kubernetes", // the Service every node must reach through its ClusterIP
        image: "busybox:1.36@sha256:73aaf090f3d85aa34ee199857f03fa3a95c8ede2ffd4cc2cdb5b94e566b11662", // probe image, this is the default (host tools via chroot /host)
        maxSyncAge: "5m",
        podTimeout: "3m",
        firstSyncFactor: 20, // the new mode's first sync may take 20 x the old mode's (at least firstSyncMin, 2m)
        firstSyncStall: "60s", // kube-proxy using no CPU this long before its first sync fails the node
        hooks: [{ name: "ingress-nodeport", command: ["./check-nodeport.sh"], timeout: "30s" }],
    },
    onFailure: "rollback-node", // or "stop"
    kubeconfig: cfg.requireSecret("kubeconfig"), // kept secret; required with an explicit k8s.Provider
});

// outputs: configDiff, plan, findings, status, configHash, config, mode, promotion, change, alerts
export const configDiff = kp.configDiff;
export const plan = kp.plan;
export const findings = kp.findings;
export const status = kp.status;
export const promotion = kp.promotion;
