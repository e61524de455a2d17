// EXPERIMENT (issue 40), not part of the product: can a copy of kube-proxy's nftables tables,
// under a name kube-proxy does not own, bridge the window a node has when it moves
// nftables -> iptables (the rollback of iptables -> nftables)? kube-proxy's iptables start-up
// (platformCleanup) deletes `table ip kube-proxy` and `table ip6 kube-proxy` before its first
// full sync, so the node routes no ClusterIP or NodePort until that sync ends.
//
//   node dist/scripts/bridgeExperiment.js [--services 1000] [--name bridge-exp] [--reuse] [--keep]
//        [--runs none,next,same] [--json FILE]
//
// On a real-nodes reference cluster (one node, a network namespace running the real kube-proxy
// 1.37.2) in nftables mode with N selectorless Services of 10 endpoints, it runs, for each of
// --runs in order (the node is moved back to nftables between runs, without clients):
//   none  - the workload clients (scripts/workloadClient.ts: 20 new connections a second, one to the
//           backend's ClusterIP, one to a NodePort of the node's own address) run while the
//           runbook moves the node to iptables (ConfigMap mode, delete the kube-proxy pod) until
//           the new kube-proxy's first sync (kubeproxy_sync_proxy_rules_last_timestamp_seconds on
//           127.0.0.1:10249/metrics) and 3 s more;
//   next  - the same, but just before the pod is deleted the tables are copied as `kpm-bridge`
//           (nft list table | rename | nft -f -) with the nat base chains one priority later than
//           kube-proxy's (dstnat + 1, -99, srcnat + 1), and a counter rule for the backend's
//           ClusterIP first in the copy's nat-output; after the first sync, probes of the overlap
//           (which nat chain translated new connections, conntrack's translations, a Service
//           created and a Service emptied during the overlap), then `nft delete table`;
//   same  - as next, the copy's base chains at kube-proxy's own priorities.
// It prints the figures as JSON (and to --json FILE) and a markdown table. Needs root (real nodes).
// The machine is shared (2 cores, other clusters and benches running): every time is an upper bound.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { readFileSync, readdirSync, readlinkSync, statSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { parseProcStat } from "./kubeProxySamples.js";
import { markdownTable } from "./markdownTable.js";
import { clusterDown, clusterUp, readState, type ClusterState } from "./referenceCluster.js";
import { gaps, startWorkloadClient, type ClientRecord, type Gap } from "./workload.js";

