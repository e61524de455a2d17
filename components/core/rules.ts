// The rules that decide whether a kube-proxy configuration may be rolled out, and
// what a reviewer must know about it. Each rule is one function of data.
import { effectiveMode, getPath, isObject, pinnedMode, type PlainObject } from "./config.js";
import { IPVS_DEPRECATION_TEXT, IPVS_TIMELINE, NFTABLES, NODE_PORT_KEYWORDS } from "./facts.js";
import { gateRegistry, suggestGate } from "./featureGates.js";
import { classifyNodePortAddress, type NodePortEntry } from "./nodePortAddresses.js";
import type { DesiredSettings, Finding, ProxyMode } from "./types.js";
import { atLeast, type KubeVersion } from "./versions.js";

export interface RuleContext {
    desired: DesiredSettings;
    /** the cluster's Kubernetes release; rules that depend on it say so when it is unknown */
    version?: KubeVersion;
    /** the configuration before the change (a KubeProxyConfiguration's fields, or an EKS add-on's values) */
    current?: PlainObject;
    /** the configuration after the change (what kube-proxy will read) */
    result: PlainObject;
}

type Rule = (ctx: RuleContext) => Finding[];

function gates(cfg: PlainObject | undefined): PlainObject {
    const g = cfg?.featureGates;
    return isObject(g) ? g : {};
}

function fromMode(ctx: RuleContext): ProxyMode | undefined {
    return ctx.current ? effectiveMode(ctx.current) : undefined;
}

const versionKnown: Rule = (ctx) =>
    ctx.version
        ? []
        : [
              {
                  severity: "warning",
                  code: "version.unknown",
                  field: "kubernetesVersion",
                  message:
                      "the Kubernetes version is not known, so version rules (ipvs removal, nftables availability, nodePortAddresses keywords) " +
                      "were not checked and feature gates were checked against the newest release this tool knows",
                  fix: "pass --kubernetes-version X.Y (the component detects it from the cluster)",
              },
          ];

const unpinnedCurrent: Rule = (ctx) =>
    ctx.current && pinnedMode(ctx.current) === undefined
        ? [
              {
                  severity: "info",
                  code: "mode.unpinned",
                  field: "mode",
                  message:
                      `the current configuration does not pin a mode (mode: ${JSON.stringify(ctx.current.mode ?? "")}), so kube-proxy runs iptables ` +
                      `today and would follow upstream's default when it changes; this change pins it to ${ctx.desired.mode}`,
              },
          ]
        : [];

const ipvsLifecycle: Rule = (ctx) => {
    if (effectiveMode(ctx.result) !== "ipvs") return [];
    const out: Finding[] = [
        {
            severity: "warning",
            code: "ipvs.deprecated",
            field: "mode",
            message: `${IPVS_DEPRECATION_TEXT} (the ${IPVS_TIMELINE.gate} gate itself goes in ${IPVS_TIMELINE.gateRemoved})`,
            fix: `move to nftables (kernel ${NFTABLES.minKernel}+ on every node) or iptables on older kernels`,
        },
    ];
    const v = ctx.version;
    if (!v) return out;
    if (atLeast(v, IPVS_TIMELINE.codeRemoved)) {
        out.push({
            severity: "error",
            code: "ipvs.removed",
            field: "mode",
            message: `ipvs mode does not exist in Kubernetes ${v.release}: it was deleted in ${IPVS_TIMELINE.codeRemoved} and no feature gate brings it back`,
            fix: "set mode to nftables or iptables",
        });
    } else if (atLeast(v, IPVS_TIMELINE.gateDefaultOff)) {
        if (gates(ctx.result)[IPVS_TIMELINE.gate] === true) {
            out.push({
                severity: "warning",
                code: "ipvs.gated",
                field: `featureGates.${IPVS_TIMELINE.gate}`,
                message: `ipvs mode runs on ${v.release} only because ${IPVS_TIMELINE.gate}=true; this works only until ${IPVS_TIMELINE.codeRemoved}`,
                fix: "plan the move to nftables before upgrading to " + IPVS_TIMELINE.codeRemoved,
            });
        } else {
            out.push({
                severity: "error",
                code: "ipvs.off",
                field: "mode",
                message: `kube-proxy ${v.release} exits in ipvs mode unless featureGates.${IPVS_TIMELINE.gate} is true (off by default since ${IPVS_TIMELINE.gateDefaultOff})`,
                fix: `set mode to nftables or iptables, or (until ${IPVS_TIMELINE.codeRemoved} only) featureGates.${IPVS_TIMELINE.gate}: true`,
            });
        }
    }
    return out;
};

