// SIMULATED: an in-memory cluster behind the runner's RolloutCluster interface, with faults the
// tests inject: a run that dies (every call throws from the k-th write on, like a SIGKILL), a
// node whose kube-proxy misbehaves on a configuration, a kube-proxy restart, a node that joins
// late, a second run holding the lease. It models what the runner relies on (placements,
// memory, cordons, the lease, the installer's ConfigMap and DaemonSet) and nothing else: the
// real API server, kube-proxy and probe pods are proven in the e2e suites.
import { parseCurrentConfig } from "../../components/core/config.js";
import { configHash, MARKS } from "../../components/core/plan.js";
import type { ProxyMode } from "../../components/core/types.js";
import type { NodeSyncs } from "../../components/core/firstSync.js";
import { describeAccess, type Access, type AccessReview } from "../../components/core/rbac.js";
import { probePodLifetime, probePodsToSweep, type ProbePodSeen } from "../../components/core/probePods.js";
import { runHook } from "../../components/cluster/hooks.js";
import type {
    HookCommand,
    HookResult,
    Installation,
    KubeProxyPod,
    LeaseClaim,
    LeaseHolder,
    Names,
    NodeChange,
    NodeMove,
    ProbeRun,
    RolloutCluster,
    RolloutNode,
    WaitOptions,
} from "../../components/rollout/cluster.js";
import type { Clock } from "../../components/rollout/runner.js";

/** What a SIGKILL leaves: the process is gone, so every later call of that run fails too. */
export class Crash extends Error {
    constructor(at: string) {
        super(`SIMULATED crash at ${at}`);
    }
}

export class FakeClock implements Clock {
    t = Date.parse("2026-12-01T03:00:00Z");
    slept = 0;
    /** called after each sleep, with the time now (tests inject faults "during" a wait) */
    onSleep?: (now: number) => void;
    now(): number {
        return this.t;
    }
    async sleep(ms: number): Promise<void> {
        this.t += ms;
        this.slept += ms;
        this.onSleep?.(this.t);
        await Promise.resolve();
    }
}

export interface FakeNode {
    name: string;
    labels: Record<string, string>;
    kernel: string;
    placement: string | null;
    verified?: string;
    verifiedAt?: string;
    checks?: string;
    move?: NodeMove;
    /** what the rollout recorded of its syncs (MARKS.syncAnnotation) */
    syncs?: NodeSyncs;
    unschedulable: boolean;
    cordonedByRollout: boolean;
    restarts: number;
    /** pods evicted from it by drains */
    drained: number;
}

export interface Faults {
    /** the run dies right after this many writes (the write itself is done) */
    crashAfterWrites?: number;
    /** the node's kube-proxy answers another mode on this configuration (a failing check) */
    wrongModeOn?: (node: string, placement: string | null) => boolean;
    /** the node's kube-proxy pod crash-loops on this configuration */
    crashLoopOn?: (node: string, placement: string | null) => boolean;
    /** the node's kube-proxy on this configuration runs the right mode but its probe finds no rule sync for an hour, or no rules */
    probeFaultOn?: (node: string, placement: string | null) => "stale sync" | "no rules" | undefined;
    /**
     * the lines the first-sync sampler prints on the node (core/firstSync.ts's sample format);
     * default: one sample that has synced the placement's mode at once
     */
    firstSyncSamplesOn?: (node: string, placement: string | null, mode: string) => string[] | undefined;
    /** the old mode's mean full sync the node's metrics report (seconds); default 2 */
    fullSyncSecondsOn?: (node: string) => number | undefined;
    /** an old kube-proxy pod still terminating on the node, listed after its running one */
    terminatingPodOn?: (node: string) => boolean;
    /** the node's kube-proxy pod runs but is not ready (its readiness probe failing), without restarts */
    notReadyOn?: (node: string, placement: string | null) => boolean;
    /** someone cordons the node (kubectl cordon: no mark of the rollout's) after the run listed it, just before its cordon */
    userCordonsBeforeCordonOn?: (node: string) => boolean;
    /** the drain of this node fails */
    drainFails?: (node: string) => boolean;
    /** the node keeps ipvs leftovers (kube-ipvs0) until a cleanup runs on it */
    ipvsLeftoversOn?: (node: string) => boolean;
    /** called after each write, e.g. to abort the run mid-node */
    afterWrite?: (what: string, node?: string) => void;
    /** the run dies while the probe pod on this node runs: the pod is left behind */
    dieDuringProbeOn?: (node: string) => boolean;
    /** the bridge's copy (nft -f) or its delete fails on the node, as nft would say it */
    bridgeFaultOn?: (node: string, action: "bridge" | "unbridge") => string | undefined;
}

