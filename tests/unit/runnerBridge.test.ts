// The bridge on every path of a node's move, on a SIMULATED in-memory cluster (fakeCluster.ts):
// nftables -> iptables moves and rollbacks copy the node's nftables tables before the restart,
// record the copy before making it, and delete it after the new mode's first sync, on a failure,
// on resume, or in the stop's hand-over; no path leaves a copy routing stale rules.
import assert from "node:assert/strict";
import { configHash } from "../../components/core/plan.js";
import { RolloutFailure, runPools, type Context } from "../../components/rollout/runner.js";
import { rolloutSpecSchema } from "../../components/rollout/spec.js";
import { FakeClock, FakeCluster, kubeProxyConfig } from "./fakeCluster.js";

const IPTABLES = kubeProxyConfig("iptables");
const NFTABLES = kubeProxyConfig("nftables");

function setup(opts: { from: "nftables" | "iptables" | "ipvs"; to: "iptables" | "nftables"; extra?: object }) {
    const config = opts.to === "iptables" ? IPTABLES : NFTABLES;
    const hash = configHash(config);
    const spec = rolloutSpecSchema.parse({
        target: { hash, mode: opts.to, config },
        pools: [{ name: "canary", nodeSelector: "pool=canary" }],
        verify: { hooks: [] },
        ...opts.extra,
    });
    const clock = new FakeClock();
    const cluster = new FakeCluster(clock, { installerMode: opts.from, pools: { canary: 1 } });
    const lines: string[] = [];
    const ctx = (more: Partial<Context> = {}): Context => ({
        cluster,
        spec,
        log: (l) => lines.push(l),
        holder: "run-1",
        clock,
        soakCheckSeconds: 30,
        ...more,
    });
    return { cluster, ctx, lines, hash };
}

/** The history's bridge events and placement writes of canary-1, in order. */
function steps(cluster: FakeCluster): string[] {
    return cluster.history.filter((h) => /bridge|place|move cleared/.test(h));
}

/** Sampler lines every 2 s from t=1000 with no CPU used: a kube-proxy stalled before its first sync. */
const stalled = Array.from({ length: 20 }, (_, i) => `sample ${1000 + 2 * i} mode=- synced=- cpu=7 pids=42`);

