// Least privilege, proven: a rollout run as a ServiceAccount bound to exactly the shipped
// ClusterRole and Role succeeds; with one permission taken away in turn it refuses before it
// changes anything, naming the access that is denied and the identity; it cannot write the objects
// in kube-system the Role does not name. kwok nodes (built-in node checks off): only the last case
// starts a probe pod (pods create), which never finishes there, so pods/log is not exercised here.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import type { ClusterState } from "../../scripts/referenceCluster.js";
import { accessFindings, rbacObjects, type RbacRole } from "../../components/core/rbac.js";
import { readSnapshot } from "../../components/cluster/snapshot.js";
import { configHash, MARKS, ROLLOUT_OWNER } from "../../components/core/plan.js";
import { CLI } from "../helpers.js";
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
        ({ file: spec } = await writeSpec(
            cluster,
            NODES.map((n) => ({ name: n, nodeSelector: `e2e-case=${n}`, drain: true, drainTimeout: "60s" })),
        ));
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
        // the narrowed rules are asked with their names, as the API server judges the calls
        {
            node: "workers-4",
            kind: "Role",
            resource: "leases",
            verb: "update",
            access: "update leases.coordination.k8s.io kube-proxy-mode in kube-system",
        },
        {
            node: "workers-4",
            kind: "Role",
            resource: "daemonsets",
            verb: "update",
            access: "update daemonsets.apps kube-proxy in kube-system",
        },
        {
            node: "workers-4",
            kind: "Role",
            resource: "configmaps",
            verb: "delete",
            access: `delete configmaps ${ROLLOUT_OWNER} in kube-system`,
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

    it("the ServiceAccount cannot update the kube-scheduler's Lease, update or delete another DaemonSet, or patch another ConfigMap in kube-system", async () => {
        const { core, apps } = clients(cluster!);
        const sa = new k8s.KubeConfig();
        sa.loadFromFile(saKubeconfig);
        const saCore = sa.makeApiClient(k8s.CoreV1Api);
        const saApps = sa.makeApiClient(k8s.AppsV1Api);
        const saLeases = sa.makeApiClient(k8s.CoordinationV1Api);
        // a CNI's DaemonSet and a ConfigMap of the cluster's, stood in for by the test's own
        await apps.createNamespacedDaemonSet({
            namespace: "kube-system",
            body: {
                metadata: { name: "e2e-cni-node" },
                spec: {
                    selector: { matchLabels: { app: "e2e-cni-node" } },
                    template: {
                        metadata: { labels: { app: "e2e-cni-node" } },
                        spec: { nodeSelector: { "e2e-case": "none" }, containers: [{ name: "c", image: "stand-in" }] },
                    },
                },
            },
        });
        await core.createNamespacedConfigMap({
            namespace: "kube-system",
            body: { metadata: { name: "e2e-cluster-settings" }, data: { a: "1" } },
        });
        const forbidden = async (what: string, call: () => Promise<unknown>) =>
            assert.rejects(call(), (e: any) => {
                assert.equal(e.code, 403, `${what}: ${e.message}`);
                return true;
            });
        // the reference cluster's scheduler runs without leader election: its Lease is made as it would be
        const leases = clients(cluster!).kc.makeApiClient(k8s.CoordinationV1Api);
        const scheduler = await leases
            .readNamespacedLease({ name: "kube-scheduler", namespace: "kube-system" })
            .catch(() =>
                leases.createNamespacedLease({
                    namespace: "kube-system",
                    body: {
                        metadata: { name: "kube-scheduler" },
                        spec: { holderIdentity: "scheduler-1", leaseDurationSeconds: 15 },
                    },
                }),
            );
        await forbidden("update the kube-scheduler Lease", () =>
            saLeases.replaceNamespacedLease({ name: "kube-scheduler", namespace: "kube-system", body: scheduler }),
        );
        const cni = await apps.readNamespacedDaemonSet({ name: "e2e-cni-node", namespace: "kube-system" });
        await forbidden("update another DaemonSet", () =>
            saApps.replaceNamespacedDaemonSet({ name: "e2e-cni-node", namespace: "kube-system", body: cni }),
        );
        await forbidden("delete another DaemonSet", () =>
            saApps.deleteNamespacedDaemonSet({ name: "e2e-cni-node", namespace: "kube-system" }),
        );
        await forbidden("patch another ConfigMap", () =>
            saCore.patchNamespacedConfigMap(
                { name: "e2e-cluster-settings", namespace: "kube-system", body: { data: { a: "2" } } },
                k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
            ),
        );
        await forbidden("delete another ConfigMap", () =>
            saCore.deleteNamespacedConfigMap({ name: "e2e-cluster-settings", namespace: "kube-system" }),
        );
        assert.ok(await apps.readNamespacedDaemonSet({ name: "e2e-cni-node", namespace: "kube-system" }));
    });

    it("a probe pod a killed run left (SIGKILL while the probe runs) is deleted by the next run, which holds the lease; both run as the ServiceAccount", async () => {
        const { core } = clients(cluster!);
        // the same target as the other cases, with the node checks on, so the run starts a probe pod
        // (on a kwok node it never finishes: the run waits for it until it is killed)
        const base = JSON.parse(readFileSync(spec, "utf8"));
        assert.equal(base.target.hash, configHash(base.target.config));
        const probing = join(scratchDir("kpm-spec-"), "spec.json");
        writeFileSync(probing, JSON.stringify({ ...base, verify: { nodeChecks: true } }));
        const child = spawn(
            process.execPath,
            [CLI, "rollout", "--spec", probing, "--pool=workers-4", "--kubeconfig", saKubeconfig],
            { env: { ...process.env, KPM_LEASE_SECONDS: "6" }, stdio: ["ignore", "pipe", "pipe"] },
        );
        let out = "";
        child.stdout.on("data", (d) => (out += d));
        child.stderr.on("data", (d) => (out += d));
        const exited = new Promise((r) => child.on("close", r));
        const probeSelector = `${MARKS.managedByLabel}=${MARKS.managedByValue},${MARKS.probeLabel}`;
        let left: k8s.V1Pod | undefined;
        for (let i = 0; i < 240 && !left; i++) {
            left = (await core.listNamespacedPod({ namespace: "kube-system", labelSelector: probeSelector })).items[0];
            if (!left) await new Promise((r) => setTimeout(r, 250));
        }
        child.kill("SIGKILL");
        await exited;
        assert.ok(left, `the run started a probe pod:\n${out}`);
        const name = left.metadata!.name!;
        assert.equal(left.spec?.nodeName, "workers-4");
        assert.equal(left.spec?.activeDeadlineSeconds, 150, "its timeout (120 s) and the margin");
        assert.match(left.metadata?.labels?.[MARKS.staleAfterLabel] ?? "", /^[0-9]+$/);
        assert.match(left.metadata?.annotations?.[MARKS.runAnnotation] ?? "", /@.*\/pid [0-9]+/);
        // still there after the kill; the next run may take over once the killed run's 6 s lease expired
        await core.readNamespacedPod({ name, namespace: "kube-system" });
        await new Promise((r) => setTimeout(r, 7000));
        const started = Date.now();
        const r = await rollout(saKubeconfig, spec, "workers-4");
        assert.equal(r.code, 0, r.stdout + r.stderr);
        assert.match(
            r.stdout + r.stderr,
            new RegExp(
                `probe pod kube-system/${name}: deleted \\(left by the run .*, which no longer holds the rollout lease\\)`,
            ),
        );
        const after = (await core.listNamespacedPod({ namespace: "kube-system", labelSelector: probeSelector })).items;
        assert.deepEqual(
            after.map((p) => p.metadata?.name),
            [],
            "no probe pod is left",
        );
        console.log(
            `      the next run took ${((Date.now() - started) / 1000).toFixed(1)} s (after the killed run's 6 s lease expired)`,
        );
    });
});
