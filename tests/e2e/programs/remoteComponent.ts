// A Pulumi TypeScript program that uses KubeProxyMode through the provider plugin
// (pulumi-resource-kube-proxy-mode) as a remote component, as a Python, Go, C# or YAML program
// does through its generated SDK: the engine asks the plugin to construct it. Same stack config
// as the program behind the root Pulumi.yaml (components/program), same outputs.
import * as pulumi from "@pulumi/pulumi";
import { KUBE_PROXY_MODE_TYPE } from "../../../components/core/types.js";
import { programArgs } from "../../../components/program/args.js";

const OUTPUTS = [
    "configDiff",
    "plan",
    "findings",
    "status",
    "configHash",
    "config",
    "mode",
    "promotion",
    "change",
    "alerts",
] as const;

/** The minimal remote-component class a generated Node.js SDK has: inputs in, the schema's outputs out. */
class RemoteKubeProxyMode extends pulumi.ComponentResource {
    declare readonly configDiff: pulumi.Output<string>;
    declare readonly plan: pulumi.Output<unknown>;
    declare readonly findings: pulumi.Output<unknown[]>;
    declare readonly configHash: pulumi.Output<string>;
    declare readonly mode: pulumi.Output<string>;
    declare readonly change: pulumi.Output<unknown>;
    declare readonly status: pulumi.Output<string>;
    declare readonly promotion: pulumi.Output<unknown>;

    constructor(name: string, args: pulumi.Inputs, opts?: pulumi.ComponentResourceOptions) {
        const props: pulumi.Inputs = { ...args };
        // an output that is also an input (mode) keeps the input value
        for (const o of OUTPUTS) if (!(o in props)) props[o] = undefined;
        super(KUBE_PROXY_MODE_TYPE, name, props, opts, true);
    }
}

const kp = new RemoteKubeProxyMode("kube-proxy", { ...programArgs() });

export const configDiff = kp.configDiff;
export const plan = kp.plan;
export const findings = kp.findings;
export const configHash = kp.configHash;
export const mode = kp.mode;
export const change = kp.change;
export const status = kp.status;
export const promotion = kp.promotion;
