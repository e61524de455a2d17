// The node probe: a fixed POSIX shell script run on the node (host network), its output
// format, and the judgement of that output. The script takes no user value except through
// its environment; nothing here is ever spliced into a shell string.
import { STARTUP_LOG_LINE } from "./facts.js";
import type { ProxyMode } from "./types.js";

/** Section markers of the probe's output. */
const MARK = "### kpm:";

/**
 * Runs in the probe pod (busybox with the host's root at /host, or directly in the node's
 * network namespace). Env: KPM_ACTION (probe|cleanup), KPM_METRICS (host:port of kube-proxy's
 * metrics address), KPM_SERVICE_IP / KPM_SERVICE_PORT (a Service to connect to).
 */
export const PROBE_SCRIPT = String.raw`
set -u
if [ -x /host/bin/sh ] && [ "$(readlink -f /host)" != "/" ]; then H="chroot /host"; else H=""; fi
has() { $H sh -c 'command -v "$1"' sh "$1" >/dev/null 2>&1; }
fetch() { if has curl; then $H curl -fsS -m 5 "$1"; elif has wget; then $H wget -qO- -T 5 "$1"; else echo "no curl or wget on the node" >&2; return 127; fi; }
section() { echo "${MARK}$1"; }
KPM_ACTION=${"${KPM_ACTION:-probe}"}
KPM_METRICS=${"${KPM_METRICS:-127.0.0.1:10249}"}
if [ "$KPM_ACTION" = cleanup ]; then
  section cleanup
  if $H ip link show kube-ipvs0 >/dev/null 2>&1; then $H ip link del kube-ipvs0 && echo "removed link kube-ipvs0"; fi
  if has ipvsadm; then $H ipvsadm -C && echo "cleared IPVS virtual servers (host-wide)"; fi
  # a file of this run's own: cleanups of several nodes may share a /tmp
  saved=$(mktemp "${"${TMPDIR:-/tmp}"}/kpm-ipt.XXXXXX") || { echo "cannot create a temporary file: iptables chains not removed"; saved=""; }
  for t in nat filter mangle; do
    if [ -n "$saved" ] && $H iptables-save -t $t >"$saved" 2>/dev/null; then
      awk '
        function owned(c) { return c ~ /^KUBE-/ && c !~ /^KUBE-(IPTABLES-HINT|KUBELET-CANARY|FIREWALL|FORWARD-FIREWALL|MARK-DROP)$/ }
        /^:/ { split(substr($1,2),a," "); if (owned(a[1])) next }
        /^-A / { if (owned($2)) next; for (i=3;i<=NF;i++) if (($i=="-j"||$i=="-g") && owned($(i+1))) next }
        { print }' "$saved" | $H iptables-restore -T $t && echo "removed kube-proxy chains from iptables table $t"
    fi
  done
  [ -n "$saved" ] && rm -f "$saved"
  if has ipset; then for s in $($H ipset list -n 2>/dev/null | grep '^KUBE-'); do $H ipset destroy "$s" && echo "destroyed ipset $s"; done; fi
  section end
  exit 0
fi
section time
date +%s
section proxyMode
fetch "http://$KPM_METRICS/proxyMode"; rc=$?; echo; echo "rc=$rc"
section metrics
fetch "http://$KPM_METRICS/metrics" | grep '^kubeproxy_sync_proxy_rules_' || true
section kube-ipvs0
$H ip -o addr show dev kube-ipvs0 2>/dev/null || echo "absent"
section ipsets
if has ipset; then $H ipset list -n 2>/dev/null | grep '^KUBE-' || true; else echo "no ipset on the node"; fi
section ipvs
if [ -r /proc/net/ip_vs ]; then grep -c -E '^(TCP|UDP|SCTP) ' /proc/net/ip_vs || true; else echo 0; fi
section iptables
$H iptables-save -t nat 2>/dev/null | grep -E '^:KUBE-' | cut -d' ' -f1 | cut -c2- || true
$H iptables-save -t filter 2>/dev/null | grep -E '^:KUBE-' | cut -d' ' -f1 | cut -c2- || true
section nftables
if has nft; then $H nft list tables 2>&1; else echo "no nft on the node"; fi
section connect
if [ -n "${"${KPM_SERVICE_IP:-}"}" ]; then
  if has nc; then $H nc -z -w 5 "$KPM_SERVICE_IP" "$KPM_SERVICE_PORT" && echo connected || echo "failed rc=$?";
  elif has curl; then $H curl -s -o /dev/null -m 5 "http://$KPM_SERVICE_IP:$KPM_SERVICE_PORT/"; rc=$?; if [ $rc -eq 0 ] || [ $rc -eq 22 ] || [ $rc -eq 52 ] || [ $rc -eq 56 ] || [ $rc -eq 35 ]; then echo connected; else echo "failed rc=$rc"; fi;
  else echo "failed: no nc or curl on the node"; fi
else echo "skipped"; fi
section end
`;