export function kubeProxyConfig(mode: ProxyMode | ""): string {
    return `apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: "${mode}"\n`;
}

export class FakeCluster implements RolloutCluster {
    readonly names: Names = {
        namespace: "kube-system",
        configMap: "kube-proxy",
        key: "config.conf",
        daemonSet: "kube-proxy",
        podSelector: "k8s-app=kube-proxy",
    };
    readonly identity = "SIMULATED in-memory cluster";
    installerConfig: string;
    inRollout = false;
    restored = 0;
    readonly configs = new Map<string, string>();
    readonly nodeMap = new Map<string, FakeNode>();
    lease?: LeaseHolder;
    faults: Faults = {};
    writes = 0;
    readonly history: string[] = [];
    dead = false;

    constructor(
        readonly clock: FakeClock,
        opts: { installerMode: ProxyMode | ""; pools: Record<string, number> },
    ) {
        this.installerConfig = kubeProxyConfig(opts.installerMode);
        for (const [pool, count] of Object.entries(opts.pools))
            for (let i = 1; i <= count; i++) this.addNode(`${pool}-${i}`, pool);
    }

    addNode(name: string, pool: string, kernel = "6.8.0-51-generic"): FakeNode {
        const n: FakeNode = {
            name,
            labels: { pool, "kubernetes.io/os": "linux" },
            kernel,
            placement: null,
            unschedulable: false,
            cordonedByRollout: false,
            restarts: 0,
            drained: 0,
        };
        this.nodeMap.set(name, n);
        return n;
    }

    node(name: string): FakeNode {
        const n = this.nodeMap.get(name);
        if (!n) throw new Error(`no node ${name}`);
        return n;
    }

    /** A new process: the cluster keeps its state, the calls work again. */
    revive(): void {
        this.dead = false;
        this.faults = { ...this.faults, crashAfterWrites: undefined };
    }

    private alive(what: string): void {
        if (this.dead) throw new Crash(what);
    }

    /**
     * The verify hooks' outcomes, steered (a fake HookRunner: no process); unset, a hook runs as a
     * real process, as the CLI runs it. Each run is recorded in `hookRuns` either way.
     */
    hookOutcome?: (hook: HookCommand, env: Record<string, string>) => HookResult | Promise<HookResult>;
    readonly hookRuns: { hook: string; env: Record<string, string>; kubeconfig?: string }[] = [];

    async runHook(
        hook: HookCommand,
        env: Record<string, string>,
        kubeconfig: string | undefined,
        signal?: AbortSignal,
    ): Promise<HookResult> {
        this.alive(`hook ${hook.name}`);
        this.hookRuns.push({ hook: hook.name, env, kubeconfig });
        if (!this.hookOutcome) return runHook(hook, env, kubeconfig, signal);
        if (signal?.aborted)
            return {
                ok: false,
                output: `the run was stopped (${String(signal.reason)}) before the hook ran`,
                interrupted: true,
            };
        return this.hookOutcome(hook, env);
    }

    /** the run's write fence (fenceWrites): called before every write, as the real client does */
    private fence?: () => void;
    /** writes the fence refused, in order */
    readonly refused: string[] = [];

    fenceWrites(check: () => void): void {
        this.fence = check;
    }

    /** Before a write: the process is alive, and the run's fence lets it through. */
    private writing(what: string, node?: string): void {
        this.alive(what);
        try {
            this.fence?.();
        } catch (e) {
            this.refused.push(node ? `${what} ${node}` : what);
            throw e;
        }
    }

    private wrote(what: string, node?: string): void {
        this.writes++;
        this.history.push(node ? `${what} ${node}` : what);
        this.faults.afterWrite?.(what, node);
        if (this.faults.crashAfterWrites !== undefined && this.writes >= this.faults.crashAfterWrites) {
            this.dead = true;
            throw new Crash(`${what}${node ? ` ${node}` : ""}`);
        }
    }

