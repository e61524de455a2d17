// Reading the current kube-proxy configuration, as a user hands it over: a bare
// KubeProxyConfiguration, or the whole ConfigMap as `kubectl get -o yaml|json` prints it.
import * as YAML from "../libraries/yaml.js";
import { DEFAULT_MODE_WHEN_EMPTY, FLAVORS } from "./facts.js";
import { InputError, PROXY_MODES, type ProxyMode } from "./types.js";

export const KUBE_PROXY_KIND = "KubeProxyConfiguration";
export const KUBE_PROXY_API_VERSION = "kubeproxy.config.k8s.io/v1alpha1";
/** ConfigMap keys that hold the configuration, in the order they are looked for. */
export const CONFIG_KEYS = [FLAVORS.kubeadm.key, FLAVORS.eks.key] as const;

/** Plain data as parsed from YAML or JSON: a mapping whose values are checked where they are read. */
export type PlainObject = Record<string, unknown>;

/**
 * A KubeProxyConfiguration as plain data. The fields this tool reads are named (their values are
 * whatever the user wrote, so they are `unknown` and checked where read); every other field is
 * carried as it is, untouched.
 */
export interface KubeProxyConfiguration extends PlainObject {
    kind: typeof KUBE_PROXY_KIND;
    apiVersion: typeof KUBE_PROXY_API_VERSION;
    mode?: unknown;
    featureGates?: unknown;
    nodePortAddresses?: unknown;
    ipvs?: unknown;
    iptables?: unknown;
    nftables?: unknown;
    conntrack?: unknown;
}

export interface ConfigMapSource {
    kind: "ConfigMap";
    name?: string;
    namespace?: string;
    /** the data key holding the configuration: config.conf (kubeadm), config (EKS) */
    key: string;
    /** the whole ConfigMap object as read */
    object: PlainObject;
}

export interface CurrentConfig {
    /** the KubeProxyConfiguration text, exactly as stored */
    text: string;
    /** the same, as plain data */
    config: KubeProxyConfiguration;
    source: ConfigMapSource | { kind: typeof KUBE_PROXY_KIND };
}

/** How many alias expansions a document may make (yaml's own default, stated here because it is a guard). */
const MAX_ALIAS_COUNT = 100;

function parseOne(text: string, what: string): unknown {
    if (text.trim() === "")
        throw new InputError(`${what} is empty: expected a KubeProxyConfiguration or a ConfigMap holding one`);
    const docs = YAML.parseAllDocuments(text, { prettyErrors: true });
    // a stray `---` (a trailing one, as tools print between objects) parses as a null document: not one of the user's
    const real = docs.filter((d) => d.errors.length > 0 || !(YAML.isScalar(d.contents) && d.contents.value === null));
    if (real.length === 0)
        throw new InputError(`${what} is empty: expected a KubeProxyConfiguration or a ConfigMap holding one`);
    for (const d of real) {
        if (d.errors.length > 0) {
            const e = d.errors[0];
            const line = e.linePos?.[0]?.line;
            throw new InputError(
                `${what} is not valid YAML or JSON${line ? ` (line ${line})` : ""}: ${e.message.split("\n")[0]}`,
            );
        }
    }
    if (real.length > 1)
        throw new InputError(
            `${what} holds ${real.length} YAML documents: give exactly one KubeProxyConfiguration or ConfigMap`,
        );
    try {
        return real[0].toJS({ maxAliasCount: MAX_ALIAS_COUNT });
    } catch (e) {
        // yaml refuses to expand an alias bomb (a few lines that expand to gigabytes)
        if (/alias/i.test((e as Error).message))
            throw new InputError(
                `${what} uses YAML aliases too many times (more than ${MAX_ALIAS_COUNT} expansions): write the values out, or pass the object as kubectl prints it`,
            );
        throw e;
    }
}

