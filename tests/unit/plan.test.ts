// components/core/plan.ts and planner.ts: which nodes move, in which pool and batches (planRollout), and the plan
// as a reviewer reads it, at 3, 60 and 5,000 nodes: natural name order, per pool the
// counts, and names listed when few and summarized when many. The texts are compared to reviewed
// files under tests/fixtures/golden (UPDATE_GOLDEN=1 rewrites them; review the diff before committing).
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
    compareNodeNames,
    configHash,
    describePlan,
    planRollout as planParsed,
    PLAN_TEXT_LIMITS,
    planOutput,
    type NodeState,
    type RolloutTarget,
} from "../../components/core/index.js";
import { parsePools, poolSchema, type PoolSpec } from "../../components/core/pools.js";
import { FIXTURES, fixture } from "../helpers.js";

/** The planner given the pools as declared, parsed as the component and the CLI parse them. */
function planRollout(
    pools: PoolSpec[],
    ...rest: Parameters<typeof planParsed> extends [unknown, ...infer R] ? R : never
) {
    return planParsed(
        pools.map((p) => poolSchema.parse(p)),
        ...rest,
    );
}

const target: RolloutTarget = { hash: "abc123", mode: "nftables", canonical: false };

/** canary=1 and workers=n-1, given to the planner in shuffled (string) order, as an API list may be. */
function cluster(n: number): NodeState[] {
    const nodes: NodeState[] = [
        {
            name: "canary-1",
            labels: { pool: "canary" },
            kernelVersion: "6.8.0-51-generic",
            operatingSystem: "linux",
            placement: null,
        },
    ];
    for (let i = 1; i < n; i++)
        nodes.push({
            name: `workers-${i}`,
            labels: { pool: "workers" },
            kernelVersion: "6.8.0-51-generic",
            operatingSystem: "linux",
            placement: null,
        });
    return nodes.sort((a, b) => (a.name < b.name ? -1 : 1));
}

const pools = (workersAtOnce: number): PoolSpec[] => [
    { name: "canary", nodeSelector: "pool=canary", maxUnavailable: 1, soak: "10m" },
    { name: "workers", nodeSelector: "pool=workers", maxUnavailable: workersAtOnce, drain: true },
];

function golden(name: string, text: string): string {
    const file = join(FIXTURES, "golden", `${name}.txt`);
    if (process.env.UPDATE_GOLDEN) {
        mkdirSync(join(FIXTURES, "golden"), { recursive: true });
        writeFileSync(file, text + "\n");
    }
    return fixture(join("golden", `${name}.txt`)).replace(/\n$/, "");
}

describe("node names in natural order", () => {
    it("orders runs of digits as numbers: workers-2 before workers-10 before workers-100", () => {
        assert.deepEqual(["workers-10", "workers-100", "workers-2", "workers-1"].sort(compareNodeNames), [
            "workers-1",
            "workers-2",
            "workers-10",
            "workers-100",
        ]);
    });
    it("orders names by their text first, then numbers inside it (ip-10-0-1-5 before ip-10-0-12-1)", () => {
        assert.deepEqual(["ip-10-0-12-1", "b-1", "ip-10-0-1-5", "a-20", "a-3"].sort(compareNodeNames), [
            "a-3",
            "a-20",
            "b-1",
            "ip-10-0-1-5",
            "ip-10-0-12-1",
        ]);
    });
    it("is a total order: numbers equal by value (n-01, n-1) fall back to string order, equal names compare 0", () => {
        assert.ok(compareNodeNames("n-01", "n-1") < 0 && compareNodeNames("n-1", "n-01") > 0);
        assert.equal(compareNodeNames("n-7", "n-7"), 0);
        assert.ok(compareNodeNames("n", "n-1") < 0);
    });
    it("compares numbers longer than a double holds exactly", () => {
        assert.ok(compareNodeNames("n-12345678901234567890", "n-12345678901234567891") < 0);
    });
    it("cuts batches in natural order, so workers-1..workers-3 move together and workers-10 later", () => {
        const { plan } = planRollout(pools(3), cluster(12), target);
        assert.deepEqual(plan.pools[1].batches, [
            ["workers-1", "workers-2", "workers-3"],
            ["workers-4", "workers-5", "workers-6"],
            ["workers-7", "workers-8", "workers-9"],
            ["workers-10", "workers-11"],
        ]);
        assert.deepEqual(plan.pools[1].nodes.map((n) => n.name).slice(0, 3), ["workers-1", "workers-2", "workers-3"]);
    });
});

