// kubectl drain's rules as a pure decision: which pods a drain evicts, skips and refuses (and
// why), which PodDisruptionBudget blocks a pod, drainTimeout 0, and the ipvs -> iptables rule
// for pools that do not drain.
import assert from "node:assert/strict";
import type { ServerResponse } from "node:http";
import {
    anyPoolDrains,
    blockingPdbs,
    decideDrain,
    describeRefusal,
    drainDeadline,
    drainOptions,
    pdbSelects,
    unroutedNodeFindings,
    type DrainPdb,
    type DrainPod,
    type PoolDrain,
} from "../../components/core/drain.js";
import { planRollout } from "../../components/core/planner.js";
import { parsePools } from "../../components/core/pools.js";
import { poolSchema } from "../../components/rollout/spec.js";
import { answer, clusterOn, failure, listenSimulated, openStream, type SimulatedServer } from "./simulatedApi.js";

const owned = (kind: string, name: string) => [{ kind, name, controller: true }];
const pod = (name: string, extra: Partial<DrainPod> & { labels?: Record<string, string> } = {}): DrainPod => ({
    metadata: { name, namespace: "apps", labels: extra.labels, ...(extra.metadata ?? {}) },
    spec: extra.spec ?? {},
    status: extra.status ?? { phase: "Running" },
});

const pods: DrainPod[] = [
    pod("web-1", { metadata: { name: "web-1", namespace: "apps", ownerReferences: owned("ReplicaSet", "web-7f") } }),
    pod("agent-x", { metadata: { name: "agent-x", namespace: "apps", ownerReferences: owned("DaemonSet", "agent") } }),
    pod("static-x", {
        metadata: { name: "static-x", namespace: "apps", annotations: { "kubernetes.io/config.mirror": "abc" } },
    }),
    pod("bare", {}),
    pod("cache-1", {
        metadata: { name: "cache-1", namespace: "apps", ownerReferences: owned("StatefulSet", "cache") },
        spec: { volumes: [{ name: "scratch", emptyDir: {} }, { name: "cfg" }] },
    }),
    pod("done-job", { status: { phase: "Succeeded" } }),
];