    modeOf(placement: string | null): ProxyMode {
        const text = placement === null ? this.installerConfig : this.configs.get(placement);
        const mode = text ? (parseCurrentConfig(text).config.mode as string) : "";
        return (mode || "iptables") as ProxyMode;
    }

    async installation(): Promise<Installation> {
        this.alive("installation");
        return {
            names: this.names,
            current: parseCurrentConfig(this.installerConfig, "installer"),
            inRollout: this.inRollout,
        };
    }

    async nodes(): Promise<RolloutNode[]> {
        this.alive("nodes");
        return [...this.nodeMap.values()].map((n) => ({
            name: n.name,
            labels: { ...n.labels },
            kernelVersion: n.kernel,
            operatingSystem: "linux",
            placement: n.placement,
            verified: n.verified,
            verifiedAt: n.verifiedAt,
            checks: n.checks,
            move: n.move ? { ...n.move } : undefined,
            ...(n.syncs ? { syncs: structuredClone(n.syncs) } : {}),
            unschedulable: n.unschedulable,
            cordonedByRollout: n.unschedulable && n.cordonedByRollout,
        }));
    }

    /** how many times a rollout configuration was read (configurationOf) */
    configurationReads = 0;

    async configurationOf(hash: string): Promise<string | undefined> {
        this.alive("configurationOf");
        this.configurationReads++;
        return this.configs.get(hash);
    }

    async prepare(target: { hash: string; config: string }): Promise<void> {
        this.writing("prepare");
        if (!this.inRollout || !this.configs.has(target.hash)) {
            this.inRollout = true;
            this.configs.set(target.hash, target.config);
            this.wrote("prepare");
        }
    }

    async startMove(node: string, move: NodeMove, placement?: string | null): Promise<boolean> {
        this.writing("startMove", node);
        const n = this.node(node);
        if (this.faults.userCordonsBeforeCordonOn?.(node))
            Object.assign(n, { unschedulable: true, cordonedByRollout: false });
        const ours = !n.unschedulable || n.cordonedByRollout;
        n.move = { ...move };
        if (!n.unschedulable) {
            n.unschedulable = true;
            n.cordonedByRollout = true;
        }
        if (placement !== undefined) {
            if (n.placement !== placement) n.restarts = 0;
            n.placement = placement;
        }
        this.wrote(
            `move ${move.phase}; cordon${placement !== undefined ? `; place ${placement ?? "installer"}` : ""}`,
            node,
        );
        return ours;
    }

    /** One write, as the real cluster's single patch: every part lands together, or none does. */
    async writeNode(node: string, change: NodeChange): Promise<void> {
        this.writing("writeNode", node);
        const n = this.node(node);
        const parts: string[] = [];
        if (change.move !== undefined) {
            n.move = change.move === null ? undefined : { ...change.move };
            parts.push(change.move ? `move ${change.move.phase}` : "move cleared");
        }
        if (change.placement !== undefined) {
            if (n.placement !== change.placement) n.restarts = 0;
            n.placement = change.placement;
            parts.push(`place ${change.placement ?? "installer"}`);
        }
        if (change.verified) {
            const { hash, checks } = change.verified;
            n.verified = hash ?? undefined;
            n.verifiedAt = hash === null ? undefined : new Date(this.clock.now()).toISOString();
            n.checks = hash === null ? undefined : checks;
            parts.push(`verified ${hash ?? "none"}`);
        }
        // a measurement, not an action: kept on the node, left out of the write's line
        if (change.syncs) n.syncs = structuredClone(change.syncs);
        if (change.uncordon) {
            // as the real client's patch: only the rollout's own cordon is lifted (its mark removed either way)
            if (n.cordonedByRollout) n.unschedulable = false;
            n.cordonedByRollout = false;
            parts.push("uncordon");
        }
        this.wrote(parts.join("; "), node);
    }

    /** how many times a run closed its client (RolloutCluster.close) */
    closed = 0;

    close(): void {
        this.closed++;
    }

    async drain(node: string): Promise<void> {
        this.writing("drain", node);
        if (this.faults.drainFails?.(node))
            throw new Error(`SIMULATED: a PodDisruptionBudget blocks the drain of ${node}`);
        this.node(node).drained++;
        this.wrote("drain", node);
    }

