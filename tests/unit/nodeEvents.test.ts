// The runner's node events (components/rollout/events.ts) on a SIMULATED in-memory cluster: what a
// program reads of each node's move, and the log's lines made of them by the one formatter.
import assert from "node:assert/strict";
import { configHash } from "../../components/core/plan.js";
import { finish, runPools, type Context } from "../../components/rollout/runner.js";
import { formatEvent, type KubeProxyRunning, type NodeEvent } from "../../components/rollout/events.js";
import { rolloutSpecSchema, type RolloutSpec } from "../../components/rollout/spec.js";
import { rolloutSyncs } from "../../scripts/kubeProxySamples.js";
import { FakeClock, FakeCluster, kubeProxyConfig } from "./fakeCluster.js";

const TARGET = kubeProxyConfig("nftables");
const HASH = configHash(TARGET);

function specOf(verify: Record<string, unknown> = {}): RolloutSpec {
    return rolloutSpecSchema.parse({
        target: { hash: HASH, mode: "nftables", config: TARGET },
        pools: [
            { name: "canary", nodeSelector: "pool=canary" },
            { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2 },
        ],
        verify: { hooks: [], ...verify },
    });
}

function setup(spec = specOf()) {
    const clock = new FakeClock();
    const cluster = new FakeCluster(clock, { installerMode: "ipvs", pools: { canary: 1, workers: 3 } });
    const lines: string[] = [];
    const events: NodeEvent[] = [];
    const ctx: Context = {
        cluster,
        spec,
        log: (l) => lines.push(l),
        onEvent: (e) => events.push(e),
        holder: "run-1",
        clock,
    };
    return { clock, cluster, lines, events, ctx };
}

/** One node's events as "type[ detail]" words, in order. */
function story(events: NodeEvent[], node: string, step: "move" | "hand-back"): string[] {
    return events
        .filter((e) => e.type !== "batch started" && e.node === node && e.step === step)
        .map((e) =>
            e.type === "check"
                ? `check ${e.check} ${e.ok}`
                : e.type === "released"
                  ? `released ${e.how}`
                  : e.type === "cordoned"
                    ? `cordoned ${e.ours}`
                    : e.type === "first sync"
                      ? `first sync ${e.mode}`
                      : `running ${(e as KubeProxyRunning).placement ?? "installer"}`,
        );
}

