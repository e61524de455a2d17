// The node probe's output (the script is in probeScript.ts) and the judgement of that output:
// the built-in checks of a node in a given mode. Pure.
import * as ipaddr from "../libraries/ipaddr.js";
import { STARTUP_LOG_LINE } from "./facts.js";
import type { ProxyMode } from "./types.js";
import {
    chainIsLeftover,
    chainModes,
    DUMMY_INTERFACE,
    isKubeProxyIpset,
    KUBE_PROXY_NFT_TABLES,
    KUBE_PROXY_OBJECTS,
} from "./kubeProxyObjects.js";
import { nameList } from "./text.js";
import { BRIDGE_NFT_TABLES } from "./bridge.js";
import { MARK } from "./probeScript.js";

export { PROBE_SCRIPT } from "./probeScript.js";

/** One IPVS virtual server, from the kernel's table (/proc/net/ip_vs). */
export interface IpvsService {
    protocol: string;
    /** dotted IPv4 or IPv6 text; for FWM the mark */
    address: string;
    port?: number;
}

export interface ProbeReport {
    /** "chroot /host" when the host's tools ran through the hostPath mount, "direct" otherwise */
    via?: string;
    time?: number;
    proxyMode?: string;
    proxyModeError?: string;
    metrics: Record<string, number>;
    kubeIpvs0: { present: boolean; addresses: string[] };
    /** every ipset name on the node (undefined: they could not be listed, see missing/errors) */
    ipsets?: string[];
    ipvsServices: IpvsService[];
    /** every chain of every iptables table, per family and backend */
    iptables: { family: "IPv4" | "IPv6"; backend: string; table: string; chain: string }[];
    nftTables: string[];
    nftError?: string;
    /** host tools the probe needed and did not find, as it named them */
    missing: string[];
    /** commands that failed: what the probe could not read */
    errors: string[];
    connect: { attempted: boolean; ok: boolean; detail: string };
    complete: boolean;
}

function hexToIPv4(hex: string): string {
    return [0, 2, 4, 6].map((i) => parseInt(hex.slice(i, i + 2), 16)).join(".");
}

/** A virtual-server line of /proc/net/ip_vs: `TCP  0A600001:01BB rr`, `TCP  [fd00:0000:...:0001]:01BB rr`, `FWM  00000001 rr`. */
export function parseIpvsLine(line: string): IpvsService | undefined {
    const m = /^(TCP|UDP|SCTP|FWM)\s+(\S+)/.exec(line.trim());
    if (!m) return undefined;
    if (m[1] === "FWM") return { protocol: "FWM", address: String(parseInt(m[2], 16)) };
    const v6 = /^\[([0-9a-fA-F:]+)\]:([0-9A-Fa-f]+)$/.exec(m[2]);
    if (v6) return { protocol: m[1], address: ipaddr.parse(v6[1]).toString(), port: parseInt(v6[2], 16) };
    const v4 = /^([0-9A-Fa-f]{8}):([0-9A-Fa-f]+)$/.exec(m[2]);
    return v4 ? { protocol: m[1], address: hexToIPv4(v4[1]), port: parseInt(v4[2], 16) } : undefined;
}

/** The probe's output cut into its `### kpm:<name>` sections. */
function probeSections(text: string): Record<string, string[]> {
    const sections: Record<string, string[]> = {};
    let cur: string | undefined;
    for (const line of text.split("\n")) {
        if (line.startsWith(MARK)) {
            cur = line.slice(MARK.length).trim();
            sections[cur] = [];
        } else if (cur) sections[cur].push(line);
    }
    return sections;
}

/** Prometheus text lines as name{labels} -> value. */
export function parseMetrics(lines: string[]): Record<string, number> {
    const metrics: Record<string, number> = {};
    for (const l of lines) {
        const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(l);
        if (m) metrics[m[1] + (m[2] ?? "")] = Number(m[3]);
    }
    return metrics;
}

/** A section's non-empty lines, trimmed. */
type SectionLines = (name: string) => string[];

/**
 * The probe's "missing <tool>" and "error <command>" lines, from whichever section they are in;
 * `note` collects one and says whether the line was one (the sections' other lines are data).
 */