describe("drain with kubectl's rules (pure decision)", () => {
    it("drain: true skips DaemonSet, mirror and finished pods, and refuses the bare pod and the emptyDir pod, naming each and its option", () => {
        const d = decideDrain(pods, drainOptions(true)!);
        assert.deepEqual(
            d.evict.map((p) => p.metadata!.name),
            ["web-1"],
        );
        assert.deepEqual(
            d.skipped.map((s) => s.pod),
            ["apps/agent-x", "apps/static-x", "apps/done-job"],
        );
        assert.deepEqual(
            d.refused.map((r) => [r.pod, r.option]),
            [
                ["apps/bare", "drain.force"],
                ["apps/cache-1", "drain.deleteEmptyDirData"],
            ],
        );
        const msg = describeRefusal("n1", d.refused);
        assert.match(
            msg,
            /drain of n1 refused: apps\/bare: no controller owns it.*allowed by drain\.force; apps\/cache-1: emptyDir volume\(s\) scratch .*allowed by drain\.deleteEmptyDirData/,
        );
        assert.match(msg, /Set drain: \{ force: true, deleteEmptyDirData: true \} on the pool/);
    });
    it("force evicts the bare pod but still refuses emptyDir data; both options evict both", () => {
        const forced = decideDrain(pods, { force: true, deleteEmptyDirData: false });
        assert.deepEqual(
            forced.evict.map((p) => p.metadata!.name),
            ["web-1", "bare"],
        );
        assert.deepEqual(
            forced.refused.map((r) => r.pod),
            ["apps/cache-1"],
        );
        const both = decideDrain(pods, { force: true, deleteEmptyDirData: true });
        assert.deepEqual(
            both.evict.map((p) => p.metadata!.name),
            ["web-1", "bare", "cache-1"],
        );
        assert.equal(both.refused.length, 0);
    });
    it("a non-controller owner reference does not make a pod managed", () => {
        const p = pod("x", {
            metadata: {
                name: "x",
                namespace: "apps",
                ownerReferences: [{ kind: "ReplicaSet", name: "r", controller: false }],
            },
        });
        assert.deepEqual(
            decideDrain([p], drainOptions(true)!).refused.map((r) => r.option),
            ["drain.force"],
        );
    });
    it("names the PDB whose selector selects the pod (matchLabels and matchExpressions, same namespace only)", () => {
        const web = pod("web-1", { labels: { app: "web", tier: "front" } });
        const pdbs = [
            { metadata: { name: "web-pdb", namespace: "apps" }, spec: { selector: { matchLabels: { app: "web" } } } },
            { metadata: { name: "other", namespace: "apps" }, spec: { selector: { matchLabels: { app: "db" } } } },
            {
                metadata: { name: "expr", namespace: "apps" },
                spec: { selector: { matchExpressions: [{ key: "tier", operator: "In", values: ["front"] }] } },
            },
            { metadata: { name: "elsewhere", namespace: "prod" }, spec: { selector: { matchLabels: { app: "web" } } } },
            { metadata: { name: "no-selector", namespace: "apps" }, spec: {} },
        ];
        assert.deepEqual(blockingPdbs(pdbs, web), ["apps/web-pdb", "apps/expr"]);
    });
    it("drainTimeout 0 waits for ever, as kubectl's", () => {
        assert.equal(drainDeadline(1000, 0), Number.POSITIVE_INFINITY);
        assert.equal(drainDeadline(1000, 5), 6000);
    });
    it("the pool accepts drain: { force, deleteEmptyDirData } and rejects other shapes, naming the field", () => {
        assert.equal(
            poolSchema.safeParse({ name: "w", nodeSelector: "a=b", drain: { force: true, deleteEmptyDirData: true } })
                .success,
            true,
        );
        assert.equal(poolSchema.safeParse({ name: "w", nodeSelector: "a=b", drain: { forced: true } }).success, false);
        assert.deepEqual(parsePools([{ name: "w", nodeSelector: "a=b", drain: { force: true } }]).findings, []);
        const bad = parsePools([{ name: "w", nodeSelector: "a=b", drain: { force: "yes" } }]).findings;
        assert.deepEqual(
            bad.map((f) => f.field),
            ["pools[0].drain"],
        );
        const { plan } = planRollout(
            [poolSchema.parse({ name: "w", nodeSelector: "a=b", drain: { force: true }, drainTimeout: "0" })],
            [],
            { hash: "h", mode: "nftables", canonical: false },
        );
        assert.deepEqual(
            [plan.pools[0].drain, plan.pools[0].drainOptions, plan.pools[0].drainTimeoutSeconds],
            [true, { force: true, deleteEmptyDirData: false }, 0],
        );
    });
});

describe("a pool's drain value", () => {
    const table: [PoolDrain, ReturnType<typeof drainOptions>][] = [
        [undefined, undefined],
        [false, undefined],
        [true, { force: false, deleteEmptyDirData: false }],
        [{}, { force: false, deleteEmptyDirData: false }],
        [{ force: true }, { force: true, deleteEmptyDirData: false }],
        [{ deleteEmptyDirData: true }, { force: false, deleteEmptyDirData: true }],
        [
            { force: false, deleteEmptyDirData: true },
            { force: false, deleteEmptyDirData: true },
        ],
    ];
    for (const [drain, options] of table) {
        it(`drain: ${JSON.stringify(drain)} -> ${JSON.stringify(options)}`, () => {
            assert.deepEqual(drainOptions(drain), options);
        });
    }
    it("the rollout evicts pods when any pool drains, with true or with options", () => {
        assert.equal(anyPoolDrains([]), false);
        assert.equal(anyPoolDrains([{}, { drain: false }]), false);
        assert.equal(anyPoolDrains([{}, { drain: true }]), true);
        assert.equal(anyPoolDrains([{ drain: {} }]), true);
    });
});

