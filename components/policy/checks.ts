// The guard-rail policies, as functions of data: a stack's resources in, violations out. No I/O
// and no Pulumi import: components/policy/policies.ts reads the engine's resources into this
// shape and reports what comes back. Every configuration rule is the engine's own
// (core/rules.ts); this module only finds the configurations a stack manages and says which
// findings each policy stands for.
import {
    CONFIG_KEYS,
    effectiveMode,
    parseKubeProxyConfiguration,
    pinnedMode,
    type PlainObject,
} from "../core/config.js";
import { FLAVORS, IPVS_TIMELINE, NFTABLES } from "../core/facts.js";
import { checkConfiguration } from "../core/rules.js";
import { KUBE_PROXY_MODE_TYPE, PROXY_MODES, type Finding } from "../core/types.js";
import { parseKubeVersion, type KubeVersion } from "../core/versions.js";
import * as YAML from "../libraries/yaml.js";

export const POLICY = {
    pinned: "kube-proxy-mode-pinned",
    ipvs: "kube-proxy-no-ipvs-past-removal",
    gates: "kube-proxy-feature-gates-known",
    ownership: "kube-proxy-config-through-component",
} as const;
export type PolicyName = (typeof POLICY)[keyof typeof POLICY];

export const TYPES = {
    configMap: "kubernetes:core/v1:ConfigMap",
    configMapPatch: "kubernetes:core/v1:ConfigMapPatch",
    daemonSet: "kubernetes:apps/v1:DaemonSet",
    daemonSetPatch: "kubernetes:apps/v1:DaemonSetPatch",
    /** the EKS managed add-on, from the AWS provider and from AWS Native (pulumi-eks's Addon wraps the first) */
    eksAddon: "aws:eks/addon:Addon",
    eksAddonNative: "aws-native:eks:Addon",
} as const;
export const EKS_ADDON_TYPES: readonly string[] = [TYPES.eksAddon, TYPES.eksAddonNative];
/** the EKS add-on that runs kube-proxy */
export const KUBE_PROXY_ADDON = "kube-proxy";
export const CONFIG_MAP_TYPES: readonly string[] = [TYPES.configMap, TYPES.configMapPatch];
export const DAEMON_SET_TYPES: readonly string[] = [TYPES.daemonSet, TYPES.daemonSetPatch];

/** One resource of the stack, with the fields the policies read, as plain data. */
export interface StackResource {
    urn: string;
    type: string;
    /** the Pulumi name */
    name: string;
    parentUrn?: string;
    /** metadata.namespace / metadata.name of a Kubernetes object ("default" namespace when absent) */
    namespace?: string;
    objectName?: string;
    /** ConfigMap data */
    data?: Record<string, unknown>;
    /** the containers' images of a DaemonSet */
    images?: string[];
    /** an EKS managed add-on: addonName, addonVersion, configurationValues (a JSON or YAML string) */
    addon?: { name?: string; version?: string; values?: string };
    /** the fields that are not known yet (computed values during preview) */
    unknown?: string[];
    /**
     * The cluster a Kubernetes resource is written to: the API server its provider's kubeconfig
     * points at. Absent when that cannot be told (the ambient kubeconfig, a path, a value
     * computed at `up`): such a resource may be on any cluster of the stack.
     */
    cluster?: string;
    /** the Pulumi name of the resource's provider, for messages (never its kubeconfig) */
    provider?: string;
}

/** Two resources may be on the same cluster unless both clusters are known and differ. */
export function mayShareCluster(a: StackResource, b: { cluster?: string }): boolean {
    return a.cluster === undefined || b.cluster === undefined || a.cluster === b.cluster;
}

/** What a team may set in its policy pack config (`--policy-pack-config`). */
export interface GuardrailConfig {
    /** the cluster's Kubernetes release ("1.40", "v1.40.2"): the rules that depend on it need it */
    kubernetesVersion?: string;
    /** unknown feature-gate names become acceptable (a release newer than this tool knows) */
    allowUnknownFeatureGates?: boolean;
}

export interface Violation {
    policy: PolicyName;
    urn: string;
    message: string;
}