    private owner(placement: string | null): string {
        return placement === null ? this.names.daemonSet : `${this.names.daemonSet}-${placement}`;
    }

    async kubeProxyPods(node?: string): Promise<KubeProxyPod[]> {
        this.alive("kubeProxyPods");
        if (node === undefined)
            return (await Promise.all([...this.nodeMap.keys()].map((name) => this.kubeProxyPods(name)))).flat();
        const n = this.node(node);
        if (n.placement === MARKS.holdValue) return [];
        const failing = this.faults.crashLoopOn?.(node, n.placement);
        const terminating: KubeProxyPod[] = this.faults.terminatingPodOn?.(node)
            ? [
                  {
                      name: `kube-proxy-old-${node}`,
                      node,
                      owner: "kube-proxy-old",
                      phase: "Running",
                      ready: false,
                      restarts: 0,
                      deleting: true,
                  },
              ]
            : [];
        return [
            {
                name: `${this.owner(n.placement)}-${node}`,
                node,
                owner: this.owner(n.placement),
                phase: "Running",
                ready: !failing && !this.faults.notReadyOn?.(node, n.placement),
                restarts: n.restarts + (failing ? 3 : 0),
                problem: failing ? "CrashLoopBackOff" : undefined,
                deleting: false,
            },
            ...terminating,
        ];
    }

    async podLog(name: string): Promise<string> {
        this.alive("podLog");
        const n = [...this.nodeMap.values()].find((x) => name === `${this.owner(x.placement)}-${x.name}`);
        return n
            ? `I1201 03:00:00.000000       1 server_linux.go:1] "Using ${this.modeOf(n.placement)} Proxier"\n`
            : "";
    }

    async waitForKubeProxy(
        node: string,
        placement: string | null,
        _timeoutSeconds: number,
        options: WaitOptions = {},
    ): Promise<KubeProxyPod | undefined> {
        this.alive("waitForKubeProxy");
        const pods = await this.kubeProxyPods(node);
        if (placement === MARKS.holdValue) return undefined;
        const p = pods[0];
        if (p?.problem)
            throw new Error(`kube-proxy pod ${p.name} on ${node} is failing (${p.problem}, ${p.restarts} restart(s))`);
        if (p && options.labelForRestore && this.inRollout) {
            this.writing("labelForRestore");
            this.wrote(`label ${p.name} for restore`);
        }
        return p;
    }

    /** every probe pod run: the node and what it was told */
    readonly probeRuns: { node: string; run: ProbeRun }[] = [];
    private readonly cleaned = new Set<string>();

    /** the probe pods that exist: made by runProbe, deleted when it returns, left when the run dies meanwhile */
    readonly probePods: (ProbePodSeen & { node: string })[] = [];
    /** the holders that swept probe pods, in order */
    readonly sweeps: string[] = [];

    async runProbe(node: string, run: ProbeRun): Promise<{ output: string; succeeded: boolean }> {
        this.writing("runProbe", node);
        this.probeRuns.push({ node, run });
        const pod: ProbePodSeen & { node: string } = {
            name: `kpm-${run.action}-${node}-${this.probeRuns.length}`,
            node,
            staleAfter: String(probePodLifetime(run.timeoutSeconds, this.clock.now()).staleAfter),
            ...(run.run ? { run: run.run } : {}),
        };
        this.probePods.push(pod);
        if (this.faults.dieDuringProbeOn?.(node)) {
            this.dead = true;
            throw new Crash(`probe on ${node}`);
        }
        this.probePods.splice(this.probePods.indexOf(pod), 1);
        if (run.action === "bridge" || run.action === "unbridge") return this.bridgeRun(node, run.action);
        if (run.action === "cleanup") {
            this.cleaned.add(node);
            if (this.bridged.delete(node)) this.history.push(`bridge deleted by the cleanup ${node}`);
            return { output: "### kpm:cleanup\nremoved kube-ipvs0\n\n### kpm:end\n", succeeded: true };
        }
        const n = this.node(node);
        if (run.action === "await-sync") {
            let synced: string = this.modeOf(n.placement);
            if (this.faults.wrongModeOn?.(node, n.placement)) synced = synced === "nftables" ? "iptables" : "nftables";
            const t = Math.floor(this.clock.now() / 1000);
            const lines = this.faults.firstSyncSamplesOn?.(node, n.placement, synced) ?? [
                `sample ${t} mode=${synced} synced=IPv4 cpu=100 pids=4242`,
            ];
            const output = ["### kpm:samples"];
            for (const line of lines) {
                output.push(line);
                if (run.onLine?.(line)) break;
            }
            return { output: output.join("\n"), succeeded: true };
        }
        let mode: string = this.modeOf(n.placement);
        if (this.faults.wrongModeOn?.(node, n.placement)) mode = mode === "nftables" ? "iptables" : "nftables";
        const leftovers = mode !== "ipvs" && this.faults.ipvsLeftoversOn?.(node) === true && !this.cleaned.has(node);
        const fault = this.faults.probeFaultOn?.(node, n.placement);
        const output = probeOutput(mode, this.clock.now() / 1000, {
            bridged: this.bridged.has(node),
            fullSyncs: this.fullSyncs(node),
            ipvsLeftovers: leftovers,
            syncAgeSeconds: fault === "stale sync" ? 3600 : 2,
            rules: fault !== "no rules",
            connected: run.env.KPM_SERVICE_IP !== undefined,
        });
        return { output, succeeded: true };
    }

