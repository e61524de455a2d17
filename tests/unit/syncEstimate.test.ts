// components/core/syncEstimate.ts and the planner's use of it: each pool's move estimated from the
// cluster's Services and endpoints, the warning above WINDOW_WARNING_SECONDS, and the unrouted-node
// rule following the estimated window.
import assert from "node:assert/strict";
import {
    describePlan,
    estimateMeasured,
    estimateNode,
    planRollout,
    slowerBy,
    SYNC_COST,
    UNROUTED_BOUND_SECONDS,
    type NodeState,
} from "../../components/core/index.js";
import { poolSchema } from "../../components/core/pools.js";

const LOAD_2K = { services: 2000, endpoints: 20_000 };
const node = (name: string): NodeState => ({
    name,
    labels: { pool: "w" },
    kernelVersion: "6.8.0",
    operatingSystem: "linux",
    placement: null,
});

describe("sync estimate: one node's move at the cluster's load", () => {
    it("iptables -> nftables: kube-proxy's start removes the iptables rules (they route until then), then its first sync is the window", () => {
        const k = LOAD_2K.endpoints / 1000;
        const e = estimateNode("iptables", "nftables", LOAD_2K);
        assert.equal(e.removalSeconds, Math.round(SYNC_COST.removalPer1000.iptables * k * 10) / 10);
        assert.equal(e.firstSyncSeconds, SYNC_COST.startSeconds + SYNC_COST.firstSyncPer1000.nftables * k);
        assert.equal(e.windowSeconds, e.firstSyncSeconds);
        assert.equal(
            e.nodeSeconds,
            SYNC_COST.restartSeconds + e.removalSeconds + e.firstSyncSeconds + SYNC_COST.checksSeconds,
        );
    });

    it("ipvs -> nftables and ipvs -> iptables: the ipvs state goes first, so its removal is inside the window", () => {
        for (const to of ["nftables", "iptables"] as const) {
            const e = estimateNode("ipvs", to, LOAD_2K);
            assert.ok(e.removalSeconds > 0, to);
            assert.equal(e.windowSeconds, Math.round((e.firstSyncSeconds + e.removalSeconds) * 10) / 10, to);
        }
    });

    it("nftables -> iptables (the rollback) is iptables's first sync: the longest at the same load", () => {
        const back = estimateNode("nftables", "iptables", LOAD_2K);
        assert.ok(back.firstSyncSeconds > estimateNode("iptables", "nftables", LOAD_2K).firstSyncSeconds);
        assert.equal(
            estimateNode("iptables", "ipvs", LOAD_2K).removalSeconds,
            0,
            "ipvs mode removes no iptables rules",
        );
    });

    it("how much slower the new mode's first sync is than the old mode's sync: never below 1", () => {
        assert.equal(slowerBy("nftables", "iptables"), 8.75);
        assert.equal(slowerBy("iptables", "nftables"), 1);
        assert.equal(slowerBy("ipvs", "iptables"), 1.75);
    });

    it("an empty cluster costs only the process's start", () => {
        assert.equal(
            estimateNode("iptables", "nftables", { services: 0, endpoints: 0 }).windowSeconds,
            SYNC_COST.startSeconds,
        );
    });
});

describe("sync estimate in the plan", () => {
    const target = { hash: "h", mode: "nftables" as const, canonical: false };
    const nodes = ["w-1", "w-2", "w-3", "w-4"].map(node);

    it("each pool states its estimate, per node and for its batches and soak, in the plan text", () => {
        const pools = [
            poolSchema.parse({ name: "w", nodeSelector: "pool=w", maxUnavailable: 2, soak: "1m", drain: true }),
        ];
        const small = { services: 1000, endpoints: 10_000 };
        const { plan, findings } = planRollout(pools, nodes, target, { fromMode: "iptables", load: small });
        const e = estimateNode("iptables", "nftables", small);
        assert.deepEqual(plan.pools[0].estimate, {
            ...e,
            poolSeconds: Math.round(e.nodeSeconds * 2 + 60),
            basis: { load: small, measured: 0, moving: 4 },
        });
        assert.match(
            describePlan(plan),
            /\n {5}estimate: ~\d+s per node \(old rules removed ~\d+s, first sync in nftables mode ~\d+s; new connections through it may fail for ~\d+s\), ~\d+m\d*s? for the pool, at 1,000 Services, 10,000 endpoints\n/,
        );
        assert.match(describePlan(plan), /\nestimate in total: ~\d+m\d*s? for 1 pool$/);
        assert.deepEqual(findings, [], "a short window is no finding");
    });

    it("without the load (the runner's own plan) there is no estimate and only ipvs -> iptables needs drain or acceptance", () => {
        const pools = [poolSchema.parse({ name: "w", nodeSelector: "pool=w" })];
        const { plan, findings } = planRollout(pools, nodes, target, { fromMode: "iptables" });
        assert.equal(plan.pools[0].estimate, undefined);
        assert.deepEqual(findings, []);
    });

    it("a window past the bound needs drain or allowUnroutedNode, at any mode pair, with the estimate in the message", () => {
        const big = { services: 10_000, endpoints: 100_000 };
        assert.ok(estimateNode("iptables", "nftables", big).windowSeconds > UNROUTED_BOUND_SECONDS);
        const undrained = [poolSchema.parse({ name: "w", nodeSelector: "pool=w" })];
        const { findings } = planRollout(undrained, nodes, target, { fromMode: "iptables", load: big });
        const f = findings.find((x) => x.code === "pools.unroutedNode");
        assert.ok(f, JSON.stringify(findings));
        assert.equal(f.severity, "error");
        assert.match(
            f.message,
            /^pool w moves iptables -> nftables without draining: on each node the new kube-proxy programs no rule until its first sync in nftables mode, so the node's pods have no Service routing for that time \(about \d+s at 10,000 Services, 100,000 endpoints, estimated\)$/,
        );
        for (const p of [{ drain: true }, { allowUnroutedNode: true }]) {
            const ok = planRollout([poolSchema.parse({ name: "w", nodeSelector: "pool=w", ...p })], nodes, target, {
                fromMode: "iptables",
                load: big,
            });
            assert.deepEqual(
                ok.findings.map((x) => x.code),
                ["pools.syncWindow"],
                "accepted: only the warning with the ways to shorten it",
            );
            assert.match(ok.findings[0].fix!, /drain: true.*maxUnavailable.*maintenance window of ~\d+m/);
        }
    });
});