describe("plan text at any size", () => {
    it("3 nodes: every name, per pool the node count, batch count and size, drain and soak (golden)", () => {
        const text = describePlan(planRollout(pools(2), cluster(3), target).plan);
        assert.equal(text, golden("plan-3-nodes", text));
        assert.match(text, /pool workers \(pool=workers\): 2 node\(s\), max 2 at a time in 1 batch, drain first/);
        assert.match(text, /batch 1: workers-1, workers-2$/m);
    });

    it("60 nodes: batches as first .. last (n nodes) once a pool moves more than the names limit (golden)", () => {
        const { plan } = planRollout(pools(10), cluster(60), target);
        const text = describePlan(plan);
        assert.equal(text, golden("plan-60-nodes", text));
        assert.match(text, /batch 1: workers-1 \.\. workers-10 \(10 nodes\)$/m);
        assert.match(text, /batch 6: workers-51 \.\. workers-59 \(9 nodes\)$/m);
        assert.doesNotMatch(text, /workers-2,/, "names are not listed one by one");
    });

    it("5,000 nodes: the first and last batches and a count of the rest, in a screenful (golden)", () => {
        const { plan } = planRollout(pools(50), cluster(5000), target);
        const text = describePlan(plan);
        assert.equal(text, golden("plan-5000-nodes", text));
        const lines = text.split("\n");
        assert.ok(
            lines.length <= 4 + PLAN_TEXT_LIMITS.headBatches + PLAN_TEXT_LIMITS.tailBatches + 1,
            `${lines.length} lines`,
        );
        assert.match(text, /4999 node\(s\), max 50 at a time in 100 batches/);
        assert.match(text, /\.\.\. 93 more batches \(4650 nodes: workers-251 \.\. workers-4900\) \.\.\./);
        assert.match(text, /batch 100: workers-4951 \.\. workers-4999 \(49 nodes\)$/m);
    });

    it("5,000 nodes: the plan object still lists every node and every batch in natural order", () => {
        const { plan } = planRollout(pools(50), cluster(5000), target);
        const workers = plan.pools[1];
        assert.equal(workers.nodes.length, 4999);
        assert.equal(workers.moving, 4999);
        assert.equal(workers.batches.length, 100);
        assert.deepEqual(
            workers.batches.flat(),
            Array.from({ length: 4999 }, (_, i) => `workers-${i + 1}`),
        );
        assert.equal(plan.moving, 5000);
    });

    it("names every node while a pool moves at most 20, and summarizes batches of 3 or more beyond", () => {
        const batchLines = (n: number, size: number) =>
            describePlan(planRollout(pools(size), cluster(n + 1), target).plan)
                .split("\n")
                .filter((l) => l.includes("batch ") && l.includes("workers-"));
        assert.deepEqual(batchLines(6, 3), [
            "       batch 1: workers-1, workers-2, workers-3",
            "       batch 2: workers-4, workers-5, workers-6",
        ]);
        assert.equal(
            batchLines(20, 10)[1],
            "       batch 2: workers-11, workers-12, workers-13, workers-14, workers-15, workers-16, workers-17, workers-18, workers-19, workers-20",
        );
        assert.deepEqual(batchLines(22, 10), [
            "       batch 1: workers-1 .. workers-10 (10 nodes)",
            "       batch 2: workers-11 .. workers-20 (10 nodes)",
            "       batch 3: workers-21, workers-22",
        ]);
        assert.equal(batchLines(21, 10)[2], "       batch 3: workers-21");
    });
    it("lists up to 10 batches in full; beyond, the first 5, a count of the rest and the last 2", () => {
        const lines = (batches: number) =>
            describePlan(planRollout(pools(1), cluster(batches + 1), target).plan)
                .split("\n")
                .slice(4);
        assert.deepEqual(
            lines(10),
            Array.from({ length: 10 }, (_, i) => `       batch ${i + 1}: workers-${i + 1}`),
        );
        assert.deepEqual(lines(11), [
            ...Array.from({ length: 5 }, (_, i) => `       batch ${i + 1}: workers-${i + 1}`),
            "       ... 4 more batches (4 nodes: workers-6 .. workers-9) ...",
            "       batch 10: workers-10",
            "       batch 11: workers-11",
        ]);
    });
    it("says when the target is the installer's DaemonSet, and what a drain may evict", () => {
        const { plan } = planRollout(
            [
                { name: "canary", nodeSelector: "pool=canary", drain: { force: true } },
                { name: "workers", nodeSelector: "pool=workers", drain: { deleteEmptyDirData: true } },
            ],
            // on a configuration of an earlier rollout, so both move back to the installer's
            cluster(2).map((n) => ({ ...n, placement: "0ld0ld0ld0" })),
            { ...target, canonical: true },
        );
        const text = describePlan(plan).split("\n");
        assert.equal(
            text[0],
            "rollout to nftables (the installer's DaemonSet (canonical ConfigMap)): 2 node(s) move, pools in this order:",
        );
        assert.match(text[1], /in 1 batch, drain first, bare pods too$/);
        assert.match(text[3], /in 1 batch, drain first, emptyDir data deleted$/);
    });
    it("the component's plan output: counts, one string per batch and the verified names", () => {
        const nodes = cluster(5).map((n) =>
            n.name === "workers-1" || n.name === "workers-3" ? { ...n, placement: "abc123", verified: "abc123" } : n,
        );
        const { plan } = planRollout(pools(1), nodes, target);
        const output = planOutput(plan);
        assert.deepEqual(output.target, target);
        assert.equal(output.moving, 3);
        assert.deepEqual(
            output.pools.map((p) => [p.name, p.nodes, p.batches, p.done, p.moving, p.maxUnavailable]),
            [
                ["canary", 1, ["canary-1"], "", 1, 1],
                ["workers", 4, ["workers-2", "workers-4"], "workers-1 workers-3", 2, 1],
            ],
        );
        const two = planOutput(planRollout(pools(2), cluster(5), target).plan);
        assert.deepEqual(two.pools[1].batches, ["workers-1 workers-2", "workers-3 workers-4"]);
    });
    it("names the nodes already verified by count, and leaves them out of the batches", () => {
        const nodes = cluster(60).map((n) =>
            n.name === "workers-1" || n.name === "workers-2" ? { ...n, placement: "abc123", verified: "abc123" } : n,
        );
        const { plan } = planRollout(pools(10), nodes, target);
        const text = describePlan(plan);
        assert.match(text, /59 node\(s\), 2 already verified, max 10 at a time in 6 batches/);
        assert.match(text, /batch 1: workers-3 \.\. workers-12 \(10 nodes\)$/m);
        assert.equal(plan.pools[1].moving, 57);
    });
});