/** A KubeProxyConfiguration found in a ConfigMap (or a patch of one) the stack manages. */
export interface ManagedConfiguration {
    resource: StackResource;
    /** the ConfigMap data key, or "configurationValues" of an EKS add-on */
    key: string;
    /** an EKS managed add-on's configurationValues rather than a KubeProxyConfiguration */
    fromAddon?: boolean;
    config?: PlainObject;
    /** why the text could not be read, when it could not */
    unreadable?: string;
}

const isKnownLocation = (namespace: string, name: string | undefined) =>
    Object.values(FLAVORS).some((f) => f.namespace === namespace && f.configMap === name);

/** "ConfigMapPatch kube-system/kube-proxy (data["config.conf"])": how a message names what it is about. */
export function describe(r: StackResource, key?: string): string {
    if (EKS_ADDON_TYPES.includes(r.type))
        return `EKS add-on ${r.addon?.name ?? "(unnamed)"} (${r.type} ${r.name})${key ? ` ${key}` : ""}`;
    const kind = r.type.split(":").pop() ?? r.type;
    const where = r.objectName ? `${r.namespace ?? "default"}/${r.objectName}` : `${r.name} (name assigned by Pulumi)`;
    return `${kind} ${where}${key ? ` (data["${key}"])` : ""}`;
}

/**
 * Every kube-proxy configuration in the stack: a ConfigMap or ConfigMapPatch data entry holding
 * a KubeProxyConfiguration (found by its kind, wherever it lives), and the configuration keys
 * of the ConfigMaps installers read (kube-system/kube-proxy, kube-system/kube-proxy-config) even
 * when their text cannot be read.
 */
export function managedConfigurations(resources: readonly StackResource[]): ManagedConfiguration[] {
    const out: ManagedConfiguration[] = [];
    for (const r of resources) {
        if (
            EKS_ADDON_TYPES.includes(r.type) &&
            r.addon?.name === KUBE_PROXY_ADDON &&
            !r.unknown?.includes("configurationValues")
        ) {
            out.push(addonConfiguration(r));
            continue;
        }
        if (!CONFIG_MAP_TYPES.includes(r.type) || !r.data) continue;
        const atKnownLocation = isKnownLocation(r.namespace ?? "default", r.objectName);
        for (const [key, value] of Object.entries(r.data)) {
            if (typeof value !== "string") continue;
            const looksLikeOne = /\bkind:\s*["']?KubeProxyConfiguration\b|"kind"\s*:\s*"KubeProxyConfiguration"/.test(
                value,
            );
            const isConfigKey = atKnownLocation && (CONFIG_KEYS as readonly string[]).includes(key);
            if (!looksLikeOne && !isConfigKey) continue;
            try {
                out.push({ resource: r, key, config: parseKubeProxyConfiguration(value, describe(r, key)) });
            } catch (e) {
                out.push({ resource: r, key, unreadable: (e as Error).message });
            }
        }
    }
    return out;
}

/**
 * The kube-proxy add-on's configurationValues as the rules read a configuration: EKS applies
 * `mode` and `ipvs.*` from them to kube-system/kube-proxy-config. No values, or none for mode,
 * leaves the mode to the add-on's default.
 */
function addonConfiguration(r: StackResource): ManagedConfiguration {
    const key = "configurationValues";
    const text = r.addon?.values;
    if (text === undefined || text.trim() === "") return { resource: r, key, fromAddon: true, config: {} };
    let values: unknown;
    try {
        values = YAML.parse(text); // JSON is YAML; EKS takes either
    } catch (e) {
        return {
            resource: r,
            key,
            fromAddon: true,
            unreadable: `not JSON or YAML: ${(e as Error).message.split("\n")[0]}`,
        };
    }
    if (typeof values !== "object" || values === null || Array.isArray(values))
        return { resource: r, key, fromAddon: true, unreadable: "not a JSON object" };
    return { resource: r, key, fromAddon: true, config: values as PlainObject };
}

/**
 * The cluster's release: the policy config first, then the image of a kube-proxy DaemonSet the
 * stack manages (on the cluster of `on`, when given and told apart), then the kube-proxy add-on's version.
 */