describe("runner on a SIMULATED in-memory cluster: the bridge of nftables -> iptables moves", () => {
    it("copies the tables before the restart, recorded first, and deletes them after iptables mode's first sync, before the checks", async () => {
        const { cluster, ctx, hash } = setup({ from: "nftables", to: "iptables" });
        let recorded: string | undefined;
        let atDelete: string | undefined;
        cluster.faults.bridgeFaultOn = (node, action) => {
            if (action === "bridge") recorded = cluster.node(node).move?.bridge;
            if (action === "unbridge") atDelete = cluster.node(node).move?.bridge;
            return undefined;
        };
        const [outcome] = await runPools(ctx());
        assert.equal(outcome.result, "verified");
        assert.equal(recorded, "kpm-bridge", "the move memory names the bridge before the copy is made");
        assert.equal(atDelete, "kpm-bridge", "and forgets it only after the delete");
        const actions = cluster.probeRuns.map((p) => p.run.action);
        assert.deepEqual(actions.slice(0, 4), ["probe", "bridge", "await-sync", "unbridge"]);
        assert.ok(
            actions.slice(4).every((a) => a === "probe"),
            actions.join(" "),
        );
        const order = steps(cluster);
        assert.ok(
            order.indexOf("bridge copied canary-1") < order.findIndex((h) => h.includes(`place ${hash}`)),
            order.join("\n"),
        );
        assert.equal(cluster.bridged.size, 0, "no bridge left");
        assert.equal(cluster.node("canary-1").move, undefined);
    });

    it("moves between other modes make no bridge", async () => {
        for (const [from, to] of [
            ["iptables", "nftables"],
            ["ipvs", "nftables"],
        ] as const) {
            const { cluster, ctx } = setup({ from, to });
            await runPools(ctx());
            const bridging = cluster.probeRuns.filter((p) => p.run.action === "bridge" || p.run.action === "unbridge");
            assert.deepEqual(bridging, [], `${from} -> ${to}`);
        }
    });

    it("a first sync that stalls: the bridge routes through the rollback and goes after nftables mode's first sync", async () => {
        const { cluster, ctx, hash } = setup({ from: "nftables", to: "iptables", extra: {} });
        cluster.faults.firstSyncSamplesOn = (_n, placement) => (placement === hash ? stalled : undefined);
        const err = await runPools(ctx()).catch((e: unknown) => e);
        assert.ok(err instanceof RolloutFailure, String(err));
        assert.equal(err.check, "first-sync");
        assert.match(err.rolledBack, /rolled back to nftables mode/);
        const order = steps(cluster);
        const back = order.findIndex((h) => h.includes("place installer"));
        assert.ok(back > 0 && order.indexOf("bridge deleted canary-1") > back, order.join("\n"));
        assert.equal(cluster.bridged.size, 0);
        assert.equal(cluster.node("canary-1").move, undefined);
    });

    it('onFailure "stop": the node is left on iptables for inspection, without the bridge', async () => {
        const { cluster, ctx, hash } = setup({ from: "nftables", to: "iptables", extra: { onFailure: "stop" } });
        cluster.faults.firstSyncSamplesOn = (_n, placement) => (placement === hash ? stalled : undefined);
        const err = await runPools(ctx()).catch((e: unknown) => e);
        assert.ok(err instanceof RolloutFailure, String(err));
        assert.match(err.rolledBack, /^onFailure is "stop": node canary-1 is left on configuration/);
        assert.doesNotMatch(err.rolledBack, /BRIDGE/);
        assert.equal(cluster.bridged.size, 0, "the bridge was deleted");
        assert.equal(cluster.node("canary-1").move?.bridge, undefined, "and forgotten");
        assert.equal(cluster.node("canary-1").placement, hash);
    });

    it("a copy nft refuses fails the node before its restart: released unchanged, nothing bridged", async () => {
        const { cluster, ctx } = setup({ from: "nftables", to: "iptables" });
        cluster.faults.bridgeFaultOn = (_n, action) =>
            action === "bridge" ? "Error: Could not process rule" : undefined;
        const err = await runPools(ctx()).catch((e: unknown) => e);
        assert.ok(err instanceof RolloutFailure, String(err));
        assert.equal(err.check, "bridge");
        assert.match(
            err.message,
            /the bridge could not be made: nft -f \(the copy of ip kube-proxy\): Error: Could not/,
        );
        assert.equal(err.rolledBack, "node canary-1 was not changed (its bridge failed) and was uncordoned");
        assert.equal(cluster.node("canary-1").placement, null, "kube-proxy was never restarted");
        assert.equal(cluster.node("canary-1").move, undefined);
        assert.equal(cluster.bridged.size, 0);
    });

    it("a delete that fails fails the node, keeps the bridge in its memory, and the next run deletes it", async () => {
        const { cluster, ctx } = setup({ from: "nftables", to: "iptables" });
        cluster.faults.bridgeFaultOn = (_n, action) => (action === "unbridge" ? "Error: busy" : undefined);
        const err = await runPools(ctx()).catch((e: unknown) => e);
        assert.ok(err instanceof RolloutFailure, String(err));
        assert.equal(err.check, "bridge");
        assert.match(err.rolledBack, /^ROLLBACK OF canary-1 FAILED: the bridge could not be removed/);
        assert.equal(cluster.node("canary-1").move?.bridge, "kpm-bridge", "the memory still names the bridge");
        assert.equal(cluster.bridged.size, 1);
        cluster.faults.bridgeFaultOn = undefined;
        await runPools(ctx());
        assert.equal(cluster.bridged.size, 0, "the next run deleted it");
        assert.equal(cluster.node("canary-1").move, undefined);
    });

    for (const when of ["between the copy and the restart", "right after the restart"] as const)
        it(`a run killed ${when} leaves a bridge the next run deletes, the node verified`, async () => {
            const { cluster, ctx, hash } = setup({ from: "nftables", to: "iptables" });
            if (when === "right after the restart")
                cluster.faults.afterWrite = (what) => {
                    if (what.includes(`place ${hash}`)) cluster.dead = true;
                };
            // the copy is made, then the process dies: its next call fails
            else cluster.faults.bridgeFaultOn = (_n, action) => void (action === "bridge" && (cluster.dead = true));
            await runPools(ctx()).catch(() => undefined);
            assert.equal(cluster.node("canary-1").move?.bridge, "kpm-bridge", "the memory names the bridge");
            assert.equal(cluster.bridged.size, 1, "the copy is on the node");
            assert.equal(cluster.node("canary-1").placement, when === "right after the restart" ? hash : null);
            cluster.faults.afterWrite = undefined;
            cluster.faults.bridgeFaultOn = undefined;
            cluster.revive();
            const [outcome] = await runPools(ctx());
            assert.equal(outcome.result, "verified");
            assert.equal(cluster.bridged.size, 0, "no bridge left");
            // by its own delete after the first sync, not by the leftovers check's cleanup
            const bridgeEvents = cluster.history.filter((h) => h.startsWith("bridge "));
            assert.equal(bridgeEvents.at(-1), "bridge deleted canary-1", bridgeEvents.join("\n"));
            assert.ok(!bridgeEvents.some((h) => h.includes("by the cleanup")), bridgeEvents.join("\n"));
            assert.equal(cluster.node("canary-1").placement, hash);
            assert.equal(cluster.node("canary-1").move, undefined);
        });

    it("an iptables -> nftables move that fails is rolled back to iptables with a bridge, deleted after iptables mode's first sync", async () => {
        const { cluster, ctx, hash } = setup({ from: "iptables", to: "nftables" });
        cluster.faults.probeFaultOn = (_n, placement) => (placement === hash ? "no rules" : undefined);
        const err = await runPools(ctx()).catch((e: unknown) => e);
        assert.ok(err instanceof RolloutFailure, String(err));
        assert.equal(err.check, "rules");
        assert.match(err.rolledBack, /rolled back to iptables mode/);
        const order = steps(cluster);
        const copied = order.indexOf("bridge copied canary-1");
        const back = order.findIndex((h) => h.includes("place installer"));
        assert.ok(copied >= 0 && copied < back && order.indexOf("bridge deleted canary-1") > back, order.join("\n"));
        assert.equal(cluster.bridged.size, 0);
        assert.equal(cluster.node("canary-1").move, undefined);
    });
});