describe("the runner's node events", () => {
    it("a move and its hand-back, node by node: cordoned, kube-proxy running, first sync, each check, released; batches before their nodes", async () => {
        const hooks = [{ name: "gate", command: ["never-run"] }];
        const { cluster, events, ctx } = setup(specOf({ hooks }));
        cluster.hookOutcome = () => ({ ok: true, output: "fine" });
        await runPools(ctx, ["canary"]);
        await runPools(ctx, ["workers"]);
        await finish(ctx);
        const checks = ["startup-log", "mode", "sync", "rules", "leftovers"];
        const moved = story(events, "workers-2", "move");
        assert.deepEqual(moved[0], "cordoned true");
        assert.deepEqual(moved[1], `running ${HASH}`);
        assert.deepEqual(moved[2], "first sync nftables");
        assert.deepEqual(moved.slice(-2), ["check hook gate true", "released verified"]);
        for (const c of checks.filter((c) => moved.some((m) => m.startsWith(`check ${c} `))))
            assert.ok(moved.includes(`check ${c} true`), moved.join("\n"));
        const handedBack = story(events, "workers-2", "hand-back");
        assert.deepEqual(handedBack[0], "cordoned true");
        assert.deepEqual(handedBack[1], "running installer");
        assert.deepEqual(handedBack[2], "first sync nftables");
        assert.deepEqual(handedBack.slice(-1), ["released handed back"]);
        const batches = events.flatMap((e) =>
            e.type === "batch started" ? [`${e.step} ${e.pool} ${e.index}/${e.of} ${e.nodes.join(",")}`] : [],
        );
        assert.deepEqual(batches, [
            "move canary 1/1 canary-1",
            "move workers 1/2 workers-1,workers-2",
            "move workers 2/2 workers-3",
            "hand-back canary 1/1 canary-1",
            "hand-back workers 1/2 workers-1,workers-2",
            "hand-back workers 2/2 workers-3",
        ]);
        const released = events.filter((e) => e.type === "released");
        assert.equal(released.length, 8, "each node released once in each kind of step");
        for (const e of released) assert.equal(e.hooks, 1);
    });

    it("a first sync carries its seconds into the wait and the old mode's mean read before the move: the bench's first-sync figures", async () => {
        const { events, lines, ctx } = setup();
        await runPools(ctx, ["canary"]);
        await finish(ctx);
        const synced = events.filter((e) => e.type === "first sync" && e.node === "canary-1");
        assert.deepEqual(
            synced.map(({ at: _, ...e }) => e),
            [
                {
                    type: "first sync",
                    pool: "canary",
                    node: "canary-1",
                    step: "move",
                    mode: "nftables",
                    seconds: 0,
                    old: { seconds: 2, metric: "full", recorded: false },
                },
                {
                    type: "first sync",
                    pool: "canary",
                    node: "canary-1",
                    step: "hand-back",
                    mode: "nftables",
                    seconds: 0,
                    old: { seconds: 2, metric: "full", recorded: false },
                },
            ],
        );
        assert.ok(lines.includes("pool canary node canary-1: first sync in nftables mode done 0s into the wait"));
        // the bench reads them (scripts/kubeProxySamples.ts), no log line
        const syncs = rolloutSyncs(events);
        assert.deepEqual(syncs.get("canary-1"), {
            moveFirstSyncSeconds: 0,
            oldMeanFullSyncSeconds: 2,
            handBackFirstSyncSeconds: 0,
        });
    });

    it("without the built-in node checks nothing waits for a first sync: no such event", async () => {
        const { events, ctx } = setup(specOf({ nodeChecks: false }));
        await runPools(ctx, ["canary"]);
        assert.ok(events.some((e) => e.type === "released"));
        assert.ok(!events.some((e) => e.type === "first sync"));
    });

    it("each event is stamped with the run's clock", async () => {
        const { clock, events, ctx } = setup();
        const start = clock.now();
        await runPools(ctx, ["canary"]);
        assert.ok(events.length > 0);
        for (const e of events) assert.ok(e.at >= start && e.at <= clock.now(), JSON.stringify(e));
        const [cordoned, released] = ["cordoned", "released"].map((t) => events.find((e) => e.type === t)!);
        assert.ok(released.at >= cordoned.at);
    });

    it("every event's line is in the log, made by formatEvent, in the events' order", async () => {
        const { lines, events, ctx } = setup(specOf({ nodeChecks: false }));
        await runPools(ctx);
        await finish(ctx);
        const made = events.map(formatEvent);
        assert.deepEqual(
            lines.filter((l) => made.includes(l)),
            made,
        );
        // the log's words, as the e2e tests and the operators read them
        for (const line of [
            /^pool canary: batch 1\/1: canary-1$/,
            /^pool canary node canary-1: cordoned$/,
            new RegExp(`^pool canary node canary-1: kube-proxy \\S+-canary-1 running on configuration ${HASH}$`),
            /^pool canary node canary-1: moved; built-in node checks are off \(verify.nodeChecks: false\), 0 hook\(s\) passed$/,
            /^pool workers node workers-3: kube-proxy kube-proxy-workers-3 running on the installer's DaemonSet$/,
            /^pool workers node workers-3: handed back to the installer's DaemonSet, checked$/,
        ])
            assert.ok(
                lines.some((l) => line.test(l)),
                `${line}\nnot in:\n${lines.join("\n")}`,
            );
    });

    it("formatEvent: a built-in check names its detail, a hook's line its name only; more than ten nodes of a batch are summed up", () => {
        const base = { pool: "p", node: "n", step: "move" as const, at: 0 };
        assert.equal(
            formatEvent({ ...base, type: "check", check: "mode", ok: false, detail: "wrong", hook: false }),
            "pool p node n: FAILED mode: wrong",
        );
        assert.equal(
            formatEvent({ ...base, type: "check", check: "hook gate", ok: true, detail: "fine", hook: true }),
            "pool p node n: ok hook gate",
        );
        assert.equal(
            formatEvent({ ...base, type: "cordoned", ours: false }),
            "pool p node n: was already cordoned (left so)",
        );
        const nodes = Array.from({ length: 11 }, (_, i) => `w-${i + 1}`);
        assert.equal(
            formatEvent({ type: "batch started", pool: "p", step: "move", index: 2, of: 3, nodes, at: 0 }),
            "pool p: batch 2/3: w-1 .. w-11 (11 nodes)",
        );
    });
});
