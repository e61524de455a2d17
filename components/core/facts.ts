// The checked facts the rules are made of (sources and wording: docs/facts.md, the repository's own copy).
// A number or a name appears here once; rules and messages read it from here.
import type { ProxyMode } from "./types.js";

/** KEP-5495: the life of ipvs mode. */
export const IPVS_TIMELINE = {
    deprecatedWarning: "1.35", // logs a deprecation error line and an IPVSDeprecation event
    gateAdded: "1.37", // KubeProxyIPVS, deprecated, default true
    gateDefaultOff: "1.40", // KubeProxyIPVS default false: ipvs mode exits unless the gate is set
    codeRemoved: "1.43", // pkg/proxy/ipvs deleted
    gateRemoved: "1.46",
    gate: "KubeProxyIPVS",
} as const;

export const IPVS_DEPRECATION_TEXT =
    `ipvs mode is deprecated (KEP-5495): kube-proxy ${IPVS_TIMELINE.gateDefaultOff} turns it off by default ` +
    `(feature gate ${IPVS_TIMELINE.gate}=false) and ${IPVS_TIMELINE.codeRemoved} deletes it`;

export const NFTABLES = {
    /** NFTablesProxyMode: alpha 1.29, beta (on by default) 1.31, GA 1.33 */
    firstRelease: "1.29",
    defaultOnRelease: "1.31",
    gate: "NFTablesProxyMode",
    minKernel: "5.13",
    /** below this kernel, kube-proxy's conntrack workaround for long TCP connections is not installed in nftables mode */
    conntrackWorkaroundKernel: "6.1",
    localhostNodePortsGate: "KubeProxyNFTablesLocalhostNodePorts",
    startupKernelError: "kube-proxy in nftables mode requires kernel 5.13 or later",
} as const;

export const NODE_PORT_KEYWORDS = {
    primary: "primary",
    localhost: "localhost",
    all: "all",
    /** localhost and all arrive, and primary may combine with others, from this release (KEP-6032) */
    keywordsRelease: "1.37",
} as const;

/** The settings kube-proxy reads from the active mode's block, by mode. */
export const MODE_SETTINGS: Record<ProxyMode, Record<PerModeSetting, string>> = {
    iptables: {
        syncPeriod: "iptables.syncPeriod",
        minSyncPeriod: "iptables.minSyncPeriod",
        masqueradeAll: "iptables.masqueradeAll",
        masqueradeBit: "iptables.masqueradeBit",
    },
    ipvs: {
        syncPeriod: "ipvs.syncPeriod",
        minSyncPeriod: "ipvs.minSyncPeriod",
        // the ipvs proxier reads the masquerade settings from the iptables block
        masqueradeAll: "iptables.masqueradeAll",
        masqueradeBit: "iptables.masqueradeBit",
    },
    nftables: {
        syncPeriod: "nftables.syncPeriod",
        minSyncPeriod: "nftables.minSyncPeriod",
        masqueradeAll: "nftables.masqueradeAll",
        masqueradeBit: "nftables.masqueradeBit",
    },
};
export type PerModeSetting = "syncPeriod" | "minSyncPeriod" | "masqueradeAll" | "masqueradeBit";
export const PER_MODE_SETTINGS: readonly PerModeSetting[] = [
    "syncPeriod",
    "minSyncPeriod",
    "masqueradeAll",
    "masqueradeBit",
];

/**
 * ipvs-only settings. Outside ipvs mode a non-zero value is dead configuration; each
 * entry gives the zero value kubeadm writes and why it goes.
 */
export const IPVS_ONLY_SETTINGS: Record<string, { zero: unknown; why: string }> = {
    "ipvs.scheduler": {
        zero: "",
        why:
            "the IPVS scheduler is one cluster-wide setting that only ipvs mode reads, and each node's table counted only the connections " +
            "that node opened; for sticky clients use Service spec.sessionAffinity: ClientIP, to keep traffic on the node use " +
            "spec.internalTrafficPolicy: Local",
    },
    "ipvs.strictARP": {
        zero: false,
        why:
            "strictARP exists only because ipvs mode binds ClusterIPs to kube-ipvs0; it is dead outside ipvs mode. The sysctls it set " +
            "(net.ipv4.conf.all.arp_ignore=1, arp_announce=2) stay on the nodes: nobody reverts them",
    },
    "ipvs.excludeCIDRs": {
        zero: null,
        why: "excludeCIDRs only protects IPVS rules from ipvs-mode cleanup; no other mode reads it",
    },
    "ipvs.tcpTimeout": {
        zero: "0s",
        why: "IPVS connection timeouts are read only in ipvs mode; conntrack.* governs the other modes",
    },
    "ipvs.tcpFinTimeout": {
        zero: "0s",
        why: "IPVS connection timeouts are read only in ipvs mode; conntrack.* governs the other modes",
    },
    "ipvs.udpTimeout": {
        zero: "0s",
        why: "IPVS connection timeouts are read only in ipvs mode; conntrack.* governs the other modes",
    },
};

/** Where installers keep the configuration. */
export const FLAVORS = {
    kubeadm: { configMap: "kube-proxy", namespace: "kube-system", key: "config.conf", daemonSet: "kube-proxy" },
    eks: { configMap: "kube-proxy-config", namespace: "kube-system", key: "config", daemonSet: "kube-proxy" },
} as const;
export type Flavor = keyof typeof FLAVORS;

/** What an empty mode means on Linux today (upstream plans to change it). */
export const DEFAULT_MODE_WHEN_EMPTY: ProxyMode = "iptables";

/** The start-up log line of each mode (check against the binary). */
export const STARTUP_LOG_LINE: Record<ProxyMode, string> = {
    iptables: "Using iptables Proxier",
    ipvs: "Using ipvs Proxier",
    nftables: "Using nftables Proxier",
};

/** Which objects are kube-proxy's in this cluster. */
export interface Names {
    namespace: string;
    configMap: string;
    key: string;
    daemonSet: string;
    /** label selector of kube-proxy pods */
    podSelector: string;
}

/** The names of `flavor`'s kube-proxy objects, with the user's overrides. */
export function namesFor(flavor: Flavor, overrides: Partial<Names> = {}): Names {
    const f = FLAVORS[flavor];
    return {
        namespace: f.namespace,
        configMap: f.configMap,
        key: f.key,
        daemonSet: f.daemonSet,
        podSelector: "k8s-app=kube-proxy",
        ...overrides,
    };
}
