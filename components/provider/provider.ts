// The `kube-proxy-mode` provider plugin: serves the KubeProxyMode component to Pulumi programs in
// any language (a multi-language component, as pulumi-eks). `construct` builds the same
// KubeProxyMode a TypeScript program builds in-process and returns its outputs; the schema comes
// from schema.ts. Started by bin/pulumi-resource-kube-proxy-mode (an executable launcher).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import type * as provider from "@pulumi/pulumi/provider";
import { KUBE_PROXY_MODE_TYPE } from "../core/types.js";
import { KubeProxyMode, type KubeProxyModeArgs, type KubeProxyModeOptions } from "../pulumi/kubeProxyMode.js";
import { componentInputSchema, packageSchema } from "./schema.js";

/** This installation's version (package.json): the plugin's and the schema's version. */
export function packageVersion(): string {
    return JSON.parse(readFileSync(join(__dirname, "..", "..", "..", "package.json"), "utf8")).version;
}

const INPUT_NAMES = Object.keys(componentInputSchema.shape);

/**
 * Inputs the component needs as plain values because they shape its resource graph (KubeProxyMode
 * refuses an Output there): a known Output is passed as its value. `alerts`: whether the
 * PrometheusRule exists.
 */
const SHAPES_THE_GRAPH = new Set<string>(["alerts"]);

/** What every SDK Output carries but the SDK's typings do not declare (@pulumi/pulumi output.js). */
interface OutputInternals {
    isKnown: Promise<boolean>;
    promise(): Promise<unknown>;
}

/**
 * The component's arguments from the inputs a program sent. The schema's shapes are the
 * TypeScript API's (a pool's `drain` object is the TypeScript object form; `{}` is `true`), so
 * each input passes as it is; a name the schema does not have is refused, naming it. An input the
 * program left out can arrive as null, or as a known Output of nothing (the generated Node.js SDK
 * sends `promotion`, `verify` and `alerts` through an apply): both mean "not given", as leaving it
 * out does in TypeScript (a `promotion` present would otherwise be a gate). A known input
 * that shapes the graph (SHAPES_THE_GRAPH) is passed as its value.
 */
export async function componentArgs(inputs: pulumi.Inputs): Promise<KubeProxyModeArgs> {
    const unknown = Object.keys(inputs).filter((k) => !INPUT_NAMES.includes(k));
    if (unknown.length)
        throw new Error(
            `KubeProxyMode: unknown input(s) ${unknown.map((k) => JSON.stringify(k)).join(", ")}: the inputs are ${INPUT_NAMES.join(", ")}`,
        );
    const args: Record<string, unknown> = {};
    for (const k of INPUT_NAMES) {
        const v = inputs[k];
        if (v === undefined || v === null) continue;
        if (pulumi.Output.isInstance(v)) {
            const o = v as unknown as OutputInternals;
            const [known, value] = await Promise.all([o.isKnown, o.promise()]);
            if (known && (value === undefined || value === null)) continue;
            if (known && SHAPES_THE_GRAPH.has(k)) {
                args[k] = value;
                continue;
            }
        }
        args[k] = v;
    }
    return args as unknown as KubeProxyModeArgs;
}

/** The outputs a program sees on the remote component (the schema's `properties`). */
export function componentState(c: KubeProxyMode): pulumi.Inputs {
    return {
        configDiff: c.configDiff,
        plan: c.plan,
        findings: c.findings,
        status: c.status,
        configHash: c.configHash,
        config: c.config,
        mode: c.mode,
        promotion: c.promotion,
        change: c.change,
        alerts: c.alerts,
    };
}

export class KubeProxyModeProvider implements provider.Provider {
    readonly version: string;
    private readonly schemaText: string;

    /** `options`: what each constructed component is given besides the program's (tests: a snapshotReader). */
    constructor(
        private readonly componentOptions: Omit<KubeProxyModeOptions, keyof pulumi.ComponentResourceOptions> = {},
    ) {
        this.version = packageVersion();
        this.schemaText = JSON.stringify(packageSchema(this.version));
    }

    getSchema(): Promise<string> {
        return Promise.resolve(this.schemaText);
    }

    async construct(
        name: string,
        type: string,
        inputs: pulumi.Inputs,
        options: pulumi.ComponentResourceOptions,
    ): Promise<provider.ConstructResult> {
        if (type !== KUBE_PROXY_MODE_TYPE)
            throw new Error(`unknown resource type ${type}: this plugin provides ${KUBE_PROXY_MODE_TYPE}`);
        // the steps run this installation's CLI: a YAML or Python project has no kube-proxy-mode package
        const stepCli = join(__dirname, "..", "cli", "main.js");
        const component = new KubeProxyMode(name, await componentArgs(inputs), {
            ...options,
            stepCli,
            ...this.componentOptions,
        });
        return { urn: component.urn, state: componentState(component) };
    }
}