export function clusterVersion(
    resources: readonly StackResource[],
    config: GuardrailConfig,
    on: { cluster?: string } = {},
): { version?: KubeVersion; source: string; problem?: string } {
    if (config.kubernetesVersion !== undefined) {
        const version = parseKubeVersion(String(config.kubernetesVersion));
        if (version) return { version, source: `kubernetesVersion ${config.kubernetesVersion} in the policy config` };
        return {
            source: "the policy config",
            problem: `kubernetesVersion ${JSON.stringify(config.kubernetesVersion)} in the policy config is not a Kubernetes version (write it as 1.40 or v1.40.2)`,
        };
    }
    for (const r of resources) {
        if (
            !DAEMON_SET_TYPES.includes(r.type) ||
            r.namespace !== FLAVORS.kubeadm.namespace ||
            r.objectName !== FLAVORS.kubeadm.daemonSet ||
            !mayShareCluster(r, on)
        )
            continue;
        for (const image of r.images ?? []) {
            const tag = /\/kube-proxy:(v?\d+\.\d+[^@\s]*)/.exec(image)?.[1];
            const version = tag ? parseKubeVersion(tag) : undefined;
            if (version) return { version, source: `the image ${image} of ${describe(r)}` };
        }
    }
    for (const r of resources) {
        if (!EKS_ADDON_TYPES.includes(r.type) || r.addon?.name !== KUBE_PROXY_ADDON || !r.addon.version) continue;
        // "v1.40.0-eksbuild.1": the add-on's version is kube-proxy's
        const version = parseKubeVersion(r.addon.version);
        if (version) return { version, source: `addonVersion ${r.addon.version} of ${describe(r)}` };
    }
    return { source: "nowhere" };
}

/** A finding as one message: what is wrong, an optional note, then the fix. */
function sentence(f: Finding, note = ""): string {
    const stop = (t: string) => (/[.?!]$/.test(t) ? t : `${t}.`);
    return stop(`${f.message}${note}`) + (f.fix ? ` Fix: ${stop(f.fix)}` : "");
}
const SET_VERSION =
    "set kubernetesVersion for this policy in the policy pack config (--policy-pack-config), or manage the kube-proxy DaemonSet in this stack";

/** Every kube-proxy configuration a stack manages pins its mode to one kube-proxy knows. */
export function checkModePinned(resources: readonly StackResource[]): Violation[] {
    const out: Violation[] = [];
    for (const c of managedConfigurations(resources)) {
        const what = describe(c.resource, c.key);
        if (!c.config) {
            out.push({
                policy: POLICY.pinned,
                urn: c.resource.urn,
                message: c.fromAddon
                    ? `${what} cannot be read, so its mode cannot be checked: ${c.unreadable}. Fix: give configurationValues as a JSON object with mode, e.g. {"mode":"nftables"}`
                    : `${what} cannot be read as a KubeProxyConfiguration, so its mode cannot be checked: ${c.unreadable}. Fix: write a KubeProxyConfiguration (apiVersion kubeproxy.config.k8s.io/v1alpha1) with mode set`,
            });
            continue;
        }
        if (pinnedMode(c.config) !== undefined) continue;
        const written = c.config.mode;
        if (c.fromAddon && (written === undefined || written === null || written === "")) {
            out.push({
                policy: POLICY.pinned,
                urn: c.resource.urn,
                message:
                    `${what} does not set mode: kube-proxy runs whatever the add-on version defaults to (iptables today), and that can change with an add-on upgrade. ` +
                    `Fix: set configurationValues to JSON with mode, e.g. {"mode":"nftables"} (kernel ${NFTABLES.minKernel}+ on every node) or {"mode":"iptables"}, or declare the mode with KubeProxyMode (target flavor eks)`,
            });
            continue;
        }
        out.push({
            policy: POLICY.pinned,
            urn: c.resource.urn,
            message:
                written === undefined || written === null || written === ""
                    ? `${what} does not pin the mode (mode: ${JSON.stringify(written ?? "")}): kube-proxy runs ${effectiveMode(c.config)} today and follows upstream's default when it changes. ` +
                      `Fix: set mode: nftables (kernel ${NFTABLES.minKernel}+ on every node) or mode: iptables, or declare the mode with KubeProxyMode`
                    : `${what} sets mode ${JSON.stringify(written)}, which kube-proxy does not know (it knows ${PROXY_MODES.join(", ")}). Fix: set mode to nftables or iptables`,
        });
    }
    return out;
}