describe("drain decisions: the reasons logged and refused", () => {
    it("each skipped pod is logged with why: mirror pod, its DaemonSet, or how it finished", () => {
        const d = decideDrain(
            [
                pod("static-x", {
                    metadata: {
                        name: "static-x",
                        namespace: "apps",
                        annotations: { "kubernetes.io/config.mirror": "" },
                    },
                }),
                pod("agent-x", {
                    metadata: { name: "agent-x", namespace: "apps", ownerReferences: owned("DaemonSet", "agent") },
                }),
                pod("ok-job", { status: { phase: "Succeeded" } }),
                pod("bad-job", { status: { phase: "Failed" } }),
            ],
            { force: false, deleteEmptyDirData: false },
        );
        assert.deepEqual(d.skipped, [
            { pod: "apps/static-x", reason: "mirror pod (static pod of the kubelet)" },
            { pod: "apps/agent-x", reason: "DaemonSet pod (agent)" },
            { pod: "apps/ok-job", reason: "finished (Succeeded)" },
            { pod: "apps/bad-job", reason: "finished (Failed)" },
        ]);
        assert.deepEqual(d.refused, []);
    });
    it("a pod with no metadata, spec or status is a bare pod named '/'", () => {
        assert.deepEqual(decideDrain([{}], { force: false, deleteEmptyDirData: false }).refused, [
            {
                pod: "/",
                reason: "no controller owns it (a bare pod is not recreated elsewhere)",
                option: "drain.force",
            },
        ]);
        assert.equal(decideDrain([{}], { force: true, deleteEmptyDirData: false }).evict.length, 1);
    });
    it("an owned pod without spec or status is evicted", () => {
        const p: DrainPod = { metadata: { name: "w", namespace: "apps", ownerReferences: owned("ReplicaSet", "r") } };
        assert.deepEqual(decideDrain([p], { force: false, deleteEmptyDirData: false }).evict, [p]);
    });
    it("names every emptyDir volume; a volume with emptyDir null is not one", () => {
        const p = pod("cache", {
            metadata: { name: "cache", namespace: "apps", ownerReferences: owned("StatefulSet", "cache") },
            spec: {
                volumes: [
                    { name: "a", emptyDir: {} },
                    { name: "b", emptyDir: {} },
                    { name: "c", emptyDir: null },
                ],
            },
        });
        assert.deepEqual(
            decideDrain([p], { force: false, deleteEmptyDirData: false }).refused.map((r) => r.reason),
            ["emptyDir volume(s) a, b (their data is deleted with the pod)"],
        );
        const nulled = pod("x", {
            metadata: { name: "x", namespace: "apps", ownerReferences: owned("StatefulSet", "x") },
            spec: { volumes: [{ name: "c", emptyDir: null }] },
        });
        assert.deepEqual(decideDrain([nulled], { force: false, deleteEmptyDirData: false }).evict, [nulled]);
    });
    it("the refusal names the kubectl drain flags of the options it needs", () => {
        const force = { pod: "apps/bare", reason: "r", option: "drain.force" } as const;
        const emptyDir = { pod: "apps/cache", reason: "r", option: "drain.deleteEmptyDirData" } as const;
        assert.match(
            describeRefusal("n1", [force, force]),
            /Set drain: \{ force: true \} on the pool to evict them \(kubectl drain --force\), or move/,
        );
        assert.match(
            describeRefusal("n1", [emptyDir]),
            /Set drain: \{ deleteEmptyDirData: true \} on the pool to evict them \(kubectl drain --delete-emptydir-data\)/,
        );
        assert.match(describeRefusal("n1", [emptyDir, force]), /\(kubectl drain --delete-emptydir-data --force\)/);
    });
});