function probeNotes(): { missing: string[]; errors: string[]; note: (line: string) => boolean } {
    const missing: string[] = [];
    const errors: string[] = [];
    const note = (l: string) => {
        if (l.startsWith("missing ")) missing.push(l.slice("missing ".length));
        else if (l.startsWith("error ")) errors.push(l.slice("error ".length));
        else return false;
        return true;
    };
    return { missing, errors, note };
}

/** The mode kube-proxy answers on /proxyMode, or why there is no answer. */
function reportedMode(lines: SectionLines): Pick<ProbeReport, "proxyMode" | "proxyModeError"> {
    const modeLines = lines("proxyMode");
    const rc = modeLines.find((l) => l.startsWith("rc="));
    const modeText = modeLines.filter((l) => !l.startsWith("rc=")).join(" ");
    const modeOk = rc === "rc=0" && /^(iptables|ipvs|nftables|kernelspace)$/.test(modeText);
    return {
        proxyMode: modeOk ? modeText : undefined,
        proxyModeError: modeOk ? undefined : modeText || rc || "no answer",
    };
}

type Leftovers = Pick<ProbeReport, "kubeIpvs0" | "ipsets" | "ipvsServices" | "iptables" | "nftTables" | "nftError">;

/**
 * What the modes leave on a node: kube-ipvs0 and its addresses, ipsets, IPVS virtual servers,
 * iptables chains, nftables tables.
 */
function leftovers(sections: Record<string, string[]>, lines: SectionLines, note: (l: string) => boolean): Leftovers {
    const ipvs0 = lines("kube-ipvs0").filter((l) => !note(l));
    const present = ipvs0[0] === "present";
    const addresses = present ? ipvs0.map((l) => /\binet6?\s+(\S+)/.exec(l)?.[1]).filter((a): a is string => !!a) : [];
    const setLines = lines("ipsets").filter((l) => !note(l));
    const ipsetsSeen =
        "ipsets" in sections && !lines("ipsets").some((l) => l.startsWith("missing ") || l.startsWith("error "));
    const ipvsServices = lines("ipvs")
        .filter((l) => !note(l))
        .filter((l) => l.startsWith("vs "))
        .map((l) => parseIpvsLine(l.slice(3)))
        .filter((v): v is IpvsService => !!v);
    const iptables: ProbeReport["iptables"] = [];
    for (const l of lines("iptables")) {
        if (note(l)) continue;
        const m = /^chain (IPv4|IPv6) (\S+) (\S+) (\S+)$/.exec(l);
        if (m) iptables.push({ family: m[1] as "IPv4" | "IPv6", backend: m[2], table: m[3], chain: m[4] });
    }
    const nftLines = lines("nftables").filter((l) => !note(l));
    const nftTables = nftLines.filter((l) => l.startsWith("table ")).map((l) => l.slice("table ".length));
    return {
        kubeIpvs0: { present, addresses },
        ipsets: ipsetsSeen ? setLines.filter((l) => l.startsWith("set ")).map((l) => l.slice(4)) : undefined,
        ipvsServices,
        iptables,
        nftTables,
        // no table listed: what nft said instead
        nftError: nftTables.length === 0 && nftLines.length > 0 ? nftLines.join(" ") : undefined,
    };
}

export function parseProbeOutput(text: string): ProbeReport {
    const sections = probeSections(text);
    const lines: SectionLines = (name) => (sections[name] ?? []).map((l) => l.trim()).filter((l) => l !== "");
    const { missing, errors, note } = probeNotes();
    const mode = reportedMode(lines);
    const metrics = parseMetrics(lines("metrics"));
    const left = leftovers(sections, lines, note);
    const connect = lines("connect")[0] ?? "";
    return {
        via: /^ran via: ([^;]+)/.exec(lines("host")[0] ?? "")?.[1],
        time: lines("time")[0] ? Number(lines("time")[0]) : undefined,
        ...mode,
        metrics,
        ...left,
        missing,
        errors,
        connect: { attempted: connect !== "skipped" && connect !== "", ok: connect === "connected", detail: connect },
        complete: "end" in sections,
    };
}