const nftablesAvailable: Rule = (ctx) => {
    if (effectiveMode(ctx.result) !== "nftables" || !ctx.version) return [];
    const v = ctx.version;
    if (!atLeast(v, NFTABLES.firstRelease)) {
        return [
            {
                severity: "error",
                code: "nftables.unavailable",
                field: "mode",
                message: `nftables mode needs Kubernetes ${NFTABLES.firstRelease} or newer; this cluster runs ${v.release}`,
                fix: `upgrade to ${NFTABLES.defaultOnRelease}+ first, or use iptables`,
            },
        ];
    }
    if (!atLeast(v, NFTABLES.defaultOnRelease) && gates(ctx.result)[NFTABLES.gate] !== true) {
        return [
            {
                severity: "error",
                code: "nftables.gate",
                field: `featureGates.${NFTABLES.gate}`,
                message: `nftables mode is alpha in ${v.release}: kube-proxy refuses it unless featureGates.${NFTABLES.gate} is true`,
                fix: `set featureGates.${NFTABLES.gate}: true, or upgrade to ${NFTABLES.defaultOnRelease}+ where it is on by default`,
            },
        ];
    }
    return [];
};

type GateRegistry = ReturnType<typeof gateRegistry>;

/** One named gate against the release's list: a boolean, a gate the release knows, not set against its lock. */
function gateFinding(name: string, value: unknown, registry: GateRegistry, ctx: RuleContext): Finding | undefined {
    const field = `featureGates.${name}`;
    if (typeof value !== "boolean")
        return {
            severity: "error",
            code: "gate.value",
            field,
            message: `${field} is ${JSON.stringify(value)}: a gate is true or false`,
        };
    const spec = registry.gates[name];
    if (spec) {
        if (!spec.locked || value === spec.default) return undefined;
        return {
            severity: "error",
            code: "gate.locked",
            field,
            message: `${name} is ${spec.stage} and locked to ${spec.default} in ${registry.release}: kube-proxy refuses to start when it is set to ${value}`,
            fix: `remove featureGates.${name}`,
        };
    }
    const allowUnknown = ctx.desired.allowUnknownFeatureGates === true;
    const suggestion = suggestGate(name, registry);
    const known =
        registry.newerThanKnown && ctx.version
            ? `the newest list this tool has (${registry.release})`
            : `Kubernetes ${registry.release}`;
    return {
        severity: allowUnknown ? "warning" : "error",
        code: "gate.unknown",
        field,
        message:
            `${name} is not a feature gate of ${known}: kube-proxy refuses to start on an unknown gate` +
            (suggestion ? `; did you mean ${suggestion}?` : ""),
        fix: allowUnknown
            ? "accepted because unknown gates are allowed; make sure the release you run knows it"
            : suggestion
              ? `rename it to ${suggestion}, or allow unknown gates if your release is newer than ${registry.release}`
              : `remove it, or allow unknown gates (--allow-unknown-feature-gates) if your release is newer than ${registry.release}`,
    };
}

/** From 1.35 kube-proxy also refuses a setting that leaves an enabled gate without a gate it needs. */
function gateDependencies(set: PlainObject, registry: GateRegistry): Finding[] {
    const out: Finding[] = [];
    const enabled = (name: string) =>
        typeof set[name] === "boolean" ? set[name] : registry.gates[name]?.default === true;
    for (const [name, needs] of Object.entries(registry.dependencies)) {
        if (!enabled(name)) continue;
        const missing = needs.filter((d) => !enabled(d));
        const named = (gate: string) => Object.hasOwn(set, gate);
        if (missing.length === 0 || !(named(name) || missing.some(named))) continue;
        out.push({
            severity: "error",
            code: "gate.dependency",
            field: `featureGates.${named(name) ? name : missing.find(named)}`,
            message: `${name} needs ${missing.join(" and ")} enabled in ${registry.release}: kube-proxy refuses to start with this combination`,
            fix: `set ${missing.map((d) => `featureGates.${d}: true`).join(", ")}, or leave ${name} at its default`,
        });
    }
    return out;
}