describe("which PodDisruptionBudget covers a pod", () => {
    const web = pod("web-1", { labels: { app: "web", tier: "front" } });
    const everyPod = { selector: {} };
    it("a budget selects pods of its own namespace; one without a namespace, or a pod without one, is not compared", () => {
        assert.equal(pdbSelects({ metadata: { namespace: "apps" }, spec: everyPod }, web), true);
        assert.equal(pdbSelects({ metadata: { namespace: "prod" }, spec: everyPod }, web), false);
        assert.equal(pdbSelects({ metadata: { name: "p" }, spec: everyPod }, web), true);
        assert.equal(pdbSelects({ spec: everyPod }, web), true);
        assert.equal(pdbSelects({ metadata: { namespace: "prod" }, spec: everyPod }, {}), true);
    });
    it("no selector selects nothing, an empty one every pod, labels or not", () => {
        assert.equal(pdbSelects({ metadata: { namespace: "apps" } }, web), false);
        assert.equal(pdbSelects({ metadata: { namespace: "apps" }, spec: {} }, web), false);
        assert.equal(pdbSelects({ spec: everyPod }, {}), true);
    });
    // web has app=web, tier=front
    const expressions: [string, { key: string; operator: string; values?: string[] }, boolean][] = [
        ["In, value listed", { key: "app", operator: "In", values: ["db", "web"] }, true],
        ["In, value not listed", { key: "app", operator: "In", values: ["db"] }, false],
        ["In, label absent", { key: "zone", operator: "In", values: ["web"] }, false],
        ["In, no values", { key: "app", operator: "In" }, false],
        ["NotIn, value listed", { key: "app", operator: "NotIn", values: ["web"] }, false],
        ["NotIn, value not listed", { key: "app", operator: "NotIn", values: ["db"] }, true],
        ["NotIn, label absent", { key: "zone", operator: "NotIn", values: ["web"] }, true],
        ["Exists, label present", { key: "app", operator: "Exists" }, true],
        ["Exists, label absent", { key: "zone", operator: "Exists" }, false],
        ["DoesNotExist, label present", { key: "app", operator: "DoesNotExist" }, false],
        ["DoesNotExist, label absent", { key: "zone", operator: "DoesNotExist" }, true],
    ];
    for (const [what, expression, selects] of expressions) {
        it(`matchExpressions ${what}: ${selects ? "selects" : "does not select"}`, () => {
            const pdb: DrainPdb = { spec: { selector: { matchExpressions: [expression] } } };
            assert.equal(pdbSelects(pdb, web), selects);
        });
    }
    it("every expression must hold, and the matchLabels too", () => {
        const exists = { key: "app", operator: "Exists" };
        const absent = { key: "zone", operator: "Exists" };
        assert.equal(pdbSelects({ spec: { selector: { matchExpressions: [exists, absent] } } }, web), false);
        assert.equal(
            pdbSelects({ spec: { selector: { matchLabels: { app: "db" }, matchExpressions: [exists] } } }, web),
            false,
        );
    });
});

describe("ipvs -> iptables leaves a node without Service routing: drain or allowUnroutedNode", () => {
    const target = { hash: "h", mode: "iptables" as const, canonical: false };
    it("a pool that neither drains nor allows it fails the plan, saying how long and naming the fix", () => {
        const { findings } = planRollout([poolSchema.parse({ name: "workers", nodeSelector: "a=b" })], [], target, {
            fromMode: "ipvs",
        });
        const f = findings.find((x) => x.code === "pools.unroutedNode");
        assert.ok(f, "expected a pools.unroutedNode finding");
        assert.equal(f.severity, "error");
        assert.equal(f.field, "pools[0].drain");
        assert.match(f.message, /^pool workers moves ipvs -> iptables without draining: /);
        assert.match(f.message, /no Service routing for that time .*at most 120s for the cleanup plus 180s/);
        assert.match(f.fix!, /drain: true .*allowUnroutedNode: true/);
    });
    it("drain: true, drain options or allowUnroutedNode: true pass; other moves are not concerned", () => {
        for (const p of [{ drain: true }, { drain: { force: true } }, { allowUnroutedNode: true }]) {
            assert.deepEqual(unroutedNodeFindings([{ name: "w", ...p }], "ipvs", "iptables"), []);
        }
        assert.deepEqual(unroutedNodeFindings([{ name: "w" }], "ipvs", "nftables"), []);
        assert.deepEqual(unroutedNodeFindings([{ name: "w" }], "nftables", "iptables"), []);
        assert.deepEqual(
            unroutedNodeFindings([{ name: "w", drain: false }], "ipvs", "iptables").map((f) => f.code),
            ["pools.unroutedNode"],
        );
    });
});

