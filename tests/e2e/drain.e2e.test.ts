// Drain with kubectl's rules on the reference cluster (kwok nodes: the API server, the
// Eviction API, PodDisruptionBudgets and the controllers are real; the kubelets are kwok's):
// bare and emptyDir pods refuse a drain: true, naming them, and leave the node unmoved and
// uncordoned; a PDB with maxUnavailable 0 blocks until drainTimeout and is named (issue 10's F6);
// with force and deleteEmptyDirData the drain evicts them and the node moves.
import assert from "node:assert/strict";
import type * as k8s from "@kubernetes/client-node";
import type { ClusterState } from "../../scripts/referenceCluster.js";
import { MARKS } from "../../components/core/plan.js";
import { UNSCHEDULABLE_TAINT } from "../../components/core/nodes.js";
import { clients, startCluster, stopCluster } from "./support.js";
import { rollout, writeSpec } from "./drainSupport.js";

const KWOK = "(kwok nodes: built-in node checks not run)";
const NODE = "canary-1";
// kwok's fake nodes carry a taint of their own; the cordon's unschedulable taint is not tolerated,
// so a ReplicaSet's replacement pod waits Pending while the node is cordoned
const TOLERATE_ALL = [{ key: "kwok.x-k8s.io/node", operator: "Exists" }];