export interface ProbeReport {
    time?: number;
    proxyMode?: string;
    proxyModeError?: string;
    metrics: Record<string, number>;
    kubeIpvs0: { present: boolean; addresses: string[] };
    ipsets: string[];
    ipvsServices: number;
    iptablesChains: string[];
    nftTables: string[];
    nftError?: string;
    connect: { attempted: boolean; ok: boolean; detail: string };
    complete: boolean;
}

export function parseProbeOutput(text: string): ProbeReport {
    const sections: Record<string, string[]> = {};
    let cur: string | undefined;
    for (const line of text.split("\n")) {
        if (line.startsWith(MARK)) {
            cur = line.slice(MARK.length).trim();
            sections[cur] = [];
        } else if (cur) sections[cur].push(line);
    }
    const lines = (name: string) => (sections[name] ?? []).map((l) => l.trim()).filter((l) => l !== "");
    const modeLines = lines("proxyMode");
    const rc = modeLines.find((l) => l.startsWith("rc="));
    const modeText = modeLines.filter((l) => !l.startsWith("rc=")).join(" ").trim();
    const metrics: Record<string, number> = {};
    for (const l of lines("metrics")) {
        const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(l);
        if (m) metrics[m[1] + (m[2] ?? "")] = Number(m[3]);
    }
    const ipvs0 = lines("kube-ipvs0");
    const present = ipvs0.length > 0 && ipvs0[0] !== "absent";
    const addresses = present ? ipvs0.map((l) => /\binet6?\s+(\S+)/.exec(l)?.[1]).filter((a): a is string => !!a) : [];
    const nftLines = lines("nftables");
    const nftTables = nftLines.filter((l) => l.startsWith("table ")).map((l) => l.slice("table ".length).trim());
    const connectLines = lines("connect");
    const connect = connectLines[0] ?? "";
    return {
        time: lines("time")[0] ? Number(lines("time")[0]) : undefined,
        proxyMode: rc === "rc=0" && /^(iptables|ipvs|nftables|kernelspace)$/.test(modeText) ? modeText : undefined,
        proxyModeError: rc === "rc=0" && /^(iptables|ipvs|nftables|kernelspace)$/.test(modeText) ? undefined : modeText || rc || "no answer",
        metrics,
        kubeIpvs0: { present, addresses },
        ipsets: lines("ipsets").filter((l) => l.startsWith("KUBE-")),
        ipvsServices: Number(lines("ipvs")[0] ?? 0) || 0,
        iptablesChains: lines("iptables").filter((l) => l.startsWith("KUBE-")),
        nftTables,
        nftError: nftTables.length === 0 && nftLines.length > 0 && !nftLines.every((l) => l.startsWith("table ")) ? nftLines.join(" ") : undefined,
        connect: { attempted: connect !== "skipped" && connect !== "", ok: connect === "connected", detail: connect },
        complete: "end" in sections,
    };
}