export type CheckName = "mode" | "startup-log" | "leftovers" | "rules" | "sync" | "connection";

export interface CheckResult {
    /** a built-in check (CheckName) or a hook's name */
    check: string;
    ok: boolean;
    detail: string;
}

export interface ProbeExpectations {
    mode: ProxyMode;
    /** seconds; a last sync older than this fails the sync check */
    maxSyncAgeSeconds: number;
    /** whether a Service connection is required */
    connect: boolean;
    /** the node, named in what the probe could not see */
    node?: string;
    /** Service ClusterIPs/external IPs: IPVS virtual servers on them are kube-proxy's (as are those on kube-ipvs0) */
    serviceIPs?: string[];
}

const bare = (a: string) => a.replace(/\/\d+$/, "");

/** Objects on the node named like kube-proxy's that are not: another agent's IPVS servers, ipsets and chains. */
function foreignObjects(report: ProbeReport, ipvsIps: Set<string>): string[] {
    const foreign: string[] = [];
    for (const v of report.ipvsServices.filter((x) => !ipvsIps.has(x.address)))
        foreign.push(`IPVS virtual server ${v.protocol} ${v.address}${v.port !== undefined ? `:${v.port}` : ""}`);
    for (const s of (report.ipsets ?? []).filter((x) => x.startsWith("KUBE-") && !isKubeProxyIpset(x)))
        foreign.push(`ipset ${s}`);
    for (const c of report.iptables) {
        if (chainModes(c.table, c.chain).length > 0) continue;
        if (c.chain.startsWith("KUBE-") && !KUBE_PROXY_OBJECTS.notKubeProxys.includes(c.chain))
            foreign.push(`iptables chain ${c.chain} (${c.table}, ${c.family}, ${c.backend})`);
    }
    return foreign;
}

/** kube-proxy chains another mode left: nftables mode uses none; iptables mode leaves ipvs mode's own; ipvs mode is not checked. */
function staleChains(report: ProbeReport, mode: ProxyMode): string[] {
    const stale = new Set<string>();
    for (const c of report.iptables) {
        if (chainModes(c.table, c.chain).length === 0) continue;
        if (mode === "nftables" || (mode === "iptables" && chainIsLeftover(c.table, c.chain, "iptables")))
            stale.add(c.chain);
    }
    return [...stale];
}

/** What ipvs mode left on a node that runs another mode: kube-ipvs0, its ipsets and virtual servers; and whether ipsets could be seen. */
function ipvsLeftovers(
    report: ProbeReport,
    ours: IpvsService[],
): { leftovers: string[]; blind: string[]; notes: string[] } {
    const leftovers: string[] = [];
    const blind: string[] = [];
    const notes: string[] = [];
    if (report.kubeIpvs0.present) {
        const a = report.kubeIpvs0.addresses;
        leftovers.push(
            `${DUMMY_INTERFACE} exists${a.length ? ` holding ${a.length} address(es) (${nameList(a, 3)}) that black-hole those ClusterIPs` : ""}`,
        );
    }
    const sets = (report.ipsets ?? []).filter(isKubeProxyIpset);
    if (sets.length) leftovers.push(`ipsets ${nameList(sets, 4)}`);
    if (ours.length)
        leftovers.push(
            `${ours.length} IPVS virtual server(s) of kube-proxy (${nameList(
                ours.map((v) => `${v.protocol} ${v.address}:${v.port}`),
                3,
            )})`,
        );
    if (report.missing.includes("ipset")) {
        // ipsets are ipvs mode's alone: with no other trace of ipvs mode there is none to miss
        const ipvsOnly = (c: { table: string; chain: string }) =>
            chainModes(c.table, c.chain).includes("ipvs") && !chainModes(c.table, c.chain).includes("iptables");
        if (report.kubeIpvs0.present || ours.length > 0 || report.iptables.some(ipvsOnly))
            blind.push(
                "ipset is not on the node, and the node holds state of ipvs mode (the mode that uses ipsets): its ipsets cannot be checked",
            );
        else
            notes.push(
                "ipset is not on the node: no ipset checked, which passes because only ipvs mode uses ipsets and the node holds no other state of ipvs mode",
            );
    }
    return { leftovers, blind, notes };
}