export function isObject(v: unknown): v is PlainObject {
    return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Parses a KubeProxyConfiguration text; `what` names it in errors. */
export function parseKubeProxyConfiguration(text: string, what = "the configuration"): KubeProxyConfiguration {
    const obj = parseOne(text, what);
    if (!isObject(obj)) throw new InputError(`${what} is not a mapping: expected kind: ${KUBE_PROXY_KIND}`);
    if (obj.kind !== KUBE_PROXY_KIND) {
        throw new InputError(
            `${what} has kind ${JSON.stringify(obj.kind ?? null)}: expected kind: ${KUBE_PROXY_KIND}`,
            "kind",
        );
    }
    if (obj.apiVersion !== KUBE_PROXY_API_VERSION) {
        throw new InputError(
            `${what} has apiVersion ${JSON.stringify(obj.apiVersion ?? null)}: this tool reads ${KUBE_PROXY_API_VERSION}`,
            "apiVersion",
        );
    }
    return obj as KubeProxyConfiguration;
}

/**
 * Reads what a user passes as the current configuration: a KubeProxyConfiguration,
 * a ConfigMap (YAML or JSON), or a List holding exactly one ConfigMap.
 */
export function parseCurrentConfig(input: string, what = "--current"): CurrentConfig {
    let obj = parseOne(input, what);
    if (isObject(obj) && obj.kind === "List" && Array.isArray(obj.items)) {
        const cms = obj.items.filter((i: unknown) => isObject(i) && i.kind === "ConfigMap");
        if (cms.length !== 1) throw new InputError(`${what} is a List with ${cms.length} ConfigMaps: give exactly one`);
        obj = cms[0];
    }
    if (!isObject(obj))
        throw new InputError(`${what} is not a mapping: expected a ConfigMap or a KubeProxyConfiguration`);
    if (obj.kind === KUBE_PROXY_KIND) {
        return { text: input, config: parseKubeProxyConfiguration(input, what), source: { kind: KUBE_PROXY_KIND } };
    }
    if (obj.kind !== "ConfigMap") {
        throw new InputError(
            `${what} has kind ${JSON.stringify(obj.kind ?? null)}: expected a ConfigMap (kubectl get cm -n kube-system kube-proxy -o yaml) or a ${KUBE_PROXY_KIND}`,
            "kind",
        );
    }
    const data = isObject(obj.data) ? obj.data : {};
    const key = CONFIG_KEYS.find((k) => typeof data[k] === "string");
    const metadata = isObject(obj.metadata) ? obj.metadata : {};
    const name = typeof metadata.name === "string" ? metadata.name : undefined;
    const namespace = typeof metadata.namespace === "string" ? metadata.namespace : undefined;
    if (!key) {
        const found = Object.keys(data);
        throw new InputError(
            `ConfigMap ${name ?? "(unnamed)"} has no ${CONFIG_KEYS.map((k) => `data["${k}"]`).join(" or ")} ` +
                `(keys found: ${found.length ? found.join(", ") : "none"}); kubeadm keeps the configuration under config.conf, EKS under config`,
            "data",
        );
    }
    const text = data[key] as string;
    return {
        text,
        config: parseKubeProxyConfiguration(text, `data["${key}"] of ConfigMap ${name ?? "(unnamed)"}`),
        source: { kind: "ConfigMap", name, namespace, key, object: obj },
    };
}

/** The mode as written: undefined when empty or missing (unpinned). */
export function pinnedMode(config: PlainObject): ProxyMode | undefined {
    const m = config.mode;
    return typeof m === "string" && (PROXY_MODES as readonly string[]).includes(m) ? (m as ProxyMode) : undefined;
}

/** The mode a Linux kube-proxy runs with this configuration (an empty mode means iptables today). */
export function effectiveMode(config: PlainObject): ProxyMode {
    return pinnedMode(config) ?? DEFAULT_MODE_WHEN_EMPTY;
}

/** Reads a dotted path ("nftables.syncPeriod") from plain data. */
export function getPath(obj: PlainObject, path: string): unknown {
    let cur: unknown = obj;
    for (const part of path.split(".")) {
        if (!isObject(cur)) return undefined;
        cur = cur[part];
    }
    return cur;
}

/** The zero values kubeadm writes; such a field means "kube-proxy's default". */
export function isZeroValue(v: unknown): boolean {
    if (v === undefined || v === null || v === false || v === "" || v === 0) return true;
    if (typeof v === "string" && /^(0+(\.0+)?(ns|us|µs|ms|s|m|h))+$/.test(v)) return true;
    if (Array.isArray(v) && v.length === 0) return true;
    if (isObject(v) && Object.keys(v).length === 0) return true;
    return false;
}
