// The config-driven program behind the root Pulumi.yaml: stack config -> one KubeProxyMode.
// A team runs it per environment (Pulumi.dev.yaml, Pulumi.prod.yaml) without writing code.
import { KubeProxyMode, type KubeProxyModeArgs } from "../pulumi/kubeProxyMode.js";
import { programArgs } from "./args.js";

const args: KubeProxyModeArgs = programArgs();

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