/** What the probe could not see, what kube-proxy left, and what on the node is not kube-proxy's. Pure. */
function leftoversCheck(report: ProbeReport, expect: ProbeExpectations): CheckResult {
    const on = expect.node ? ` on node ${expect.node}` : "";
    const blind: string[] = [];
    for (const tool of report.missing) if (tool !== "ipset") blind.push(`${tool} is not on the node`);
    for (const e of report.errors) blind.push(`cannot read: ${e}`);
    const ipvsIps = new Set([...report.kubeIpvs0.addresses.map(bare), ...(expect.serviceIPs ?? [])]);
    const foreign = foreignObjects(report, ipvsIps);
    const leftovers: string[] = [];
    const notes: string[] = [];
    if (expect.mode !== "ipvs") {
        const ipvs = ipvsLeftovers(
            report,
            report.ipvsServices.filter((v) => ipvsIps.has(v.address)),
        );
        leftovers.push(...ipvs.leftovers);
        blind.push(...ipvs.blind);
        notes.push(...ipvs.notes);
    }
    const stale = staleChains(report, expect.mode);
    if (stale.length) leftovers.push(`iptables chains ${nameList(stale, 4)}`);
    const kubeProxyTables = report.nftTables.filter((t) => (KUBE_PROXY_NFT_TABLES as string[]).includes(t));
    if (expect.mode !== "nftables" && kubeProxyTables.length)
        leftovers.push(`nftables tables ${kubeProxyTables.join(", ")}`);
    // verification runs after the bridge's delete: a copy still there routes stale rules for good
    const bridges = report.nftTables.filter((t) => BRIDGE_NFT_TABLES.includes(t));
    if (bridges.length) leftovers.push(`nftables tables ${bridges.join(", ")} (a bridge the rollout did not remove)`);
    const tail = `${notes.length ? `; ${notes.join("; ")}` : ""}${foreign.length ? `; not ours, left alone: ${nameList([...new Set(foreign)], 6)}` : ""}`;
    const left = leftovers.length ? `left behind: ${leftovers.join("; ")}` : "";
    if (blind.length)
        return {
            check: "leftovers",
            ok: false,
            detail: `the probe cannot see${on}: ${blind.join("; ")}${left ? `; ${left}` : ""}${tail}`,
        };
    return {
        check: "leftovers",
        ok: leftovers.length === 0,
        detail: `${left || "no state of another mode left"}${tail}`,
    };
}

/** The values of one metric, every label set (parseMetrics keys them name{labels}). */
export function metricValues(metrics: Record<string, number>, name: string): number[] {
    return Object.entries(metrics)
        .filter(([k]) => k.split("{")[0] === name)
        .map(([, v]) => v);
}

/** The rules check: kube-proxy's own state for the mode is on the node (its nftables tables, KUBE-SERVICES, kube-ipvs0). */
function rulesCheck(report: ProbeReport, mode: ProxyMode): CheckResult {
    if (mode === "iptables") {
        const chains = report.iptables.filter((c) => c.table === "nat").map((c) => c.chain);
        return chains.includes("KUBE-SERVICES")
            ? { check: "rules", ok: true, detail: "iptables chain KUBE-SERVICES present" }
            : { check: "rules", ok: false, detail: "no KUBE-SERVICES chain in iptables" };
    }
    if (mode !== "nftables")
        return report.kubeIpvs0.present
            ? { check: "rules", ok: true, detail: "kube-ipvs0 present" }
            : { check: "rules", ok: false, detail: "no kube-ipvs0 interface" };
    // one table per IP family kube-proxy runs (its metrics carry ip_family); at least one
    const kubeProxyTables = report.nftTables.filter((t) => (KUBE_PROXY_NFT_TABLES as string[]).includes(t));
    const families = ["IPv4", "IPv6"].filter((f) =>
        Object.keys(report.metrics).some(
            (k) => k.startsWith("kubeproxy_sync_proxy_rules_last_timestamp_seconds") && k.includes(`"${f}"`),
        ),
    );
    const missing = families
        .map((f) => (f === "IPv4" ? "ip kube-proxy" : "ip6 kube-proxy"))
        .filter((t) => !kubeProxyTables.includes(t));
    if (missing.length === 0 && kubeProxyTables.length > 0)
        return { check: "rules", ok: true, detail: `nftables ${kubeProxyTables.join(", ")} present` };
    const why = missing.length
        ? `missing nftables table ${missing.join(", ")} (kube-proxy syncs ${families.join(" and ")})`
        : "no kube-proxy nftables table on the node";
    return { check: "rules", ok: false, detail: `${why}${report.nftError ? ` (${report.nftError})` : ""}` };
}