const featureGateNames: Rule = (ctx) => {
    const registry = gateRegistry(ctx.version);
    const set = gates(ctx.result);
    const named = Object.entries(set).map(([name, value]) => gateFinding(name, value, registry, ctx));
    return [...named.filter((f): f is Finding => f !== undefined), ...gateDependencies(set, registry)];
};

/** Each entry of nodePortAddresses: a CIDR or, from the keywords release, a keyword. */
function nodePortEntryFindings(entries: NodePortEntry[], version: KubeVersion | undefined): Finding[] {
    const keywordsAllowed = !version || atLeast(version, NODE_PORT_KEYWORDS.keywordsRelease);
    const out: Finding[] = [];
    entries.forEach((entry, i) => {
        const field = `nodePortAddresses[${i}]`;
        if (entry.kind === "invalid") {
            out.push({
                severity: "error",
                code: "nodePortAddresses.invalid",
                field,
                message: entry.reason,
                fix: entry.suggestion
                    ? `use ${entry.suggestion}`
                    : `use CIDRs such as 0.0.0.0/0 or 10.0.0.0/8, or ${keywordsAllowed ? "primary, localhost, all" : "primary (alone)"}`,
            });
        } else if (entry.kind === "keyword" && entry.keyword !== "primary" && !keywordsAllowed) {
            out.push({
                severity: "error",
                code: "nodePortAddresses.keyword",
                field,
                message: `"${entry.keyword}" is a nodePortAddresses keyword only from Kubernetes ${NODE_PORT_KEYWORDS.keywordsRelease} (KEP-6032); this cluster runs ${version?.release}`,
                fix:
                    entry.keyword === "all" ? "use 0.0.0.0/0 and ::/0" : "use 127.0.0.0/8 in iptables mode, or upgrade",
            });
        }
    });
    const primaryIndex = entries.findIndex((e) => e.kind === "keyword" && e.keyword === "primary");
    if (primaryIndex >= 0 && entries.length > 1 && !keywordsAllowed) {
        out.push({
            severity: "error",
            code: "nodePortAddresses.primaryAlone",
            field: `nodePortAddresses[${primaryIndex}]`,
            message: `before Kubernetes ${NODE_PORT_KEYWORDS.keywordsRelease}, "primary" must be the only nodePortAddresses entry`,
            fix: `use ["primary"] alone, or list CIDRs`,
        });
    }
    return out;
}

const nodePortAddresses: Rule = (ctx) => {
    const list = ctx.result.nodePortAddresses;
    if (list === undefined || list === null) return [];
    if (!Array.isArray(list))
        return [
            {
                severity: "error",
                code: "nodePortAddresses.shape",
                field: "nodePortAddresses",
                message: "nodePortAddresses must be a list",
            },
        ];
    const entries: NodePortEntry[] = list.map((e: unknown) =>
        typeof e === "string"
            ? classifyNodePortAddress(e)
            : { kind: "invalid", reason: `${JSON.stringify(e)} is not a string` },
    );
    const out = nodePortEntryFindings(entries, ctx.version);
    const localhostIndex = entries.findIndex((e) => e.kind === "keyword" && e.keyword === "localhost");
    if (
        localhostIndex >= 0 &&
        effectiveMode(ctx.result) === "nftables" &&
        gates(ctx.result)[NFTABLES.localhostNodePortsGate] !== true
    ) {
        out.push({
            severity: "error",
            code: "nodePortAddresses.localhostGate",
            field: `nodePortAddresses[${localhostIndex}]`,
            message: `localhost NodePorts in nftables mode need featureGates.${NFTABLES.localhostNodePortsGate}: true`,
            fix: `set featureGates.${NFTABLES.localhostNodePortsGate}: true, or drop "localhost"`,
        });
    }
    return out;
};