/** Chains kubelet (not kube-proxy) owns; they stay in every mode. */
const KUBELET_CHAINS = new Set(["KUBE-IPTABLES-HINT", "KUBE-KUBELET-CANARY", "KUBE-FIREWALL", "KUBE-FORWARD-FIREWALL", "KUBE-MARK-DROP"]);

export type CheckName = "mode" | "startup-log" | "leftovers" | "rules" | "sync" | "connection";

export interface CheckResult {
    check: CheckName | string;
    ok: boolean;
    detail: string;
}

export interface ProbeExpectations {
    mode: ProxyMode;
    /** seconds; a last sync older than this fails the sync check */
    maxSyncAgeSeconds: number;
    /** whether a Service connection is required */
    connect: boolean;
}

function sumMetric(metrics: Record<string, number>, name: string): number | undefined {
    const values = Object.entries(metrics)
        .filter(([k]) => k === name || k.startsWith(name + "{"))
        .map(([, v]) => v);
    return values.length ? values.reduce((a, b) => a + b, 0) : undefined;
}

/** Judges one probe run against what the node should be running. Pure. */
export function judgeProbe(report: ProbeReport, expect: ProbeExpectations): CheckResult[] {
    const out: CheckResult[] = [];
    if (!report.complete) out.push({ check: "probe", ok: false, detail: "the probe's output is incomplete (it was cut off or did not run to the end)" });
    out.push(
        report.proxyMode === expect.mode
            ? { check: "mode", ok: true, detail: `/proxyMode says ${report.proxyMode}` }
            : {
                  check: "mode",
                  ok: false,
                  detail: report.proxyMode ? `/proxyMode says ${report.proxyMode}, expected ${expect.mode}` : `/proxyMode did not answer: ${report.proxyModeError}`,
              },
    );

    const leftovers: string[] = [];
    const proxyChains = report.iptablesChains.filter((c) => !KUBELET_CHAINS.has(c));
    const kubeProxyTables = report.nftTables.filter((t) => /^(ip|ip6|inet) kube-proxy$/.test(t));
    if (expect.mode !== "ipvs") {
        if (report.kubeIpvs0.present) {
            leftovers.push(`kube-ipvs0 exists${report.kubeIpvs0.addresses.length ? ` holding ${report.kubeIpvs0.addresses.length} address(es) (${report.kubeIpvs0.addresses.slice(0, 3).join(", ")}${report.kubeIpvs0.addresses.length > 3 ? ", ..." : ""}) that black-hole those ClusterIPs` : ""}`);
        }
        if (report.ipsets.length) leftovers.push(`ipsets ${report.ipsets.slice(0, 4).join(", ")}${report.ipsets.length > 4 ? ", ..." : ""}`);
        if (report.ipvsServices > 0) leftovers.push(`${report.ipvsServices} IPVS virtual server(s)`);
    }
    if (expect.mode === "nftables" && proxyChains.length) leftovers.push(`iptables chains ${proxyChains.slice(0, 4).join(", ")}${proxyChains.length > 4 ? ", ..." : ""}`);
    if (expect.mode !== "nftables" && kubeProxyTables.length) leftovers.push(`nftables tables ${kubeProxyTables.join(", ")}`);
    out.push({ check: "leftovers", ok: leftovers.length === 0, detail: leftovers.length ? `left behind: ${leftovers.join("; ")}` : "no state of another mode left" });

    let rules: CheckResult;
    if (expect.mode === "nftables") {
        // one table per IP family kube-proxy runs (its metrics carry ip_family); at least one
        const families = ["IPv4", "IPv6"].filter((f) => Object.keys(report.metrics).some((k) => k.startsWith("kubeproxy_sync_proxy_rules_last_timestamp_seconds") && k.includes(`"${f}"`)));
        const wanted = families.map((f) => (f === "IPv4" ? "ip kube-proxy" : "ip6 kube-proxy"));
        const missing = wanted.filter((t) => !kubeProxyTables.includes(t));
        const any = kubeProxyTables.some((t) => t === "ip kube-proxy" || t === "ip6 kube-proxy");
        rules =
            missing.length === 0 && any
                ? { check: "rules", ok: true, detail: `nftables ${kubeProxyTables.join(", ")} present` }
                : {
                      check: "rules",
                      ok: false,
                      detail: `${missing.length ? `missing nftables table ${missing.join(", ")} (kube-proxy syncs ${families.join(" and ")})` : "no kube-proxy nftables table on the node"}${report.nftError ? ` (${report.nftError})` : ""}`,
                  };
    } else if (expect.mode === "iptables") {
        rules = proxyChains.includes("KUBE-SERVICES")
            ? { check: "rules", ok: true, detail: "iptables chain KUBE-SERVICES present" }
            : { check: "rules", ok: false, detail: "no KUBE-SERVICES chain in iptables" };
    } else {
        rules = report.kubeIpvs0.present ? { check: "rules", ok: true, detail: "kube-ipvs0 present" } : { check: "rules", ok: false, detail: "no kube-ipvs0 interface" };
    }
    out.push(rules);

    const last = sumMetric(report.metrics, "kubeproxy_sync_proxy_rules_last_timestamp_seconds");
    const failures = expect.mode === "nftables" ? sumMetric(report.metrics, "kubeproxy_sync_proxy_rules_nftables_sync_failures_total") : 0;
    const lastValues = Object.entries(report.metrics).filter(([k]) => k.startsWith("kubeproxy_sync_proxy_rules_last_timestamp_seconds")).map(([, v]) => v);
    const newest = lastValues.length ? Math.max(...lastValues) : undefined;
    if (last === undefined || newest === undefined) out.push({ check: "sync", ok: false, detail: "kube-proxy reports no kubeproxy_sync_proxy_rules_last_timestamp_seconds: rules were never synced" });
    else if (report.time !== undefined && report.time - newest > expect.maxSyncAgeSeconds) {
        out.push({ check: "sync", ok: false, detail: `last rule sync ${Math.round(report.time - newest)}s ago (more than ${expect.maxSyncAgeSeconds}s)` });
    } else if (failures !== undefined && failures > 0) {
        out.push({ check: "sync", ok: false, detail: `${failures} nftables sync failure(s) reported` });
    } else out.push({ check: "sync", ok: true, detail: `last rule sync ${report.time !== undefined ? `${Math.max(0, Math.round(report.time - newest))}s ago` : "reported"}, no sync failures` });

    if (expect.connect) {
        out.push(
            report.connect.ok
                ? { check: "connection", ok: true, detail: "connected to the Service's ClusterIP from the node" }
                : { check: "connection", ok: false, detail: `no connection to the Service's ClusterIP from the node: ${report.connect.detail || "not attempted"}` },
        );
    }
    return out;
}

/** The start-up log line of the mode kube-proxy chose, in its own log. */
export function checkStartupLog(log: string, mode: ProxyMode): CheckResult {
    const chosen = (Object.entries(STARTUP_LOG_LINE) as [ProxyMode, string][]).filter(([, line]) => log.includes(line)).map(([m]) => m);
    if (chosen.includes(mode) && chosen.length === 1) return { check: "startup-log", ok: true, detail: `log says "${STARTUP_LOG_LINE[mode]}"` };
    const tail = log.trim().split("\n").slice(-5).join(" | ");
    return {
        check: "startup-log",
        ok: false,
        detail: chosen.length ? `log says ${chosen.map((m) => `"${STARTUP_LOG_LINE[m]}"`).join(" and ")}, expected "${STARTUP_LOG_LINE[mode]}"` : `no "${STARTUP_LOG_LINE[mode]}" in the log${tail ? `; last lines: ${tail}` : ""}`,
    };
}
