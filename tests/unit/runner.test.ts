// The runner's state machine on a SIMULATED in-memory cluster (fakeCluster.ts): every branch of a
// node's move, and the faults of a production cluster injected behind the RolloutCluster seam:
// a run killed at every write, a failing check after a resume, two runs at once, a signal
// mid-node, a node joining late, a soak interrupted or regressing.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { configHash, MARKS } from "../../components/core/plan.js";
import {
    configurationMode,
    defaultHolder,
    finish,
    originOf,
    RolloutBusy,
    RolloutFailure,
    RolloutInterrupted,
    RolloutRefused,
    runPools,
    type Context,
} from "../../components/rollout/runner.js";
import type { RolloutCluster, RolloutNode } from "../../components/rollout/cluster.js";
import { rolloutSpecSchema, type RolloutSpec } from "../../components/rollout/spec.js";
import { nodePhases } from "../../scripts/nodePhases.js";
import type { NodeEvent } from "../../components/rollout/events.js";
import { FIXTURES } from "../helpers.js";
import { Crash, FakeClock, FakeCluster, kubeProxyConfig, type Faults } from "./fakeCluster.js";

const TARGET = kubeProxyConfig("nftables");
const HASH = configHash(TARGET);

function specOf(extra: Partial<Record<string, unknown>> = {}, pools?: unknown[]): RolloutSpec {
    return rolloutSpecSchema.parse({
        target: { hash: HASH, mode: "nftables", config: TARGET },
        pools: pools ?? [
            { name: "canary", nodeSelector: "pool=canary" },
            { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2, drain: true },
        ],
        verify: { hooks: [] },
        ...extra,
    });
}

function setup(
    opts: { pools?: Record<string, number>; spec?: RolloutSpec; installerMode?: "ipvs" | "iptables" | "nftables" } = {},
) {
    const clock = new FakeClock();
    const cluster = new FakeCluster(clock, {
        installerMode: opts.installerMode ?? "ipvs",
        pools: opts.pools ?? { canary: 1, workers: 3 },
    });
    const lines: string[] = [];
    const ctx = (holder = "run-1", more: Partial<Context> = {}): Context => ({
        cluster,
        spec: opts.spec ?? specOf(),
        log: (l) => lines.push(l),
        holder,
        clock,
        soakCheckSeconds: 30,
        ...more,
    });
    return { clock, cluster, lines, ctx };
}

/** Pools, then the finish: what `pulumi up` runs, as one function. */
async function up(ctx: Context): Promise<void> {
    await runPools(ctx, ["canary"]);
    await runPools(ctx, ["workers"]);
    await finish(ctx);
}

function placements(cluster: FakeCluster): Record<string, string> {
    return Object.fromEntries([...cluster.nodeMap.values()].map((n) => [n.name, n.placement ?? "installer"]));
}

/** The end state every run must leave: nothing cordoned by the rollout, no move memory, the lease free. */
function assertSettled(cluster: FakeCluster, userCordoned: string[] = []): void {
    for (const n of cluster.nodeMap.values()) {
        assert.equal(n.unschedulable, userCordoned.includes(n.name), `${n.name} cordoned: ${n.unschedulable}`);
        assert.equal(n.move, undefined, `${n.name} still has move memory ${JSON.stringify(n.move)}`);
    }
    assert.equal(cluster.lease, undefined, "the lease is released");
}

/** Every node on the target from the installer, verified, the installer's DaemonSet restored. */
/** The failure of the one canary node, rolled back to the installer's DaemonSet and released. */
function assertCanaryRolledBack(err: unknown, check: string, cluster: FakeCluster): asserts err is RolloutFailure {
    assert.ok(err instanceof RolloutFailure, String(err));
    assert.equal(err.check, check);
    assert.equal(
        err.rolledBack,
        "node canary-1 was rolled back to ipvs mode (the installer's DaemonSet) and uncordoned",
    );
    assert.equal(cluster.node("canary-1").placement, null);
    assertSettled(cluster);
}

function assertFinished(cluster: FakeCluster): void {
    assert.equal(cluster.installerConfig, TARGET);
    assert.equal(cluster.inRollout, false);
    for (const n of cluster.nodeMap.values()) {
        assert.equal(n.placement, null, `${n.name} runs the installer's DaemonSet`);
        assert.equal(n.verified, HASH, `${n.name} verified on the target`);
    }
}

/** Which write (its name, and the node it is on) a fault strikes after. */
type WriteMatch = (what: string, node?: string) => boolean;

/** A signal (as SIGINT or SIGTERM) given right after each write `when` matches, or `delayMs` after it. */
function signalAfter(cluster: FakeCluster, when: WriteMatch, reason = "SIGINT", delayMs?: number): AbortSignal {
    const stop = new AbortController();
    cluster.faults.afterWrite = (what, node) => {
        if (!when(what, node)) return;
        if (delayMs === undefined) stop.abort(reason);
        else setTimeout(() => stop.abort(reason), delayMs);
    };
    return stop.signal;
}

/** A run (of `only` those pools, else every one) given a signal right after a write `when` matches: the setup, and what the run threw. */
async function stoppedRun(
    when: WriteMatch,
    opts: { setup?: Parameters<typeof setup>[0]; reason?: string; delayMs?: number; only?: string[] } = {},
) {
    const s = setup(opts.setup);
    const signal = signalAfter(s.cluster, when, opts.reason, opts.delayMs);
    const err: unknown = await runPools(s.ctx("run-1", { signal }), opts.only).catch((e) => e);
    return { ...s, err };
}

/** The write `when` matches lands, but its answer is lost. */
function loseAnswerOf(cluster: FakeCluster, when: WriteMatch): void {
    cluster.faults.afterWrite = (what, node) => {
        if (when(what, node)) throw new Error("SIMULATED: the connection reset before the answer");
    };
}

/** The run is killed (SIGKILL) right after the write `when` matches: the cluster answers nothing more until revived. */
function killAfter(cluster: FakeCluster, when: WriteMatch): void {
    cluster.faults.afterWrite = (what, node) => {
        if (when(what, node)) {
            cluster.dead = true;
            throw new Crash(what);
        }
    };
}

