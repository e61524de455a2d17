// kube-proxy as an EKS managed add-on: EKS writes its objects (kube-system/kube-proxy-config, the
// kube-proxy DaemonSet) with Server-Side Apply under the field manager "eks", and an add-on
// update with resolveConflicts OVERWRITE rewrites kube-proxy-config from the add-on's
// configurationValues, which live in AWS's API, not in the cluster. The preview cannot read
// them, so the stack must say what they are (or acknowledge that it does not). Pure.
import * as YAML from "../libraries/yaml.js";
import { isObject } from "./config.js";
import { PROXY_MODES, type Finding, type ProxyMode } from "./types.js";

export const EKS_ADDON = {
    /** the field manager EKS's add-on manager applies with ("Both types of fields are tagged with manager: eks") */
    fieldManager: "eks",
    /** the label EKS puts on kube-proxy's objects, self-managed (bootstrap) and managed add-on alike */
    componentLabel: "eks.amazonaws.com/component",
    addonName: "kube-proxy",
} as const;

/** The part of an object's metadata the detection reads (a ConfigMap's, a DaemonSet's). */
export interface ObjectMetadata {
    kind: string;
    namespace?: string;
    name?: string;
    labels?: Record<string, string>;
    managedFields?: readonly { manager?: string; operation?: string }[];
}

/** The managed add-on as the cluster shows it: which objects EKS manages, and how that was told. */
export interface ManagedAddon {
    /** one line per object EKS manages: "ConfigMap kube-system/kube-proxy-config (field manager "eks", Apply)" */
    evidence: string[];
}

/**
 * Whether EKS manages kube-proxy as an add-on: an object with fields owned by the field manager
 * "eks". The label eks.amazonaws.com/component alone does not tell it: EKS's self-managed
 * kube-proxy (created with the cluster, written with kubectl apply) carries it too.
 */
export function managedAddonOf(objects: readonly ObjectMetadata[]): ManagedAddon | undefined {
    const evidence: string[] = [];
    for (const o of objects) {
        const entries = (o.managedFields ?? []).filter((f) => f.manager === EKS_ADDON.fieldManager);
        if (entries.length === 0) continue;
        const operations = [...new Set(entries.map((f) => f.operation ?? "unknown operation"))].join(", ");
        const label = o.labels?.[EKS_ADDON.componentLabel];
        evidence.push(
            `${o.kind} ${o.namespace ?? ""}/${o.name ?? ""} (field manager "${EKS_ADDON.fieldManager}", ${operations}` +
                `${label !== undefined ? `; label ${EKS_ADDON.componentLabel}=${label}` : ""})`,
        );
    }
    return evidence.length ? { evidence } : undefined;
}

/**
 * `eksAddon` as the engine reads it: the stack's EksAddonInput resolved to plain values, saying
 * how the kube-proxy add-on is configured (validated by eksAddonSchema in schema.ts). `configurationValues`: the add-on's values as given to AWS (JSON or YAML text);
 * `acknowledgeOverwrite`: go on without them, accepting that an add-on update may rewrite
 * kube-proxy-config.
 */
export interface EksAddonSettings {
    configurationValues?: string;
    acknowledgeOverwrite?: boolean;
}

const VALUES_FIELD = "eksAddon.configurationValues";
const FIX_VALUES = (target: ProxyMode) =>
    `set the add-on's configurationValues to carry mode ${target} (e.g. {"mode":"${target}"}) and pass the same text as eksAddon.configurationValues; ` +
    "apply them to the add-on only after the finish (changing them rewrites kube-proxy-config for every node)";

/** The add-on's values as EKS reads them (JSON is YAML): an object, or why it is not one. */
function parseValues(text: string): { values?: Record<string, unknown>; problem?: string } {
    if (text.trim() === "") return { values: {} };
    let values: unknown;
    try {
        values = YAML.parse(text);
    } catch (e) {
        return { problem: `is not JSON or YAML: ${(e as Error).message.split("\n")[0]}` };
    }
    if (values === null || values === undefined) return { values: {} };
    return isObject(values) ? { values } : { problem: "is not a JSON object (EKS takes an object of values)" };
}

