// The package schema of the `kube-proxy-mode` provider plugin, generated from the zod schemas
// that validate the component's inputs (rollout/spec.ts, core/settings.ts, core/alerts.ts,
// core/promotion.ts), so the schema and the validation cannot drift apart. Pulumi's schema has no
// union types: what TypeScript accepts as a union is flattened here (see `flatten` below), and
// outputs without a fixed shape are carried as `pulumi.json#/Any` (JSON objects in every language).
// tests/unit/providerSchema.test.ts checks that the committed schema.json is this function's output.
import { z } from "../libraries/zod.js";
import { alertsSchema } from "../core/alerts.js";
import { promotionInputSchema } from "../core/promotion.js";
import { desiredSettingsSchema } from "../core/settings.js";
import { eksAddonSchema } from "../core/schema.js";
import { KUBE_PROXY_MODE_TYPE, PROXY_MODES } from "../core/types.js";
import { poolInputSchema, targetSchema, verifyInputSchema } from "../rollout/spec.js";

export const PACKAGE_NAME = "kube-proxy-mode";
const TYPE_PREFIX = `${PACKAGE_NAME}:index:`;
const ref = (name: string) => ({ $ref: `#/types/${TYPE_PREFIX}${name}` });
const ANY = { $ref: "pulumi.json#/Any" };

/**
 * Every input of KubeProxyModeArgs, as the component validates it (one zod object). Each field's
 * `.describe()` is its one description: the package schema and docs/reference/inputs.md read it.
 */
export const componentInputSchema = desiredSettingsSchema.extend({
    target: targetSchema
        .optional()
        .describe(
            "Where kube-proxy's configuration and DaemonSet are; each field overrides the flavor's default (unknown fields are an error). Default: { flavor: \"kubeadm\" }.",
        ),
    pools: z
        .array(poolInputSchema)
        .min(1)
        .describe(
            "Rolled out in this order; every Linux node must be in exactly one. Each pool is a step in the resource graph: the list and the pool names must be plain values, known at preview (the other fields may be Outputs).",
        ),
    verify: verifyInputSchema.optional().describe("How each node is verified. Default: each field's default, below."),
    onFailure: z
        .enum(["rollback-node", "stop"])
        .optional()
        .describe(
            'What a failed node gets: "rollback-node" (back to its previous configuration, uncordoned) or "stop" (left as it is). Default: "rollback-node".',
        ),
    kubeconfig: z
        .string()
        .optional()
        .describe(
            "Kubeconfig content for the cluster (kept secret; never empty). Required with an explicit k8s.Provider (pass the same kubeconfig): the component reads the cluster itself. The preview, the Kubernetes provider, the rollout steps and the hooks all use this one cluster. Default: the stack's kubernetes:kubeconfig (content or path), else the ambient kubeconfig ($KUBECONFIG or ~/.kube/config).",
        ),
    context: z
        .string()
        .optional()
        .describe(
            "The kubeconfig context to use. Default: the stack's kubernetes:context when kubeconfig is not given, else the kubeconfig's current context.",
        ),
    alerts: alertsSchema
        .optional()
        .describe(
            "A PrometheusRule with the alerts for the weeks after the migration; a plain object (its fields other than enabled may be Outputs). The preview refuses without the PrometheusRule CRD: install the Prometheus Operator or set enabled: false. Default: no PrometheusRule.",
        ),
    promotion: promotionInputSchema
        .optional()
        .describe(
            "A promotion gate: refuse to move until the `after` stack finished the same target and held it for minSoak. Default: no gate.",
        ),
    eksAddon: eksAddonSchema
        .optional()
        .describe(
            'How the EKS managed add-on "kube-proxy" is configured, when EKS manages kube-proxy: its configurationValues (checked to set the target mode) or acknowledgeOverwrite: true. The preview refuses such a cluster without it (docs/eks.md). Default: none.',
        ),
});

/** Names of the schema types, by their path among the inputs ("[]": an array's items). Others are derived from the path. */
const TYPE_NAMES: Record<string, string> = {
    mode: "ProxyMode",
    onFailure: "OnFailure",
    "target.flavor": "Flavor",
    "pools[]": "Pool",
    "pools[].drain": "PoolDrain",
    "verify.hooks[]": "Hook",
};

const SECRET_INPUTS = new Set(["kubeconfig"]);

/** The part of a JSON-schema node (zod's toJSONSchema output) that the package schema is made from. */
interface JsonSchemaNode {
    type?: string;
    enum?: unknown[];
    anyOf?: JsonSchemaNode[];
    items?: JsonSchemaNode;
    properties?: Record<string, JsonSchemaNode>;
    additionalProperties?: JsonSchemaNode;
    required?: string[];
    default?: unknown;
    description?: string;
}

