// The config-driven program's inputs: stack config (kube-proxy-mode:*) -> KubeProxyModeArgs. One
// mapping for the program behind the root Pulumi.yaml and for programs using the provider plugin.
import * as pulumi from "@pulumi/pulumi";
import type { KubeProxyModeArgs } from "../pulumi/kubeProxyMode.js";

export function programArgs(config = new pulumi.Config("kube-proxy-mode")): KubeProxyModeArgs {
    return {
        mode: config.require("mode") as KubeProxyModeArgs["mode"],
        featureGates: config.getObject<Record<string, boolean>>("featureGates"),
        nodePortAddresses: config.getObject<string[]>("nodePortAddresses"),
        conntrack: config.getObject<{ tcpBeLiberal?: boolean }>("conntrack"),
        kubernetesVersion: config.get("kubernetesVersion"),
        allowUnknownFeatureGates: config.getBoolean("allowUnknownFeatureGates"),
        target: config.getObject("target"),
        pools: config.requireObject("pools"),
        verify: config.getObject("verify"),
        onFailure: config.get("onFailure") as KubeProxyModeArgs["onFailure"],
        kubeconfig: config.getSecret("kubeconfig"),
        context: config.get("context"),
        alerts: config.getObject("alerts"),
        promotion: config.getObject("promotion"),
        eksAddon: config.getObject("eksAddon"),
    };
}
