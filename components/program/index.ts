// The config-driven program behind the root Pulumi.yaml: stack config -> one KubeProxyMode.
// A team runs it per environment (Pulumi.dev.yaml, Pulumi.prod.yaml) without writing code.
import * as pulumi from "@pulumi/pulumi";
import { KubeProxyMode, type KubeProxyModeArgs } from "../pulumi/kubeProxyMode.js";

const config = new pulumi.Config("kube-proxy-mode");

const args: KubeProxyModeArgs = {
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
};

const kp = new KubeProxyMode("kube-proxy", args);

export const configDiff = kp.configDiff;
export const plan = kp.plan;
export const findings = kp.findings;
export const status = kp.status;
export const configHash = kp.configHash;
export const mode = kp.mode;
// what a downstream stack's promotion gate reads through its StackReference
export const promotion = kp.promotion;
export const alerts = kp.alerts;
export const change = kp.change;