/** A Pulumi package-schema type or property (https://www.pulumi.com/docs/iac/extending-pulumi/schema/). */
interface PulumiType {
    type?: string;
    $ref?: string;
    description?: string;
    items?: PulumiType;
    additionalProperties?: PulumiType;
    enum?: { name: string; value: string }[];
    properties?: Record<string, PulumiType>;
    required?: string[];
    default?: unknown;
    secret?: boolean;
}

/** The component resource in the package schema. */
interface ResourceSpec {
    isComponent: true;
    description: string;
    inputProperties: Record<string, PulumiType>;
    requiredInputs: string[];
    properties: Record<string, PulumiType>;
    required: string[];
}

/** The package schema (a Pulumi PackageSpec), as far as this package fills it in. */
export interface PackageSchema {
    name: string;
    displayName: string;
    version: string;
    description: string;
    keywords: string[];
    license: string;
    language: Record<string, Record<string, unknown>>;
    types: Record<string, PulumiType>;
    resources: Record<string, ResourceSpec>;
}

/** The body of an object type: its properties and the required ones. */
interface ObjectBody {
    properties: Record<string, PulumiType>;
    required?: string[];
}

/** The outputs of KubeProxyMode (components/pulumi/kubeProxyMode.ts), in the schema's terms. */
function outputProperties(): Record<string, PulumiType> {
    return {
        configDiff: { type: "string", description: "Unified diff of the kube-proxy configuration." },
        plan: {
            ...ANY,
            description:
                "Pools in order: node counts, batches (every name, one string per batch, separated by a space), soak, drain (a JSON object).",
        },
        findings: {
            type: "array",
            items: ref("Finding"),
            description: "Warnings and notes the reviewer should read (errors fail the preview).",
        },
        status: {
            type: "string",
            description: "The finish step's report once `up` completed; unknown during preview.",
        },
        configHash: { type: "string", description: "Content hash of the target configuration." },
        config: { type: "string", description: "The target configuration text." },
        mode: { ...ref("ProxyMode"), description: "The target mode." },
        promotion: {
            ...ANY,
            description:
                "What a downstream promotion gate reads (export it as the stack output `promotion`); absent until the finish step completed on the current target (a JSON object).",
        },
        change: {
            ...ANY,
            description:
                "What this run moves: { cluster, from: { mode, configHash }, to: { mode, configHash }, moving } (a JSON object).",
        },
        alerts: {
            ...ANY,
            description:
                "The PrometheusRule created for `alerts` ({ namespace, name, alerts }), or null (a JSON object).",
        },
    };
}

const FINDING_TYPE: PulumiType = {
    type: "object",
    description: "A finding of the preview: what breaks, what is blocked, what the reviewer should know.",
    properties: {
        severity: { type: "string", description: '"error", "warning" or "info".' },
        code: { type: "string", description: "Stable identifier of the rule that found it." },
        field: { type: "string", description: "The input or configuration field it is about." },
        message: { type: "string", description: "What is wrong or worth knowing, in a sentence." },
        fix: { type: "string", description: "How to fix it, when there is a fix." },
        nodes: {
            type: "array",
            items: { type: "string" },
            description: "The nodes it is about, when it is about nodes.",
        },
    },
    required: ["severity", "code", "field", "message"],
};

const pascal = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);
/** "verify.hooks[]" -> "VerifyHook" (an array's items: singular), unless TYPE_NAMES names it. */
function typeName(path: string): string {
    if (TYPE_NAMES[path]) return TYPE_NAMES[path];
    return path
        .split(".")
        .map((seg) => (seg.endsWith("[]") ? pascal(seg.slice(0, -2)).replace(/s$/, "") : pascal(seg)))
        .join("");
}

/**
 * A JSON-schema node (zod's output) as a Pulumi schema type; objects and enums become named types
 * in `types`. Union types the schema cannot carry are flattened: `boolean | { ... }` (a pool's
 * `drain`) becomes the object, whose presence means true (`drain: {}` is `drain: true`).
 */
