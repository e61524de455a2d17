// Least privilege, proven: a rollout run as a ServiceAccount bound to exactly the shipped
// ClusterRole and Role succeeds; with one permission taken away in turn it refuses before it
// changes anything, naming the access that is denied and the identity. kwok nodes (built-in node checks off), so
// the probe pods' permissions (pods create, pods/log in kube-system) are not exercised here.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import type { ClusterState } from "../../scripts/referenceCluster.js";
import { accessFindings, rbacObjects, type RbacRole } from "../../components/core/rbac.js";
import { readSnapshot } from "../../components/cluster/snapshot.js";
import { MARKS } from "../../components/core/plan.js";
import { clients, scratchDir, serviceAccountKubeconfig, startCluster, stopCluster } from "./support.js";
import { rollout, writeSpec } from "./drainSupport.js";

const KWOK = "(kwok nodes: built-in node checks not run)";
const SA = { name: "kube-proxy-mode", namespace: "kube-system" };
const NODES = ["canary-1", "workers-1", "workers-2", "workers-3", "workers-4"];

describe("@e2e RBAC: the rollout as a ServiceAccount bound to exactly the shipped role " + KWOK, function () {
    this.timeout(600_000);
    let cluster: ClusterState | undefined;
    let kc: k8s.KubeConfig;
    let objects: k8s.KubernetesObjectApi;
    let saKubeconfig: string;
    let spec: string;

    before(async () => {
        cluster = await startCluster({
            nodes: "kwok",
            pools: [
                ["canary", 1],
                ["workers", 4],
            ],
        });
        const c = clients(cluster);
        kc = c.kc;
        objects = k8s.KubernetesObjectApi.makeApiClient(kc);
        // one pool per node, so each case moves a node of its own
        for (const n of NODES)
            await c.core.patchNode(
                { name: n, body: { metadata: { labels: { "e2e-case": n } } } },
                k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
            );
        // a workload pod on every node, so each drain needs pods/eviction
        for (const n of NODES) {
            await c.apps.createNamespacedReplicaSet({
                namespace: "default",
                body: {
                    metadata: { name: `app-${n}` },
                    spec: {
                        replicas: 1,
                        selector: { matchLabels: { app: n } },
                        template: {
                            metadata: { labels: { app: n } },
                            spec: {
                                nodeSelector: { "e2e-case": n },
                                tolerations: [{ key: "kwok.x-k8s.io/node", operator: "Exists" }],
                                terminationGracePeriodSeconds: 1,
                                containers: [{ name: "c", image: "stand-in" }],
                            },
                        },
                    },
                },
            });
        }
        const saText = await serviceAccountKubeconfig(cluster, SA.name);
        for (const o of rbacObjects()) await objects.create(o as k8s.KubernetesObject);
        saKubeconfig = join(scratchDir("kpm-sa-"), "kubeconfig");
        writeFileSync(saKubeconfig, saText, { mode: 0o600 });
        spec = await writeSpec(
            cluster,
            NODES.map((n) => ({ name: n, nodeSelector: `e2e-case=${n}`, drain: true, drainTimeout: "60s" })),
        );
        for (let i = 0; i < 120; i++) {
            const running = (await c.core.listNamespacedPod({ namespace: "default" })).items.filter(
                (p) => p.status?.phase === "Running",
            ).length;
            if (running === NODES.length) return;
            await new Promise((r) => setTimeout(r, 500));
        }
        throw new Error("the workload pods did not start");
    });
    after(async () => stopCluster(cluster));

    /** Replaces the ClusterRole or Role with one whose rule for `resource` lacks `verb`. */
    async function withoutPermission(kind: "ClusterRole" | "Role", resource: string, verb: string) {
        const all = rbacObjects();
        const role = structuredClone(all.find((o): o is RbacRole => o.kind === kind)!);
        role.rules = role.rules
            .map((r: any) =>
                r.resources.includes(resource) ? { ...r, verbs: r.verbs.filter((v: string) => v !== verb) } : r,
            )
            .filter((r: any) => r.verbs.length);
        const full = all.find((o) => o.kind === kind)!;
        await objects.replace({ ...role, metadata: { ...full.metadata } });
        return async () => void (await objects.replace(full as k8s.KubernetesObject));
    }

    it("a rollout with drain, run as the ServiceAccount bound to exactly the shipped role, succeeds", async () => {
        const r = await rollout(saKubeconfig, spec, "canary-1");
        assert.equal(r.code, 0, r.stdout + r.stderr);
        assert.match(r.stdout, /evicted default\/app-canary-1-/);
        const n = await clients(cluster!).core.readNode({ name: "canary-1" });
        assert.ok(n.metadata?.labels?.[MARKS.configLabel], "canary-1 moved");
    });

    // every rollout asks the cluster first (SelfSubjectAccessReview) and refuses before it changes anything
    const cases: { node: string; kind: "ClusterRole" | "Role"; resource: string; verb: string; access: string }[] = [
        {
            node: "workers-1",
            kind: "ClusterRole",
            resource: "nodes",
            verb: "patch",
            access: "patch nodes cluster-wide",
        },
        {
            node: "workers-2",
            kind: "ClusterRole",
            resource: "pods/eviction",
            verb: "create",
            access: "create pods/eviction cluster-wide",
        },
        { node: "workers-3", kind: "ClusterRole", resource: "pods", verb: "list", access: "list pods cluster-wide" },
        {
            node: "workers-4",
            kind: "Role",
            resource: "daemonsets",
            verb: "get",
            access: "get daemonsets.apps in kube-system",
        },
        // the finish's waits watch the installer's DaemonSet; a pool step needs it too, so it is asked first
        {
            node: "workers-4",
            kind: "Role",
            resource: "daemonsets",
            verb: "watch",
            access: "watch daemonsets.apps in kube-system",
        },
    ];
    for (const c of cases) {
        it(`without ${c.verb} ${c.resource} (${c.kind}) the rollout refuses before changing anything, naming the access and the identity`, async () => {
            const restore = await withoutPermission(c.kind, c.resource, c.verb);
            try {
                // RBAC changes reach the authorizer through its informer: give it a moment
                await new Promise((r) => setTimeout(r, 2000));
                const r = await rollout(saKubeconfig, spec, c.node);
                assert.equal(r.code, 1, r.stdout + r.stderr);
                const access = c.access.replace(/[./]/g, (ch) => `\\${ch}`);
                assert.match(
                    r.stderr,
                    new RegExp(
                        `rollout refused: the identity running the rollout \\(system:serviceaccount:kube-system:kube-proxy-mode\\) is denied 1 permission\\(s\\) the rollout needs: ${access}\\. Nothing was changed`,
                    ),
                );
                assert.doesNotMatch(r.stderr + r.stdout, /eyJ[A-Za-z0-9_-]{20,}/, "no token in the output");
                const n = await clients(cluster!).core.readNode({ name: c.node });
                assert.equal(n.metadata?.labels?.[MARKS.configLabel], undefined, `${c.node} was not moved`);
                assert.ok(!n.spec?.unschedulable, `${c.node} was not cordoned`);
            } finally {
                await restore();
            }
        });
    }

    it("without patch nodes, what pulumi preview reads of the cluster as the ServiceAccount warns, naming the access and the identity", async () => {
        const restore = await withoutPermission("ClusterRole", "nodes", "patch");
        try {
            await new Promise((r) => setTimeout(r, 2000));
            // the component's snapshot reader, as `pulumi preview` calls it with the steps' kubeconfig
            const snapshot = await readSnapshot(
                { kubeconfigContent: readFileSync(saKubeconfig, "utf8") },
                "kubeadm",
                {},
                {
                    drain: true,
                },
            );
            const findings = accessFindings(snapshot.access);
            assert.deepEqual(
                findings.map((f) => [f.severity, f.code]),
                [["warning", "access.denied"]],
            );
            assert.match(
                findings[0].message,
                /\(system:serviceaccount:kube-system:kube-proxy-mode\) is denied 1 permission\(s\) the rollout needs: patch nodes cluster-wide\. pulumi up with it refuses before changing anything/,
            );
        } finally {
            await restore();
        }
        await new Promise((r) => setTimeout(r, 2000));
        const granted = await readSnapshot(
            { kubeconfigContent: readFileSync(saKubeconfig, "utf8") },
            "kubeadm",
            {},
            {
                drain: true,
            },
        );
        assert.deepEqual(granted.access, { denied: [] }, "with the shipped role whole, nothing is denied");
    });
});