type BridgeKind = "none" | "next" | "same";
const BRIDGE = "kpm-bridge";
const log = (l: string) => process.stderr.write(`[bridge] ${new Date().toISOString().slice(11, 23)} ${l}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Ctx {
    state: ClusterState;
    ns: string;
    nodeName: string;
    nodeIP: string;
    kc: k8s.KubeConfig;
    core: k8s.CoreV1Api;
    discovery: k8s.DiscoveryV1Api;
    clusterIP: string;
    nodePort: number;
}

function onNode(ctx: Ctx, argv: string[], input?: string): { code: number; out: string; err: string; ms: number } {
    const t = performance.now();
    const r = spawnSync("ip", ["netns", "exec", ctx.ns, ...argv], {
        encoding: "utf8",
        input,
        maxBuffer: 512 * 1024 * 1024,
    });
    return { code: r.status ?? 1, out: r.stdout ?? "", err: r.stderr ?? "", ms: performance.now() - t };
}

function answers(ctx: Ctx, url: string, seconds = 2): boolean {
    return /backend answered/.test(onNode(ctx, ["curl", "-s", "-m", String(seconds), url]).out);
}

/** kube-proxy's /proxyMode and its IPv4 last sync (epoch ms), as its metrics say now. */
function proxyState(ctx: Ctx): { mode: string; lastSyncV4?: number; fullSyncV4?: number } {
    const mode = onNode(ctx, ["curl", "-s", "-m", "2", "http://127.0.0.1:10249/proxyMode"]).out.trim();
    const text = onNode(ctx, ["curl", "-s", "-m", "2", "http://127.0.0.1:10249/metrics"]).out;
    const v = (name: string) => {
        const m = new RegExp(`^${name}\\{ip_family="IPv4"\\} (\\S+)$`, "m").exec(text);
        return m ? Number(m[1]) : undefined;
    };
    const last = v("kubeproxy_sync_proxy_rules_last_timestamp_seconds");
    return {
        mode,
        ...(last ? { lastSyncV4: Math.round(last * 1000) } : {}),
        ...(v("kubeproxy_sync_full_proxy_rules_duration_seconds_sum") !== undefined
            ? { fullSyncV4: v("kubeproxy_sync_full_proxy_rules_duration_seconds_sum") }
            : {}),
    };
}

/** Start (epoch ms) of the newest real kube-proxy process in the node's namespace. */
function newestKubeProxyStart(ctx: Ctx): number | undefined {
    const hz = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    // boot time from /proc/uptime (10 ms), not /proc/stat's btime (whole seconds)
    const bootMs = Date.now() - Number(readFileSync("/proc/uptime", "utf8").split(" ")[0]) * 1000;
    const inode = `net:[${statSync(`/run/netns/${ctx.ns}`).ino}]`;
    let newest: number | undefined;
    for (const p of readdirSync("/proc")) {
        if (!/^\d+$/.test(p)) continue;
        try {
            if (readlinkSync(`/proc/${p}/ns/net`) !== inode) continue;
            if (!/\/kube-proxy\0/.test(readFileSync(`/proc/${p}/cmdline`, "utf8"))) continue;
            const s = parseProcStat(readFileSync(`/proc/${p}/stat`, "utf8"));
            if (!s) continue;
            const at = Math.round(bootMs + (s.startTicks * 1000) / hz);
            newest = newest === undefined ? at : Math.max(newest, at);
        } catch {
            /* gone */
        }
    }
    return newest;
}

/** Waits until kube-proxy answers in `mode` and has synced IPv4 after `after` (epoch ms); returns that sync's end. */
async function waitSynced(ctx: Ctx, mode: string, after: number, timeoutMs = 600_000): Promise<number> {
    const until = Date.now() + timeoutMs;
    for (;;) {
        const s = proxyState(ctx);
        if (s.mode === mode && s.lastSyncV4 !== undefined && s.lastSyncV4 > after) return s.lastSyncV4;
        if (Date.now() > until) throw new Error(`kube-proxy did not sync in ${mode} mode within ${timeoutMs / 1000} s`);
        await sleep(200);
    }
}

/** The runbook for one node: the ConfigMap's mode, then delete the node's kube-proxy pod. Returns the deletion's time. */
async function moveTo(ctx: Ctx, mode: string): Promise<number> {
    const cm = await ctx.core.readNamespacedConfigMap({ name: "kube-proxy", namespace: "kube-system" });
    cm.data!["config.conf"] = cm.data!["config.conf"].replace(/^mode: .*$/m, `mode: ${mode}`);
    await ctx.core.replaceNamespacedConfigMap({ name: "kube-proxy", namespace: "kube-system", body: cm });
    const pods = await ctx.core.listNamespacedPod({
        namespace: "kube-system",
        labelSelector: "k8s-app=kube-proxy",
        fieldSelector: `spec.nodeName=${ctx.nodeName}`,
    });
    const at = Date.now();
    for (const p of pods.items)
        await ctx.core.deleteNamespacedPod({ name: p.metadata!.name!, namespace: "kube-system" });
    return at;
}

function startClient(ctx: Ctx, host: string, port: number): { stop: () => Promise<ClientRecord> } {
    return startWorkloadClient(ctx.ns, `${host}:${port}`, [host, String(port)]);
}

/** A selectorless Service in demo whose EndpointSlice points at the backend namespace. */
async function backendService(ctx: Ctx, name: string, type: "ClusterIP" | "NodePort"): Promise<k8s.V1Service> {
    const b = ctx.state.network!.backend;
    const svc = await ctx.core.createNamespacedService({
        namespace: "demo",
        body: {
            metadata: { name },
            spec: { type, ports: [{ name: "http", port: 80, targetPort: b.port, protocol: "TCP" }] },
        },
    });
    await ctx.discovery.createNamespacedEndpointSlice({
        namespace: "demo",
        body: {
            metadata: { name: `${name}-1`, labels: { "kubernetes.io/service-name": name } },
            addressType: "IPv4",
            endpoints: [{ addresses: [b.ip], conditions: { ready: true } }],
            ports: [{ name: "http", port: b.port, protocol: "TCP" }],
        },
    });
    return svc;
}

async function until(what: string, ms: number, test: () => boolean): Promise<number> {
    const t0 = Date.now();
    while (!test()) {
        if (Date.now() - t0 > ms) throw new Error(`${what}: not within ${ms / 1000} s`);
        await sleep(200);
    }
    return Date.now() - t0;
}

// ---- the bridge ------------------------------------------------------------------------------

/** The copy's text: kube-proxy's table renamed; nat base chains one later (`next`); a counter for the probe. */
export function bridgeText(listed: string, family: "ip" | "ip6", kind: BridgeKind, probe?: string): string {
    let text = listed.replace(new RegExp(`^table ${family} kube-proxy \\{`), `table ${family} ${BRIDGE} {`);
    if (!text.startsWith(`table ${family} ${BRIDGE} {`))
        throw new Error(`unexpected nft output: ${listed.slice(0, 80)}`);
    if (kind === "next")
        text = text
            .replace(/(type nat hook prerouting priority) dstnat;/, "$1 dstnat + 1;")
            .replace(/(type nat hook output priority) -100;/, "$1 -99;")
            .replace(/(type nat hook postrouting priority) srcnat;/, "$1 srcnat + 1;");
    if (probe)
        text = text.replace(
            /(type nat hook output priority [^;]+; policy accept;\n)/,
            `$1\t\t${probe} counter comment "kpm-bridge-probe"\n`,
        );
    return text;
}

interface CopyFigures {
    listMs: number;
    applyMs: number;
    bytes: number;
    families: string[];
}

function copyTables(ctx: Ctx, kind: BridgeKind): CopyFigures {
    const f: CopyFigures = { listMs: 0, applyMs: 0, bytes: 0, families: [] };
    for (const family of ["ip", "ip6"] as const) {
        const listed = onNode(ctx, ["nft", "list", "table", family, "kube-proxy"]);
        f.listMs += listed.ms;
        if (listed.code !== 0) continue; // no such table
        const probe = family === "ip" ? `ip daddr ${ctx.clusterIP} tcp dport 80` : undefined;
        const text = bridgeText(listed.out, family, kind, probe);
        const applied = onNode(ctx, ["nft", "-f", "-"], text);
        if (applied.code !== 0) throw new Error(`nft -f (${family}): ${applied.err.slice(0, 500)}`);
        f.applyMs += applied.ms;
        f.bytes += text.length;
        f.families.push(family);
    }
    return f;
}

function deleteCopy(ctx: Ctx, families: string[]): number {
    let ms = 0;
    for (const family of families) {
        const r = onNode(ctx, ["nft", "delete", "table", family, BRIDGE]);
        if (r.code !== 0) throw new Error(`nft delete table ${family} ${BRIDGE}: ${r.err}`);
        ms += r.ms;
    }
    return ms;
}

// ---- the overlap's probes --------------------------------------------------------------------

/** New connections the copy's nat-output saw (its probe counter) and kube-proxy's iptables rule for the backend's ClusterIP. */
function natCounters(ctx: Ctx): { bridge: number; iptables: number } {
    const nft = onNode(ctx, ["nft", "list", "chain", "ip", BRIDGE, "nat-output"]).out;
    const bridge = Number(/counter packets (\d+)/.exec(nft)?.[1] ?? NaN);
    const save = onNode(ctx, ["iptables-save", "-c", "-t", "nat"]).out;
    const line = save.split("\n").find((l) => l.includes("demo/backend:http cluster IP") && l.includes("-j KUBE-SVC-"));
    const iptables = Number(/^\[(\d+):/.exec(line ?? "")?.[1] ?? NaN);
    return { bridge, iptables };
}

/**
 * conntrack's NEW events for connections to the backend's ClusterIP while `fn` runs (reported at
 * confirmation, after every nat hook): how many, how many with the reply from the backend itself
 * (one DNAT to the one endpoint), how many with no DNAT, any other translation.
 */
async function conntrackEvents(ctx: Ctx, fn: () => Promise<void> | void): Promise<ConntrackFigures> {
    const child = spawn(
        "ip",
        ["netns", "exec", ctx.ns, "conntrack", "-E", "-e", "NEW", "-p", "tcp", "-d", ctx.clusterIP],
        {
            stdio: ["ignore", "pipe", "pipe"],
        },
    );
    let text = "";
    child.stdout.on("data", (d) => (text += d));
    const exited = new Promise((r) => child.on("exit", r));
    await sleep(300);
    await fn();
    await sleep(500);
    child.kill("SIGTERM");
    await exited;
    const lines = text.split("\n").filter((l) => l.includes(`dst=${ctx.clusterIP}`));
    const b = ctx.state.network!.backend;
    const replySrc = (l: string) => [...l.matchAll(/src=(\S+) dst=\S+ sport=(\d+)/g)][1];
    const byBackend = lines.filter((l) => replySrc(l)?.[1] === b.ip && replySrc(l)?.[2] === String(b.port));
    const noNat = lines.filter((l) => replySrc(l)?.[1] === ctx.clusterIP);
    const other = lines.filter((l) => !byBackend.includes(l) && !noNat.includes(l));
    return {
        newConnections: lines.length,
        dnatToBackend: byBackend.length,
        noDnat: noNat.length,
        other: other.length,
        ...(lines[0] ? { sample: lines[0].trim() } : {}),
        ...(other[0] ? { otherSample: other[0].trim() } : {}),
    };
}

interface ConntrackFigures {
    newConnections: number;
    dnatToBackend: number;
    noDnat: number;
    other: number;
    sample?: string;
    otherSample?: string;
}

interface OverlapFigures {
    /** the nft tables present just before the copy (an `ip nat` table registered earlier decides equal priorities) */
    tablesBeforeCopy: string[];
    /** 20 curl requests to the backend's ClusterIP while both rule sets exist */
    curls: { ok: number; of: number };
    /** new connections to the ClusterIP the copy's nat-output saw vs kube-proxy's iptables KUBE-SERVICES rule, over the probes */
    natCountersDelta: { bridge: number; iptables: number };
    /** conntrack's NEW events to the ClusterIP during the 20 curls (the clients' connections included) */
    conntrack: ConntrackFigures;
    /** a Service created after iptables' first sync: ms until it answered with the copy present */
    newServiceAnsweredMs?: number;
    newServiceError?: string;
    /** a Service whose endpoints were removed during the overlap: does it still answer (stale copy) with the copy, and after its deletion? */
    emptiedServiceAnswersWithCopy?: boolean;
    emptiedServiceAnswersAfterDelete?: boolean;
    emptiedServiceError?: string;
    /** how long the overlap lasted (first sync to the copy's deletion), with the probes */
    seconds: number;
}

async function overlapProbes(
    ctx: Ctx,
    stale: k8s.V1Service,
    run: string,
): Promise<Omit<OverlapFigures, "tablesBeforeCopy" | "seconds" | "emptiedServiceAnswersAfterDelete">> {
    const before = natCounters(ctx);
    let ok = 0;
    const conntrack = await conntrackEvents(ctx, () => {
        for (let i = 0; i < 20; i++) if (answers(ctx, `http://${ctx.clusterIP}/`)) ok++;
    });
    const after = natCounters(ctx);
    const out: Awaited<ReturnType<typeof overlapProbes>> = {
        curls: { ok, of: 20 },
        natCountersDelta: { bridge: after.bridge - before.bridge, iptables: after.iptables - before.iptables },
        conntrack,
    };
    // a Service the copy does not know: iptables routes it; does the copy's filter chains let it through?
    const fresh = await backendService(ctx, `bridge-new-${run}`, "ClusterIP");
    try {
        out.newServiceAnsweredMs = await until("a Service created in the overlap answers", 20_000, () =>
            answers(ctx, `http://${fresh.spec!.clusterIP}/`, 1),
        );
    } catch (e) {
        out.newServiceError = (e as Error).message;
    }
    // a Service the copy still routes but kube-proxy no longer does (its endpoints gone)
    const name = stale.metadata!.name!;
    await ctx.discovery.replaceNamespacedEndpointSlice({
        name: `${name}-1`,
        namespace: "demo",
        body: {
            metadata: { name: `${name}-1`, namespace: "demo", labels: { "kubernetes.io/service-name": name } },
            addressType: "IPv4",
            endpoints: [],
            ports: [{ name: "http", port: ctx.state.network!.backend.port, protocol: "TCP" }],
        },
    });
    const rejected = await until("iptables mode writes the emptied Service's REJECT", 20_000, () =>
        onNode(ctx, ["iptables-save", "-t", "filter"]).out.includes(`demo/${name}:http has no endpoints`),
    ).catch((e: Error) => e.message);
    if (typeof rejected === "string") out.emptiedServiceError = rejected;
    else out.emptiedServiceAnswersWithCopy = answers(ctx, `http://${stale.spec!.clusterIP}/`);
    return out;
}

// ---- a run -----------------------------------------------------------------------------------

interface RunFigures {
    bridge: BridgeKind;
    /** the nft tables at the run's start: with no other nat table (`ip nat`), deleting kube-proxy's leaves no nat hook for established connections either */
    tablesAtStart: string[];
    /** conntrack entries to the ClusterIP without DNAT at the start (SYNs of an earlier run's gap, 120 s): a new connection reusing such a source port fails */
    noDnatEntriesAtStart: number;
    /** ms from the client's start: the copy, the pod's deletion, the new kube-proxy's start, its first sync, the copy's deletion */
    timeline: Record<string, number>;
    /** the new kube-proxy's start to its first IPv4 sync's end, s */
    firstSyncSeconds: number;
    copy?: CopyFigures;
    deleteMs?: number;
    overlap?: OverlapFigures;
    clients: Record<string, { attempts: number; failed: number; longestGapMs: number; gaps: Gap[]; longLived: string }>;
}

function clientFigures(r: ClientRecord, origin: number) {
    // an attempt started less than its 1 s timeout before the stop could not finish: not counted
    const attempts = r.attempts.filter((a) => a.t <= r.stoppedAt - 1000);
    const g = gaps(attempts, r.stoppedAt - 1000).map((x) => ({ ...x, from: x.from - origin, to: x.to - origin }));
    const s = r.stream;
    return {
        attempts: attempts.length,
        failed: attempts.filter((a) => !a.ok).length,
        longestGapMs: g.reduce((m, x) => Math.max(m, x.ms), 0),
        gaps: g,
        longLived:
            s.openedAt === null
                ? "never opened"
                : s.closedAt !== null
                  ? `broke: ${s.why ?? "?"}`
                  : `held (longest stall ${s.longestStallMs} ms)`,
    };
}

async function runOnce(ctx: Ctx, kind: BridgeKind): Promise<RunFigures> {
    const stale = kind === "none" ? undefined : await backendService(ctx, `bridge-stale-${kind}`, "ClusterIP");
    if (stale)
        await until("the emptied-Service probe's Service answers", 30_000, () =>
            answers(ctx, `http://${stale.spec!.clusterIP}/`, 1),
        );
    const clientsStart = Date.now();
    const clusterIPClient = startClient(ctx, ctx.clusterIP, 80);
    const nodePortClient = startClient(ctx, ctx.nodeIP, ctx.nodePort);
    const t: Record<string, number> = {};
    const rel = (x: number) => x - clientsStart;
    const fig: Partial<RunFigures> = {
        bridge: kind,
        tablesAtStart: onNode(ctx, ["nft", "list", "tables"]).out.trim().split("\n"),
        noDnatEntriesAtStart: onNode(ctx, ["conntrack", "-L", "-p", "tcp", "-d", ctx.clusterIP])
            .out.split("\n")
            .filter((l) => [...l.matchAll(/src=(\S+)/g)][1]?.[1] === ctx.clusterIP).length,
    };
    let families: string[] = [];
    try {
        await sleep(3000);
        let tablesBeforeCopy: string[] = [];
        if (kind !== "none") {
            tablesBeforeCopy = onNode(ctx, ["nft", "list", "tables"]).out.trim().split("\n");
            t.copyStart = rel(Date.now());
            fig.copy = copyTables(ctx, kind);
            families = fig.copy.families;
            t.copyEnd = rel(Date.now());
            log(
                `${kind}: copied ${families.join("+")} as ${BRIDGE} (${(fig.copy.bytes / 1024).toFixed(0)} KiB): list ${fig.copy.listMs.toFixed(0)} ms, nft -f ${fig.copy.applyMs.toFixed(0)} ms`,
            );
        }
        const deletedAt = await moveTo(ctx, "iptables");
        t.podDeleted = rel(deletedAt);
        const syncedAt = await waitSynced(ctx, "iptables", deletedAt);
        const started = newestKubeProxyStart(ctx) ?? deletedAt;
        t.newKubeProxyStarted = rel(started);
        t.firstSync = rel(syncedAt);
        fig.firstSyncSeconds = (syncedAt - started) / 1000;
        log(`${kind}: iptables first sync ${fig.firstSyncSeconds.toFixed(1)} s after the new kube-proxy started`);
        if (kind !== "none") {
            const probes = await overlapProbes(ctx, stale!, kind);
            t.copyDeleteStart = rel(Date.now());
            fig.deleteMs = deleteCopy(ctx, families);
            families = [];
            t.copyDeleted = rel(Date.now());
            fig.overlap = {
                tablesBeforeCopy,
                ...probes,
                emptiedServiceAnswersAfterDelete: answers(ctx, `http://${stale!.spec!.clusterIP}/`),
                seconds: (t.copyDeleted - t.firstSync) / 1000,
            };
            log(`${kind}: overlap ${JSON.stringify(fig.overlap)}`);
            log(`${kind}: deleted ${BRIDGE} in ${fig.deleteMs.toFixed(0)} ms`);
        }
        await sleep(3000);
    } finally {
        // a failure must not leave the copy routing stale rules
        if (families.length) {
            log(`deleting ${BRIDGE} after a failure`);
            try {
                deleteCopy(ctx, families);
            } catch (e) {
                log(`could not delete ${BRIDGE}: ${(e as Error).message}`);
            }
        }
        for (const svc of [`bridge-stale-${kind}`, `bridge-new-${kind}`]) {
            await ctx.core.deleteNamespacedService({ name: svc, namespace: "demo" }).catch(() => undefined);
            await ctx.discovery
                .deleteNamespacedEndpointSlice({ name: `${svc}-1`, namespace: "demo" })
                .catch(() => undefined);
        }
        const a = await clusterIPClient.stop();
        const b = await nodePortClient.stop();
        fig.clients = { clusterIP: clientFigures(a, clientsStart), nodePort: clientFigures(b, clientsStart) };
    }
    fig.timeline = t;
    return fig as RunFigures;
}

async function backToNftables(ctx: Ctx): Promise<void> {
    const at = await moveTo(ctx, "nftables");
    await waitSynced(ctx, "nftables", at);
    await until("the backend answers in nftables mode", 60_000, () => answers(ctx, `http://${ctx.clusterIP}/`, 1));
    const leftovers = onNode(ctx, ["nft", "list", "tables"]).out.trim();
    log(`back in nftables mode; tables: ${leftovers.replace(/\n/g, ", ")}`);
}

function table(runs: RunFigures[]): string {
    const head = [
        "bridge",
        "`ip nat` at start",
        "client",
        "new conns (failed)",
        "longest gap ms",
        "long-lived",
        "iptables first sync s",
        "copy: list + nft -f ms",
        "delete ms",
        "overlap: new conns via copy / via iptables",
        "overlap conntrack NEW: all / DNAT to backend / none / other",
    ];
    const rows: string[][] = [];
    for (const r of runs)
        for (const [client, c] of Object.entries(r.clients))
            rows.push([
                r.bridge === "none" ? "none" : r.bridge === "next" ? "copy, nat at +1" : "copy, same priority",
                r.tablesAtStart.includes("table ip nat") ? "yes" : "no",
                client,
                `${c.attempts} (${c.failed})`,
                String(c.longestGapMs),
                c.longLived,
                r.firstSyncSeconds.toFixed(1),
                r.copy ? `${r.copy.listMs.toFixed(0)} + ${r.copy.applyMs.toFixed(0)}` : "-",
                r.deleteMs === undefined ? "-" : r.deleteMs.toFixed(0),
                r.overlap ? `${r.overlap.natCountersDelta.bridge} / ${r.overlap.natCountersDelta.iptables}` : "-",
                r.overlap
                    ? `${r.overlap.conntrack.newConnections} / ${r.overlap.conntrack.dnatToBackend} / ${r.overlap.conntrack.noDnat} / ${r.overlap.conntrack.other}`
                    : "-",
            ]);
    return markdownTable(head, rows);
}

async function main(): Promise<void> {
    const { values } = parseArgs({
        options: {
            services: { type: "string", default: "1000" },
            name: { type: "string", default: "bridge-exp" },
            reuse: { type: "boolean", default: false },
            keep: { type: "boolean", default: false },
            runs: { type: "string", default: "none,next,same" },
            json: { type: "string" },
        },
    });
    const kinds = values.runs!.split(",") as BridgeKind[];
    if (!kinds.every((k) => ["none", "next", "same"].includes(k))) throw new Error("--runs: none, next, same");
    const services = Number(values.services);
    let state: ClusterState | undefined;
    if (values.reuse) {
        state = readState(values.name);
        if (!state) throw new Error(`no cluster ${values.name}`);
    } else {
        log(`cluster ${values.name}: one real node, nftables mode, ${services} Services x 10 endpoints`);
        state = await clusterUp({
            name: values.name,
            nodes: "real",
            pools: [["canary", 1]],
            mode: "nftables",
            services: { services, endpointsPerService: 10 },
            log,
        });
    }
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(state.kubeconfig);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const node = state.network!.nodes[0];
    const ctx: Ctx = {
        state,
        ns: node.netns,
        nodeName: node.name,
        nodeIP: node.ip,
        kc,
        core,
        discovery: kc.makeApiClient(k8s.DiscoveryV1Api),
        clusterIP: (await core.readNamespacedService({ name: "backend", namespace: "demo" })).spec!.clusterIP!,
        nodePort: 0,
    };
    const runs: RunFigures[] = [];
    try {
        const np =
            (await core.readNamespacedService({ name: "bridge-np", namespace: "demo" }).catch(() => undefined)) ??
            (await backendService(ctx, "bridge-np", "NodePort"));
        ctx.nodePort = np.spec!.ports![0].nodePort!;
        // kube-proxy answers /proxyMode a moment after its pod is Ready
        await until("kube-proxy answers /proxyMode", 120_000, () => proxyState(ctx).mode !== "");
        if (proxyState(ctx).mode !== "nftables") await backToNftables(ctx);
        const settled = await until(
            "the node's kube-proxy routes the backend's ClusterIP and NodePort",
            600_000,
            () =>
                answers(ctx, `http://${ctx.clusterIP}/`, 1) && answers(ctx, `http://${ctx.nodeIP}:${ctx.nodePort}/`, 1),
        );
        log(
            `nftables mode routes (waited ${(settled / 1000).toFixed(1)} s); ClusterIP ${ctx.clusterIP}:80, NodePort ${ctx.nodeIP}:${ctx.nodePort}`,
        );
        for (const [i, kind] of kinds.entries()) {
            if (i > 0) await backToNftables(ctx);
            log(`run ${kind}`);
            runs.push(await runOnce(ctx, kind));
        }
    } finally {
        const leftover = onNode(ctx, ["nft", "list", "tables"]).out;
        if (leftover.includes(BRIDGE)) log(`LEFT BEHIND: ${leftover}`);
        if (!values.keep && !values.reuse) await clusterDown(values.name);
    }
    const result = { services, endpointsPerService: 10, at: new Date().toISOString(), runs };
    const json = JSON.stringify(result, null, 2);
    if (values.json) writeFileSync(values.json, json + "\n");
    process.stdout.write(`${json}\n\n${table(runs)}\n`);
}

if (require.main === module)
    main().catch((e) => {
        log(`failed: ${(e as Error).stack}`);
        process.exit(1);
    });