/** No ipvs mode at or above the release where it stops working (1.40 without the gate, 1.43 at all). */
export function checkIpvs(resources: readonly StackResource[], config: GuardrailConfig): Violation[] {
    const out: Violation[] = [];
    for (const c of managedConfigurations(resources)) {
        if (!c.config || effectiveMode(c.config) !== "ipvs") continue;
        const cluster = clusterVersion(resources, config, c.resource);
        const what = describe(c.resource, c.key);
        if (!cluster.version) {
            out.push({
                policy: POLICY.ipvs,
                urn: c.resource.urn,
                message:
                    `${what} runs ipvs mode, which stops working in Kubernetes ${IPVS_TIMELINE.gateDefaultOff} (off by default) and ${IPVS_TIMELINE.codeRemoved} (deleted), ` +
                    `and this policy cannot tell the cluster's release${cluster.problem ? `: ${cluster.problem}` : ""}. Fix: ${SET_VERSION}; or move to nftables`,
            });
            continue;
        }
        const findings = checkConfiguration({ desired: { mode: "ipvs" }, version: cluster.version, result: c.config });
        for (const f of findings.filter((f) => f.severity === "error" && f.code.startsWith("ipvs."))) {
            out.push({
                policy: POLICY.ipvs,
                urn: c.resource.urn,
                message: `${what}: ${sentence(f, ` (release from ${cluster.source})`)}`,
            });
        }
    }
    return out;
}

/** No feature gate kube-proxy would refuse: unknown names, locked gates set against their lock, broken dependencies. */
export function checkFeatureGates(resources: readonly StackResource[], config: GuardrailConfig): Violation[] {
    const out: Violation[] = [];
    for (const c of managedConfigurations(resources)) {
        if (!c.config || c.config.featureGates === undefined || c.config.featureGates === null) continue;
        const cluster = clusterVersion(resources, config, c.resource);
        const what = describe(c.resource, c.key);
        const findings = checkConfiguration({
            desired: {
                mode: effectiveMode(c.config),
                allowUnknownFeatureGates: config.allowUnknownFeatureGates === true,
            },
            version: cluster.version,
            result: c.config,
        });
        for (const f of findings.filter((f) => f.severity === "error" && f.code.startsWith("gate."))) {
            const noVersion = cluster.version
                ? ""
                : ` (checked against the newest release this pack knows, because it cannot tell the cluster's: ${cluster.problem ?? SET_VERSION})`;
            out.push({ policy: POLICY.gates, urn: c.resource.urn, message: `${what}: ${sentence(f, noVersion)}` });
        }
    }
    return out;
}

/** What a KubeProxyMode manages, and on which cluster. */
interface Claim {
    at: string;
    component: StackResource;
    cluster?: string;
    isConfig: boolean;
}

const objectKey = (namespace: string | undefined, name: string | undefined) => `${namespace ?? "default"}/${name}`;

/** The KubeProxyMode a resource belongs to (its nearest such ancestor), if any. */
function ownerFinder(resources: readonly StackResource[]): (r: StackResource) => StackResource | undefined {
    const byUrn = new Map(resources.map((r) => [r.urn, r]));
    return (r) => {
        const seen = new Set<string>();
        for (let p = r.parentUrn; p && !seen.has(p); p = byUrn.get(p)?.parentUrn) {
            seen.add(p);
            const parent = byUrn.get(p);
            if (parent?.type === KUBE_PROXY_MODE_TYPE) return parent;
        }
        return undefined;
    };
}

/**
 * What each component manages, and on which cluster: the ConfigMaps its own children write (else
 * the installers' defaults), and the installers' DaemonSets, on its children's clusters.
 */
function componentClaims(
    resources: readonly StackResource[],
    components: StackResource[],
    owner: (r: StackResource) => StackResource | undefined,
): Claim[] {
    const claims: Claim[] = [];
    for (const component of components) {
        const kubernetes = resources.filter((r) => owner(r) === component && r.type.startsWith("kubernetes:"));
        const clusters = kubernetes.length > 0 ? [...new Set(kubernetes.map((r) => r.cluster))] : [undefined];
        const configMaps = kubernetes.filter((r) => CONFIG_MAP_TYPES.includes(r.type) && r.objectName);
        for (const r of configMaps)
            claims.push({ at: objectKey(r.namespace, r.objectName), component, cluster: r.cluster, isConfig: true });
        for (const cluster of clusters) {
            if (configMaps.length === 0)
                for (const f of Object.values(FLAVORS))
                    claims.push({ at: objectKey(f.namespace, f.configMap), component, cluster, isConfig: true });
            for (const f of Object.values(FLAVORS))
                claims.push({ at: objectKey(f.namespace, f.daemonSet), component, cluster, isConfig: false });
        }
    }
    return claims;
}