function node(name: string, pool: string, extra: Partial<NodeState> = {}): NodeState {
    return {
        name,
        labels: { pool },
        kernelVersion: "6.8.0-51-generic",
        operatingSystem: "linux",
        placement: null,
        ...extra,
    };
}

describe("rollout plan", () => {
    const nodes = [
        node("c1", "canary"),
        node("w1", "workers"),
        node("w2", "workers"),
        node("w3", "workers"),
        node("b1", "batch"),
    ];
    const pools = [
        { name: "canary", nodeSelector: "pool=canary" },
        { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2 },
        { name: "batch", nodeSelector: "pool=batch", soak: "1m" },
    ];

    it("keeps the declared pool order and cuts batches of maxUnavailable", () => {
        const { plan, findings } = planRollout(pools, nodes, target);
        assert.deepEqual(findings, []);
        assert.deepEqual(
            plan.pools.map((p) => [p.name, p.batches]),
            [
                ["canary", [["c1"]]],
                ["workers", [["w1", "w2"], ["w3"]]],
                ["batch", [["b1"]]],
            ],
        );
        assert.equal(plan.moving, 5);
        assert.equal(plan.pools[2].soakSeconds, 60);
    });
    it("resumes: nodes verified on the target are done and not moved again", () => {
        const resumed = nodes.map((n) =>
            n.name === "c1" || n.name === "w1" ? { ...n, placement: "abc123", verified: "abc123" } : n,
        );
        const { plan } = planRollout(pools, resumed, target);
        assert.deepEqual(plan.pools[0].batches, []);
        assert.deepEqual(plan.pools[1].batches, [["w2", "w3"]]);
        assert.equal(plan.pools[0].nodes[0].action, "done");
    });
    it("a node on the target but not verified is moved (verified) again", () => {
        const { plan } = planRollout(
            pools,
            nodes.map((n) => (n.name === "c1" ? { ...n, placement: "abc123" } : n)),
            target,
        );
        assert.deepEqual(plan.pools[0].batches, [["c1"]]);
    });
    it("a canonical target is reached by nodes without the label", () => {
        const t = { ...target, canonical: true };
        const { plan } = planRollout(
            pools,
            nodes.map((n) => (n.name === "c1" ? { ...n, placement: "abc123" } : n)),
            t,
        );
        assert.equal(plan.moving, 1);
        assert.deepEqual(plan.pools[0].batches, [["c1"]]);
    });
    it("refuses overlapping pools and nodes in no pool, naming them", () => {
        const { findings } = planRollout(
            [
                { name: "a", nodeSelector: "pool in (canary,workers)" },
                { name: "b", nodeSelector: "pool=workers" },
            ],
            nodes,
            target,
        );
        const overlap = findings.filter((f) => f.code === "pools.overlap");
        assert.deepEqual(
            overlap.map((f) => f.nodes![0]),
            ["w1", "w2", "w3"],
        );
        const orphans = findings.find((f) => f.code === "pools.unassigned")!;
        assert.deepEqual(orphans.nodes, ["b1"]);
        assert.equal(orphans.severity, "error");
    });
    it("an overlap names the node, both pools and a selector that would narrow the later one", () => {
        const { findings } = planRollout(
            [
                { name: "all", nodeSelector: "kubernetes.io/os!=windows" },
                { name: "canary", nodeSelector: "pool=canary" },
            ],
            [node("c1", "canary")],
            target,
        );
        assert.deepEqual(findings, [
            {
                severity: "error",
                code: "pools.overlap",
                field: "pools[1].nodeSelector",
                nodes: ["c1"],
                message: "node c1 is selected by pool all and by pool canary: each node must be in exactly one pool",
                fix: "narrow one of the selectors (e.g. pool=canary,pool!=all)",
            },
        ]);
    });
    it("a pool that selects no node is a warning naming its selector", () => {
        const { plan, findings } = planRollout([...pools, { name: "gpu", nodeSelector: "pool=gpu" }], nodes, target);
        assert.deepEqual(findings, [
            {
                severity: "warning",
                code: "pools.noNodes",
                field: "pools[3].nodeSelector",
                message: "pool gpu (pool=gpu) selects no node",
            },
        ]);
        assert.deepEqual(plan.pools[3].batches, []);
    });
    it("names at most 10 nodes in no pool, then ..., and says why they matter", () => {
        const orphans = (n: number) =>
            planRollout(
                [{ name: "canary", nodeSelector: "pool=canary" }],
                [node("c1", "canary"), ...Array.from({ length: n }, (_, i) => node(`w${i + 1}`, "workers"))],
                target,
            ).findings.find((f) => f.code === "pools.unassigned")!;
        const ten = orphans(10);
        assert.match(
            ten.message,
            /^10 node\(s\) run kube-proxy but are in no pool: w1, w2, .*, w10\. When the rollout finishes/,
        );
        assert.equal(ten.nodes!.length, 10);
        const eleven = orphans(11);
        assert.match(
            eleven.message,
            /^11 node\(s\) run kube-proxy but are in no pool: w1, .*, w10 \.\.\. and 1 more\. When/,
        );
        assert.doesNotMatch(eleven.message, /w11/);
        assert.equal(eleven.nodes!.length, 11, "the finding itself lists every node");
        assert.match(eleven.message, /they would switch mode unverified at their next restart$/);
    });
    it("ipvs -> iptables with a pool that neither drains nor allows it: only that error, and no pool planned", () => {
        const { plan, findings } = planRollout(
            [{ name: "canary", nodeSelector: "pool=canary" }],
            nodes,
            { ...target, mode: "iptables" },
            { fromMode: "ipvs", podTimeoutSeconds: 60 },
        );
        assert.deepEqual(
            findings.map((f) => [f.severity, f.code]),
            [["error", "pools.unroutedNode"]],
        );
        assert.match(findings[0].message, /at most 120s for the cleanup plus 60s for each kube-proxy/);
        assert.deepEqual(plan, { target: { ...target, mode: "iptables" }, pools: [], moving: 0 });
    });
    it("ipvs -> iptables with every pool draining is planned", () => {
        const { plan, findings } = planRollout(
            pools.map((p) => ({ ...p, drain: true })),
            nodes,
            { ...target, mode: "iptables" },
            { fromMode: "ipvs" },
        );
        assert.deepEqual(findings, []);
        assert.equal(plan.moving, 5);
    });
    it("judges the kernels of the nodes that will move, and only those", () => {
        const old = [...nodes.slice(0, 4), node("b1", "batch", { kernelVersion: "5.10.0" })];
        const { findings } = planRollout(pools, old, target);
        const f = findings.find((x) => x.code === "node.kernelTooOld")!;
        assert.deepEqual(f.nodes, ["b1"]);
        assert.match(f.field, /pools\[2\] \(batch\)/);
        const done = planRollout(
            pools,
            old.map((n) => (n.name === "b1" ? { ...n, placement: "abc123", verified: "abc123" } : n)),
            target,
        );
        assert.ok(!done.findings.some((x) => x.code === "node.kernelTooOld"));
    });
    it("windows nodes are not in any pool's plan and are not orphans", () => {
        const { plan, findings } = planRollout(
            pools,
            [...nodes, { ...node("win1", "canary"), operatingSystem: "windows" }],
            target,
        );
        assert.deepEqual(findings, []);
        assert.ok(!plan.pools.some((p) => p.nodes.some((n) => n.name === "win1")), "win1 is in no pool's plan");
        assert.equal(plan.moving, planRollout(pools, nodes, target).plan.moving, "it does not count as moving");
    });
    it("validates pool fields", () => {
        const { pools, findings } = parsePools([
            { name: "Bad Name", nodeSelector: "pool=x", maxUnavailable: 0, soak: "soon" },
        ]);
        assert.equal(pools, undefined);
        assert.deepEqual(findings.map((f) => f.field).sort(), [
            "pools[0].maxUnavailable",
            "pools[0].name",
            "pools[0].soak",
        ]);
    });
    it("hashes configurations by content", () => {
        assert.equal(configHash("a"), configHash("a"));
        assert.notEqual(configHash("a"), configHash("b"));
        assert.match(configHash("a"), /^[0-9a-f]{10}$/);
    });
});
