// The same migration written as code: a kubeadm cluster from ipvs to nftables, canary first.
// Run it as a Pulumi program of its own (see README.md), or use the repository's config-driven
// program with Pulumi.demo.yaml beside this file.
import * as pulumi from "@pulumi/pulumi";
import { KubeProxyMode } from "kube-proxy-mode";

const config = new pulumi.Config();

const kp = new KubeProxyMode("kube-proxy", {
    mode: "nftables",
    nodePortAddresses: ["0.0.0.0/0"], // keep the NodePort reach ipvs mode had
    conntrack: { tcpBeLiberal: true },
    target: { flavor: "kubeadm" },
    pools: [
        { name: "canary", nodeSelector: "pool=canary", maxUnavailable: 1, soak: "10m" },
        { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2, drain: true },
        { name: "batch", nodeSelector: "pool=batch", maxUnavailable: 1 },
    ],
    verify: { service: "demo/backend" },
    onFailure: "rollback-node",
    kubeconfig: config.getSecret("kubeconfig"),
});

export const configDiff = kp.configDiff;
export const plan = kp.plan;
export const findings = kp.findings;
export const status = kp.status;