describe("sync estimate from the syncs earlier moves measured on the nodes", () => {
    const target = { hash: "h", mode: "nftables" as const, canonical: false };
    const measured = (name: string, syncs: NodeState["syncs"]): NodeState => ({ ...node(name), syncs });

    it("a node's measured first sync in the target mode is its first sync; else its old mode's mean sync is scaled by the modes' costs", () => {
        assert.deepEqual(estimateMeasured("iptables", "nftables", { nftables: { first: 9 } }), {
            removalSeconds: 0,
            firstSyncSeconds: 9,
            windowSeconds: 9,
            nodeSeconds: SYNC_COST.restartSeconds + 9 + SYNC_COST.checksSeconds,
        });
        const mean = 35; // 10,000 endpoints at the reference costs
        const e = estimateMeasured("iptables", "nftables", { iptables: { mean, metric: "full" } })!;
        assert.equal(e.firstSyncSeconds, SYNC_COST.startSeconds + 4);
        assert.equal(e.removalSeconds, 1.5);
        assert.deepEqual(
            e,
            estimateNode("iptables", "nftables", { services: 1000, endpoints: 10_000 }),
            "a node as fast as the reference gets the reference's estimate",
        );
        assert.deepEqual(
            estimateMeasured("nftables", "iptables", {
                iptables: { mean: 70, metric: "full" },
                nftables: { first: 2 },
            }),
            estimateNode("nftables", "iptables", { services: 2000, endpoints: 20_000 }),
            "back to a mode the node ran: its own mean sync there",
        );
        assert.equal(estimateMeasured("iptables", "nftables", { ipvs: { mean: 3 } }), undefined, "nothing of use");
        assert.equal(estimateMeasured("iptables", "nftables", undefined), undefined);
    });

    it("the pool's estimate is its slowest moving node's, and says how many were measured", () => {
        const pools = [poolSchema.parse({ name: "w", nodeSelector: "pool=w", drain: true })];
        const small = { services: 1000, endpoints: 10_000 };
        const nodes = [
            measured("w-1", { iptables: { mean: 70, metric: "full" } }),
            node("w-2"),
            node("w-3"),
            node("w-4"),
        ];
        const { plan } = planRollout(pools, nodes, target, { fromMode: "iptables", load: small });
        const e = plan.pools[0].estimate!;
        assert.equal(e.firstSyncSeconds, SYNC_COST.startSeconds + 8, "w-1, twice as slow as the reference");
        assert.deepEqual(e.basis, { load: small, measured: 1, moving: 4 });
        assert.match(
            describePlan(plan),
            /for the pool, from 1 of 4 moving nodes' measured syncs, the others at 1,000 Services, 10,000 endpoints\n/,
        );
    });

    it("the unrouted-node rule follows the measured window: a slow node needs drain without any count, fast ones need nothing at a large count", () => {
        const undrained = [poolSchema.parse({ name: "w", nodeSelector: "pool=w" })];
        const slow = ["w-1", "w-2"].map((n) => measured(n, { iptables: { mean: 350, metric: "full" } }));
        const { findings } = planRollout(undrained, slow, target, { fromMode: "iptables" });
        assert.deepEqual(
            findings.map((f) => f.code),
            ["pools.unroutedNode"],
        );
        assert.match(findings[0].message, /\(about 43s from the moving nodes' measured syncs, estimated\)$/);

        const big = { services: 10_000, endpoints: 100_000 };
        const fast = ["w-1", "w-2"].map((n) => measured(n, { nftables: { first: 4 } }));
        assert.deepEqual(planRollout(undrained, fast, target, { fromMode: "iptables", load: big }).findings, []);
    });
});
