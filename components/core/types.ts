// The vocabulary shared by every part of kube-proxy-mode. Pure data, no I/O.

export const PROXY_MODES = ["iptables", "ipvs", "nftables"] as const;
export type ProxyMode = (typeof PROXY_MODES)[number];

export type Severity = "error" | "warning" | "info";

/**
 * Whether the cluster has the PrometheusRule CRD (the alerts need it). Kept here, not beside the
 * alerts' zod schema, so that declarations which name it do not import zod.
 */
export type CrdPresence = "present" | "absent" | "unreadable";

/** The Pulumi type token of the KubeProxyMode component (the policies recognise it by this). */
export const KUBE_PROXY_MODE_TYPE = "kube-proxy-mode:index:KubeProxyMode";

/**
 * Every finding code, grouped by the rule family before the dot (what code branches on, e.g. the
 * policy pack's `ipvs.` and `gate.` checks). A new finding adds its code here first.
 */
export const FINDING_CODES = [
    "access.denied",
    "access.unchecked",
    "alerts.shape",
    "alerts.noCrd",
    "carry.conflict",
    "eks.addonChecked",
    "eks.addonManaged",
    "eks.addonMode",
    "eks.addonUnchecked",
    "eks.addonValues",
    "gate.dependency",
    "gate.locked",
    "gate.unknown",
    "gate.value",
    "ipvs.deprecated",
    "ipvs.gated",
    "ipvs.leftovers",
    "ipvs.off",
    "ipvs.removed",
    "mode.unpinned",
    "nftables.conntrack",
    "nftables.gate",
    "nftables.stateMoves",
    "nftables.unavailable",
    "node.kernelTooOld",
    "node.kernelUnknown",
    "node.notLinux",
    "nodePort.localhost",
    "nodePort.reach",
    "nodePortAddresses.invalid",
    "nodePortAddresses.keyword",
    "nodePortAddresses.localhostGate",
    "nodePortAddresses.primaryAlone",
    "nodePortAddresses.shape",
    "pools.allowUnroutedNode",
    "pools.drain",
    "pools.drainTimeout",
    "pools.duplicate",
    "pools.empty",
    "pools.field",
    "pools.firstSyncTimeout",
    "pools.maxUnavailable",
    "pools.name",
    "pools.noNodes",
    "pools.overlap",
    "pools.selector",
    "pools.soak",
    "pools.syncWindow",
    "pools.unassigned",
    "pools.unroutedNode",
    "settings.shape",
    "version.mismatch",
    "version.unknown",
] as const;
export type FindingCode = (typeof FINDING_CODES)[number];

/**
 * One thing the engine wants a human to know: a violated rule (error), a risk
 * (warning) or a fact worth reading in review (info). `field` names the setting
 * (dotted path in the KubeProxyConfiguration, or a CLI/component input), `fix`
 * says what would be valid.
 */
export interface Finding {
    severity: Severity;
    code: FindingCode;
    field: string;
    message: string;
    fix?: string;
    /** Node names this finding is about, when it is about nodes. */
    nodes?: string[];
}

/** One edit the renderer makes to the configuration, with the reason for it. */
export interface Change {
    path: string;
    from: unknown;
    to: unknown;
    reason: string;
    /**
     * What the configuration keeps in a comment beside the new value (the ipvs-only settings a
     * move out of ipvs resets, so a move back can restore them); null removes that memory.
     */
    remember?: string | null;
}

/** What the user asks for: the settings this tool owns. */
export interface DesiredSettings {
    mode: ProxyMode;
    featureGates?: Record<string, boolean>;
    nodePortAddresses?: string[];
    conntrack?: { tcpBeLiberal?: boolean };
    /** "1.37", "v1.37.2", "1.37.2-eks-...": detected from the cluster when absent. */
    kubernetesVersion?: string;
    /** Accept feature-gate names this version of the tool does not know (newer releases). */
    allowUnknownFeatureGates?: boolean;
}

export function hasErrors(findings: readonly Finding[]): boolean {
    return findings.some((f) => f.severity === "error");
}

/** Thrown for input that cannot be read at all (not YAML, wrong kind, empty). */
export class InputError extends Error {
    constructor(
        message: string,
        readonly field: string = "input",
    ) {
        super(message);
        this.name = "InputError";
    }
}

/** What a run moves (KubeProxyMode's `change` output): the cluster, its current configuration and the target. */
export interface ModeChange {
    /** where the cluster is (its API server), null when unknown */
    cluster: string | null;
    from: { mode: ProxyMode; configHash: string };
    to: { mode: ProxyMode; configHash: string };
    /** nodes the rollout moves */
    moving: number;
}

/** What a finished stack exports as its `promotion` output, for the stacks after it (promotion.ts validates it). */
export interface PromotionRecord {
    /** hash of the data-plane settings (promotionTarget) */
    targetHash: string;
    target: Record<string, unknown>;
    /** content hash of the whole configuration in that stack's cluster */
    configHash: string;
    mode: ProxyMode;
    /** when the finish step completed (ISO 8601) */
    finishedAt: string;
    /** nodes of the pools verified on configHash */
    nodesVerified: number;
    /** of those, verified by the built-in node checks (the rest by hooks only, verify.nodeChecks: false) */
    nodesChecked: number;
    nodesTotal: number;
    /** nodes of the pools not verified on configHash */
    unverified: string[];
    /** where the stack's cluster is, for summaries */
    cluster?: string;
}