    /** the nodes that hold a bridge table (ip kpm-bridge) */
    readonly bridged = new Set<string>();

    /** The probe's bridge and unbridge actions (core/bridge.ts's output): a copy only of an nftables mode's table. */
    private bridgeRun(node: string, action: "bridge" | "unbridge"): { output: string; succeeded: boolean } {
        const out = ["### kpm:bridge"];
        const fault = this.faults.bridgeFaultOn?.(node, action);
        if (this.bridged.has(node)) {
            if (fault && action === "unbridge") out.push(`error nft delete table ip kpm-bridge: ${fault}`);
            else {
                this.bridged.delete(node);
                this.history.push(`bridge deleted ${node}`);
                out.push("deleted ip");
            }
        }
        if (action === "bridge") {
            if (this.modeOf(this.node(node).placement) !== "nftables") out.push("none ip", "none ip6");
            else if (fault) out.push(`error nft -f (the copy of ip kube-proxy): ${fault}`);
            else {
                this.bridged.add(node);
                this.history.push(`bridge copied ${node}`);
                out.push(
                    "copied ip",
                    "nat ip kube-proxy nat-prerouting prerouting dstnat",
                    "nat ip kpm-bridge nat-prerouting prerouting dstnat + 1",
                    "none ip6",
                );
            }
        }
        if (this.bridged.has(node)) out.push("present ip kpm-bridge");
        out.push("### kpm:end", "");
        return { output: out.join("\n"), succeeded: true };
    }

    private readonly syncTotals = new Map<string, { sum: number; count: number }>();

    /** The node's full-sync totals: four syncs before its first probe, one more (of the duration the fault says, or 2 s) before each probe. */
    private fullSyncs(node: string): { sum: number; count: number } {
        const seconds = this.faults.fullSyncSecondsOn?.(node) ?? 2;
        const t = this.syncTotals.get(node) ?? { sum: 3 * seconds, count: 3 };
        const next = { sum: t.sum + seconds, count: t.count + 1 };
        this.syncTotals.set(node, next);
        return next;
    }

    async sweepProbePods(holder: string, log: (line: string) => void): Promise<void> {
        this.alive("sweepProbePods");
        this.sweeps.push(holder);
        for (const { name, why } of probePodsToSweep(this.probePods, { holder, nowMs: this.clock.now() })) {
            this.writing("sweepProbePods");
            this.probePods.splice(
                this.probePods.findIndex((p) => p.name === name),
                1,
            );
            this.history.push(`probe pod ${name} deleted`);
            log(`probe pod kube-system/${name}: deleted (${why})`);
        }
    }

    /** every Service's addresses (serviceAddresses) */
    serviceIPs = ["10.96.0.1"];

    async serviceAddresses(): Promise<string[]> {
        this.alive("serviceAddresses");
        return [...this.serviceIPs];
    }

    /** the Service the probe connects to (verify.service): none by default, as in a cluster without it */
    service?: { ip: string; port: number };

    async serviceEndpoint(_namespace?: string, _name?: string): Promise<{ ip: string; port: number } | undefined> {
        this.alive("serviceEndpoint");
        return this.service;
    }