/** The violation of a ConfigMap or DaemonSet written beside the component that claims it. */
function outsideWrite(r: StackResource, claim: Claim, isConfig: boolean, claims: Claim[]): Violation {
    const cluster =
        r.cluster !== undefined && claim.cluster !== undefined ? "on the same cluster" : "in the same stack";
    return {
        policy: POLICY.ownership,
        urn: r.urn,
        message:
            `${describe(r)} is written outside KubeProxyMode "${claim.component.name}" ${cluster}, which manages kube-proxy there: ` +
            (isConfig
                ? "it would undo the mode the component pins, or switch nodes before the component has verified them (the component writes this ConfigMap only after every pool is verified). "
                : "the component holds the installer's DaemonSet on OnDelete during a rollout and restores it afterwards; a patch of its own would race that. ") +
            `Fix: remove this resource and set what it sets on KubeProxyMode "${claim.component.name}" (mode, featureGates, nodePortAddresses, conntrack), or remove the component first` +
            (r.cluster === undefined && claims.some((c) => c.cluster !== undefined)
                ? `. If it is for another cluster, give it a provider whose kubeconfig names that cluster's API server (this policy cannot tell which cluster ${r.provider ? `provider "${r.provider}"` : "the default provider"} points at)`
                : ""),
    };
}

/**
 * No hand-written ConfigMap, or patch of the ConfigMap or DaemonSet, where a KubeProxyMode in the
 * same stack manages kube-proxy on the same cluster: it would undo the pinned mode or race the
 * rollout. Clusters are told apart by the API servers of the resources' providers; where that
 * cannot be told, a resource counts as being on the component's cluster.
 */
export function checkOwnership(resources: readonly StackResource[]): Violation[] {
    const components = resources.filter((r) => r.type === KUBE_PROXY_MODE_TYPE);
    if (components.length === 0) return [];
    const owner = ownerFinder(resources);
    const claims = componentClaims(resources, components, owner);
    const fallback = components[0];
    const out: Violation[] = [];
    // the EKS add-on applies its configurationValues to kube-proxy-config itself
    for (const c of managedConfigurations(resources)) {
        if (!c.fromAddon || owner(c.resource) || !c.config || !("mode" in c.config || "ipvs" in c.config)) continue;
        out.push({
            policy: POLICY.ownership,
            urn: c.resource.urn,
            message:
                `${describe(c.resource)} sets ${"mode" in c.config ? "mode" : "ipvs"} in configurationValues beside KubeProxyMode "${fallback.name}" in the same stack: ` +
                "EKS applies these values to kube-system/kube-proxy-config when the add-on is created or updated, which would undo the component's configuration or switch nodes it has not verified. " +
                `Fix: remove mode and ipvs from the add-on's configurationValues and set the mode on KubeProxyMode "${fallback.name}" (target flavor eks)`,
        });
    }
    for (const r of resources) {
        if (owner(r) || !r.objectName) continue;
        const isConfig = CONFIG_MAP_TYPES.includes(r.type);
        if (!isConfig && !DAEMON_SET_TYPES.includes(r.type)) continue;
        const at = objectKey(r.namespace, r.objectName);
        const claim = claims.find((c) => c.at === at && c.isConfig === isConfig && mayShareCluster(r, c));
        if (claim) out.push(outsideWrite(r, claim, isConfig, claims));
    }
    return out;
}

/** Every policy, by name (for the pack and for `kube-proxy-mode` users who want them as data). */
export const CHECKS: Record<PolicyName, (resources: readonly StackResource[], config: GuardrailConfig) => Violation[]> =
    {
        [POLICY.pinned]: (r) => checkModePinned(r),
        [POLICY.ipvs]: checkIpvs,
        [POLICY.gates]: checkFeatureGates,
        [POLICY.ownership]: (r) => checkOwnership(r),
    };