describe("runner on a SIMULATED in-memory cluster: the wait for each node's first sync", () => {
    const ONE = [{ name: "canary", nodeSelector: "pool=canary" }];
    /** Sampler lines every 2 s from t=1000: cpu per sample, synced in `mode` at `syncAt` (never if undefined). */
    const sampled = (cpu: number[], mode: string, syncAt?: number) =>
        cpu.map(
            (c, i) =>
                `sample ${1000 + 2 * i} mode=${syncAt !== undefined && i >= syncAt ? mode : "-"} synced=${syncAt !== undefined && i >= syncAt ? "IPv4" : "-"} cpu=${c} pids=42`,
        );

    it("a kube-proxy that stalls before its first sync (no CPU for verify.firstSyncStall) fails the node, which is rolled back", async () => {
        const { cluster, ctx, lines } = setup({
            pools: { canary: 1 },
            spec: specOf({ verify: { hooks: [], firstSyncStall: "20s" } }, ONE),
        });
        // the new mode stalls at 7 ticks; the origin (the rollback) syncs at once
        cluster.faults.firstSyncSamplesOn = (_n, placement, mode) =>
            placement === HASH ? sampled([1, 4, 7, ...Array(15).fill(7)], mode) : undefined;
        const err = await runPools(ctx()).catch((e) => e);
        assertCanaryRolledBack(err, "first-sync", cluster);
        assert.match(err.message, /kube-proxy stalled before its first sync: no CPU used for 20s \(limit 20s/);
        assert.ok(
            lines.includes("pool canary node canary-1: first sync in ipvs mode done 0s into the wait"),
            "the rollback waited for the origin's first sync",
        );
    });

    it("a slow kube-proxy (CPU growing for longer than the stall limit) passes once it syncs, logging a few progress lines", async () => {
        const { cluster, ctx, lines } = setup({
            pools: { canary: 1 },
            spec: specOf({ verify: { hooks: [], firstSyncStall: "20s" } }, ONE),
        });
        const ticks = Array.from({ length: 60 }, (_, i) => i);
        cluster.faults.firstSyncSamplesOn = (_n, placement, mode) =>
            placement === HASH ? sampled(ticks, mode, 59) : undefined;
        const [outcome] = await runPools(ctx());
        assert.equal(outcome.result, "verified");
        const mine = lines.filter((l) => l.includes("first sync"));
        assert.deepEqual(mine, [
            "pool canary node canary-1: waiting for the first sync in nftables mode (deadline 2m: the floor 2m (20 x the old mode's mean full sync of 2.00s); a stall of 20s fails it)",
            "pool canary node canary-1: first sync: waiting 16s, /proxyMode not answering, kube-proxy busy",
            "pool canary node canary-1: first sync: waiting 30s, /proxyMode not answering, kube-proxy busy",
            "pool canary node canary-1: first sync: waiting 60s, /proxyMode not answering, kube-proxy busy",
            "pool canary node canary-1: first sync in nftables mode done 118s into the wait",
        ]);
    });

    it("the deadline comes from the node's old-mode sync (factor x its mean full sync), and a pool's firstSyncTimeout overrides it", async () => {
        const busyForever = (_n: string, placement: string | null) =>
            placement === HASH
                ? sampled(
                      Array.from({ length: 200 }, (_, i) => i),
                      "nftables",
                  )
                : undefined;
        const fromNode = setup({
            pools: { canary: 1 },
            spec: specOf({ verify: { hooks: [], firstSyncFactor: 10 } }, ONE),
        });
        fromNode.cluster.faults.firstSyncSamplesOn = busyForever;
        fromNode.cluster.faults.fullSyncSecondsOn = () => 15;
        const late = await runPools(fromNode.ctx()).catch((e) => e);
        assertCanaryRolledBack(late, "first-sync", fromNode.cluster);
        assert.match(late.message, /no first sync within 2m30s \(10 x the old mode's mean full sync of 15\.00s;/);

        const pool = setup({
            pools: { canary: 1 },
            spec: specOf({}, [{ ...ONE[0], firstSyncTimeout: "1m" }]),
        });
        pool.cluster.faults.firstSyncSamplesOn = busyForever;
        const overridden = await runPools(pool.ctx()).catch((e) => e);
        assertCanaryRolledBack(overridden, "first-sync", pool.cluster);
        assert.match(overridden.message, /no first sync within 1m \(the pool's firstSyncTimeout 1m;/);
    });

    it("a verified node keeps what its move measured: the old mode's mean sync and the new mode's first sync, for later previews", async () => {
        const { cluster, ctx } = setup({ pools: { canary: 1 }, spec: specOf({}, ONE) });
        cluster.faults.fullSyncSecondsOn = () => 15;
        cluster.faults.firstSyncSamplesOn = (_n, placement, mode) =>
            placement === HASH ? sampled([1, 2, 3, 4, 5, 6], mode, 5) : undefined;
        Object.assign(cluster.node("canary-1"), { syncs: { iptables: { first: 40 } } });
        await runPools(ctx());
        assert.deepEqual(cluster.node("canary-1").syncs, {
            iptables: { first: 40 },
            ipvs: { mean: 15, metric: "full" },
            nftables: { first: 10 },
        });
    });

    it("a move to a slower mode (nftables -> iptables) scales the old mode's sync by how much slower the new one is", async () => {
        const { cluster, ctx, lines } = setup({
            pools: { canary: 1 },
            installerMode: "nftables",
            spec: specOf({ target: { hash: HASH, mode: "iptables", config: kubeProxyConfig("iptables") } }, ONE),
        });
        cluster.faults.fullSyncSecondsOn = () => 10;
        const [outcome] = await runPools(ctx());
        assert.equal(outcome.result, "verified");
        assert.ok(
            lines.includes(
                "pool canary node canary-1: waiting for the first sync in iptables mode (deadline 29m10s: 20 x the old mode's mean full sync of 10.00s x 8.75 (iptables syncs slower than nftables); a stall of 1m fails it)",
            ),
            lines.filter((l) => l.includes("deadline")).join("\n"),
        );
    });

    it("a move resumed past its restart takes its deadline from the old sync its move memory kept, not the floor", async () => {
        const { cluster, ctx, lines } = setup({
            pools: { canary: 1 },
            spec: specOf({ verify: { hooks: [], firstSyncFactor: 10 } }, ONE),
        });
        Object.assign(cluster.node("canary-1"), {
            placement: HASH,
            move: { to: HASH, from: null, phase: "switching", baseline: { seconds: 15, metric: "full" } },
            unschedulable: true,
            cordonedByRollout: true,
        });
        cluster.faults.firstSyncSamplesOn = (_n, placement, mode) =>
            placement === HASH
                ? sampled(
                      Array.from({ length: 200 }, (_, i) => i),
                      mode,
                  )
                : undefined;
        const err = await runPools(ctx()).catch((e) => e);
        assertCanaryRolledBack(err, "first-sync", cluster);
        assert.match(err.message, /no first sync within 2m30s \(10 x the old mode's mean full sync of 15\.00s;/);
        assert.ok(
            lines.includes(
                "pool canary node canary-1: old mode's mean full sync: 15.00s (recorded before its restart)",
            ),
            lines.join("\n"),
        );
    });

    it("the leftovers check and the tool's cleanup come after the first sync, never beside kube-proxy's own start-up cleanup", async () => {
        const { cluster, ctx } = setup({ pools: { canary: 1 }, spec: specOf({}, ONE) });
        cluster.faults.ipvsLeftoversOn = () => true;
        await runPools(ctx());
        assert.deepEqual(
            cluster.probeRuns.map((p) => p.run.action),
            ["probe", "await-sync", "probe", "cleanup", "probe"],
            "the old sync read, the first sync, the checks, the cleanup of what kube-proxy left, the checks again",
        );
    });
});

describe("runner on a SIMULATED in-memory cluster", () => {
    it("a node's move and its hand-back are two node writes each when nothing comes between cordon and restart (memory, cordon and placement; verified with uncordon), three with a drain", async () => {
        const { cluster, ctx, lines } = setup({
            pools: { canary: 1 },
            spec: specOf({}, [{ name: "canary", nodeSelector: "pool=canary" }]),
        });
        await runPools(ctx(), ["canary"]);
        await finish(ctx());
        assert.ok(lines.includes(`ConfigMap kube-system/kube-proxy: config.conf now holds configuration ${HASH}`));
        assert.deepEqual(
            cluster.history.filter((h) => h.endsWith(" canary-1")),
            [
                `move switching; cordon; place ${HASH} canary-1`,
                `move cleared; verified ${HASH}; uncordon canary-1`,
                "move switching; cordon; place installer canary-1",
                "move cleared; uncordon canary-1",
            ],
        );
        assertFinished(cluster);
        assertSettled(cluster);

        const drained = setup({
            pools: { canary: 1 },
            spec: specOf({}, [{ name: "canary", nodeSelector: "pool=canary", drain: true }]),
        });
        await runPools(drained.ctx(), ["canary"]);
        await finish(drained.ctx());
        assert.deepEqual(
            drained.cluster.history.filter((h) => h.endsWith(" canary-1")),
            [
                "move started; cordon canary-1",
                "drain canary-1",
                `move switching; place ${HASH} canary-1`,
                `move cleared; verified ${HASH}; uncordon canary-1`,
                // the hand-back does not drain: the same configuration, from one DaemonSet to the other
                "move switching; cordon; place installer canary-1",
                "move cleared; uncordon canary-1",
            ],
        );
        assertFinished(drained.cluster);
    });

    it("the finish labels each pod it hands back for the restore, inside its node's hand-back (after the pod runs, before the release), and no pod a move started", async () => {
        const { cluster, ctx } = setup({ pools: { canary: 1, workers: 4 } });
        await runPools(ctx(), ["canary"]);
        await runPools(ctx(), ["workers"]);
        assert.deepEqual(
            cluster.history.filter((h) => h.startsWith("label ")),
            [],
            "no pod a move started is labelled",
        );
        await finish(ctx());
        const h = cluster.history;
        for (const node of ["canary-1", "workers-1", "workers-2", "workers-3", "workers-4"]) {
            const placed = h.indexOf(`move switching; cordon; place installer ${node}`);
            const labelled = h.indexOf(`label kube-proxy-${node} for restore`);
            const released = h.indexOf(`move cleared; uncordon ${node}`);
            assert.ok(placed >= 0 && placed < labelled && labelled < released, `${node}: ${h.join("\n")}`);
        }
        assert.equal(h.filter((x) => x.startsWith("label ")).length, 5);
        assert.ok(h.indexOf("restore installer DaemonSet") > h.lastIndexOf("label kube-proxy-workers-4 for restore"));
        assertFinished(cluster);
        assertSettled(cluster);
    });

    it("the write that cordons and places a node at once lands but its answer is lost: the node is rolled back to its origin and uncordoned, the error names it", async () => {
        const { cluster, ctx } = setup({
            pools: { canary: 1 },
            spec: specOf({}, [{ name: "canary", nodeSelector: "pool=canary" }]),
        });
        loseAnswerOf(cluster, (what, node) => what.startsWith("move switching; cordon; place") && node === "canary-1");
        const err = await runPools(ctx(), ["canary"]).catch((e) => e);
        assert.ok(err instanceof RolloutFailure, String(err));
        assert.equal(err.node, "canary-1");
        assert.match(err.rolledBack, /canary-1 was rolled back to ipvs mode .* and uncordoned/);
        const node = cluster.node("canary-1");
        assert.deepEqual(
            { move: node.move, cordoned: node.unschedulable, placement: node.placement },
            { move: undefined, cordoned: false, placement: null },
        );
        assert.equal(cluster.lease, undefined, "the lease is released");
    });

    it("leftovers found after a move are cleaned by a cleanup told the mode the node now runs (its live objects are not leftovers)", async () => {
        for (const [from, mode] of [
            ["ipvs", "nftables"],
            ["nftables", "iptables"],
        ] as const) {
            const target = kubeProxyConfig(mode);
            const spec = rolloutSpecSchema.parse({
                target: { hash: configHash(target), mode, config: target },
                pools: [{ name: "canary", nodeSelector: "pool=canary", drain: true }],
                verify: { hooks: [] },
            });
            const { cluster, ctx, lines } = setup({ pools: { canary: 1 }, spec, installerMode: from });
            cluster.faults.ipvsLeftoversOn = () => true;
            cluster.serviceIPs = ["10.96.0.1", "10.96.0.10"];
            await runPools(ctx(), ["canary"]);
            const cleanups = cluster.probeRuns.filter((p) => p.run.action === "cleanup");
            const afterVerify = cleanups.filter((p) => p.run.env.KPM_MODE !== undefined);
            assert.equal(
                afterVerify.length,
                1,
                `${mode}: one cleanup after the first check found leftovers: ${JSON.stringify(cleanups)}`,
            );
            assert.equal(
                afterVerify[0].run.env.KPM_MODE,
                mode,
                `${mode}: the cleanup keeps the live ${mode} kube-proxy's objects`,
            );
            assert.equal(
                afterVerify[0].run.env.KPM_OWNED_IPS,
                "10.96.0.1 10.96.0.10",
                "the Service addresses are named as kube-proxy's",
            );
            assert.equal(
                cluster.node("canary-1").verified,
                configHash(target),
                `${mode}: verified once the leftovers are gone`,
            );
            assert.ok(
                lines.some((l) => /left .*kube-ipvs0.*removing them/.test(l)),
                lines.join("\n"),
            );
            // what the cleanup did, summarised (core/cleanup.ts); not its section markers nor its blank lines
            assert.deepEqual(
                lines.filter((l) => l.includes("cleanup: ")),
                ["pool canary node canary-1: cleanup: removed kube-ipvs0"],
            );
        }
    });

    it("the finish reads the rollout's configuration once for all its hand-backs, the nodes of a batch asking at once included", async () => {
        const { cluster, ctx } = setup({
            pools: { workers: 6 },
            spec: specOf({}, [{ name: "workers", nodeSelector: "pool=workers", maxUnavailable: 3 }]),
        });
        await runPools(ctx(), ["workers"]);
        assert.equal(
            cluster.configurationReads,
            0,
            "a move from the installer's DaemonSet reads no rollout configuration",
        );
        await finish(ctx());
        assertFinished(cluster);
        assert.equal(cluster.configurationReads, 1, "six hand-backs in two batches of three");
    });

    it("a configuration's mode: a failed read is asked again, then read once for the callers that ask at once and after", async () => {
        let reads = 0;
        const cluster = {
            configurationOf: async () => {
                if (reads++ === 0) throw new Error("the API server is restarting");
                return kubeProxyConfig("iptables");
            },
        } as unknown as RolloutCluster;
        await assert.rejects(configurationMode(cluster, "abc"), /restarting/);
        const modes = await Promise.all([configurationMode(cluster, "abc"), configurationMode(cluster, "abc")]);
        assert.deepEqual(modes, ["iptables", "iptables"]);
        assert.equal(await configurationMode(cluster, "abc"), "iptables");
        assert.equal(reads, 2, "the failed read, then one");
    });

    it("moves every pool, then the finish writes the installer's ConfigMap and hands every node back, checked", async () => {
        const { cluster, ctx, lines } = setup();
        await up(ctx());
        assertFinished(cluster);
        assertSettled(cluster);
        assert.equal(cluster.closed, 3, "each run closes its cluster client (its watches) at its end");
        assert.ok(!lines.some((l) => l.startsWith("finish: ")), "no node was late");
        assert.equal(cluster.history.filter((h) => h === "write installer ConfigMap").length, 1);
        assert.equal(cluster.node("workers-1").drained, 1, "drained once, for the move (not for the hand-back)");
        assert.ok(
            lines.some((l) => l.includes("workers: 3/3 node(s) moved")),
            "progress line",
        );
        assert.ok(lines.some((l) => l.includes("handed back to the installer's DaemonSet, checked")));
        assert.deepEqual(
            lines.filter((l) => l.includes("soak")),
            [],
            "no pool soaks",
        );
    });

    it("the bench's per-node phases (scripts/nodePhases.ts) find every node's move and hand-back in the runner's own events", async () => {
        const { cluster, ctx } = setup();
        // one node the user cordoned in each pool: its cordon is not the rollout's, in both kinds of move
        for (const n of ["canary-1", "workers-3"])
            Object.assign(cluster.node(n), { unschedulable: true, cordonedByRollout: false });
        const seen: NodeEvent[] = [];
        const step = () => ctx("run-1", { onEvent: (e) => seen.push(e) });
        await runPools(step(), ["canary"]);
        await runPools(step(), ["workers"]);
        await finish(step());
        const nodes = ["canary-1", "workers-1", "workers-2", "workers-3"];
        assert.deepEqual(
            nodePhases(seen)
                .map((p) => `${p.kind} ${p.node}`)
                .sort(),
            [...nodes.map((n) => `hand-back ${n}`), ...nodes.map((n) => `move ${n}`)],
        );
    });

    it("a failing check rolls the node back to the installer's DaemonSet, uncordoned, and stops the pool, saying so", async () => {
        const { cluster, ctx, lines } = setup();
        cluster.faults.wrongModeOn = (node, placement) => node === "workers-2" && placement === HASH;
        await runPools(ctx(), ["canary"]);
        const err = await runPools(ctx(), ["workers"]).catch((e) => e);
        assert.ok(err instanceof RolloutFailure, String(err));
        assert.equal(err.node, "workers-2");
        assert.equal(err.check, "mode");
        assert.match(err.rolledBack, /rolled back to ipvs mode \(the installer's DaemonSet\) and uncordoned/);
        assert.equal(cluster.node("workers-2").placement, null);
        assert.equal(cluster.node("workers-2").verified, undefined);
        assert.equal(cluster.node("workers-3").placement, null, "the later batch is untouched");
        assert.match(err.message, /\nno node is left cordoned$/);
        assert.ok(
            lines.includes("pool workers node workers-2: FAILED mode: /proxyMode says iptables, expected nftables"),
            lines.join("\n"),
        );
        assert.ok(
            lines.includes("pool workers: stopped at the first failure; later batches and pools are untouched"),
            lines.join("\n"),
        );
        assertSettled(cluster);
    });

    it("a failing drain changes nothing on the node and releases it; the drain's line names its timeout", async () => {
        const { cluster, ctx, lines } = setup();
        cluster.faults.drainFails = (node) => node === "workers-1";
        await runPools(ctx(), ["canary"]);
        const err = await runPools(ctx(), ["workers"]).catch((e) => e);
        assert.ok(err instanceof RolloutFailure);
        assert.ok(lines.includes("pool workers node workers-1: draining (timeout 5m)"), lines.join(" | "));
        assert.match(err.rolledBack, /was not changed \(its drain failed\) and was uncordoned/);
        assert.equal(cluster.node("workers-1").placement, null);
        assertSettled(cluster);
    });

    it("a drain with no timeout (drainTimeout 0s waits for ever, as kubectl's) says so in its line", async () => {
        const spec = specOf({}, [
            { name: "canary", nodeSelector: "pool=canary" },
            { name: "workers", nodeSelector: "pool=workers", drain: true, drainTimeout: "0s" },
        ]);
        const { ctx, lines } = setup({ spec });
        await runPools(ctx(), ["canary", "workers"]);
        assert.ok(lines.includes("pool workers node workers-1: draining (timeout none)"), lines.join(" | "));
    });

    it("a node the user cordoned stays cordoned after its move, and only the nodes the rollout cordoned are logged uncordoned", async () => {
        const { cluster, ctx, lines } = setup();
        Object.assign(cluster.node("workers-3"), { unschedulable: true, cordonedByRollout: false });
        await up(ctx());
        assertFinished(cluster);
        assertSettled(cluster, ["workers-3"]);
        const uncordoned = (node: string) => lines.filter((l) => l.endsWith(`node ${node}: uncordoned`)).length;
        assert.deepEqual(
            ["canary-1", "workers-1", "workers-3"].map(uncordoned),
            [2, 2, 0],
            "after the move and after the hand-back",
        );
    });

    it("returns each node's outcome: verified when moved and checked, skipped when already verified", async () => {
        const { ctx } = setup();
        const moved = await runPools(ctx(), ["canary"]);
        assert.deepEqual(
            moved.map(({ node, pool, result }) => ({ node, pool, result })),
            [{ node: "canary-1", pool: "canary", result: "verified" }],
        );
        assert.ok(moved[0].checks.some((c) => c.check === "mode" && c.ok));
        const again = await runPools(ctx(), ["canary"]);
        assert.deepEqual(again, [{ node: "canary-1", pool: "canary", result: "skipped", checks: [] }]);
    });

    it("with the built-in node checks off a node is moved, not verified: no probe pod, and the log says the checks were off", async () => {
        const { cluster, ctx, lines } = setup({
            pools: { canary: 1 },
            // a soak included: its end re-checks the nodes only with the built-in checks on
            spec: specOf({ verify: { hooks: [], nodeChecks: false } }, [
                { name: "canary", nodeSelector: "pool=canary", soak: "1h" },
            ]),
        });
        const outcomes = await runPools(ctx());
        assert.deepEqual(outcomes, [{ node: "canary-1", pool: "canary", result: "moved", checks: [] }]);
        assert.deepEqual(cluster.probeRuns, []);
        assert.equal(cluster.node("canary-1").checks, MARKS.checksHooksOnly);
        assert.ok(
            lines.includes(
                "pool canary node canary-1: moved; built-in node checks are off (verify.nodeChecks: false), 0 hook(s) passed",
            ),
            lines.join("\n"),
        );
        assertSettled(cluster);
    });

    it("the failed step is named: a kube-proxy that does not start on the target fails its restart, a probe pod that cannot run its verify; each node is rolled back", async () => {
        for (const [check, fault] of [
            ["restart", (c: FakeCluster) => (c.faults.crashLoopOn = (_n, placement) => placement === HASH)],
            [
                "verify",
                (c: FakeCluster) => {
                    // on the target only: the rollback's probe runs
                    const run = c.runProbe.bind(c);
                    c.runProbe = (node, r) =>
                        c.node(node).placement === HASH
                            ? Promise.reject(new Error("SIMULATED: the probe pod was not scheduled"))
                            : run(node, r);
                },
            ],
        ] as const) {
            // a pool that drains: the placement is its own write, after the drain
            const { cluster, ctx } = setup({
                pools: { canary: 1 },
                spec: specOf({}, [{ name: "canary", nodeSelector: "pool=canary", drain: true }]),
            });
            fault(cluster);
            const err = await runPools(ctx()).catch((e) => e);
            assertCanaryRolledBack(err, check, cluster);
        }
    });

    it("a node moved again to a target it was verified on long ago (its label since removed) gets a new verification time: the pool's soak counts from it", async () => {
        const { cluster, ctx, clock } = setup({
            pools: { canary: 1 },
            spec: specOf({}, [{ name: "canary", nodeSelector: "pool=canary", soak: "1h" }]),
        });
        cluster.configs.set(HASH, TARGET);
        cluster.inRollout = true;
        const dayAgo = new Date(clock.now() - 86400_000).toISOString();
        Object.assign(cluster.node("canary-1"), { verified: HASH, verifiedAt: dayAgo, checks: MARKS.checksBuiltIn });
        await runPools(ctx());
        assert.equal(cluster.node("canary-1").placement, HASH);
        assert.equal(cluster.node("canary-1").verifiedAt, new Date(clock.now() - 3600_000).toISOString());
        assert.ok(clock.slept >= 3600_000, `the soak waited its hour: ${clock.slept / 1000}s`);
    });

    describe("ipvs -> iptables: kube-proxy stopped, the ipvs leftovers cleaned, then the new one started", () => {
        const IPTABLES = kubeProxyConfig("iptables");
        const toIptables = () =>
            rolloutSpecSchema.parse({
                target: { hash: configHash(IPTABLES), mode: "iptables", config: IPTABLES },
                // no drain: the pool accepts the node's pods without Service routing while kube-proxy is stopped
                pools: [{ name: "canary", nodeSelector: "pool=canary", allowUnroutedNode: true }],
                verify: { hooks: [] },
            });
        /** the node's writes and its probe pods, in order */
        const recording = (cluster: FakeCluster) => {
            const run = cluster.runProbe.bind(cluster);
            cluster.runProbe = (node, r) => {
                cluster.history.push(`${r.action}${"KPM_MODE" in r.env ? ` (${r.env.KPM_MODE})` : ""} ${node}`);
                return run(node, r);
            };
            return () => cluster.history.filter((h) => h.endsWith(" canary-1"));
        };
        const hash = configHash(IPTABLES);

        it("in a pool that does not drain: cordoned, kube-proxy stopped, cleaned with no mode (none runs), started on the target, verified; not drained", async () => {
            const { cluster, ctx } = setup({ pools: { canary: 1 }, spec: toIptables(), installerMode: "ipvs" });
            cluster.faults.ipvsLeftoversOn = () => true;
            const history = recording(cluster);
            await runPools(ctx());
            assert.deepEqual(history(), [
                "probe canary-1",
                "move started; cordon canary-1",
                "move switching canary-1",
                `place ${MARKS.holdValue} canary-1`,
                "cleanup canary-1",
                `place ${hash} canary-1`,
                "await-sync canary-1",
                "probe canary-1",
                `move cleared; verified ${hash}; uncordon canary-1`,
            ]);
            assert.equal(cluster.node("canary-1").drained, 0);
            assertSettled(cluster);
        });

        it("a cleanup that fails names the step and puts the node back on ipvs", async () => {
            const { cluster, ctx } = setup({ pools: { canary: 1 }, spec: toIptables(), installerMode: "ipvs" });
            const run = cluster.runProbe.bind(cluster);
            cluster.runProbe = (node, r) =>
                r.action === "cleanup" ? Promise.reject(new Error("SIMULATED: the cleanup pod failed")) : run(node, r);
            const err = await runPools(ctx()).catch((e) => e);
            assertCanaryRolledBack(err, "cleanup", cluster);
        });

        it("a kube-proxy that does not start after the cleanup fails the restart, not the cleanup, and the node is put back on ipvs", async () => {
            const { cluster, ctx } = setup({ pools: { canary: 1 }, spec: toIptables(), installerMode: "ipvs" });
            cluster.faults.crashLoopOn = (_node, placement) => placement === hash;
            const err = await runPools(ctx()).catch((e) => e);
            assertCanaryRolledBack(err, "restart", cluster);
        });

        it("a move a previous run left after its label switched is resumed without stopping the new kube-proxy again", async () => {
            const { cluster, ctx, lines } = setup({ pools: { canary: 1 }, spec: toIptables(), installerMode: "ipvs" });
            cluster.configs.set(hash, IPTABLES);
            cluster.inRollout = true;
            Object.assign(cluster.node("canary-1"), {
                placement: hash,
                move: { to: hash, from: null, phase: "switching" },
                unschedulable: true,
                cordonedByRollout: true,
            });
            const history = recording(cluster);
            await runPools(ctx());
            assert.deepEqual(history(), [
                `move switching; cordon; place ${hash} canary-1`,
                "await-sync canary-1",
                "probe canary-1",
                `move cleared; verified ${hash}; uncordon canary-1`,
            ]);
            assert.ok(
                lines.includes(
                    "pool canary node canary-1: resuming a move a previous run left in phase switching (origin the installer's DaemonSet)",
                ),
                lines.join("\n"),
            );
            assertSettled(cluster);
        });
    });

    describe("the user's cordon on every failure path: kept on the node the user cordoned, released on the one the rollout cordoned", () => {
        /** workers-2 cordoned by the user before the run (kubectl cordon: no mark of the rollout's) */
        const cordonedByUser = (cluster: FakeCluster) =>
            Object.assign(cluster.node("workers-2"), { unschedulable: true, cordonedByRollout: false });
        /** each node's cordon after the run, and whose it is */
        const cordons = (cluster: FakeCluster, nodes: string[]) =>
            Object.fromEntries(
                nodes.map((n) => {
                    const node = cluster.node(n);
                    return [n, node.unschedulable ? (node.cordonedByRollout ? "the rollout's" : "the user's") : "none"];
                }),
            );

        /** workers-1's cordon released and workers-2's still the user's, each node's recovery line saying so */
        const assertUserCordonKept = (
            cluster: FakeCluster,
            lines: string[],
            said: (cordon: string) => string,
            cordon: { released: string; kept: string },
        ) => {
            assert.deepEqual(cordons(cluster, ["workers-1", "workers-2"]), {
                "workers-1": "none",
                "workers-2": "the user's",
            });
            for (const [node, how] of [
                ["workers-1", cordon.released],
                ["workers-2", cordon.kept],
            ])
                assert.ok(
                    lines.includes(`pool workers node ${node}: node ${node} ${said(how)}`),
                    `${node}: ${lines.filter((l) => l.includes(`node ${node}:`)).join(" | ")}`,
                );
        };
        const ROLLED_BACK = {
            said: (how: string) => `was rolled back to ipvs mode (the installer's DaemonSet) and ${how}`,
            cordon: { released: "uncordoned", kept: "left cordoned as it was before" },
        };
        /** what the lines say of a node its move left unchanged, for `why` */
        const notChanged = (why: string) => ({
            said: (how: string) => `was not changed (${why}) and ${how}`,
            cordon: { released: "was uncordoned", kept: "stays cordoned as before" },
        });

        for (const drain of [false, true]) {
            it(`a failed check (${drain ? "a pool that drains" : "cordon and restart in one write"}): both nodes of the batch rolled back; the user's cordon kept, the rollout's released`, async () => {
                const spec = specOf({}, [
                    { name: "canary", nodeSelector: "pool=canary" },
                    { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2, drain },
                ]);
                const { cluster, ctx, lines } = setup({ spec });
                cordonedByUser(cluster);
                cluster.faults.wrongModeOn = (node, placement) => node !== "workers-3" && placement === HASH;
                await runPools(ctx(), ["canary"]).catch(() => undefined);
                const err = await runPools(ctx(), ["workers"]).catch((e) => e);
                assert.ok(err instanceof RolloutFailure, String(err));
                assertUserCordonKept(cluster, lines, ROLLED_BACK.said, ROLLED_BACK.cordon);
                assert.deepEqual(err.leftCordoned, [], "the user's cordon is not counted as the rollout's");
                assert.deepEqual(placements(cluster), {
                    "canary-1": "installer",
                    "workers-1": "installer",
                    "workers-2": "installer",
                    "workers-3": "installer",
                });
                assertSettled(cluster, ["workers-2"]);
            });
        }

        it("the write that cordons and places a node lands but its answer is lost: both nodes of the batch rolled back; the user's cordon kept (as listed), the rollout's released", async () => {
            const spec = specOf({}, [
                { name: "canary", nodeSelector: "pool=canary" },
                { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2 },
            ]);
            const { cluster, ctx, lines } = setup({ spec });
            cordonedByUser(cluster);
            loseAnswerOf(
                cluster,
                (what, node) =>
                    what.startsWith("move switching; cordon; place") && node !== "canary-1" && node !== "workers-3",
            );
            await runPools(ctx(), ["canary"]);
            const err = await runPools(ctx(), ["workers"]).catch((e) => e);
            assert.ok(err instanceof RolloutFailure, String(err));
            assert.equal(err.check, "restart");
            assertUserCordonKept(cluster, lines, ROLLED_BACK.said, ROLLED_BACK.cordon);
            assertSettled(cluster, ["workers-2"]);
        });

        for (const drain of [true, false]) {
            it(`a node cordoned by someone between the listing and the rollout's cordon, whose answer is lost (${drain ? "a pool that drains" : "cordon and restart in one write"}): that cordon kept, the rollout's released, each line saying which`, async () => {
                const spec = specOf({}, [
                    { name: "canary", nodeSelector: "pool=canary" },
                    { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2, drain },
                ]);
                const { cluster, ctx, lines } = setup({ spec });
                cluster.faults.userCordonsBeforeCordonOn = (node) => node === "workers-2";
                loseAnswerOf(
                    cluster,
                    (what, node) =>
                        (node === "workers-1" || node === "workers-2") &&
                        what.startsWith(drain ? "move started; cordon" : "move switching; cordon"),
                );
                await runPools(ctx(), ["canary"]);
                const err = await runPools(ctx(), ["workers"]).catch((e) => e);
                assert.ok(err instanceof RolloutFailure, String(err));
                assert.deepEqual(cordons(cluster, ["workers-1", "workers-2"]), {
                    "workers-1": "none",
                    "workers-2": "the user's",
                });
                const kept =
                    "someone else cordoned it just before the rollout's cordon, whose answer was lost, and the rollout lifts only its own cordon";
                const said = drain
                    ? (node: string, lifted: boolean) =>
                          `node ${node} was not changed (its move failed) and ${lifted ? "was uncordoned" : `stays cordoned: ${kept}`}`
                    : (node: string, lifted: boolean) =>
                          `node ${node} was rolled back to ipvs mode (the installer's DaemonSet) and ${lifted ? "uncordoned" : `left cordoned: ${kept}`}`;
                for (const [node, lifted] of [
                    ["workers-1", true],
                    ["workers-2", false],
                ] as const)
                    assert.ok(
                        lines.includes(`pool workers node ${node}: ${said(node, lifted)}`),
                        lines.filter((l) => l.includes(`node ${node}:`)).join(" | "),
                    );
                assertSettled(cluster, ["workers-2"]);
            });
        }

        it("a cordon whose answer is lost and a node that cannot be read after its release: the line says the cordon was lifted only if it was the rollout's", async () => {
            const { cluster, ctx, lines } = setup();
            cluster.faults.userCordonsBeforeCordonOn = (node) => node === "workers-2";
            let released = false;
            cluster.faults.afterWrite = (what, node) => {
                if (node === "workers-2" && what === "move started; cordon")
                    throw new Error("SIMULATED: the connection reset before the answer");
                if (node === "workers-2" && what.startsWith("move cleared")) released = true;
            };
            const list = cluster.nodes.bind(cluster);
            cluster.nodes = async () => {
                if (released) {
                    released = false;
                    throw new Error("SIMULATED: the API server does not answer");
                }
                return list();
            };
            await runPools(ctx(), ["canary"]);
            const err = await runPools(ctx(), ["workers"]).catch((e) => e);
            assert.ok(err instanceof RolloutFailure, String(err));
            assert.ok(
                lines.includes(
                    "pool workers node workers-2: node workers-2 was not changed (its move failed) and was uncordoned if its cordon was the rollout's (the cordon's answer was lost, and the node could not be read since)",
                ),
                lines.filter((l) => l.includes("node workers-2:")).join(" | "),
            );
            assert.equal(cluster.node("workers-2").unschedulable, true, "the user's cordon kept");
        });

        it("a node whose cordon answered and whose drain failed: the line says it was uncordoned, with no read of the node after", async () => {
            const { cluster, ctx } = setup();
            cluster.faults.drainFails = (node) => node === "workers-1";
            await runPools(ctx(), ["canary"]);
            // from the release on, the API server answers no list of the nodes
            cluster.faults.afterWrite = (what, node) => {
                if (node === "workers-1" && what.startsWith("move cleared"))
                    cluster.nodes = async () => {
                        throw new Error("SIMULATED: the API server does not answer");
                    };
            };
            const err = await runPools(ctx(), ["workers"]).catch((e) => e);
            assert.ok(err instanceof RolloutFailure, String(err));
            assert.equal(err.rolledBack, "node workers-1 was not changed (its drain failed) and was uncordoned");
            assert.equal(err.unlisted, "SIMULATED: the API server does not answer");
            assert.equal(cluster.node("workers-1").unschedulable, false);
        });

        it("a node whose move fails before its cordon (its configuration gone): no cordon and no uncordon written, and the line says it was not cordoned", async () => {
            const { cluster, ctx, lines } = setup();
            cluster.inRollout = true;
            Object.assign(cluster.node("workers-1"), { placement: "gone0000", verified: "gone0000" });
            await runPools(ctx(), ["canary"]);
            const err = await runPools(ctx(), ["workers"]).catch((e) => e);
            assert.ok(err instanceof RolloutFailure, String(err));
            assert.equal(err.check, "start");
            assert.equal(err.detail, "the configuration gone0000 is no longer in the cluster");
            assert.deepEqual(
                cluster.history.filter((h) => h.endsWith(" workers-1")),
                ["move cleared workers-1"],
            );
            assert.equal(cluster.node("workers-1").unschedulable, false);
            assert.ok(
                lines.includes(
                    "pool workers node workers-1: node workers-1 was not changed (its move failed) and was not cordoned",
                ),
                lines.filter((l) => l.includes("workers-1")).join(" | "),
            );
        });

        it("a failed drain: neither node changed; the user's cordon kept, the rollout's released", async () => {
            const { cluster, ctx, lines } = setup();
            cordonedByUser(cluster);
            cluster.faults.drainFails = (node) => node !== "workers-3";
            await runPools(ctx(), ["canary"]);
            const err = await runPools(ctx(), ["workers"]).catch((e) => e);
            assert.ok(err instanceof RolloutFailure, String(err));
            assert.equal(err.check, "drain");
            const unchanged = notChanged("its drain failed");
            assertUserCordonKept(cluster, lines, unchanged.said, unchanged.cordon);
            assert.deepEqual(err.leftCordoned, []);
            assert.equal(cluster.node("workers-1").placement, null);
            assert.equal(cluster.node("workers-2").placement, null);
            assertSettled(cluster, ["workers-2"]);
        });

        it("the cordon's write in a pool that drains lands but its answer is lost: neither node changed nor restarted; the user's cordon kept (as listed), the rollout's released", async () => {
            const { cluster, ctx, lines } = setup();
            cordonedByUser(cluster);
            loseAnswerOf(cluster, (what, node) => what === "move started; cordon" && node !== "workers-3");
            await runPools(ctx(), ["canary"]);
            const err = await runPools(ctx(), ["workers"]).catch((e) => e);
            assert.ok(err instanceof RolloutFailure, String(err));
            assert.equal(err.check, "start");
            const unchanged = notChanged("its move failed");
            assertUserCordonKept(cluster, lines, unchanged.said, unchanged.cordon);
            assert.deepEqual(err.leftCordoned, []);
            // no drain, no placement written: the memory cleared, and the rollout's cordon released
            const writes = (node: string) => cluster.history.filter((h) => h.endsWith(` ${node}`));
            assert.deepEqual(writes("workers-1"), [
                "move started; cordon workers-1",
                "move cleared; uncordon workers-1",
            ]);
            assert.deepEqual(writes("workers-2"), ["move started; cordon workers-2", "move cleared workers-2"]);
            assertSettled(cluster, ["workers-2"]);
        });

        it("a run killed mid-rollback: the next run finishes the rollback and moves the node again; the user's cordon kept throughout", async () => {
            const { cluster, ctx, clock, lines } = setup();
            cordonedByUser(cluster);
            cluster.faults.wrongModeOn = (node, placement) => node === "workers-2" && placement === HASH;
            killAfter(cluster, (what, node) => node === "workers-2" && what.startsWith("move rolling-back"));
            await runPools(ctx("dead-run"), ["canary"]);
            await runPools(ctx("dead-run"), ["workers"]).catch(() => undefined);
            assert.equal(cluster.node("workers-2").move?.phase, "rolling-back", "killed mid-rollback");
            cluster.revive();
            cluster.faults = {};
            clock.t += 61_000;
            await runPools(ctx("next-run"), ["workers"]);
            assert.ok(lines.includes("node workers-2: a previous run was rolling the node back; finishing that"));
            assert.ok(
                lines.includes(
                    "node workers-2: node workers-2 was rolled back to ipvs mode (the installer's DaemonSet) and left cordoned as it was before",
                ),
                lines.filter((l) => l.includes("workers-2")).join(" | "),
            );
            assert.equal(cluster.node("workers-2").verified, HASH);
            assertSettled(cluster, ["workers-2"]);
        });

        for (const switched of [true, false]) {
            it(`a move towards an earlier target a dead run left${switched ? "" : " before its label switched"}: the node put back and moved to the target; the user's cordon kept, the rollout's released first`, async () => {
                const { cluster, ctx, lines } = setup();
                const earlier = kubeProxyConfig("iptables");
                const earlierHash = configHash(earlier);
                cluster.configs.set(earlierHash, earlier);
                cluster.inRollout = true;
                cordonedByUser(cluster);
                // the same move left on workers-1, which the dead run had cordoned
                Object.assign(cluster.node("workers-1"), { unschedulable: true, cordonedByRollout: true });
                for (const node of ["workers-1", "workers-2"])
                    Object.assign(cluster.node(node), {
                        move: { to: earlierHash, from: null, phase: "switching" },
                        placement: switched ? earlierHash : null,
                    });
                await runPools(ctx(), ["canary"]);
                await runPools(ctx(), ["workers"]);
                // what the reconcile wrote, before the node's move to the target
                const undone = (node: string) => {
                    const h = cluster.history.filter((x) => x.endsWith(` ${node}`));
                    return h.slice(
                        0,
                        h.findIndex((x) => x.startsWith("move started")),
                    );
                };
                if (switched) {
                    assert.ok(
                        lines.some((l) =>
                            /node workers-1: a previous run left a move to .+ \(phase switching\); putting the node back on the installer's DaemonSet$/.test(
                                l,
                            ),
                        ),
                        lines.filter((l) => l.includes("workers-1")).join(" | "),
                    );
                    for (const [node, how] of [
                        ["workers-1", ROLLED_BACK.cordon.released],
                        ["workers-2", ROLLED_BACK.cordon.kept],
                    ])
                        assert.ok(
                            lines.includes(`node ${node}: node ${node} ${ROLLED_BACK.said(how)}`),
                            lines.filter((l) => l.includes(node)).join(" | "),
                        );
                    assert.deepEqual(undone("workers-1"), [
                        "move rolling-back; place installer workers-1",
                        "move cleared; verified none; uncordon workers-1",
                    ]);
                } else {
                    // nothing on the node changed: the memory forgotten (and the rollout's cordon released), no rollback
                    assert.deepEqual(undone("workers-1"), ["move cleared; uncordon workers-1"]);
                    assert.deepEqual(undone("workers-2"), ["move cleared workers-2"]);
                }
                assert.equal(cluster.node("workers-2").verified, HASH);
                assertSettled(cluster, ["workers-2"]);
            });
        }

        for (const regressed of ["workers-1", "workers-2"]) {
            it(`a soak regression on ${regressed === "workers-2" ? "the node the user cordoned" : "a node the rollout cordoned"}: rolled back, ${regressed === "workers-2" ? "left cordoned" : "uncordoned"}; the other node's cordon as before`, async () => {
                const spec = specOf({}, [
                    { name: "canary", nodeSelector: "pool=canary" },
                    { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2, soak: "1h" },
                ]);
                const { cluster, ctx, clock, lines } = setup({ pools: { canary: 1, workers: 2 }, spec });
                cordonedByUser(cluster);
                await runPools(ctx(), ["canary"]);
                const started = clock.now();
                clock.onSleep = (now) => {
                    if (now - started > 1800_000) cluster.node(regressed).restarts = 1;
                };
                const err = await runPools(ctx(), ["workers"]).catch((e) => e);
                clock.onSleep = undefined;
                assert.ok(err instanceof RolloutFailure, String(err));
                assert.equal(err.check, "soak");
                assert.equal(err.node, regressed);
                assert.match(
                    err.rolledBack,
                    new RegExp(
                        `^node ${regressed} was rolled back to ipvs mode \\(the installer's DaemonSet\\) and ${regressed === "workers-2" ? "left cordoned as it was before" : "uncordoned"}$`,
                    ),
                );
                assert.deepEqual(cordons(cluster, ["workers-1", "workers-2"]), {
                    "workers-1": "none",
                    "workers-2": "the user's",
                });
                assert.equal(cluster.node(regressed).placement, null);
                assert.ok(!lines.some((l) => /ROLLBACK OF/.test(l)));
                assertSettled(cluster, ["workers-2"]);
            });
        }
    });

    describe("rollback after a failed check", () => {
        const onePool = () => specOf({}, [{ name: "canary", nodeSelector: "pool=canary" }]);

        it("the node fails its mode check on its origin too: ROLLBACK OF ... FAILED, the node left cordoned in its rollback, not verified; the next run finishes the rollback", async () => {
            const { cluster, ctx, clock, lines } = setup({ pools: { canary: 1 }, spec: onePool() });
            cluster.faults.wrongModeOn = (node) => node === "canary-1";
            const err = await runPools(ctx("run-1")).catch((e) => e);
            assert.ok(err instanceof RolloutFailure, String(err));
            assert.equal(err.check, "mode");
            assert.match(
                err.rolledBack,
                /^ROLLBACK OF canary-1 FAILED: after rollback: .*nftables.*; the node is left cordoned for inspection, and the next run puts it back on the installer's DaemonSet$/,
            );
            assert.deepEqual(err.leftCordoned, ["canary-1"]);
            const node = cluster.node("canary-1");
            assert.deepEqual(
                { move: node.move, placement: node.placement, cordoned: node.unschedulable, verified: node.verified },
                {
                    // the origin's mean sync (the fake's 2 s) kept for the next run's deadline
                    move: { to: HASH, from: null, phase: "rolling-back", baseline: { seconds: 2, metric: "full" } },
                    placement: null,
                    cordoned: true,
                    verified: undefined,
                },
            );
            assert.equal(cluster.lease, undefined, "the lease is released");

            cluster.faults = {};
            clock.t += 61_000;
            await runPools(ctx("run-2"));
            assert.ok(
                lines.includes(
                    "node canary-1: node canary-1 was rolled back to ipvs mode (the installer's DaemonSet) and uncordoned",
                ),
                lines.filter((l) => l.includes("canary-1")).join(" | "),
            );
            assert.equal(node.verified, HASH, "then moved again");
            assertSettled(cluster);
        });

        it("a rollback is gated by the origin's mode alone: leftovers found there are not cleaned (no cleanup pod) and do not fail it", async () => {
            // iptables -> ipvs: the checks of ipvs clean nothing, so the kube-ipvs0 of the failed move is still there
            const target = kubeProxyConfig("ipvs");
            const spec = rolloutSpecSchema.parse({
                target: { hash: configHash(target), mode: "ipvs", config: target },
                pools: [{ name: "canary", nodeSelector: "pool=canary" }],
                verify: { hooks: [] },
            });
            const { cluster, ctx } = setup({ pools: { canary: 1 }, spec, installerMode: "iptables" });
            cluster.faults.wrongModeOn = (_node, placement) => placement !== null;
            cluster.faults.ipvsLeftoversOn = () => true;
            const err = await runPools(ctx()).catch((e) => e);
            assert.ok(err instanceof RolloutFailure, String(err));
            assert.equal(
                err.rolledBack,
                "node canary-1 was rolled back to iptables mode (the installer's DaemonSet) and uncordoned",
            );
            assert.deepEqual(
                cluster.probeRuns.map((p) => p.run.action),
                ["probe", "await-sync", "await-sync", "probe"],
                "the old mode's sync read, the move's first sync (in the wrong mode), the rollback's first sync and check",
            );
            assert.equal(cluster.node("canary-1").placement, null);
            assertSettled(cluster);
        });

        it('onFailure "stop" leaves in place only a node that failed a check: one whose run was stopped (a signal) is rolled back', async () => {
            const { cluster, err } = await stoppedRun((what) => what.startsWith("move switching"), {
                setup: {
                    pools: { canary: 1 },
                    spec: specOf({ onFailure: "stop" }, [{ name: "canary", nodeSelector: "pool=canary" }]),
                },
                reason: "SIGTERM",
            });
            assertCanaryRolledBack(err, "interrupted", cluster);
        });
    });

    describe("F1: the run is killed (SIGKILL) after each write, then run again", () => {
        // one whole run's writes, counted once; then a run killed after each of them, and resumed
        const total = (() => {
            let n = 0;
            return async () => {
                if (n) return n;
                const { cluster, ctx } = setup();
                await up(ctx());
                n = cluster.writes;
                return n;
            };
        })();

        it("converges to every node verified on the target, nothing cordoned, from every crash point", async () => {
            const writes = await total();
            assert.ok(writes > 30, `a whole run has ${writes} writes`); // 3 per move and per hand-back, and the finish's
            for (let k = 1; k <= writes; k++) {
                const { cluster, ctx, clock } = setup();
                Object.assign(cluster.node("workers-2"), { unschedulable: true, cordonedByRollout: false });
                cluster.faults.crashAfterWrites = k;
                // (a crash while releasing the lease at the very end is only a warning for that run)
                await up(ctx("dead-run")).catch((e) => e);
                if (!cluster.dead) {
                    // past the last write of this cluster's run (it has no user-cordon writes): every point was tried
                    assert.ok(k > writes - 4, `crash point ${k} of ${writes}: the run did not die`);
                    break;
                }
                const at = cluster.history[cluster.history.length - 1];
                cluster.revive();
                clock.t += 61_000; // the dead run's lease expires
                await up(ctx("next-run")).catch((e) =>
                    assert.fail(`crash point ${k} (after "${at}"): the next run failed: ${(e as Error).message}`),
                );
                assertFinished(cluster);
                assertSettled(cluster, ["workers-2"]);
            }
        });

        it("a check failing after the resume rolls the node back to its recorded origin, never to the target", async () => {
            const writes = await total();
            let sawResumedSwitch = 0;
            for (let k = 1; k <= writes; k++) {
                const { cluster, ctx, clock } = setup();
                cluster.faults.crashAfterWrites = k;
                await up(ctx("dead-run")).catch(() => undefined);
                cluster.revive();
                if (cluster.node("workers-1").move?.phase === "switching") sawResumedSwitch++;
                // from now on workers-1 fails its checks on the target
                cluster.faults.wrongModeOn = (node, placement) => node === "workers-1" && placement === HASH;
                clock.t += 61_000;
                const err = await up(ctx("next-run")).catch((e) => e);
                const w1 = cluster.node("workers-1");
                if (cluster.installerConfig === TARGET) {
                    // the crash came after the finish wrote the installer's ConfigMap: workers-1 was verified long before
                    assert.equal(err, undefined, `crash point ${k}: ${err}`);
                    continue;
                }
                assert.ok(err instanceof RolloutFailure, `crash point ${k}: ${err}`);
                assert.equal(err.node, "workers-1", `crash point ${k}`);
                assert.doesNotMatch(err.rolledBack, /nftables/, `crash point ${k}: ${err.rolledBack}`);
                assert.equal(w1.placement, null, `crash point ${k}: workers-1 back on the installer's DaemonSet`);
                assert.notEqual(w1.verified, HASH);
                assert.equal(
                    cluster.installerConfig,
                    kubeProxyConfig("ipvs"),
                    "the installer's ConfigMap is unchanged",
                );
                assertSettled(cluster);
            }
            assert.ok(sawResumedSwitch > 0, "some crash points left workers-1 mid-switch");
        });

        it("a node that ran an earlier verified configuration goes back to that one (from its move memory), not to the installer's", async () => {
            const { cluster, ctx, clock } = setup({ pools: { canary: 1 } });
            const earlier = kubeProxyConfig("iptables");
            const earlierHash = configHash(earlier);
            cluster.configs.set(earlierHash, earlier);
            cluster.inRollout = true;
            Object.assign(cluster.node("canary-1"), {
                placement: earlierHash,
                verified: earlierHash,
                verifiedAt: new Date(clock.now()).toISOString(),
            });
            killAfter(cluster, (what) => what.startsWith("move switching"));
            const spec = specOf({}, [{ name: "canary", nodeSelector: "pool=canary" }]);
            await runPools({ ...ctx("dead-run"), spec }).catch(() => undefined);
            cluster.revive();
            cluster.faults.afterWrite = undefined;
            assert.deepEqual(cluster.node("canary-1").move, {
                to: HASH,
                from: earlierHash,
                phase: "switching",
                baseline: { seconds: 2, metric: "full" },
            });
            cluster.node("canary-1").placement = HASH; // the label had switched when the run died
            cluster.faults.wrongModeOn = (node, placement) => placement === HASH;
            clock.t += 61_000;
            const err = await runPools({ ...ctx("next-run"), spec }).catch((e) => e);
            assert.ok(err instanceof RolloutFailure, String(err));
            assert.match(err.rolledBack, new RegExp(`rolled back to iptables mode \\(configuration ${earlierHash}\\)`));
            assert.equal(cluster.node("canary-1").placement, earlierHash);
            assert.equal(cluster.node("canary-1").verified, earlierHash);
            assert.equal(cluster.node("canary-1").checks, MARKS.checksBuiltIn, "verified again by the built-in checks");
            assertSettled(cluster);
        });

        it("a node left verified but cordoned (an earlier version's run killed before its uncordon) is released by the next run", async () => {
            // this version verifies, uncordons and forgets the move in one write, so only a run of
            // the previous version (three writes) could leave this state
            const { cluster, ctx, clock, lines } = setup();
            await runPools(ctx("first-run"), ["canary"]);
            Object.assign(cluster.node("canary-1"), { unschedulable: true, cordonedByRollout: true });
            clock.t += 61_000;
            await runPools(ctx("next-run"), ["canary"]);
            assert.equal(cluster.node("canary-1").unschedulable, false);
            assert.ok(
                lines.includes(
                    "node canary-1: verified on the target by a previous run, which did not release it: uncordoned",
                ),
                lines.join("\n"),
            );
            assert.ok(
                cluster.history.includes("uncordon canary-1"),
                `the release is its own write: ${cluster.history.slice(-3).join(" | ")}`,
            );
            assertSettled(cluster);
        });

        it("what a dead run left on a node is reconciled by the run of the node's own pool, not by another pool's", async () => {
            const { cluster, ctx, clock } = setup();
            await runPools(ctx("first-run"), ["canary"]);
            await runPools(ctx("first-run"), ["workers"]);
            Object.assign(cluster.node("workers-1"), { unschedulable: true, cordonedByRollout: true });
            clock.t += 61_000;
            await runPools(ctx("next-run"), ["canary"]);
            assert.equal(cluster.node("workers-1").unschedulable, true, "left to the workers' run");
            await runPools(ctx("next-run"), ["workers"]);
            assertSettled(cluster);
        });

        it("a node left verified with its move memory and the user's cordon (an earlier version's run killed before its last write): the memory is cleared, the user's cordon kept, nothing said uncordoned", async () => {
            const { cluster, ctx, clock, lines } = setup();
            await runPools(ctx("first-run"), ["canary"]);
            Object.assign(cluster.node("canary-1"), {
                move: { to: HASH, from: null, phase: "switching" },
                unschedulable: true,
                cordonedByRollout: false,
            });
            clock.t += 61_000;
            lines.length = 0;
            await runPools(ctx("next-run"), ["canary"]);
            assert.ok(cluster.history.includes("move cleared canary-1"), cluster.history.slice(-3).join(" | "));
            assert.deepEqual(
                lines.filter((l) => l.includes("uncordon")),
                [],
            );
            assert.equal(cluster.node("canary-1").verified, HASH);
            assertSettled(cluster, ["canary-1"]);
        });
    });

    it('onFailure "stop" leaves the node on the target; the next run rolls it back to its origin, not to the target', async () => {
        const stop = setup({ spec: specOf({ onFailure: "stop" }) });
        stop.cluster.faults.wrongModeOn = (node, placement) => node === "canary-1" && placement === HASH;
        const first = await runPools(stop.ctx(), ["canary"]).catch((e) => e);
        assert.ok(first instanceof RolloutFailure);
        // what the operator reads: where the node is left, and what the next run does with it
        assert.equal(
            first.rolledBack,
            `onFailure is "stop": node canary-1 is left on configuration ${HASH} and cordoned for inspection; the next run rolls it back to the installer's DaemonSet if it fails again`,
        );
        assert.equal(stop.cluster.node("canary-1").placement, HASH, "left on the target for inspection");
        assert.equal(stop.cluster.node("canary-1").unschedulable, true);
        const again = await runPools({ ...stop.ctx(), spec: specOf() }, ["canary"]).catch((e) => e);
        assert.ok(again instanceof RolloutFailure);
        assert.match(again.rolledBack, /rolled back to ipvs mode \(the installer's DaemonSet\)/);
        assert.equal(stop.cluster.node("canary-1").placement, null);
        assertSettled(stop.cluster);
    });

    describe("permissions, asked before anything moves", () => {
        it("a permission denied refuses the run before the lease and any node, naming each (the finish's watch of the DaemonSet included)", async () => {
            const { cluster, ctx } = setup();
            cluster.denied = ["watch daemonsets.apps in kube-system", "create pods/eviction cluster-wide"];
            for (const run of [() => runPools(ctx(), ["canary"]), () => finish(ctx())]) {
                const err = await run().catch((e) => e);
                assert.ok(err instanceof RolloutRefused, String(err));
                assert.match(
                    err.message,
                    /the identity running the rollout \(system:serviceaccount:kube-system:kube-proxy-mode\) is denied 2 permission\(s\) the rollout needs: create pods\/eviction cluster-wide; watch daemonsets\.apps in kube-system\. Nothing was changed/,
                );
            }
            assert.equal(cluster.writes, 0, "nothing written, not even the lease");
            assert.equal(cluster.lease, undefined);
        });

        it("asks for the drain's permissions only when a pool drains", async () => {
            const { cluster, ctx } = setup({
                spec: specOf({}, [
                    { name: "canary", nodeSelector: "pool=canary" },
                    { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2 },
                ]),
            });
            cluster.denied = ["create pods/eviction cluster-wide", "list poddisruptionbudgets.policy cluster-wide"];
            await up(ctx());
            assertFinished(cluster);
        });

        it("goes on with a warning when the cluster will not answer the question", async () => {
            const { cluster, ctx, lines } = setup();
            cluster.accessReviewRefused = true;
            await runPools(ctx(), ["canary"]);
            assert.equal(cluster.node("canary-1").verified, HASH);
            assert.ok(
                lines.some((l) =>
                    /^warning: could not check the rollout's permissions in advance \(403 Forbidden: selfsubjectaccessreviews/.test(
                        l,
                    ),
                ),
                lines.join("\n"),
            );
        });
    });

    describe("F5: one rollout per cluster", () => {
        it("a second run refuses while the first holds the lease, naming the holder, and undoes nothing", async () => {
            const { cluster, ctx } = setup();
            cluster.lease = {
                holder: "stack dev@host-a/pid 42",
                renewedAt: new Date(ctx().clock!.now()).toISOString(),
                durationSeconds: 60,
            };
            const err = await runPools(ctx("stack prod@host-b/pid 7"), ["canary"]).catch((e) => e);
            assert.ok(err instanceof RolloutBusy);
            assert.match(err.message, /stack dev@host-a\/pid 42/);
            assert.equal(cluster.writes, 0, "nothing written");
            assert.equal(cluster.lease.holder, "stack dev@host-a/pid 42");
        });

        it("each run's holder names what runs it (KPM_HOLDER, else the CLI), its host and pid, and a run id of its own", () => {
            const saved = process.env.KPM_HOLDER;
            process.env.KPM_HOLDER = "stack dev/app/prod";
            try {
                const [a, b] = [defaultHolder(), defaultHolder()];
                const shape = new RegExp(`^stack dev/app/prod@${hostname()}/pid ${process.pid}/run [0-9a-f]{12}$`);
                assert.match(a, shape);
                assert.match(b, shape);
                assert.notEqual(a, b, "two runs of one process, host and KPM_HOLDER differ");
                delete process.env.KPM_HOLDER;
                assert.match(
                    defaultHolder(),
                    new RegExp(`^kube-proxy-mode CLI@${hostname()}/pid ${process.pid}/run [0-9a-f]{12}$`),
                );
            } finally {
                if (saved === undefined) delete process.env.KPM_HOLDER;
                else process.env.KPM_HOLDER = saved;
            }
        });

        it("two runs with the same KPM_HOLDER, host and pid (two containers alike) at once: the second refuses, naming the first, and writes nothing", async () => {
            const { cluster, ctx } = setup();
            const saved = process.env.KPM_HOLDER;
            process.env.KPM_HOLDER = "stack dev/app/prod";
            try {
                // each run names its own holder, as the CLI does
                const run = (): Context => ({ ...ctx(), holder: undefined });
                let second: Promise<unknown> | undefined;
                let holder: string | undefined;
                cluster.faults.afterWrite = (what, node) => {
                    if (node === "canary-1" && what.startsWith("move switching") && !second) {
                        holder = cluster.lease?.holder;
                        second = runPools(run(), ["canary"]).then(
                            () => "the second run went ahead",
                            (e: unknown) => e,
                        );
                    }
                };
                await runPools(run(), ["canary"]);
                const err = await second;
                assert.ok(err instanceof RolloutBusy, String(err));
                assert.ok(err.message.startsWith(`another rollout holds this cluster: ${holder} (`), err.message);
                assert.equal(cluster.history.filter((h) => h === "lease taken").length, 1, cluster.history.join(" | "));
                assert.equal(cluster.node("canary-1").verified, HASH);
                assertSettled(cluster);
            } finally {
                if (saved === undefined) delete process.env.KPM_HOLDER;
                else process.env.KPM_HOLDER = saved;
            }
        });

        it("one run's pools and its finish share its holder: a lease its pools could not release is taken back at once by its finish", async () => {
            const { cluster, ctx, lines } = setup();
            const release = cluster.releaseLease.bind(cluster);
            cluster.releaseLease = async () => {
                cluster.releaseLease = release;
                throw new Error("SIMULATED: the release got no answer");
            };
            const run = ctx(defaultHolder());
            await runPools(run);
            assert.equal(cluster.lease?.holder, run.holder, "the pools' release failed");
            assert.ok(lines.some((l) => /warning: releasing the rollout lease failed: SIMULATED/.test(l)));
            await finish(run);
            assertFinished(cluster);
            assertSettled(cluster);
        });

        it("a lease whose holder stopped renewing is taken over once it expires", async () => {
            const { cluster, ctx, clock } = setup();
            cluster.lease = { holder: "dead", renewedAt: new Date(clock.now()).toISOString(), durationSeconds: 60 };
            clock.t += 61_000;
            await runPools(ctx("next"), ["canary"]);
            assert.equal(cluster.node("canary-1").verified, HASH);
            assert.equal(cluster.lease, undefined);
        });

        it("the release waits for a renewal in flight, so no renewal lands after it", async () => {
            const { cluster, ctx } = setup();
            const order: string[] = [];
            let inFlight = 0;
            const renew = cluster.renewLease.bind(cluster);
            cluster.renewLease = async (holder) => {
                inFlight++;
                order.push("renewal starts");
                await new Promise((r) => setTimeout(r, 60));
                const ok = await renew(holder);
                inFlight--;
                order.push(`renewal ends (${ok ? "held" : "lost"})`);
                return ok;
            };
            const release = cluster.releaseLease.bind(cluster);
            cluster.releaseLease = async (holder) => {
                order.push(`release, ${inFlight} renewal(s) in flight`);
                await release(holder);
            };
            // the run lasts past the first renewal (every 100 ms with a 300 ms lease), which may still be in flight at its end
            const list = cluster.nodes.bind(cluster);
            cluster.nodes = async (...a) => {
                await new Promise((r) => setTimeout(r, 120));
                return list(...a);
            };
            await runPools(ctx("run-1", { leaseSeconds: 0.3 }), ["canary"]);
            await new Promise((r) => setTimeout(r, 150)); // any renewal still out lands now
            assert.equal(order[0], "renewal starts", order.join(" | "));
            assert.equal(order.at(-1), "release, 0 renewal(s) in flight", order.join(" | "));
            assert.equal(cluster.lease, undefined);
        });
    });

    describe("F5b: a run cut off from the API server longer than its lease", () => {
        /** SIMULATED partition: the lease's calls get no answer (the node writes are slowed by the test) */
        const partitioned = (cluster: FakeCluster) => {
            const timeout = () =>
                Object.assign(new Error("SIMULATED partition: connect ETIMEDOUT"), { code: "ETIMEDOUT" });
            const renew = cluster.renewLease.bind(cluster);
            const release = cluster.releaseLease.bind(cluster);
            cluster.renewLease = async () => Promise.reject(timeout());
            cluster.releaseLease = async () => Promise.reject(timeout());
            return () => {
                cluster.renewLease = renew;
                cluster.releaseLease = release;
            };
        };
        /** counts the lease's renewals from now on: how many so far */
        const countRenewals = (cluster: FakeCluster) => {
            const renew = cluster.renewLease.bind(cluster);
            let renewals = 0;
            cluster.renewLease = (holder) => {
                renewals++;
                return renew(holder);
            };
            return () => renewals;
        };
        /** each node's move is held up `ms` once its first write has landed (`held` around the wait): the startMove unheld */
        const holdAfterStartMove = (
            cluster: FakeCluster,
            ms: number,
            held: { before?(): void; after?(): void } = {},
        ) => {
            const startMove = cluster.startMove.bind(cluster);
            cluster.startMove = async (...args) => {
                const ours = await startMove(...args);
                held.before?.();
                await new Promise((r) => setTimeout(r, ms));
                held.after?.();
                return ours;
            };
            return startMove;
        };
        /** another run (run-2) takes the lease over */
        const takeOver = (cluster: FakeCluster) => {
            cluster.lease = { holder: "run-2", renewedAt: new Date().toISOString(), durationSeconds: 60 };
        };
        /** the run's last write was canary-1's cordon and placement: nothing was sent after it */
        const assertLastWriteThePlacement = (cluster: FakeCluster) =>
            assert.equal(
                cluster.history.at(-1),
                `move switching; cordon; place ${HASH} canary-1`,
                cluster.history.join(" | "),
            );
        /** the run failed on finding its lease taken over, and sent nothing after canary-1's placement */
        const assertTakenOver = (err: unknown, cluster: FakeCluster) => {
            assert.ok(err instanceof RolloutFailure, String(err));
            assert.match(err.detail, /taken over by another run/);
            assertLastWriteThePlacement(cluster);
        };

        it("stops writing at its renew deadline: the node in hand keeps its move memory and cordon, no write (not even a renewal) is sent after it, and the next run converges", async () => {
            const { cluster, ctx, clock, lines } = setup();
            const heal = partitioned(cluster);
            const renewals = countRenewals(cluster);
            let renewalsAtStop: number | undefined;
            let held = false;
            let stoppedWhileHeld = false;
            const log = (l: string) => {
                lines.push(l);
                if (l.startsWith("stopping: ")) {
                    renewalsAtStop ??= renewals();
                    stoppedWhileHeld = held;
                }
            };
            // the cordon's write lands, then the run is held up past the renew deadline (60 ms of a 90 ms lease)
            const startMove = holdAfterStartMove(cluster, 200, {
                before: () => (held = true),
                after: () => (held = false),
            });
            const err = await runPools(ctx("run-1", { leaseSeconds: 0.09, log }), ["canary"]).catch((e) => e);
            assert.ok(err instanceof RolloutFailure, String(err));
            assert.match(err.detail, /the rollout lease was not renewed for \d+\.\ds \(it lasts 0\.09s.*ETIMEDOUT/);
            // the time since the last renewal, in seconds: past the 0.06 s deadline, well under a minute
            const since = Number(/not renewed for (\d+\.\d)s/.exec(err.detail)?.[1]);
            assert.ok(since >= 0.1 && since < 60, `not renewed for ${since}s`);
            // what the operator is told of the node it had in hand
            assert.match(err.detail, /the next run finishes that move or puts the node back/);
            assert.equal(lines.filter((l) => l.startsWith("stopping: the rollout lease was not renewed")).length, 1);
            assert.ok(
                renewals() > 0 && renewalsAtStop === renewals(),
                `${renewals()} renewal(s), ${renewalsAtStop} at the stop`,
            );
            assert.ok(stoppedWhileHeld, "the run noticed the deadline by itself, not at its next write");
            assert.match(err.rolledBack, /canary-1 is left as it is, mid-move and cordoned.*nothing more was written/);
            assert.ok(cluster.refused.length > 0, "the run tried to write after the deadline and was refused");
            assertLastWriteThePlacement(cluster);
            const node = cluster.node("canary-1");
            assert.deepEqual(
                { move: node.move?.phase, cordoned: node.unschedulable, placement: node.placement },
                { move: "switching", cordoned: true, placement: HASH },
            );
            assert.ok(lines.some((l) => /warning: renewing the rollout lease failed: SIMULATED partition/.test(l)));
            assert.equal(cluster.lease?.holder, "run-1", "its release got no answer either");

            heal();
            clock.t += 61_000; // the cut-off run's lease expires
            cluster.startMove = startMove;
            await up(ctx("run-2"));
            assertFinished(cluster);
            assertSettled(cluster);
        });

        it("a hook running when the renew deadline passes is ended, and the node left as it is", async () => {
            const hooks = [{ name: "slow", command: [process.execPath, "-e", "setTimeout(() => {}, 1500)"] }];
            const { cluster, ctx } = setup({
                pools: { canary: 1 },
                spec: specOf({ verify: { hooks } }, [{ name: "canary", nodeSelector: "pool=canary" }]),
            });
            partitioned(cluster);
            const err = await runPools(ctx("run-1", { leaseSeconds: 0.09 })).catch((e) => e);
            assert.ok(err instanceof RolloutFailure, String(err));
            assert.equal(err.check, "interrupted");
            assert.match(err.detail, /the rollout lease was not renewed.*the hook was ended \(hook slow\)/);
            assert.equal(cluster.node("canary-1").move?.phase, "switching");
        });

        it("sends no write later than its request timeout before the lease, as last renewed, expires", async () => {
            const { cluster, ctx } = setup();
            partitioned(cluster);
            // the cordon's write lands, then the run is held up 150 ms: past the lease's expiry minus
            // the request timeout (300 - 200 ms), though not past the renew deadline (200 ms)
            holdAfterStartMove(cluster, 150, {
                // from now on the node list gets no answer either
                before: () =>
                    (cluster.nodes = () =>
                        Promise.reject(new Error("SIMULATED: the API server did not answer GET /api/v1/nodes"))),
            });
            const timed = { leaseSeconds: 0.3, requestTimeoutSeconds: 0.2 };
            const err = await runPools(ctx("run-1", timed), ["canary"]).catch((e) => e);
            assert.ok(err instanceof RolloutFailure, String(err));
            assert.match(
                err.detail,
                /stops writing 0\.1s after its last renewal, so that a write with a request timeout of 0\.2s is answered or abandoned before it expires/,
            );
            assert.ok(cluster.refused.length > 0, "the run tried to write after the deadline and was refused");
            assertLastWriteThePlacement(cluster);
            // the failure does not claim that no node is left cordoned when it could not list them
            assert.match(
                err.message,
                /the nodes left cordoned could not be listed: SIMULATED: the API server did not answer/,
            );
        });

        it("a request timeout as long as the lease refuses the run before anything is written", async () => {
            const { cluster, ctx } = setup();
            const timed = { leaseSeconds: 0.3, requestTimeoutSeconds: 0.3 };
            const err = await runPools(ctx("run-1", timed), ["canary"]).catch((e) => e);
            assert.ok(err instanceof RolloutRefused, String(err));
            assert.match(err.message, /request timeout \(0\.3s\) is not shorter than the rollout lease \(0\.3s\)/);
            assert.deepEqual(cluster.history, []);
            assert.equal(cluster.lease, undefined);
        });

        it("a run that watched an expired lease before taking it over counts its renew deadline from its own write, not from when it asked", async () => {
            const { cluster, ctx } = setup();
            const acquire = cluster.acquireLease.bind(cluster);
            cluster.acquireLease = async (holder, seconds) => {
                await new Promise((r) => setTimeout(r, 150)); // watching the expired lease, longer than the 60 ms deadline
                return acquire(holder, seconds);
            };
            await runPools(ctx("run-1", { leaseSeconds: 0.09 }), ["canary"]);
            assert.equal(cluster.node("canary-1").verified, HASH);
            assert.deepEqual(cluster.refused, []);
        });

        it("a run stopped while it watches an expired lease before taking it over ends at once, naming the stop, having written nothing", async () => {
            const { cluster, ctx } = setup();
            const stop = new AbortController();
            cluster.acquireLease = async (_holder, _seconds, _log, signal) => {
                // SIMULATED: the watch of a lease that looks expired, ended only by the signal
                await new Promise((r) => signal?.addEventListener("abort", r, { once: true }));
                return {
                    acquired: false,
                    current: { holder: "run-0", renewedAt: new Date(0).toISOString(), durationSeconds: 60 },
                };
            };
            setTimeout(() => stop.abort("SIGINT"), 20);
            const err = await runPools(ctx("run-1", { signal: stop.signal }), ["canary"]).catch((e) => e);
            assert.ok(err instanceof RolloutInterrupted, String(err));
            assert.match(err.message, /stopped \(SIGINT\) before it held the rollout lease: nothing was written/);
            assert.deepEqual(cluster.history, []);
        });

        it("a run whose lease another run took over before its renew deadline sends no further write, not even a rollback", async () => {
            const { cluster, ctx } = setup();
            // a renewal (every 200 ms of a 600 ms lease) finds it taken over; the renew deadline (400 ms) is not reached
            holdAfterStartMove(cluster, 300, { before: () => takeOver(cluster) });
            const err = await runPools(ctx("run-1", { leaseSeconds: 0.6 }), ["canary"]).catch((e) => e);
            assertTakenOver(err, cluster);
            assert.equal(cluster.node("canary-1").move?.phase, "switching", "left mid-move for the run that took over");
        });

        it("a run longer than its lease keeps it by renewing about every third of the lease, and finishes", async () => {
            const { cluster, ctx } = setup();
            const renewals = countRenewals(cluster);
            holdAfterStartMove(cluster, 400); // four renewals of a 150 ms lease, past its renew deadline (100 ms)
            await runPools(ctx("run-1", { leaseSeconds: 0.15 }), ["canary"]);
            // every 50 ms over about 400 ms: not one request per tick of the event loop
            assert.ok(renewals() >= 3 && renewals() <= 40, `${renewals()} renewal(s)`);
            assert.equal(cluster.node("canary-1").verified, HASH);
            assert.deepEqual(cluster.refused, []);
            assertSettled(cluster);
        });

        it("a run whose lease another run took over sends no further write, not even a rollback", async () => {
            const { cluster, ctx } = setup();
            holdAfterStartMove(cluster, 150, { before: () => takeOver(cluster) }); // a renewal (every 30 ms) finds it taken over
            const err = await runPools(ctx("run-1", { leaseSeconds: 0.09 }), ["canary"]).catch((e) => e);
            assertTakenOver(err, cluster);
            assert.equal(cluster.lease?.holder, "run-2", "the release leaves another run's lease alone");
        });
    });

    describe("F2: a signal mid-node", () => {
        it("after the switch: the node is rolled back, the lease released, the error names the node", async () => {
            const { cluster, err } = await stoppedRun(
                (what, node) => what.startsWith("move switching") && node === "canary-1",
            );
            assert.ok(err instanceof RolloutFailure, String(err));
            assert.equal(err.node, "canary-1");
            assert.equal(err.check, "interrupted");
            assert.match(err.rolledBack, /rolled back to ipvs mode/);
            assert.equal(cluster.node("canary-1").placement, null);
            assert.equal(cluster.node("workers-1").placement, null, "the next pool never started");
            assertSettled(cluster);
        });

        for (const at of ["move started; cordon", "drain"]) {
            it(`${at === "drain" ? "after the drain" : "right after the cordon, in a pool that drains"}: the node is not ${at === "drain" ? "" : "drained nor "}restarted, and released as it was`, async () => {
                const { cluster, err } = await stoppedRun((what) => what === at, {
                    setup: {
                        pools: { canary: 1 },
                        spec: specOf({}, [{ name: "canary", nodeSelector: "pool=canary", drain: true }]),
                    },
                });
                assert.ok(err instanceof RolloutFailure, String(err));
                assert.equal(err.check, "interrupted");
                assert.equal(
                    err.rolledBack,
                    "node canary-1 was not changed (stopped before its restart) and was uncordoned",
                );
                assert.equal(cluster.node("canary-1").drained, at === "drain" ? 1 : 0);
                assert.deepEqual(
                    cluster.history.filter((h) => h.endsWith(" canary-1")),
                    [
                        "move started; cordon canary-1",
                        ...(at === "drain" ? ["drain canary-1"] : []),
                        "move cleared; uncordon canary-1",
                    ],
                );
                assertSettled(cluster);
            });
        }

        it("given before the run took its lease: no node is moved, the lease released", async () => {
            const { cluster, ctx } = setup();
            const err = await runPools(ctx("run-1", { signal: AbortSignal.abort("SIGINT") })).catch((e) => e);
            assert.ok(err instanceof RolloutInterrupted, String(err));
            assert.match(err.message, /^the rollout was stopped \(SIGINT\) between batches of pool canary/);
            assert.deepEqual(
                cluster.history.filter((h) => / (canary|workers)-\d$/.test(h)),
                [],
            );
            assert.equal(cluster.lease, undefined);
        });

        it("after the checks passed: the node finishes its move, then the run stops", async () => {
            const { cluster, err } = await stoppedRun(
                (what, node) => what.includes(`verified ${HASH}`) && node === "canary-1",
            );
            assert.ok(err instanceof RolloutInterrupted, String(err));
            assert.equal(cluster.node("canary-1").placement, HASH);
            assert.equal(cluster.node("canary-1").verified, HASH);
            assertSettled(cluster);
        });

        it("during a hook: the hook is ended and the node rolled back", async () => {
            const hooks = [{ name: "slow", command: [process.execPath, "-e", "setTimeout(() => {}, 30000)"] }];
            const started = Date.now();
            const { cluster, err } = await stoppedRun(
                (what, node) => what.startsWith("move switching") && node === "canary-1",
                { setup: { spec: specOf({ verify: { hooks } }) }, delayMs: 300, only: ["canary"] },
            );
            assert.ok(err instanceof RolloutFailure, String(err));
            assert.equal(err.check, "interrupted");
            assert.match(err.detail, /the hook was ended \(hook slow\)/);
            assert.ok(Date.now() - started < 20_000, "the hook did not run its 30 s");
            assert.equal(cluster.node("canary-1").placement, null);
            assertSettled(cluster);
        });

        it("between batches: stops before the next batch, every moved node verified and released", async () => {
            const { cluster, err } = await stoppedRun(
                (what, node) => what.startsWith("move cleared") && node === "workers-2",
                { reason: "SIGTERM" },
            );
            assert.ok(err instanceof RolloutInterrupted, String(err));
            assert.match(err.message, /next were workers-3/);
            assert.deepEqual(placements(cluster), {
                "canary-1": HASH,
                "workers-1": HASH,
                "workers-2": HASH,
                "workers-3": "installer",
            });
            assertSettled(cluster);
        });
        it("after a pool's last batch: stops before the next pool, naming the pool it stopped after", async () => {
            const { cluster, err } = await stoppedRun(
                (what, node) => what.startsWith("move cleared") && node === "canary-1",
                { reason: "SIGTERM" },
            );
            assert.ok(err instanceof RolloutInterrupted, String(err));
            assert.equal(
                err.message,
                "the rollout was stopped (SIGTERM) after pool canary: every node moved so far is verified and released; run it again to resume",
            );
            assert.equal(cluster.node("canary-1").verified, HASH);
            assert.equal(cluster.node("workers-1").placement, null, "the next pool never started");
            assertSettled(cluster);
        });
    });

    describe("the last pool and the finish", () => {
        it("a signal after the last node of the run's last pool: nothing is left to stop, the run returns every node verified", async () => {
            const { cluster, ctx } = setup();
            const signal = signalAfter(
                cluster,
                (what, node) => what.startsWith("move cleared") && node === "workers-3",
                "SIGTERM",
            );
            const outcomes = await runPools(ctx("run-1", { signal }), ["workers"]);
            assert.deepEqual(
                outcomes.map((o) => `${o.node} ${o.result}`),
                ["workers-1 verified", "workers-2 verified", "workers-3 verified"],
            );
            assertSettled(cluster);
        });

        it("the finish's hand-back does not soak a pool again", async () => {
            const spec = specOf({}, [{ name: "canary", nodeSelector: "pool=canary", soak: "1h" }]);
            const { cluster, ctx, clock, lines } = setup({ pools: { canary: 1 }, spec });
            await runPools(ctx());
            lines.length = 0;
            clock.slept = 0;
            await finish(ctx());
            // before the ConfigMap's write, the finish finds the pool's soak held; the hand-back, after it, has none
            const handBack = lines.slice(lines.findIndex((l) => l.includes(`now holds configuration ${HASH}`)));
            assert.ok(handBack.length > 1, lines.join("\n"));
            assert.deepEqual(
                handBack.filter((l) => l.includes("soak")),
                [],
            );
            assert.equal(clock.slept, 0);
            assertFinished(cluster);
        });
    });

    describe("the pools' lines: what the operator is told of each pool", () => {
        it("each pool's size and limit, each node skipped and why (verified on the target, or already running it from the installer), each batch", async () => {
            const { ctx, lines } = setup({ pools: { canary: 1, workers: 3 } });
            await runPools(ctx(), ["canary"]);
            lines.length = 0;
            await runPools(ctx());
            assert.deepEqual(
                lines.filter((l) => /^pool \S+: (\d+ node|batch)|skipped$/.test(l)),
                [
                    "pool canary: 1 node(s), 0 to move, at most 1 at a time",
                    `pool canary node canary-1: already verified on ${HASH}, skipped`,
                    "pool workers: 3 node(s), 3 to move, at most 2 at a time",
                    "pool workers: batch 1/2: workers-1, workers-2",
                    "pool workers: batch 2/2: workers-3",
                ],
            );
            assert.ok(!lines.some((l) => l.startsWith("nothing to move")), "the workers had nodes to move");
            lines.length = 0;
            await runPools(ctx());
            assert.ok(
                lines.includes(
                    `nothing to move in pool(s) canary, workers: every node already runs nftables on configuration ${HASH}`,
                ),
                lines.join("\n"),
            );
            // the installer's ConfigMap already holds the target: its nodes run it without a verification of it
            const again = setup({
                pools: { workers: 1 },
                spec: specOf({}, [{ name: "workers", nodeSelector: "pool=workers" }]),
            });
            again.cluster.installerConfig = TARGET;
            await runPools(again.ctx());
            assert.ok(
                again.lines.includes(`pool workers node workers-1: already runs ${HASH}, skipped`),
                again.lines.join("\n"),
            );
        });

        for (const count of [50, 51])
            it(`${count} skipped nodes in a pool: ${count === 50 ? "each named" : "counted, the first and last named"}`, async () => {
                const spec = specOf({}, [{ name: "workers", nodeSelector: "pool=workers" }]);
                const { cluster, ctx, lines } = setup({ pools: { workers: count }, spec });
                cluster.installerConfig = TARGET;
                await runPools(ctx());
                const each = lines.filter((l) => /^pool workers node workers-\d+: already runs /.test(l));
                if (count === 50) assert.equal(each.length, 50);
                else {
                    assert.deepEqual(each, []);
                    assert.ok(
                        lines.includes(
                            "pool workers: 51 node(s) already on the installer's DaemonSet, skipped (workers-1 ... workers-51)",
                        ),
                        lines.join("\n"),
                    );
                }
            });

        it("a batch of ten nodes names each; one of more, its first and last node and its size", async () => {
            for (const count of [10, 11]) {
                const spec = specOf({}, [{ name: "workers", nodeSelector: "pool=workers", maxUnavailable: count }]);
                const { ctx, lines } = setup({ pools: { workers: count }, spec });
                await runPools(ctx());
                const named = Array.from({ length: count }, (_, i) => `workers-${i + 1}`).join(", ");
                const batch = count === 10 ? named : "workers-1 .. workers-11 (11 nodes)";
                assert.ok(lines.includes(`pool workers: batch 1/1: ${batch}`), lines.join("\n"));
            }
        });

        it("after each batch, the nodes moved so far, the rate and the time left", async () => {
            const spec = specOf({}, [
                { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2, drain: true },
            ]);
            const { cluster, clock, ctx, lines } = setup({ pools: { workers: 3 }, spec });
            // each drain takes a minute (the batch's two drains one after the other, as the fake runs them)
            cluster.faults.afterWrite = (what) => {
                if (what === "drain") clock.t += 60_000;
            };
            await runPools(ctx());
            assert.deepEqual(
                lines.filter((l) => l.includes("node(s) moved")),
                ["pool workers: 2/3 node(s) moved, 1.0/min, about 1m left", "pool workers: 3/3 node(s) moved, 1.0/min"],
            );
            assert.ok(lines.includes("pool workers: done in 3m"), lines.join("\n"));
        });

        it("a pool named that the plan does not have refuses the run before any node is touched, naming the pools there are", async () => {
            const { cluster, ctx } = setup();
            const err = await runPools(ctx(), ["canary", "wrokers", "canry"]).catch((e) => e);
            assert.ok(err instanceof Error, String(err));
            assert.equal(err.message, "no pool named wrokers, canry; pools: canary, workers");
            assert.deepEqual(cluster.history, ["lease taken", "lease released"]);
        });
    });

    describe("the connection check: a Service reached from each node", () => {
        it("the probe is given the Service's address and port, and the connection check passes", async () => {
            const spec = specOf({}, [{ name: "canary", nodeSelector: "pool=canary" }]);
            const { cluster, ctx } = setup({ pools: { canary: 1 }, spec });
            cluster.service = { ip: "10.96.0.1", port: 443 };
            const asked: string[] = [];
            const endpoint = cluster.serviceEndpoint.bind(cluster);
            cluster.serviceEndpoint = async (namespace: string, name: string) => {
                asked.push(`${namespace}/${name}`);
                return endpoint();
            };
            const [outcome] = await runPools(ctx());
            assert.deepEqual(asked, ["default/kubernetes"]);
            assert.deepEqual(
                cluster.probeRuns
                    .filter((p) => p.run.action === "probe")
                    .map((p) => [p.run.env.KPM_SERVICE_IP, p.run.env.KPM_SERVICE_PORT]),
                // the old mode's sync is read before the move, without a Service
                [
                    [undefined, undefined],
                    ["10.96.0.1", "443"],
                ],
            );
            assert.deepEqual(
                outcome.checks.filter((c) => c.check === "connection"),
                [{ check: "connection", ok: true, detail: "connected to the Service's ClusterIP from the node" }],
            );
        });

        it("a Service that cannot be read fails the node on the connection check, naming the Service", async () => {
            const spec = specOf({}, [{ name: "canary", nodeSelector: "pool=canary" }]);
            const { cluster, ctx } = setup({ pools: { canary: 1 }, spec });
            cluster.serviceEndpoint = async () => {
                throw new Error('SIMULATED: services "kubernetes" is forbidden');
            };
            const err = await runPools(ctx()).catch((e) => e);
            assertCanaryRolledBack(err, "connection", cluster);
            assert.equal(
                err.detail,
                'cannot read Service default/kubernetes: SIMULATED: services "kubernetes" is forbidden',
            );
        });
    });

    describe("a verify hook: what it is given, what its output and its failures become", () => {
        it("a hook that prints its kubeconfig: the failure and the log carry [secret], never the token or the client key", async () => {
            const token = "kpm-unit-token-0123456789abcdef";
            const key = "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCmtwbS11bml0LWtleQ==";
            const kubeconfig = [
                "apiVersion: v1",
                "kind: Config",
                "users:",
                "- name: rollout",
                `  user: {token: ${token}}`,
                "- name: other",
                `  user: {client-key-data: ${key}, client-certificate-data: Y2VydA==}`,
            ].join("\n");
            const print =
                "process.stdout.write(require('fs').readFileSync(process.env.KUBECONFIG, 'utf8')); process.exit(3)";
            const hooks = [{ name: "leaky", command: [process.execPath, "-e", print] }];
            const { cluster, ctx, lines } = setup({ spec: specOf({ verify: { hooks } }) });
            const err = await runPools(ctx("run-1", { kubeconfig }), ["canary"]).catch((e) => e);
            assert.ok(err instanceof RolloutFailure, String(err));
            assert.equal(err.check, "hook leaky");
            assert.match(err.detail, /exit code 3; output:/);
            assert.doesNotMatch(err.detail, /long lines cut here/, "no line was cut");
            assert.match(err.detail, /user: \{token: \[secret\]\}/, "the hook's output is kept, the token blanked");
            assert.match(err.detail, /client-key-data: \[secret\], client-certificate-data: Y2VydA==/);
            const all = `${err.message}\n${err.detail}\n${lines.join("\n")}`;
            assert.doesNotMatch(all, new RegExp(token));
            assert.doesNotMatch(all, new RegExp(key.slice(0, 20)));
            assertSettled(cluster);
        });

        it("a hook that passes runs after the built-in checks with the node, pool, mode and its own env, and its last line is its check's detail", async () => {
            const print =
                "const e = process.env; console.log('checking'); console.log('still checking'); console.log([e.NODE, e.POOL, e.MODE, e.EXTRA].join(' '))";
            const hooks = [{ name: "env", command: [process.execPath, "-e", print], env: { EXTRA: "given" } }];
            const spec = specOf({ verify: { hooks } }, [{ name: "canary", nodeSelector: "pool=canary" }]);
            const { ctx, lines } = setup({ pools: { canary: 1 }, spec });
            const [outcome] = await runPools(ctx());
            assert.deepEqual(outcome.checks.slice(-1), [
                { check: "hook env", ok: true, detail: "canary-1 canary nftables given" },
            ]);
            assert.equal(outcome.checks[0].check, "startup-log", "the built-in checks first");
            assert.ok(lines.includes("pool canary node canary-1: ok hook env"), lines.join("\n"));
            assert.ok(lines.includes("pool canary node canary-1: ok mode: /proxyMode says nftables"), lines.join("\n"));
        });

        it("a hook steered behind the seam (no process): asked once per node with its facts and the run's kubeconfig; its failure fails the node", async () => {
            const hooks = [{ name: "gate", command: ["never-run"] }];
            const spec = specOf({ verify: { hooks } }, [{ name: "canary", nodeSelector: "pool=canary" }]);
            const { cluster, ctx, lines } = setup({ pools: { canary: 1 }, spec });
            const given: (string | undefined)[] = [];
            cluster.hookOutcome = (hook, env) => {
                given.push(hook.command[0]);
                return env.MODE === "nftables"
                    ? { ok: false, output: "exit code 4; output:\nsteered", whole: "steered" }
                    : { ok: true, output: "fine" };
            };
            const err = await runPools(ctx("run-1", { kubeconfig: "the run's kubeconfig" })).catch((e) => e);
            assertCanaryRolledBack(err, "hook gate", cluster);
            assert.equal(err.detail, "exit code 4; output:\nsteered");
            assert.deepEqual(cluster.hookRuns, [
                {
                    hook: "gate",
                    env: { NODE: "canary-1", POOL: "canary", MODE: "nftables" },
                    kubeconfig: "the run's kubeconfig",
                },
            ]);
            assert.deepEqual(given, ["never-run"]);
            assert.ok(
                lines.includes("pool canary node canary-1: FAILED hook gate: exit code 4; output:"),
                lines.join("\n"),
            );
        });

        it("a hook steered to pass: its last line is the check's detail, and the node is verified", async () => {
            const hooks = [{ name: "gate", command: ["never-run"] }];
            const spec = specOf({ verify: { hooks } }, [{ name: "canary", nodeSelector: "pool=canary" }]);
            const { cluster, ctx, lines } = setup({ pools: { canary: 1 }, spec });
            cluster.hookOutcome = () => ({ ok: true, output: "first\nlast" });
            const [outcome] = await runPools(ctx());
            assert.deepEqual(outcome.checks.slice(-1), [{ check: "hook gate", ok: true, detail: "last" }]);
            assert.equal(outcome.result, "verified");
            assert.ok(lines.includes("pool canary node canary-1: ok hook gate"), lines.join("\n"));
        });

        for (const [why, hook, detail] of [
            [
                "runs past its timeout",
                { command: [process.execPath, "-e", "setTimeout(() => {}, 30000)"], timeout: "1s" },
                "timed out after 1s",
            ],
            ["names a program that is not there", { command: ["./no-such-hook.sh"] }, "./no-such-hook.sh not found"],
        ] as const)
            it(`a hook that ${why} fails the node, saying so, and the node is rolled back`, async () => {
                const hooks = [{ name: "gate", ...hook }];
                const spec = specOf({ verify: { hooks } }, [{ name: "canary", nodeSelector: "pool=canary" }]);
                const { cluster, ctx } = setup({ pools: { canary: 1 }, spec });
                const err = await runPools(ctx()).catch((e) => e);
                assertCanaryRolledBack(err, "hook gate", cluster);
                assert.equal(err.detail, detail);
            });
    });

    describe("F4: nodes that join or leave", () => {
        it("the finish moves and verifies a node that joined a pool after its step", async () => {
            const { cluster, ctx, lines } = setup();
            await runPools(ctx(), ["canary"]);
            await runPools(ctx(), ["workers"]);
            cluster.addNode("workers-4", "workers");
            await finish(ctx());
            assertFinished(cluster);
            assert.ok(lines.some((l) => /finish: 1 node\(s\) are not verified .*workers-4 \(pool workers\)/.test(l)));
        });

        it("the finish refuses to write the ConfigMap when a late node cannot run the target, naming it", async () => {
            const { cluster, ctx } = setup();
            await runPools(ctx(), ["canary"]);
            await runPools(ctx(), ["workers"]);
            cluster.addNode("workers-5", "workers", "5.10.0-28-amd64");
            const err = await finish(ctx()).catch((e) => e);
            assert.match(String(err), /workers-5/);
            assert.equal(cluster.installerConfig, kubeProxyConfig("ipvs"), "the installer's ConfigMap is unchanged");
            assert.equal(cluster.node("workers-5").placement, null);
            assertSettled(cluster);
        });

        it("the finish refuses to write the ConfigMap when a node joins while it moves the late ones, naming it; run again, it moves that one and finishes", async () => {
            const { cluster, ctx } = setup();
            await runPools(ctx(), ["canary"]);
            await runPools(ctx(), ["workers"]);
            cluster.addNode("workers-4", "workers");
            // the cluster autoscaler adds workers-5 while the finish moves workers-4: after the finish's plan was read
            cluster.faults.afterWrite = (what, node) => {
                if (node === "workers-4" && what.startsWith("move switching") && !cluster.nodeMap.has("workers-5"))
                    cluster.addNode("workers-5", "workers");
            };
            const err = await finish(ctx()).catch((e) => e);
            cluster.faults.afterWrite = undefined;
            assert.ok(err instanceof Error && !(err instanceof RolloutFailure), String(err ?? "the finish completed"));
            assert.equal(
                err.message,
                `cannot finish: 1 node(s) are not verified on ${HASH} (workers-5; \`kube-proxy-mode status\` lists every node's verification); the installer's ConfigMap is unchanged`,
            );
            assert.equal(cluster.node("workers-4").verified, HASH, "the late node was moved and verified");
            assert.equal(cluster.node("workers-5").placement, null);
            assert.equal(cluster.installerConfig, kubeProxyConfig("ipvs"), "the installer's ConfigMap is unchanged");
            assert.ok(!cluster.history.includes("write installer ConfigMap"));
            assert.equal(cluster.inRollout, true, "the installer's DaemonSet not restored");
            assertSettled(cluster);
            await finish(ctx());
            assertFinished(cluster);
            assertSettled(cluster);
        });

        it("the finish refuses to write the ConfigMap when a node joins while it releases a node a run left cordoned, naming it", async () => {
            const { cluster, ctx } = setup();
            await runPools(ctx(), ["canary"]);
            await runPools(ctx(), ["workers"]);
            // left verified but cordoned by an earlier version's run: the finish releases it first, moving nothing
            Object.assign(cluster.node("workers-1"), { unschedulable: true, cordonedByRollout: true });
            // the cluster autoscaler adds workers-5 once the finish has planned its pools after that release
            const log = (l: string) => {
                if (l.startsWith("nothing to move") && !cluster.nodeMap.has("workers-5"))
                    cluster.addNode("workers-5", "workers");
            };
            const err = await finish(ctx("run-1", { log })).catch((e) => e);
            assert.ok(err instanceof Error, "the finish completed");
            assert.match(err.message, /^cannot finish: 1 node\(s\) are not verified on \w+ \(workers-5;/);
            assert.equal(cluster.installerConfig, kubeProxyConfig("ipvs"), "the installer's ConfigMap is unchanged");
            assertSettled(cluster);
        });

        it("a finish killed after it wrote the ConfigMap, run again, hands every node back without writing it again", async () => {
            const { cluster, ctx, clock } = setup();
            await runPools(ctx(), ["canary"]);
            await runPools(ctx(), ["workers"]);
            killAfter(cluster, (what) => what === "write installer ConfigMap");
            await finish(ctx("dead-run")).catch(() => undefined);
            cluster.revive();
            cluster.faults.afterWrite = undefined;
            clock.t += 61_000;
            await finish(ctx("next-run"));
            assert.equal(cluster.history.filter((h) => h === "write installer ConfigMap").length, 1);
            assertFinished(cluster);
            assertSettled(cluster);
        });

        it("a node deleted between two runs is simply gone from the plan", async () => {
            const { cluster, ctx } = setup();
            await runPools(ctx(), ["canary"]);
            cluster.nodeMap.delete("workers-3");
            await runPools(ctx(), ["workers"]);
            await finish(ctx());
            assertFinished(cluster);
        });
    });

    describe("a step created by the previous version (0.1.0)", () => {
        it("runs from the spec 0.1.0 stored (durations as text): each soak waits its seconds, the rollout finishes", async () => {
            // tests/fixtures/specs/rollout-spec-0.1.0.json as 0.1.0 wrote it; the fake's target, and no
            // hooks (its hooks name scripts this machine has not)
            const stored = JSON.parse(readFileSync(join(FIXTURES, "specs", "rollout-spec-0.1.0.json"), "utf8"));
            stored.target = { hash: HASH, mode: "nftables", config: TARGET };
            stored.verify.hooks = [];
            const spec = rolloutSpecSchema.parse(stored);
            const { cluster, ctx, clock } = setup({ pools: { canary: 1, workers: 2, rest: 1 }, spec });
            const slept: number[] = [];
            for (const pool of ["canary", "workers", "rest"]) {
                clock.slept = 0;
                await runPools(ctx(), [pool]);
                slept.push(clock.slept / 1000);
            }
            // canary soaks 10m, workers 1h30m, rest none (the soak's re-checks every 30 s add nothing beyond it)
            assert.ok(slept[0] >= 600 && slept[0] < 700, `canary slept ${slept[0]}s`);
            assert.ok(slept[1] >= 5400 && slept[1] < 5500, `workers slept ${slept[1]}s`);
            assert.ok(slept[2] < 100, `rest slept ${slept[2]}s`);
            await finish(ctx());
            assertFinished(cluster);
            assertSettled(cluster);
        });
    });

    describe("F9: a soak that survives", () => {
        const soaking = () =>
            specOf({}, [
                { name: "canary", nodeSelector: "pool=canary", soak: "24h" },
                { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2 },
            ]);

        it("a soak interrupted at half time waits only the remainder when resumed, and says so", async () => {
            const { cluster, ctx, clock, lines } = setup({ spec: soaking() });
            const stop = new AbortController();
            // the fake clock moves as the soak sleeps: stop the run once half the soak has passed
            const started = clock.now();
            clock.onSleep = (now) => {
                if (now - started >= 12 * 3600_000) stop.abort("SIGINT");
            };
            const err = await runPools(ctx("run-1", { signal: stop.signal }), ["canary"]).catch((e) => e);
            clock.onSleep = undefined;
            assert.ok(err instanceof RolloutInterrupted, String(err));
            assert.match(err.message, /^the rollout was stopped \(SIGINT\) during the soak of pool canary/);
            clock.slept = 0;
            await runPools(ctx("run-2"), ["canary"]);
            assert.ok(
                clock.slept <= 12 * 3600_000 + 30_000 && clock.slept >= 12 * 3600_000 - 60_000,
                `resumed soak slept ${clock.slept / 3600_000}h`,
            );
            assert.equal(cluster.node("canary-1").verified, HASH);
            const verifiedAt = new Date(started).toISOString();
            assert.deepEqual(
                lines.filter((l) => l.startsWith("pool canary: soaking") && l.endsWith("before the next pool")),
                [
                    "pool canary: soaking 24h before the next pool",
                    `pool canary: soaking 12h (the remainder of 24h that started ${verifiedAt}) before the next pool`,
                ],
            );
        });

        it("a soak whose check interval does not divide it ends on time: its last wait is the time left", async () => {
            const spec = specOf({}, [{ name: "canary", nodeSelector: "pool=canary", soak: "1h" }]);
            const { ctx, clock, lines } = setup({ pools: { canary: 1 }, spec });
            await runPools(ctx("run-1", { soakCheckSeconds: 25 * 60 }));
            assert.equal(clock.slept, 3600_000);
            assert.deepEqual(
                lines.filter((l) => l.startsWith("pool canary: soaking, ")),
                [
                    "pool canary: soaking, 35m left; 1 node(s) steady",
                    "pool canary: soaking, 10m left; 1 node(s) steady",
                ],
            );
            assert.ok(lines.includes("pool canary: soak held, every node still on nftables"), lines.join("\n"));
        });

        it("a soak already held is not waited again, nor its nodes checked again", async () => {
            const { cluster, ctx, clock, lines } = setup({ spec: soaking() });
            await runPools(ctx(), ["canary"]);
            clock.slept = 0;
            const probes = cluster.probeRuns.length;
            await runPools(ctx(), ["canary"]);
            assert.equal(clock.slept, 0);
            assert.equal(cluster.probeRuns.length, probes);
            assert.ok(
                lines.some((l) => l.startsWith("pool canary: soak of 24h already held")),
                lines.join("\n"),
            );
        });

        it("a soak checks the pool's pods every soakCheckSeconds", async () => {
            const spec = specOf({}, [{ name: "canary", nodeSelector: "pool=canary", soak: "1h" }]);
            const { ctx, lines } = setup({ pools: { canary: 1 }, spec });
            await runPools(ctx("run-1", { soakCheckSeconds: 600 }));
            assert.equal(lines.filter((l) => /^pool canary: soaking, .* left; 1 node\(s\) steady$/.test(l)).length, 5);
        });

        it("a pool's soak counts from its last node's verification, not its first", async () => {
            const spec = specOf({}, [{ name: "workers", nodeSelector: "pool=workers", soak: "1h" }]);
            const { cluster, ctx, clock } = setup({ pools: { workers: 2 }, spec });
            cluster.configs.set(HASH, TARGET);
            cluster.inRollout = true;
            // workers-1 verified on the target a day ago; workers-2 moves now
            Object.assign(cluster.node("workers-1"), {
                placement: HASH,
                verified: HASH,
                verifiedAt: new Date(clock.now() - 86400_000).toISOString(),
                checks: MARKS.checksBuiltIn,
            });
            await runPools(ctx());
            assert.equal(cluster.node("workers-2").verified, HASH);
            assert.ok(clock.slept >= 3600_000, `the soak waited its hour: ${clock.slept / 1000}s`);
        });

        describe("a regression during the soak", () => {
            const oneNode = (extra: Partial<Record<string, unknown>> = {}) =>
                specOf(extra, [{ name: "canary", nodeSelector: "pool=canary", soak: "1h" }]);
            /** the fault, half an hour into the soak */
            const midSoak = (clock: FakeClock, fault: () => void) => {
                const started = clock.now();
                clock.onSleep = (now) => {
                    if (now - started >= 1800_000) fault();
                };
            };
            /** one canary node soaking an hour (`extra` in its spec), `fault` striking half an hour in (`arrange` done
             * before the run): the setup, and what the run (of `holder`) threw (undefined if it did not) */
            const faultMidSoak = async (
                fault: (cluster: FakeCluster) => void,
                opts: {
                    extra?: Partial<Record<string, unknown>>;
                    arrange?: (cluster: FakeCluster) => void;
                    holder?: string;
                } = {},
            ) => {
                const s = setup({ pools: { canary: 1 }, spec: oneNode(opts.extra) });
                opts.arrange?.(s.cluster);
                midSoak(s.clock, () => fault(s.cluster));
                const err: unknown = await runPools(s.ctx(opts.holder)).then(
                    () => undefined,
                    (e: unknown) => e,
                );
                s.clock.onSleep = undefined;
                return { ...s, err };
            };

            it("kube-proxy's pod gone from the node: the pool fails, the node rolled back", async () => {
                const { cluster, err } = await faultMidSoak((c) => {
                    // SIMULATED: the node's kube-proxy pod deleted and not recreated
                    if (c.node("canary-1").placement === HASH) c.node("canary-1").placement = MARKS.holdValue;
                });
                assert.ok(err instanceof RolloutFailure, String(err));
                assert.equal(err.check, "soak");
                assert.equal(err.detail, "0 kube-proxy pods on the node");
                assert.equal(cluster.node("canary-1").placement, null);
                assertSettled(cluster);
            });

            it("kube-proxy's pod not ready (without a restart): the pool fails, the node rolled back", async () => {
                const { cluster, err } = await faultMidSoak(
                    (c) => (c.faults.notReadyOn = (_n, placement) => placement === HASH),
                );
                assert.ok(err instanceof RolloutFailure, String(err));
                assert.equal(err.detail, `kube-proxy pod kube-proxy-${HASH}-canary-1 is Running, not ready`);
                assert.equal(cluster.node("canary-1").placement, null);
                assertSettled(cluster);
            });

            it("an old kube-proxy pod still terminating on the node, from the soak's start, is neither a regression nor the pod watched", async () => {
                const { cluster, ctx, clock } = setup({ pools: { canary: 1 }, spec: oneNode() });
                cluster.faults.afterWrite = (what) => {
                    if (what.startsWith(`move cleared; verified ${HASH}`))
                        cluster.faults.terminatingPodOn = (node) => node === "canary-1";
                };
                await runPools(ctx());
                assert.ok(cluster.faults.terminatingPodOn, "the old pod was there once the node was verified");
                assert.ok(clock.slept >= 3600_000, "the soak ran its hour");
                assert.equal(cluster.node("canary-1").placement, HASH);
                assertSettled(cluster);
            });

            it("a kube-proxy that had restarted before the soak and restarts during it: the failure counts only the soak's restarts", async () => {
                const { cluster, err } = await faultMidSoak((c) => (c.node("canary-1").restarts = 3), {
                    arrange: (c) =>
                        (c.faults.afterWrite = (what) => {
                            if (what.startsWith(`move cleared; verified ${HASH}`)) c.node("canary-1").restarts = 1;
                        }),
                });
                assertCanaryRolledBack(err, "soak", cluster);
                assert.equal(
                    err.detail,
                    `kube-proxy pod kube-proxy-${HASH}-canary-1 restarted (2 time(s) during the soak)`,
                );
            });

            it("leftovers of another mode found when the soak ends do not fail it (its end checks mode, sync and rules) and are not cleaned", async () => {
                const { cluster, err } = await faultMidSoak((c) => (c.faults.ipvsLeftoversOn = () => true));
                assert.ifError(err);
                assert.deepEqual(
                    cluster.probeRuns.map((p) => p.run.action),
                    ["probe", "await-sync", "probe", "probe", "probe", "probe"],
                    "the old mode's sync read, the first sync, the move's check; the soak's sync totals, its check, its sync totals",
                );
                assert.equal(cluster.node("canary-1").verified, HASH);
                assertSettled(cluster);
            });

            it("full syncs that slow past verify.firstSyncMin during the soak fail the pool like a crash, the node rolled back", async () => {
                const { err } = await faultMidSoak((c) => (c.faults.fullSyncSecondsOn = () => 400));
                assert.ok(err instanceof RolloutFailure, String(err));
                assert.equal(err.check, "soak");
                assert.match(
                    err.detail,
                    /^sync: full syncs during the soak took \d+\.\ds on average \(\d+ of them\), more than 2m \(verify\.firstSyncMin\)$/,
                );
                assert.match(err.rolledBack, /rolled back to ipvs mode/);
            });

            it("full syncs that stay under the bound during the soak pass it", async () => {
                const { err } = await faultMidSoak((c) => (c.faults.fullSyncSecondsOn = () => 90));
                assert.ifError(err);
            });

            it("the node found in another mode when the soak ends: the pool fails on its mode check, the node rolled back", async () => {
                const { cluster, err } = await faultMidSoak(
                    (c) => (c.faults.wrongModeOn = (_n, placement) => placement === HASH),
                );
                assertCanaryRolledBack(err, "soak", cluster);
                assert.match(err.detail, /^mode: /);
            });

            for (const [fault, check] of [
                ["stale sync", "sync"],
                ["no rules", "rules"],
            ] as const)
                it(`the node's kube-proxy found with ${fault === "stale sync" ? "no rule sync for an hour" : "its rules gone"}, in the right mode, when the soak ends: the pool fails on its ${check} check, the node rolled back`, async () => {
                    const { cluster, err } = await faultMidSoak(
                        (c) => (c.faults.probeFaultOn = (_n, placement) => (placement === HASH ? fault : undefined)),
                    );
                    assertCanaryRolledBack(err, "soak", cluster);
                    assert.match(err.detail, new RegExp(`^${check}: `));
                });

            it('onFailure "stop": the node is left on the target, as verified, and the lines say what failed and so', async () => {
                const { cluster, lines, err } = await faultMidSoak((c) => (c.node("canary-1").restarts = 1), {
                    extra: { onFailure: "stop" },
                });
                assert.ok(err instanceof RolloutFailure, String(err));
                assert.equal(err.rolledBack, `onFailure is "stop": node canary-1 is left on configuration ${HASH}`);
                assert.ok(lines.includes(`pool canary node canary-1: ${err.rolledBack}`), lines.join("\n"));
                assert.ok(
                    lines.includes(
                        `pool canary node canary-1: FAILED soak: kube-proxy pod kube-proxy-${HASH}-canary-1 restarted (1 time(s) during the soak)`,
                    ),
                    lines.join("\n"),
                );
                assert.equal(cluster.node("canary-1").placement, HASH);
                assert.equal(cluster.node("canary-1").verified, HASH);
                assertSettled(cluster);
            });

            it("the node fails its mode check on the installer's DaemonSet too: ROLLBACK OF ... FAILED, the node left cordoned in its rollback", async () => {
                const { cluster, err } = await faultMidSoak((c) => {
                    c.node("canary-1").restarts = 1;
                    c.faults.wrongModeOn = (_n, placement) => placement === null;
                });
                assert.ok(err instanceof RolloutFailure, String(err));
                assert.match(
                    err.rolledBack,
                    /^ROLLBACK OF canary-1 FAILED: after rollback: .*; the node is left cordoned for inspection$/,
                );
                assert.deepEqual(err.leftCordoned, ["canary-1"]);
                assert.match(err.message, /\nnodes left cordoned: canary-1$/);
                assert.equal(cluster.node("canary-1").move?.phase, "rolling-back");
            });

            it("the nodes left cordoned cannot be listed after the node's rollback: the failure says so, not that none is left", async () => {
                const { cluster, err } = await faultMidSoak((c) => (c.node("canary-1").restarts = 1), {
                    arrange: (c) =>
                        (c.faults.afterWrite = (what) => {
                            if (what.startsWith("move cleared; verified none"))
                                c.nodes = async () => {
                                    throw new Error("SIMULATED: the API server does not answer");
                                };
                        }),
                });
                assert.ok(err instanceof RolloutFailure, String(err));
                assert.equal(err.check, "soak");
                assert.deepEqual(err.leftCordoned, []);
                assert.equal(err.unlisted, "SIMULATED: the API server does not answer");
                assert.match(err.message, /the nodes left cordoned could not be listed: SIMULATED/);
                assert.doesNotMatch(err.message, /no node is left cordoned/);
                assert.equal(cluster.node("canary-1").placement, null, "rolled back");
            });

            it("a run killed as it starts the node's rollback: the next run finishes the rollback, then moves the node again", async () => {
                const { cluster, ctx, clock, lines } = await faultMidSoak((c) => (c.node("canary-1").restarts = 1), {
                    arrange: (c) => killAfter(c, (what) => what.startsWith("move rolling-back; cordon")),
                    holder: "dead-run",
                });
                assert.equal(cluster.node("canary-1").placement, HASH, "killed before its placement changed");
                cluster.revive();
                cluster.faults = {};
                clock.t += 61_000;
                await runPools(ctx("next-run"));
                assert.ok(
                    lines.includes(
                        "node canary-1: node canary-1 was rolled back to ipvs mode (the installer's DaemonSet) and uncordoned",
                    ),
                    lines.filter((l) => l.includes("canary-1")).join("\n"),
                );
                assert.equal(cluster.node("canary-1").verified, HASH);
                assertSettled(cluster);
            });
        });

        it("kube-proxy restarting on a moved node during the soak fails the pool and rolls that node back", async () => {
            const { cluster, ctx, clock } = setup({ spec: soaking() });
            const started = clock.now();
            clock.onSleep = (now) => {
                if (now - started > 3600_000) cluster.node("canary-1").restarts = 1;
            };
            const err = await runPools(ctx(), ["canary"]).catch((e) => e);
            clock.onSleep = undefined;
            assert.ok(err instanceof RolloutFailure, String(err));
            assert.equal(err.check, "soak");
            assert.match(err.detail, /restarted/);
            assert.equal(cluster.node("canary-1").placement, null);
            assert.equal(cluster.node("workers-1").placement, null, "the next pool did not move");
            assertSettled(cluster);
        });
    });

    it("a node found on an earlier configuration while the finish hands back (its ConfigMap already written) is moved as a move, drained, not handed back", async () => {
        const { cluster, ctx, lines } = setup({
            pools: { workers: 1 },
            spec: specOf({}, [{ name: "workers", nodeSelector: "pool=workers", drain: true }]),
        });
        const earlier = kubeProxyConfig("iptables");
        const earlierHash = configHash(earlier);
        cluster.configs.set(earlierHash, earlier);
        cluster.inRollout = true;
        cluster.installerConfig = TARGET;
        Object.assign(cluster.node("workers-1"), { placement: earlierHash, verified: earlierHash });
        await finish(ctx());
        assert.equal(cluster.node("workers-1").drained, 1);
        assert.ok(lines.includes("pool workers node workers-1: verified"), lines.join("\n"));
        assert.ok(!lines.some((l) => l.includes("handed back")), lines.join("\n"));
        assertFinished(cluster);
        assertSettled(cluster);
    });

    it("the finish keeps the installer's ConfigMap unchanged when a pool's node is not verified and cannot be moved", async () => {
        const { cluster, ctx } = setup();
        cluster.faults.wrongModeOn = (node, placement) => node === "workers-3" && placement === HASH;
        await runPools(ctx(), ["canary"]).catch(() => undefined);
        const err = await finish(ctx()).catch((e) => e);
        assert.ok(err instanceof RolloutFailure);
        assert.equal(cluster.installerConfig, kubeProxyConfig("ipvs"));
        assert.equal(cluster.node("workers-3").placement, null);
        assertSettled(cluster);
    });

    /** `fault` strikes the cluster once the finish has restored the installer's DaemonSet */
    const afterRestore = (cluster: FakeCluster, fault: () => void) => {
        cluster.faults.afterWrite = (what) => {
            if (what === "restore installer DaemonSet") fault();
        };
    };
    /** every pool moved, then the finish, `fault` striking once it restored the installer's DaemonSet: what it threw */
    const finishFaultedAfterRestore = async (fault: (faults: Faults) => void): Promise<unknown> => {
        const { cluster, ctx } = setup();
        afterRestore(cluster, () => fault(cluster.faults));
        await runPools(ctx(), ["canary"]);
        await runPools(ctx(), ["workers"]);
        return finish(ctx()).catch((e) => e);
    };

    it("the finish's final check fails, naming the node, when its kube-proxy crash-loops after the restore", async () => {
        const err = await finishFaultedAfterRestore(
            (faults) => (faults.crashLoopOn = (node, placement) => node === "workers-2" && placement === null),
        );
        assert.ok(err instanceof Error, "the finish did not fail");
        assert.match(err.message, /kube-proxy pod kube-proxy-workers-2 on workers-2 is failing \(CrashLoopBackOff/);
    });

    it("the finish's final check fails, naming the node and the check, when a node's kube-proxy runs another mode after the restore", async () => {
        const err = await finishFaultedAfterRestore(
            (faults) => (faults.wrongModeOn = (node, placement) => node === "workers-2" && placement === null),
        );
        assert.ok(err instanceof Error, "the finish did not fail");
        assert.match(
            err.message,
            /^node workers-2 \(pool workers\) failed the final check on the installer's DaemonSet: mode: /,
        );
    });

    it("the finish's final check fails, naming the node and the check, when a node's kube-proxy stopped syncing its rules after the restore", async () => {
        const err = await finishFaultedAfterRestore(
            (faults) =>
                (faults.probeFaultOn = (node, placement) =>
                    node === "workers-2" && placement === null ? "stale sync" : undefined),
        );
        assert.ok(err instanceof Error, "the finish did not fail");
        assert.match(
            err.message,
            /^node workers-2 \(pool workers\) failed the final check on the installer's DaemonSet: sync: last rule sync 3600s ago/,
        );
    });

    it("the finish's final check neither fails on leftovers of another mode found after the restore nor cleans them", async () => {
        const { cluster, ctx } = setup();
        afterRestore(cluster, () => (cluster.faults.ipvsLeftoversOn = () => true));
        await up(ctx());
        assert.deepEqual(
            cluster.probeRuns.filter((p) => p.run.action === "cleanup"),
            [],
        );
        assertFinished(cluster);
        assertSettled(cluster);
    });

    it("the finish's final check waits only for the nodes whose kube-proxy is not yet running on the installer's DaemonSet, then probes each pool's nodes maxUnavailable at a time", async () => {
        const { cluster, ctx, lines } = setup({ pools: { canary: 1, workers: 5 } });
        await runPools(ctx(), ["canary"]);
        await runPools(ctx(), ["workers"]);
        let restored = false;
        afterRestore(cluster, () => {
            restored = true;
            cluster.faults.notReadyOn = (node, placement) => node === "workers-2" && placement === null;
        });
        const waited: string[] = [];
        const wait = cluster.waitForKubeProxy.bind(cluster);
        cluster.waitForKubeProxy = async (node, placement, timeout, options) => {
            if (restored) {
                waited.push(node);
                // kube-proxy on workers-2 becomes ready while it is waited for
                cluster.faults.notReadyOn = undefined;
            }
            return wait(node, placement, timeout, options);
        };
        let probing = 0;
        const atOnce: number[] = [];
        const probe = cluster.runProbe.bind(cluster);
        cluster.runProbe = async (node, run) => {
            if (!restored) return probe(node, run);
            atOnce.push(++probing);
            await new Promise((resolve) => setImmediate(resolve));
            probing--;
            return probe(node, run);
        };
        await finish(ctx());
        assert.deepEqual(waited, ["workers-2"]);
        assert.ok(lines.includes("pool workers: 5 node(s) checked on the installer's DaemonSet"), lines.join("\n"));
        assert.equal(atOnce.length, 6, "each node probed once");
        assert.equal(Math.max(...atOnce), 2, "the workers' maxUnavailable");
        assertFinished(cluster);
    });

    it("the finish waits for the restored DaemonSet as long as every batch's pod timeout, and a finish run again restores nothing twice", async () => {
        const { cluster, ctx, lines } = setup({ pools: { canary: 1, workers: 3 } });
        const timeouts: number[] = [];
        cluster.waitForDaemonSetRollout = async (seconds: number) => {
            timeouts.push(seconds);
        };
        await up(ctx());
        // 3m per batch: canary's one, the workers' two (3 nodes, 2 at a time)
        assert.deepEqual(timeouts, [3 * 180]);
        assert.equal(cluster.restored, 1);
        assert.ok(
            lines.includes("finished: every node runs nftables from the installer's DaemonSet and ConfigMap"),
            lines.join("\n"),
        );
        const writes = cluster.history.length;
        await finish(ctx());
        assert.equal(cluster.restored, 1);
        assert.deepEqual(timeouts, [3 * 180]);
        assert.deepEqual(cluster.history.slice(writes), [
            "lease taken",
            "prepare hand-back revision",
            "lease released",
        ]);
        assertFinished(cluster);
    });

    it("a node's origin, what it goes back to on a failure: its move's recorded origin, else a placement it was verified on, else the installer's DaemonSet", () => {
        const node = (n: Partial<RolloutNode>): RolloutNode => ({
            name: "n",
            labels: {},
            kernelVersion: "6.8.0",
            operatingSystem: "linux",
            placement: null,
            unschedulable: false,
            cordonedByRollout: false,
            ...n,
        });
        const move = (to: string | null, from: string | null) => ({ to, from, phase: "switching" as const });
        assert.equal(originOf(node({ placement: "target", move: move("target", "older") }), "target"), "older");
        assert.equal(
            originOf(node({ placement: "older", verified: "older", move: move("another", null) }), "target"),
            "older",
            "a move to another target is not this one's memory",
        );
        assert.equal(originOf(node({ placement: "older", verified: "older" }), "target"), "older");
        assert.equal(originOf(node({ placement: "older", verified: "oldest" }), "target"), null, "not verified there");
        assert.equal(originOf(node({ placement: "target", verified: "target" }), "target"), null, "never the target");
        assert.equal(originOf(node({ placement: null }), "target"), null);
    });

    it("keeps the rollout's marks on nodes under the kube-proxy-mode.io prefix", () => {
        assert.equal(MARKS.moveAnnotation, "kube-proxy-mode.io/move");
    });
});