    async writeCanonicalConfig(config: string): Promise<void> {
        this.writing("writeCanonicalConfig");
        this.installerConfig = config;
        this.wrote("write installer ConfigMap");
    }

    async prepareHandBack(): Promise<void> {
        this.writing("prepareHandBack");
        this.wrote("prepare hand-back revision");
    }

    async restoreInstallation(): Promise<void> {
        this.writing("restoreInstallation");
        this.inRollout = false;
        this.restored++;
        this.configs.clear();
        this.wrote("restore installer DaemonSet");
    }

    async waitForDaemonSetRollout(_timeoutSeconds?: number): Promise<void> {
        this.alive("waitForDaemonSetRollout");
    }

    /** accesses the fake's authorizer denies, as describeAccess words them */
    denied: string[] = [];
    /** the access review itself is refused (a cluster that will not answer the question) */
    accessReviewRefused = false;

    async deniedAccesses(wanted: Access[]): Promise<AccessReview> {
        this.alive("deniedAccesses");
        if (this.accessReviewRefused)
            throw Object.assign(
                new Error("403 Forbidden: selfsubjectaccessreviews.authorization.k8s.io is forbidden"),
                {
                    code: 403,
                },
            );
        const denied = wanted.filter((a) => this.denied.includes(describeAccess(a)));
        return denied.length ? { user: "system:serviceaccount:kube-system:kube-proxy-mode", denied } : { denied };
    }

    async acquireLease(
        holder: string,
        durationSeconds: number,
        _log?: (line: string) => void,
        _signal?: AbortSignal,
    ): Promise<LeaseClaim> {
        this.alive("acquireLease");
        const l = this.lease;
        if (l && l.holder !== holder && Date.parse(l.renewedAt) + l.durationSeconds * 1000 >= this.clock.now())
            return { acquired: false, current: { ...l } };
        this.lease = { holder, renewedAt: new Date(this.clock.now()).toISOString(), durationSeconds };
        this.wrote("lease taken");
        return { acquired: true, writtenAt: performance.now() };
    }

    async renewLease(holder: string): Promise<boolean> {
        this.alive("renewLease");
        if (this.lease?.holder !== holder) return false;
        this.lease.renewedAt = new Date(this.clock.now()).toISOString();
        return true;
    }

    async releaseLease(holder: string): Promise<void> {
        this.alive("releaseLease");
        if (this.lease?.holder === holder) {
            this.lease = undefined;
            this.wrote("lease released");
        }
    }
}

/** A probe's output for a healthy node in `mode` (the format of core/probe.ts's script). */
export function probeOutput(
    mode: string,
    now: number,
    {
        ipvsLeftovers = false,
        syncAgeSeconds = 2,
        rules: present = true,
        connected = false,
        fullSyncs = { sum: 8, count: 4 },
        bridged = false,
    } = {},
): string {
    const rules = [present && mode === "nftables" ? "table ip kube-proxy" : "", bridged ? "table ip kpm-bridge" : ""]
        .filter((t) => t)
        .join("\n");
    const chains = present && mode === "iptables" ? "chain IPv4 nft nat KUBE-SERVICES" : "";
    const ipvs0 =
        mode === "ipvs" || ipvsLeftovers ? "present\n    inet 10.96.0.1/32 scope global kube-ipvs0" : "absent";
    return [
        "### kpm:time",
        String(Math.floor(now)),
        "### kpm:proxyMode",
        mode,
        "rc=0",
        "### kpm:metrics",
        `kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} ${Math.floor(now) - syncAgeSeconds}`,
        `kubeproxy_sync_full_proxy_rules_duration_seconds_sum{ip_family="IPv4"} ${fullSyncs.sum}`,
        `kubeproxy_sync_full_proxy_rules_duration_seconds_count{ip_family="IPv4"} ${fullSyncs.count}`,
        "### kpm:kube-ipvs0",
        ipvs0,
        "### kpm:ipsets",
        "### kpm:ipvs",
        "0",
        "### kpm:iptables",
        chains,
        "### kpm:nftables",
        rules,
        "### kpm:connect",
        connected ? "connected" : "skipped",
        "### kpm:end",
        "",
    ].join("\n");
}

export { configHash };