/** The sync check: kube-proxy synced its rules recently, and (nftables) without failures. */
function syncCheck(report: ProbeReport, expect: ProbeExpectations): CheckResult {
    const lastValues = metricValues(report.metrics, "kubeproxy_sync_proxy_rules_last_timestamp_seconds");
    const failures =
        expect.mode === "nftables"
            ? metricValues(report.metrics, "kubeproxy_sync_proxy_rules_nftables_sync_failures_total").reduce(
                  (a, b) => a + b,
                  0,
              )
            : 0;
    if (lastValues.length === 0)
        return {
            check: "sync",
            ok: false,
            detail: "kube-proxy reports no kubeproxy_sync_proxy_rules_last_timestamp_seconds: rules were never synced",
        };
    const newest = Math.max(...lastValues);
    if (report.time !== undefined && report.time - newest > expect.maxSyncAgeSeconds) {
        return {
            check: "sync",
            ok: false,
            detail: `last rule sync ${Math.round(report.time - newest)}s ago (more than ${expect.maxSyncAgeSeconds}s)`,
        };
    }
    if (failures > 0) return { check: "sync", ok: false, detail: `${failures} nftables sync failure(s) reported` };
    return {
        check: "sync",
        ok: true,
        detail: `last rule sync ${report.time !== undefined ? `${Math.max(0, Math.round(report.time - newest))}s ago` : "reported"}, no sync failures`,
    };
}

/** Judges one probe run against what the node should be running. Pure. */
export function judgeProbe(report: ProbeReport, expect: ProbeExpectations): CheckResult[] {
    const out: CheckResult[] = [];
    if (!report.complete)
        out.push({
            check: "probe",
            ok: false,
            detail: "the probe's output is incomplete (it was cut off or did not run to the end)",
        });
    out.push(
        report.proxyMode === expect.mode
            ? { check: "mode", ok: true, detail: `/proxyMode says ${report.proxyMode}` }
            : {
                  check: "mode",
                  ok: false,
                  detail: report.proxyMode
                      ? `/proxyMode says ${report.proxyMode}, expected ${expect.mode}`
                      : `/proxyMode did not answer: ${report.proxyModeError}`,
              },
    );
    out.push(leftoversCheck(report, expect), rulesCheck(report, expect.mode), syncCheck(report, expect));
    if (expect.connect) {
        out.push(
            report.connect.ok
                ? { check: "connection", ok: true, detail: "connected to the Service's ClusterIP from the node" }
                : {
                      check: "connection",
                      ok: false,
                      detail: `no connection to the Service's ClusterIP from the node: ${report.connect.detail || "not attempted"}`,
                  },
        );
    }
    return out;
}

/** The start-up log line of the mode kube-proxy chose, in its own log. */
export function checkStartupLog(log: string, mode: ProxyMode): CheckResult {
    const chosen = (Object.entries(STARTUP_LOG_LINE) as [ProxyMode, string][])
        .filter(([, line]) => log.includes(line))
        .map(([m]) => m);
    if (chosen.includes(mode) && chosen.length === 1)
        return { check: "startup-log", ok: true, detail: `log says "${STARTUP_LOG_LINE[mode]}"` };
    const tail = log.trim().split("\n").slice(-5).join(" | ");
    return {
        check: "startup-log",
        ok: false,
        detail: chosen.length
            ? `log says ${chosen.map((m) => `"${STARTUP_LOG_LINE[m]}"`).join(" and ")}, expected "${STARTUP_LOG_LINE[mode]}"`
            : `no "${STARTUP_LOG_LINE[mode]}" in the log${tail ? `; last lines: ${tail}` : ""}`,
    };
}