/**
 * What the managed add-on means for this migration to `target`. Refused (an error) when EKS
 * manages kube-proxy and the stack says nothing of the add-on's values, and whenever the values
 * given would write another mode, or none (the add-on version's default), at the next update.
 */
export function eksAddonFindings(
    addon: ManagedAddon | undefined,
    input: EksAddonSettings | undefined,
    target: ProxyMode,
): Finding[] {
    const text = input?.configurationValues;
    if (text !== undefined) {
        const { values, problem } = parseValues(text);
        if (!values)
            return [
                {
                    severity: "error",
                    code: "eks.addonValues",
                    field: VALUES_FIELD,
                    message: `the kube-proxy add-on's configurationValues ${problem}, so the mode an add-on update writes cannot be checked`,
                    fix: FIX_VALUES(target),
                },
            ];
        const mode = values.mode;
        if (mode === undefined || mode === null || mode === "")
            return [
                {
                    severity: "error",
                    code: "eks.addonMode",
                    field: VALUES_FIELD,
                    message:
                        `the kube-proxy add-on's configurationValues set no mode: the next add-on update with resolveConflicts OVERWRITE rewrites kube-system/kube-proxy-config ` +
                        `with the add-on version's default mode, and every node running ${target} would move to it at its next restart, unverified`,
                    fix: FIX_VALUES(target),
                },
            ];
        if (typeof mode !== "string" || !(PROXY_MODES as readonly string[]).includes(mode))
            return [
                {
                    severity: "error",
                    code: "eks.addonValues",
                    field: VALUES_FIELD,
                    message: `the kube-proxy add-on's configurationValues set mode ${JSON.stringify(mode)}, which kube-proxy does not know (it knows ${PROXY_MODES.join(", ")})`,
                    fix: FIX_VALUES(target),
                },
            ];
        if (mode !== target)
            return [
                {
                    severity: "error",
                    code: "eks.addonMode",
                    field: VALUES_FIELD,
                    message:
                        `the kube-proxy add-on's configurationValues set mode ${mode}, not the target ${target}: the next add-on update with resolveConflicts OVERWRITE ` +
                        `rewrites kube-system/kube-proxy-config to ${mode}, and every node would move to it at its next restart, unverified`,
                    fix: FIX_VALUES(target),
                },
            ];
        return [
            {
                severity: "info",
                code: "eks.addonChecked",
                field: VALUES_FIELD,
                message:
                    `the kube-proxy add-on's configurationValues set mode ${target}, the target: an add-on update keeps the mode ` +
                    `(with resolveConflicts OVERWRITE it still resets kube-proxy-config's other settings to the add-on's)` +
                    (addon ? `; EKS manages ${addon.evidence.join(", ")}` : ""),
            },
        ];
    }
    if (!addon) return [];
    if (input?.acknowledgeOverwrite === true)
        return [
            {
                severity: "warning",
                code: "eks.addonUnchecked",
                field: "eksAddon.acknowledgeOverwrite",
                message:
                    `EKS manages kube-proxy as an add-on (${addon.evidence.join(", ")}) and its configurationValues were not checked (acknowledgeOverwrite): ` +
                    `an add-on update with resolveConflicts OVERWRITE may rewrite kube-system/kube-proxy-config and move every node at its next restart, unverified`,
                fix: `pass the add-on's configurationValues as eksAddon.configurationValues, with mode ${target}`,
            },
        ];
    return [
        {
            severity: "error",
            code: "eks.addonManaged",
            field: "eksAddon",
            message:
                `EKS manages kube-proxy as an add-on (${addon.evidence.join(", ")}): its next update with resolveConflicts OVERWRITE rewrites kube-system/kube-proxy-config ` +
                `from the add-on's configurationValues, which live in AWS's API and which this preview cannot read; a mode there other than ${target} (or none) ` +
                `would move every node at its next restart, unverified`,
            fix:
                `pass the add-on's configurationValues as eksAddon.configurationValues (they must carry mode ${target}, e.g. {"mode":"${target}"}), ` +
                "or set eksAddon.acknowledgeOverwrite: true to go on unchecked",
        },
    ];
}
