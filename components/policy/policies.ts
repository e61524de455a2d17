// The CrossGuard side of the guard rails: reads the engine's view of a stack into plain data and
// reports what components/policy/checks.ts finds. Each policy is a stack policy (it needs the
// whole stack: the cluster's release from a DaemonSet, which resources a KubeProxyMode owns).
import { KubeConfig } from "../libraries/kubernetesClient.js";
import {
    UnknownValueError,
    type PolicyProviderResource,
    type PolicyResource,
    type StackValidationPolicy,
} from "@pulumi/policy";
import {
    CHECKS,
    CONFIG_MAP_TYPES,
    DAEMON_SET_TYPES,
    EKS_ADDON_TYPES,
    POLICY,
    type GuardrailConfig,
    type PolicyName,
    type StackResource,
} from "./checks.js";

/** Reads one field, recording it as unknown when the engine does not know it yet (preview). */
function read<T>(into: StackResource, field: string, get: () => T): T | undefined {
    try {
        return get();
    } catch (e) {
        if (e instanceof UnknownValueError) {
            (into.unknown ??= []).push(field);
            return undefined;
        }
        throw e;
    }
}

/**
 * The API server a Kubernetes provider writes to, when its own inputs say (kubeconfig text, with
 * its context and cluster overrides). Undefined for the ambient kubeconfig, a kubeconfig path, or
 * a value not known yet: the checks then count the resource as on any cluster of the stack.
 * Policies see secrets in the clear: the kubeconfig is read here and never leaves this function.
 */
export function apiServerOf(provider: PolicyProviderResource, into: StackResource): string | undefined {
    if (!provider.type.startsWith("pulumi:providers:kubernetes")) return undefined;
    const props = provider.props;
    const text = (field: string) => {
        const v = read(into, `provider.${field}`, () => props[field]);
        return typeof v === "string" && v !== "" ? v : undefined;
    };
    const kubeconfig = text("kubeconfig");
    const context = text("context");
    const cluster = text("cluster");
    if (kubeconfig === undefined || !/\bclusters\b/.test(kubeconfig)) return undefined; // ambient, or a path
    try {
        const kc = new KubeConfig();
        kc.loadFromString(kubeconfig);
        if (context) kc.setCurrentContext(context);
        const server = (cluster ? kc.getCluster(cluster) : kc.getCurrentCluster())?.server;
        return server ? new URL(server).href.replace(/\/$/, "") : undefined;
    } catch {
        return undefined; // unreadable: the provider itself will say so
    }
}

/** The engine's resource as the pure checks read it. */
export function toStackResource(r: PolicyResource): StackResource {
    const out: StackResource = { urn: r.urn, type: r.type, name: r.name, parentUrn: r.parent?.urn };
    if (r.provider) {
        out.provider = r.provider.name;
        const cluster = apiServerOf(r.provider, out);
        if (cluster !== undefined) out.cluster = cluster;
    }
    const props = r.props;
    if (EKS_ADDON_TYPES.includes(r.type)) {
        const text = (v: unknown) => (typeof v === "string" ? v : undefined);
        out.addon = {
            name: text(read(out, "addonName", () => props.addonName)),
            version: text(read(out, "addonVersion", () => props.addonVersion)),
            values: text(read(out, "configurationValues", () => props.configurationValues)),
        };
        return out;
    }
    const isConfigMap = CONFIG_MAP_TYPES.includes(r.type);
    if (!isConfigMap && !DAEMON_SET_TYPES.includes(r.type)) return out;
    out.namespace = read(out, "metadata.namespace", () => props.metadata?.namespace) ?? "default";
    out.objectName = read(out, "metadata.name", () => props.metadata?.name);
    if (isConfigMap) {
        const data = read(out, "data", () => props.data);
        if (data && typeof data === "object") {
            out.data = {};
            for (const key of Object.keys(data)) {
                const value = read(out, `data.${key}`, () => data[key]);
                if (value !== undefined) out.data[key] = value;
            }
        }
    } else {
        const containers = read(out, "spec.template.spec.containers", () => props.spec?.template?.spec?.containers);
        if (Array.isArray(containers)) {
            out.images = [];
            containers.forEach((c, i) => {
                const image = read(out, `spec.template.spec.containers[${i}].image`, () => c?.image);
                if (typeof image === "string") out.images!.push(image);
            });
        }
    }
    return out;
}

const CONFIG_SCHEMA = {
    properties: {
        kubernetesVersion: {
            type: "string" as const,
            description:
                "the cluster's Kubernetes release (1.40, v1.40.2); read from a kube-proxy DaemonSet in the stack when absent",
        },
        allowUnknownFeatureGates: {
            type: "boolean" as const,
            default: false,
            description: "accept feature-gate names this pack does not know (a newer release)",
        },
    },
};

function policy(name: PolicyName, description: string, configurable: boolean): StackValidationPolicy {
    return {
        name,
        description,
        enforcementLevel: "mandatory",
        ...(configurable ? { configSchema: CONFIG_SCHEMA } : {}),
        validateStack: (args, reportViolation) => {
            const config = configurable ? args.getConfig<GuardrailConfig>() : {};
            // the engine checks the types of known settings, not the names: a misspelt one would be ignored
            const known = Object.keys(CONFIG_SCHEMA.properties);
            for (const key of Object.keys(config ?? {}).filter((k) => k !== "enforcementLevel" && !known.includes(k))) {
                reportViolation(
                    `the policy config of ${name} has an unknown setting ${JSON.stringify(key)}, which would be ignored. Fix: use ${known.join(" or ")}`,
                );
            }
            for (const v of CHECKS[name](args.resources.map(toStackResource), config))
                reportViolation(v.message, v.urn);
        },
    };
}

/** The four guard-rail policies, mandatory by default (a team may lower one in its pack config). */
export const POLICIES: StackValidationPolicy[] = [
    policy(
        POLICY.pinned,
        "Every kube-proxy configuration the stack manages pins its mode (an empty mode follows upstream's default when it changes).",
        false,
    ),
    policy(
        POLICY.ipvs,
        "No ipvs mode at or above the Kubernetes release where it stops working (1.40 without the KubeProxyIPVS gate, 1.43 at all).",
        true,
    ),
    policy(
        POLICY.gates,
        "No feature gate kube-proxy refuses at start: unknown names, locked gates set against their lock, broken dependencies.",
        true,
    ),
    policy(
        POLICY.ownership,
        "No hand-written ConfigMap, or patch of kube-system/kube-proxy, where a KubeProxyMode in the same stack manages kube-proxy on that cluster (clusters told apart by their providers' API servers).",
        false,
    ),
];