describe("a drain that runs out of time (the tool's cluster client, SIMULATED API server)", () => {
    let sim: SimulatedServer | undefined;
    afterEach(async () => sim?.close());

    /**
     * SIMULATED API server: these pods stay on workers-1 whatever is evicted (an accepted eviction
     * marks its pod terminating); an eviction of a pod labelled app=web is refused by the
     * PodDisruptionBudget apps/web (429), as the API server refuses it.
     */
    async function nodeThatWillNotEmpty(pods: DrainPod[]): Promise<SimulatedServer> {
        const streams = new Set<ServerResponse>();
        return listenSimulated((req, res) => {
            const url = req.url ?? "";
            if (req.method === "GET" && url.includes("watch=true")) return openStream(res, streams);
            if (req.method === "GET" && url.startsWith("/api/v1/pods"))
                return answer(res, 200, { kind: "PodList", metadata: {}, items: pods });
            if (req.method === "GET" && url.includes("/poddisruptionbudgets"))
                return answer(res, 200, {
                    items: [
                        {
                            metadata: { name: "web", namespace: "apps" },
                            spec: { selector: { matchLabels: { app: "web" } } },
                        },
                    ],
                });
            if (req.method === "POST" && url.endsWith("/eviction")) {
                const p = pods.find((x) => url.includes(`/pods/${x.metadata?.name}/`));
                if (p?.metadata?.labels?.app === "web")
                    return answer(
                        res,
                        429,
                        failure(
                            429,
                            "TooManyRequests",
                            "Cannot evict pod as it would violate the pod's disruption budget.",
                        ),
                    );
                p!.metadata = { ...p!.metadata, deletionTimestamp: new Date() };
                return answer(res, 201, { kind: "Status", status: "Success" });
            }
            answer(res, 404, failure(404, "NotFound"));
        }, streams);
    }
    const replicated = (name: string, labels: Record<string, string>): DrainPod =>
        pod(name, {
            metadata: { name, namespace: "apps", labels, ownerReferences: owned("ReplicaSet", `${name}-7f`) },
        });

    it("fails naming the node, its timeout, every pod left and the budget that refused each blocked eviction", async () => {
        sim = await nodeThatWillNotEmpty([
            replicated("web-1", { app: "web" }),
            replicated("job-2", { app: "job" }),
            replicated("web-3", { app: "web" }),
        ]);
        const cluster = clusterOn(sim.url);
        const err = await cluster.drain("workers-1", 1, () => undefined).catch((e: Error) => e);
        cluster.close();
        assert.ok(err instanceof Error, String(err));
        const [left, ...blocked] = err.message.split("; ");
        assert.equal(
            left,
            "drain of workers-1 timed out after 1s with 3 pod(s) left (apps/web-1, apps/job-2, apps/web-3)",
        );
        assert.deepEqual(
            blocked.map((b) =>
                b.replace(/: eviction refused by PodDisruptionBudget apps\/web: .*disruption budget.*$/, ": apps/web"),
            ),
            ["apps/web-1: apps/web", "apps/web-3: apps/web"],
            err.message,
        );
    });

    it("names no budget when every eviction was accepted and the pods are still terminating", async () => {
        sim = await nodeThatWillNotEmpty([replicated("job-2", { app: "job" })]);
        const cluster = clusterOn(sim.url);
        const err = await cluster.drain("workers-1", 1, () => undefined).catch((e: Error) => e);
        cluster.close();
        assert.ok(err instanceof Error, String(err));
        assert.equal(err.message, "drain of workers-1 timed out after 1s with 1 pod(s) left (apps/job-2)");
    });
});