function flatten(node: JsonSchemaNode, path: string, types: Record<string, PulumiType>): PulumiType {
    if (node.anyOf) {
        const object = node.anyOf.find((b) => b.type === "object" && b.properties);
        const others = node.anyOf.filter((b) => b !== object);
        if (!object || !others.every((b) => b.type === "boolean"))
            throw new Error(`schema: ${path}: a union the package schema cannot carry`);
        return flatten(object, path, types);
    }
    if (node.type === "string" && Array.isArray(node.enum)) {
        const name = typeName(path);
        // each value named for the SDKs (Go: ProxyModeNftables, OnFailureRollbackNode; Python: NFTABLES)
        types[TYPE_PREFIX + name] = {
            type: "string",
            enum: node.enum.map(String).map((value) => ({ name: value.split("-").map(pascal).join(""), value })),
        };
        return ref(name);
    }
    if (node.type === "array") return { type: "array", items: flatten(node.items ?? {}, `${path}[]`, types) };
    if (node.type === "object" && node.properties) {
        const name = typeName(path);
        types[TYPE_PREFIX + name] = { type: "object", ...objectBody(node, path, types) };
        return ref(name);
    }
    if (node.type === "object")
        return { type: "object", additionalProperties: flatten(node.additionalProperties ?? {}, `${path}{}`, types) };
    if (node.type !== undefined && ["string", "boolean", "integer", "number"].includes(node.type))
        return { type: node.type };
    if (Object.keys(node).filter((k) => k !== "default" && k !== "description").length === 0) return ANY;
    throw new Error(`schema: ${path}: JSON schema ${JSON.stringify(node)} has no package-schema form`);
}

function objectBody(node: JsonSchemaNode, path: string, types: Record<string, PulumiType>): ObjectBody {
    const properties: Record<string, PulumiType> = {};
    for (const [key, child] of Object.entries(node.properties ?? {})) {
        const p: PulumiType = { ...flatten(child, path ? `${path}.${key}` : key, types) };
        if (child.description) p.description = child.description;
        if (child.default !== undefined) p.default = child.default;
        if (!path && SECRET_INPUTS.has(key)) p.secret = true;
        // Pulumi's schema has defaults for primitives only
        if (typeof p.default === "object") delete p.default;
        properties[key] = p;
    }
    const required: string[] = node.required ?? [];
    return required.length ? { properties, required } : { properties };
}

/** The package schema (a Pulumi PackageSpec) of the `kube-proxy-mode` plugin at `version`. */
export function packageSchema(version: string): PackageSchema {
    const types: Record<string, PulumiType> = {};
    // zod's JSON schema, read as the nodes `flatten` knows (it throws on any other form)
    const json = z.toJSONSchema(componentInputSchema, { io: "input", unrepresentable: "any" }) as JsonSchemaNode;
    const inputs = objectBody(json, "", types);
    if (!(types[`${TYPE_PREFIX}ProxyMode`]?.enum ?? []).every((e, i) => e.value === PROXY_MODES[i]))
        throw new Error("schema: mode is not the proxy modes");
    types[`${TYPE_PREFIX}Finding`] = FINDING_TYPE;
    const outputs = outputProperties();
    return {
        name: PACKAGE_NAME,
        displayName: "kube-proxy-mode",
        version,
        description:
            "Move Kubernetes clusters between kube-proxy modes safely: previewed, pool-by-pool, verified, resumable.",
        keywords: ["kubernetes", "kube-proxy", "category/infrastructure", "kind/component"],
        license: "Apache-2.0",
        language: {
            nodejs: {
                packageName: "@kube-proxy-mode/remote",
                dependencies: { "@pulumi/pulumi": "^3.0.0" },
                respectSchemaVersion: true,
            },
            python: {
                packageName: "kube_proxy_mode",
                requires: { pulumi: ">=3.0.0,<4.0.0" },
                respectSchemaVersion: true,
            },
            go: {
                importBasePath: "github.com/kube-proxy-mode/kube-proxy-mode/sdk/go/kubeproxymode",
                generateResourceContainerTypes: false,
                respectSchemaVersion: true,
            },
            csharp: {
                rootNamespace: "Pulumi",
                namespaces: { [PACKAGE_NAME]: "KubeProxy" },
                packageReferences: { Pulumi: "3.*" },
                respectSchemaVersion: true,
            },
        },
        types: Object.fromEntries(Object.entries(types).sort(([a], [b]) => a.localeCompare(b))),
        resources: {
            [KUBE_PROXY_MODE_TYPE]: {
                isComponent: true,
                description:
                    "Declare the kube-proxy mode of a cluster: `pulumi preview` reads the cluster and shows the configuration diff, the plan and the findings; `pulumi up` moves one pool at a time, verifies every node, rolls back a failed one.",
                inputProperties: inputs.properties,
                requiredInputs: inputs.required ?? [],
                properties: outputs,
                required: ["configDiff", "plan", "findings", "configHash", "config", "mode", "change"],
            },
        },
    };
}