describe("@e2e drain with kubectl's rules " + KWOK, function () {
    this.timeout(600_000);
    let cluster: ClusterState | undefined;
    let core: k8s.CoreV1Api;
    let apps: k8s.AppsV1Api;

    before(async () => {
        cluster = await startCluster({
            nodes: "kwok",
            pools: [
                ["canary", 1],
                ["workers", 1],
            ],
        });
        ({ core, apps } = clients(cluster));
        await createBare();
        const rs = (name: string, extra: Record<string, any>) =>
            apps.createNamespacedReplicaSet({
                namespace: "default",
                body: {
                    metadata: { name },
                    spec: {
                        replicas: 1,
                        selector: { matchLabels: { app: name } },
                        template: {
                            metadata: { labels: { app: name } },
                            spec: {
                                nodeSelector: { pool: "canary" },
                                terminationGracePeriodSeconds: 1,
                                tolerations: TOLERATE_ALL,
                                containers: [{ name: "c", image: "stand-in" }],
                                ...extra,
                            },
                        },
                    },
                },
            });
        await rs("scratch", { volumes: [{ name: "scratch", emptyDir: {} }] });
        await rs("guarded", {});
        for (let i = 0; i < 120; i++) {
            const pods = (await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${NODE}` })).items.filter(
                (p) => p.metadata?.namespace === "default" && p.status?.phase === "Running",
            );
            if (pods.length === 3) return;
            await new Promise((r) => setTimeout(r, 500));
        }
        throw new Error("the test pods did not start on canary-1");
    });
    after(async () => stopCluster(cluster));

    async function createBare() {
        await core.createNamespacedPod({
            namespace: "default",
            body: {
                metadata: { name: "bare" },
                spec: {
                    nodeName: NODE,
                    terminationGracePeriodSeconds: 1,
                    tolerations: TOLERATE_ALL,
                    containers: [{ name: "c", image: "stand-in" }],
                },
            },
        });
    }

    async function nodeUnmovedAndUncordoned() {
        const n = await core.readNode({ name: NODE });
        assert.equal(n.spec?.unschedulable ?? false, false, `${NODE} is uncordoned`);
        assert.ok(
            !(n.spec?.taints ?? []).some((t) => t.key === UNSCHEDULABLE_TAINT.key),
            `${NODE} keeps no unschedulable taint`,
        );
        assert.equal(
            n.metadata?.labels?.[MARKS.configLabel],
            undefined,
            `${NODE} still runs the installer's configuration`,
        );
    }
    const onNode = async () =>
        (await core.listNamespacedPod({ namespace: "default", fieldSelector: `spec.nodeName=${NODE}` })).items
            .filter((p) => !p.metadata?.deletionTimestamp)
            .map((p) => p.metadata!.name!);

    it("drain: true refuses a bare pod and an emptyDir pod, naming both and the options; nothing evicted, the node not moved and uncordoned", async () => {
        const { file: spec } = await writeSpec(cluster!, [
            { name: "canary", nodeSelector: "pool=canary", drain: true, drainTimeout: "30s" },
            { name: "workers", nodeSelector: "pool=workers" },
        ]);
        const r = await rollout(cluster!.kubeconfig, spec, "canary");
        assert.equal(r.code, 1, r.stdout + r.stderr);
        assert.match(
            r.stderr,
            /drain of canary-1 refused: default\/bare: no controller owns it.*allowed by drain\.force/,
        );
        assert.match(
            r.stderr,
            /default\/scratch-[a-z0-9]+: emptyDir volume\(s\) scratch .*allowed by drain\.deleteEmptyDirData/,
        );
        assert.match(r.stderr, /Set drain: \{ force: true, deleteEmptyDirData: true \} on the pool/);
        assert.equal((await onNode()).length, 3, "no pod was evicted");
        await nodeUnmovedAndUncordoned();
    });

    it("a PodDisruptionBudget with maxUnavailable 0 blocks the drain until drainTimeout and is named; the node is not moved and uncordoned", async () => {
        const { kc } = clients(cluster!);
        const policy = kc.makeApiClient((await import("@kubernetes/client-node")).PolicyV1Api);
        await policy.createNamespacedPodDisruptionBudget({
            namespace: "default",
            body: {
                metadata: { name: "guarded-pdb" },
                spec: { maxUnavailable: 0, selector: { matchLabels: { app: "guarded" } } },
            },
        });
        // the disruption controller computes the budget's status; until then evictions are refused too
        const { file: spec } = await writeSpec(cluster!, [
            {
                name: "canary",
                nodeSelector: "pool=canary",
                drain: { force: true, deleteEmptyDirData: true },
                drainTimeout: "8s",
            },
            { name: "workers", nodeSelector: "pool=workers" },
        ]);
        const r = await rollout(cluster!.kubeconfig, spec, "canary");
        assert.equal(r.code, 1, r.stdout + r.stderr);
        assert.match(
            r.stderr,
            /drain of canary-1 timed out after 8s with 1 pod\(s\) left \(default\/guarded-[a-z0-9-]+\); default\/guarded-[a-z0-9-]+: eviction refused by PodDisruptionBudget default\/guarded-pdb/,
        );
        assert.match(r.stderr, /node canary-1 was not changed \(its drain failed\) and was uncordoned/);
        await nodeUnmovedAndUncordoned();
        await policy.deleteNamespacedPodDisruptionBudget({ name: "guarded-pdb", namespace: "default" });
    });

    it("with drain: { force: true, deleteEmptyDirData: true } the bare and emptyDir pods are evicted and the node moves", async () => {
        const { file: spec } = await writeSpec(cluster!, [
            {
                name: "canary",
                nodeSelector: "pool=canary",
                drain: { force: true, deleteEmptyDirData: true },
                drainTimeout: "0",
            },
            { name: "workers", nodeSelector: "pool=workers" },
        ]);
        // the budget's drain (with force) evicted the bare pod already: put one back
        if (!(await onNode()).includes("bare")) {
            for (
                let i = 0;
                i < 60 &&
                (await core.listNamespacedPod({ namespace: "default", fieldSelector: "metadata.name=bare" })).items
                    .length;
                i++
            )
                await new Promise((r) => setTimeout(r, 500));
            await createBare();
        }
        const before = await onNode();
        const r = await rollout(cluster!.kubeconfig, spec, "canary");
        assert.equal(r.code, 0, r.stdout + r.stderr);
        assert.match(r.stdout, /draining \(timeout none\)/);
        assert.match(r.stdout, /evicted default\/bare \(grace period 1s\)/);
        assert.match(r.stdout, /evicted default\/scratch-/);
        // the ReplicaSets recreate theirs (on canary-1 again once it is uncordoned); the originals are gone
        const after = await onNode();
        assert.deepEqual(
            before.filter((p) => after.includes(p)),
            [],
            "every pod that was on canary-1 was evicted",
        );
        assert.ok(!after.includes("bare"), "the bare pod is gone (nothing recreates it)");
        const n = await core.readNode({ name: NODE });
        assert.ok(n.metadata?.labels?.[MARKS.configLabel], "canary-1 moved to the target configuration");
        assert.equal(n.spec?.unschedulable ?? false, false);
    });
});