/** What changes for NodePorts and anything that read kube-proxy's iptables state, when a node moves to nftables. */
const intoNftables: Rule = (ctx) => {
    const from = fromMode(ctx);
    if (!from || from === "nftables" || effectiveMode(ctx.result) !== "nftables") return [];
    const out: Finding[] = [];
    const list: string[] = Array.isArray(ctx.result.nodePortAddresses) ? ctx.result.nodePortAddresses : [];
    const entries = list.map(classifyNodePortAddress);
    const onlyPrimary = entries.length === 0 || entries.every((e) => e.kind === "keyword" && e.keyword === "primary");
    const keywords = !ctx.version || atLeast(ctx.version, NODE_PORT_KEYWORDS.keywordsRelease);
    if (onlyPrimary) {
        out.push({
            severity: "warning",
            code: "nodePort.reach",
            field: "nodePortAddresses",
            message:
                `NodePorts will answer only on each node's primary IP: nodePortAddresses is ${entries.length === 0 ? "unset, which means primary in nftables mode" : '["primary"]'}, ` +
                `while ${from} mode answered on every local address. Secondary NICs, VIPs and management addresses stop answering while kube-proxy stays healthy`,
            fix: `to keep the old reach set nodePortAddresses: ["0.0.0.0/0", "::/0"]${keywords ? ' (or ["all"])' : ""}; to accept the change, set ["primary"] explicitly`,
        });
    }
    const hasLocalhost = entries.some((e) => e.kind === "keyword" && e.keyword === "localhost");
    if (!hasLocalhost || gates(ctx.result)[NFTABLES.localhostNodePortsGate] !== true) {
        out.push({
            severity: "warning",
            code: "nodePort.localhost",
            field: "nodePortAddresses",
            message: `127.0.0.1:<nodePort> stops answering in nftables mode (clients on the node itself that used localhost NodePorts break)`,
            fix: keywords
                ? `on ${NODE_PORT_KEYWORDS.keywordsRelease}+ set featureGates.${NFTABLES.localhostNodePortsGate}: true and nodePortAddresses: ["primary", "localhost"]; or point those clients at the ClusterIP`
                : "point those clients at the ClusterIP or the node's primary IP",
        });
    }
    out.push({
        severity: "info",
        code: "nftables.stateMoves",
        field: "mode",
        message:
            "kube-proxy no longer opens the host firewall for NodePorts, and its state moves from the KUBE-SERVICES / KUBE-SEP-* iptables chains to " +
            "`table ip kube-proxy` and `table ip6 kube-proxy`: anything that referenced those chains by name breaks",
    });
    return out;
};

const ipvsToIptables: Rule = (ctx) =>
    fromMode(ctx) === "ipvs" && effectiveMode(ctx.result) === "iptables"
        ? [
              {
                  severity: "warning",
                  code: "ipvs.leftovers",
                  field: "mode",
                  message:
                      "iptables mode does not remove ipvs leftovers (IPVS virtual servers, kube-ipvs0 with every ClusterIP, KUBE-* ipsets); " +
                      "a kube-ipvs0 left with addresses black-holes those ClusterIPs on that node",
                  fix: "the rollout runs `kube-proxy-mode cleanup` on each node after its kube-proxy stops (the IPVS flush is host-wide); by hand: kube-proxy --cleanup, or reboot",
              },
          ]
        : [];

/** One rule for the pre-6.1 conntrack workaround, for the cluster (kernel unknown) and for a node. */
export function conntrackFinding(
    mode: ProxyMode,
    tcpBeLiberal: unknown,
    kernelBelowWorkaround: boolean | "unknown",
    nodes?: string[],
): Finding[] {
    if (mode !== "nftables" || tcpBeLiberal === true || kernelBelowWorkaround === false) return [];
    return [
        {
            severity: "warning",
            code: "nftables.conntrack",
            field: "conntrack.tcpBeLiberal",
            nodes,
            message:
                (kernelBelowWorkaround === "unknown"
                    ? `on nodes with a kernel older than ${NFTABLES.conntrackWorkaroundKernel}, `
                    : `kernel older than ${NFTABLES.conntrackWorkaroundKernel}: `) +
                "nftables mode does not install iptables mode's conntrack workaround, so long-lived TCP connections can be reset by out-of-window packets",
            fix: "set conntrack.tcpBeLiberal: true (the supported equivalent)",
        },
    ];
}

const conntrack: Rule = (ctx) =>
    conntrackFinding(effectiveMode(ctx.result), getPath(ctx.result, "conntrack.tcpBeLiberal"), "unknown");

const RULES: readonly Rule[] = [
    versionKnown,
    unpinnedCurrent,
    ipvsLifecycle,
    nftablesAvailable,
    featureGateNames,
    nodePortAddresses,
    intoNftables,
    ipvsToIptables,
    conntrack,
];

/** Every configuration rule, over the configuration kube-proxy will read. */
export function checkConfiguration(ctx: RuleContext): Finding[] {
    return RULES.flatMap((rule) => rule(ctx));
}
