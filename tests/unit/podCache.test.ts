// The wait for a node's kube-proxy reads one informer of kube-proxy's pods
// (components/cluster/podCache.ts), not a list per node. A cache can be stale: these tests run
// KubeProxyCluster.waitForKubeProxy against a SIMULATED API server (a small HTTP server that
// lists and watches pods and nothing else) whose watch goes silent or drops, and check that a
// stale cache delays a wait but never passes it.
import assert from "node:assert/strict";
import type { IncomingMessage, ServerResponse } from "node:http";
import * as k8s from "@kubernetes/client-node";
import type { KubeProxyCluster } from "../../components/cluster/kubeProxy.js";
import type { KubeProxyPod } from "../../components/rollout/cluster.js";
import { kubeProxyPodOf, slimPod } from "../../components/cluster/podCache.js";
import { MARKS } from "../../components/core/plan.js";
import {
    answer,
    clusterOn,
    failure,
    listenSimulated,
    openStream,
    withBody,
    type SimulatedServer,
} from "./simulatedApi.js";

/** the installer's pod template, and the same in the rollout's shape (SIMULATED, reduced) */
const INSTALLERS_TEMPLATE = {
    metadata: { labels: { "k8s-app": "kube-proxy" } },
    spec: { containers: [{ name: "kube-proxy", image: "kube-proxy" }] },
};
const ROLLOUTS_TEMPLATE = {
    ...INSTALLERS_TEMPLATE,
    spec: {
        ...INSTALLERS_TEMPLATE.spec,
        affinity: {
            nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                    nodeSelectorTerms: [{ matchExpressions: [{ key: MARKS.configLabel, operator: "DoesNotExist" }] }],
                },
            },
        },
    },
};

interface SimPod {
    name: string;
    node: string;
    restarts: number;
    waiting?: string;
    labels?: Record<string, string>;
}

/** SIMULATED API server: kube-system's kube-proxy pods, listed and watched. */
class SimulatedApiServer {
    readonly pods = new Map<string, SimPod>();
    rv = 100;
    /** the watch stays open but sends nothing (a partition: the socket lives, the events do not come) */
    silent = false;
    /** lists and watches answer 503 (the API server restarting) */
    down = false;
    /** watches answer 403: the identity lacks "watch" on pods (a role without it) */
    forbidWatch = false;
    lists = 0;
    /** the `limit` each list asked for ("" for none) */
    readonly listLimits: string[] = [];
    watches = 0;
    /** the installer's DaemonSet kube-system/kube-proxy, template generation 3: in the rollout's shape, or not */
    daemonSetInRollout = true;
    daemonSetReads = 0;
    /** the pod patches received: the pod, and the body */
    readonly patches: { pod: string; body: unknown }[] = [];
    /** the pods a patch was sent for and answered 404 (no such pod) */
    readonly patchesOfNoPod: string[] = [];
    /**
     * the installer DaemonSet's ControllerRevisions: the installer's own template (recorded
     * before the rollout) and the rollout's shape of it (current)
     */
    revisions: {
        name: string;
        hash: string;
        revision: number;
        template: unknown;
        annotations?: Record<string, string>;
    }[] = [
        { name: "kube-proxy-5499867df", hash: "5499867df", revision: 1, template: INSTALLERS_TEMPLATE },
        { name: "kube-proxy-6c8b7f9d4", hash: "6c8b7f9d4", revision: 2, template: ROLLOUTS_TEMPLATE },
    ];
    /** the ControllerRevision patches received: the revision, and the body */
    readonly revisionPatches: { name: string; body: unknown }[] = [];
    private readonly streams = new Set<ServerResponse>();
    private server!: SimulatedServer;

    podObject(p: SimPod): k8s.V1Pod {
        return {
            apiVersion: "v1",
            kind: "Pod",
            metadata: {
                name: p.name,
                namespace: "kube-system",
                uid: `uid-${p.name}`,
                resourceVersion: String(this.rv),
                labels: { "k8s-app": "kube-proxy", ...p.labels },
                ownerReferences: [
                    { apiVersion: "apps/v1", kind: "DaemonSet", name: "kube-proxy", uid: "ds", controller: true },
                ],
            },
            spec: { nodeName: p.node, containers: [{ name: "kube-proxy", image: "kube-proxy" }] },
            status: {
                phase: "Running",
                conditions: [{ type: "Ready", status: p.waiting ? "False" : "True" }],
                containerStatuses: [
                    {
                        name: "kube-proxy",
                        image: "kube-proxy",
                        imageID: "",
                        ready: !p.waiting,
                        restartCount: p.restarts,
                        state: p.waiting ? { waiting: { reason: p.waiting } } : { running: {} },
                    },
                ],
            },
        };
    }

    /** Changes a pod; the watch hears of it unless it is silent. */
    set(p: SimPod): void {
        this.rv++;
        const type = this.pods.has(p.name) ? "MODIFIED" : "ADDED";
        this.pods.set(p.name, p);
        if (!this.silent)
            for (const s of this.streams) s.write(JSON.stringify({ type, object: this.podObject(p) }) + "\n");
    }

    /** Deletes a pod; the watch hears of it unless it is silent. */
    remove(name: string): void {
        const p = this.pods.get(name);
        if (!p) return;
        this.rv++;
        this.pods.delete(name);
        if (!this.silent)
            for (const s of this.streams)
                s.write(JSON.stringify({ type: "DELETED", object: this.podObject(p) }) + "\n");
    }

    /** Drops every open watch as a dying API server does (the connection is cut). */
    dropWatches(): void {
        for (const s of this.streams) s.socket?.destroy();
        this.streams.clear();
    }

    private handle(req: IncomingMessage, res: ServerResponse): void {
        const url = new URL(req.url ?? "/", "http://sim");
        if (this.down) {
            return answer(res, 503, failure(503));
        }
        if (url.pathname.endsWith("/log")) {
            res.writeHead(200, { "content-type": "text/plain" }).end("SIMULATED kube-proxy log: it crashed\n");
            return;
        }
        if (req.method === "GET" && url.pathname === "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy") {
            this.daemonSetReads++;
            return answer(res, 200, {
                apiVersion: "apps/v1",
                kind: "DaemonSet",
                metadata: {
                    name: "kube-proxy",
                    namespace: "kube-system",
                    uid: "ds",
                    annotations: {
                        "deprecated.daemonset.template.generation": "3",
                        ...(this.daemonSetInRollout
                            ? { [MARKS.originalSpecAnnotation]: JSON.stringify({ template: INSTALLERS_TEMPLATE }) }
                            : {}),
                    },
                },
                spec: { template: this.daemonSetInRollout ? ROLLOUTS_TEMPLATE : INSTALLERS_TEMPLATE },
            });
        }
        if (
            req.method === "GET" &&
            (url.pathname === "/apis/apps/v1/namespaces/kube-system/daemonsets" ||
                url.pathname === "/api/v1/namespaces/kube-system/configmaps")
        )
            return answer(res, 200, { apiVersion: "v1", kind: "List", metadata: {}, items: [] });
        const revisions = "/apis/apps/v1/namespaces/kube-system/controllerrevisions";
        if (req.method === "GET" && url.pathname === revisions)
            return answer(res, 200, {
                apiVersion: "apps/v1",
                kind: "ControllerRevisionList",
                metadata: {},
                items: this.revisions.map((r) => ({
                    apiVersion: "apps/v1",
                    kind: "ControllerRevision",
                    metadata: {
                        name: r.name,
                        namespace: "kube-system",
                        labels: { "controller-revision-hash": r.hash },
                        ...(r.annotations ? { annotations: r.annotations } : {}),
                        ownerReferences: [
                            {
                                apiVersion: "apps/v1",
                                kind: "DaemonSet",
                                name: "kube-proxy",
                                uid: "ds",
                                controller: true,
                            },
                        ],
                    },
                    revision: r.revision,
                    data: { spec: { template: { $patch: "replace", ...(r.template as object) } } },
                })),
            });
        const revision = url.pathname.startsWith(revisions + "/") ? url.pathname.slice(revisions.length + 1) : "";
        if (req.method === "PATCH" && revision)
            return withBody(req, (raw) => {
                const body = JSON.parse(raw) as {
                    metadata: { labels: Record<string, string>; annotations?: Record<string, string | null> };
                };
                this.revisionPatches.push({ name: revision, body });
                const r = this.revisions.find((x) => x.name === revision);
                if (!r) return answer(res, 404, failure(404, "NotFound"));
                r.hash = body.metadata.labels["controller-revision-hash"] ?? r.hash;
                // a merge patch: a null annotation is removed
                const annotations = { ...r.annotations, ...body.metadata.annotations };
                r.annotations = Object.fromEntries(
                    Object.entries(annotations).filter((e): e is [string, string] => e[1] !== null),
                );
                answer(res, 200, { apiVersion: "apps/v1", kind: "ControllerRevision", metadata: { name: r.name } });
            });
        const patched = /^\/api\/v1\/namespaces\/kube-system\/pods\/([^/]+)$/.exec(url.pathname)?.[1];
        if (req.method === "PATCH" && patched)
            return withBody(req, (raw) => {
                const p = this.pods.get(patched);
                if (!p) {
                    this.patchesOfNoPod.push(patched);
                    return answer(res, 404, failure(404, "NotFound"));
                }
                const body = JSON.parse(raw) as { metadata: { labels: Record<string, string> } };
                this.patches.push({ pod: patched, body });
                this.set({ ...p, labels: { ...p.labels, ...body.metadata.labels } });
                answer(res, 200, this.podObject(this.pods.get(patched)!));
            });
        if (url.pathname !== "/api/v1/namespaces/kube-system/pods") {
            res.writeHead(404).end();
            return;
        }
        const field = url.searchParams.get("fieldSelector")?.replace(/^spec\.nodeName=/, "");
        if (url.searchParams.get("watch") === "true") {
            this.watches++;
            if (this.forbidWatch) return answer(res, 403, failure(403, "Forbidden"));
            return openStream(res, this.streams);
        }
        this.lists++;
        // pages as the API server serves them: `limit` items from the `continue` offset, and a token while more remain
        const limit = Number(url.searchParams.get("limit") ?? 0);
        this.listLimits.push(url.searchParams.get("limit") ?? "");
        const from = Number(url.searchParams.get("continue") ?? 0);
        const all = [...this.pods.values()].filter((p) => !field || p.node === field);
        const page = limit ? all.slice(from, from + limit) : all;
        const more = limit > 0 && from + limit < all.length;
        answer(res, 200, {
            apiVersion: "v1",
            kind: "PodList",
            metadata: { resourceVersion: String(this.rv), ...(more ? { continue: String(from + limit) } : {}) },
            items: page.map((p) => this.podObject(p)),
        });
    }

    async start(): Promise<string> {
        this.server = await listenSimulated((req, res) => this.handle(req, res), this.streams);
        return this.server.url;
    }

    async stop(): Promise<void> {
        await this.server.close();
    }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** a pod the informer holds as its keys only: namespace, name, resourceVersion; no spec or status */
const keysOnly = (p: k8s.V1Pod): boolean =>
    p.spec === undefined &&
    p.status === undefined &&
    Object.keys(p.metadata ?? {})
        .sort()
        .join() === "name,namespace,resourceVersion";

describe("a kube-proxy pod slimmed for the cache (slimPod)", () => {
    const full = (status: k8s.V1PodStatus, extra: Partial<k8s.V1ObjectMeta> = {}): k8s.V1Pod => ({
        metadata: {
            name: "kube-proxy-abc",
            namespace: "kube-system",
            uid: "u1",
            resourceVersion: "7",
            labels: { "k8s-app": "kube-proxy", "controller-revision-hash": "h" },
            annotations: { a: "b" },
            managedFields: [{ manager: "kubelet", operation: "Update" }],
            ownerReferences: [
                { apiVersion: "apps/v1", kind: "DaemonSet", name: "kube-proxy-mode-abc", uid: "d" },
                { apiVersion: "v1", kind: "Node", name: "n", uid: "n" },
            ],
            ...extra,
        },
        spec: { nodeName: "workers-1", containers: [{ name: "kube-proxy", image: "registry.k8s.io/kube-proxy" }] },
        status,
    });
    const cases: [string, k8s.V1Pod][] = [
        [
            "running and Ready",
            full({
                phase: "Running",
                conditions: [
                    { type: "PodScheduled", status: "True" },
                    { type: "Ready", status: "True" },
                ],
                containerStatuses: [
                    {
                        name: "kube-proxy",
                        image: "i",
                        imageID: "x",
                        ready: true,
                        restartCount: 1,
                        state: { running: {} },
                    },
                ],
            }),
        ],
        [
            "crash-looping",
            full({
                phase: "Running",
                conditions: [{ type: "Ready", status: "False" }],
                containerStatuses: [
                    {
                        name: "kube-proxy",
                        image: "i",
                        imageID: "x",
                        ready: false,
                        restartCount: 4,
                        state: { waiting: { reason: "CrashLoopBackOff" } },
                    },
                ],
            }),
        ],
        [
            "exited",
            full({
                phase: "Failed",
                containerStatuses: [
                    {
                        name: "kube-proxy",
                        image: "i",
                        imageID: "x",
                        ready: false,
                        restartCount: 0,
                        state: { terminated: { reason: "Error", exitCode: 1 } },
                    },
                ],
            }),
        ],
        ["being deleted, no status yet", full({}, { deletionTimestamp: new Date("2026-12-02T00:00:00Z") })],
    ];
    for (const [what, pod] of cases)
        it(`reads the same as the full pod: ${what}`, () => {
            const before = kubeProxyPodOf(structuredClone(pod));
            const slim = slimPod(pod);
            assert.deepEqual(kubeProxyPodOf(slim), before);
            assert.equal(slim.metadata?.managedFields, undefined);
            assert.deepEqual(
                slim.metadata?.labels,
                { "controller-revision-hash": "h" },
                "of the labels, the revision hash only",
            );
            assert.deepEqual(
                [slim.metadata?.name, slim.metadata?.namespace, slim.metadata?.resourceVersion],
                ["kube-proxy-abc", "kube-system", "7"],
                "what the informer keys and compares on is kept",
            );
            assert.deepEqual(
                [slim.metadata?.uid, slim.metadata?.ownerReferences, slim.status?.containerStatuses?.[0]?.imageID],
                [undefined, [{ kind: "DaemonSet", name: "kube-proxy-mode-abc" }], undefined],
                "the rest of the metadata and the container's image are dropped",
            );
        });
});

describe("waiting for kube-proxy on the pod informer (SIMULATED API server)", function () {
    this.timeout(30_000);
    let api: SimulatedApiServer;
    let cluster: KubeProxyCluster;

    beforeEach(async () => {
        api = new SimulatedApiServer();
        cluster = clusterOn(await api.start());
    });
    afterEach(async () => {
        cluster.close();
        await api.stop();
    });

    it("settles from the watch's events: one list for the cache, one to confirm, for any number of waits", async () => {
        for (let i = 1; i <= 5; i++) api.set({ name: `kube-proxy-${i}`, node: `node-${i}`, restarts: 0 });
        const pods = await Promise.all(
            [1, 2, 3, 4, 5].map((i) => cluster.waitForKubeProxy(`node-${i}`, null, 10, { settleSeconds: 0.5 })),
        );
        assert.deepEqual(
            pods.map((p) => p?.name),
            [1, 2, 3, 4, 5].map((i) => `kube-proxy-${i}`),
        );
        assert.equal(api.watches, 1, "one watch for every node");
        assert.equal(api.lists, 1 + 5, "the informer's list, then one confirming read per node");
    });

    it("every list of kube-proxy's pods comes a page at a time (250 pods each), the informer's first list and the finish's included", async () => {
        for (let i = 1; i <= 1201; i++) api.set({ name: `kube-proxy-${i}`, node: `node-${i}`, restarts: 0 });
        const all = await cluster.kubeProxyPods();
        assert.equal(all.length, 1201);
        assert.equal(new Set(all.map((p) => p.name)).size, 1201);
        assert.deepEqual(api.listLimits, ["250", "250", "250", "250", "250"]);
        assert.equal(
            (await cluster.waitForKubeProxy("node-1201", null, 10, { settleSeconds: 0 }))?.name,
            "kube-proxy-1201",
        );
        assert.deepEqual(
            api.listLimits.slice(5),
            ["250", "250", "250", "250", "250", "250"],
            "the informer's five pages, one confirming read",
        );
        const held = (
            cluster as unknown as { pods: { podCache: { informer: k8s.ObjectCache<k8s.V1Pod> } } }
        ).pods.podCache.informer.list();
        assert.equal(held.length, 1201);
        assert.ok(held.every(keysOnly), "the informer keeps only each pod's keys");
    });

    it("the informer keeps only each pod's keys (name, namespace, resourceVersion); the cache keeps what a wait reads, updates and deletions included", async () => {
        api.set({ name: "kube-proxy-1", node: "node-1", restarts: 0 });
        api.set({ name: "kube-proxy-2", node: "node-2", restarts: 0 });
        await cluster.waitForKubeProxy("node-1", null, 10, { settleSeconds: 0 });
        api.set({ name: "kube-proxy-1", node: "node-1", restarts: 2, waiting: "CrashLoopBackOff" });
        api.remove("kube-proxy-2");
        await sleep(200);
        const cache = (
            cluster as unknown as {
                pods: { podCache: { informer: k8s.ObjectCache<k8s.V1Pod>; onNode(node: string): KubeProxyPod[] } };
            }
        ).pods.podCache;
        const held = cache.informer.list();
        assert.deepEqual(
            held.map((p) => p.metadata?.name),
            ["kube-proxy-1"],
        );
        assert.ok(held.every(keysOnly), "the informer's own copy is its keys");
        assert.deepEqual(
            cache.onNode("node-1").map((p) => [p.name, p.restarts, p.problem]),
            [["kube-proxy-1", 2, "CrashLoopBackOff"]],
            "the update is held",
        );
        assert.deepEqual(cache.onNode("node-2"), [], "the deletion is held");
    });

    /**
     * A wait on node-1 that has seen its pod Running; then the watch goes silent (a partition) and
     * the pod crash-loops unseen: the wait must fail on what the API server says.
     */
    const crashBehindSilentWatch = async (options: { settleSeconds: number; labelForRestore?: boolean }) => {
        api.set({ name: "kube-proxy-1", node: "node-1", restarts: 0 });
        const wait = cluster.waitForKubeProxy("node-1", null, 10, options);
        await sleep(300);
        api.silent = true;
        api.set({ name: "kube-proxy-1", node: "node-1", restarts: 1, waiting: "CrashLoopBackOff" });
        await assert.rejects(
            wait,
            /kube-proxy pod kube-proxy-1 on node-1 is failing \(CrashLoopBackOff, 1 restart\(s\)\)/,
        );
    };

    it("a watch gone silent (a partition) does not pass a pod that crashed meanwhile: the confirming read fails it", async () => {
        await crashBehindSilentWatch({ settleSeconds: 1 });
    });

    it("while the API server is down no wait passes on what the cache saw; it passes once the watch is opened again and the server agrees", async () => {
        api.set({ name: "kube-proxy-1", node: "node-1", restarts: 0 });
        await cluster.waitForKubeProxy("node-1", null, 10, { settleSeconds: 0 });
        api.down = true;
        api.dropWatches();
        await sleep(200);
        const started = Date.now();
        const wait = cluster.waitForKubeProxy("node-1", null, 15, { settleSeconds: 0 });
        let passed = false;
        void wait.then(() => (passed = true)).catch(() => undefined);
        await sleep(1500);
        assert.equal(passed, false, "the wait passed on what the cache saw before the watch dropped");
        api.down = false;
        const pod = await wait;
        assert.equal(pod?.name, "kube-proxy-1");
        assert.ok(Date.now() - started >= 1500);
        assert.ok(api.watches >= 2, "the watch was opened again");
    });

    it('a watch the server refuses (no "watch" on pods) fails the wait at once, naming the permission, instead of waiting out its timeout', async () => {
        api.forbidWatch = true;
        api.set({ name: "kube-proxy-1", node: "node-1", restarts: 0 });
        const started = Date.now();
        await assert.rejects(
            cluster.waitForKubeProxy("node-1", null, 20, { settleSeconds: 0 }),
            /watching pods in namespace kube-system was refused \(403 Forbidden\): the identity that runs rollouts needs "watch" on pods/,
        );
        assert.ok(Date.now() - started < 5000, `failed after ${Date.now() - started} ms`);
    });

    describe("the hand-back's wait labels its pod for the restore", () => {
        const handBack = { settleSeconds: 0, labelForRestore: true };

        it("labels each settled pod with the template generation the restore will record (one more), reading the DaemonSet once per run, and the label write's answer confirms the wait: no read of the node's pods", async () => {
            for (let i = 1; i <= 3; i++) api.set({ name: `kube-proxy-${i}`, node: `node-${i}`, restarts: 0 });
            const pods = await Promise.all(
                [1, 2].map((i) => cluster.waitForKubeProxy(`node-${i}`, null, 10, handBack)),
            );
            pods.push(await cluster.waitForKubeProxy("node-3", null, 10, handBack));
            assert.deepEqual(
                pods.map((p) => p?.name),
                ["kube-proxy-1", "kube-proxy-2", "kube-proxy-3"],
            );
            assert.equal(api.daemonSetReads, 1);
            assert.deepEqual(api.patches.map((p) => p.pod).sort(), ["kube-proxy-1", "kube-proxy-2", "kube-proxy-3"]);
            for (const p of api.patches)
                assert.deepEqual(p.body, { metadata: { labels: { "pod-template-generation": "4" } } });
            assert.equal(api.lists, 1, "the informer's list only: no confirming read of a node's pods");
        });

        it("a watch gone silent does not pass a pod that crashed meanwhile: the label write's answer fails it", async () => {
            await crashBehindSilentWatch({ ...handBack, settleSeconds: 1 });
            assert.equal(api.patches.length, 1, "the failure came from the label write's answer");
            assert.equal(api.lists, 1, "no read of the node's pods");
        });

        it("a pod deleted since the cache saw it settle (the label write answered 404) does not pass the wait", async () => {
            api.set({ name: "kube-proxy-1", node: "node-1", restarts: 0 });
            await cluster.waitForKubeProxy("node-1", null, 10, { settleSeconds: 0 });
            api.silent = true;
            api.remove("kube-proxy-1");
            const lists = api.lists;
            await assert.rejects(
                cluster.waitForKubeProxy("node-1", null, 2, handBack),
                /kube-proxy on node-1 did not settle on kube-proxy within 2s: the API server's pods differ from the watch's \(0 old and 0 new kube-proxy pod\(s\) on the node\)/,
            );
            assert.deepEqual(api.patches, []);
            assert.ok(api.patchesOfNoPod.includes("kube-proxy-1"), "the label write was sent, and answered 404");
            assert.equal(api.lists, lists, "no read of the node's pods");
        });

        it("prepareHandBack relabels the installer's current revision with its own revision's hash (keeping the one it had); a pod started with that hash gets no label, its wait confirmed by a read of its node's pods; a pod started before gets the label", async () => {
            const said: string[] = [];
            await cluster.prepareHandBack((l) => said.push(l));
            assert.deepEqual(api.revisionPatches, [
                {
                    name: "kube-proxy-6c8b7f9d4",
                    body: {
                        metadata: {
                            labels: { "controller-revision-hash": "5499867df" },
                            annotations: { [MARKS.revisionHashAnnotation]: "6c8b7f9d4" },
                        },
                    },
                },
            ]);
            assert.match(
                said.join("\n"),
                /ControllerRevision kube-system\/kube-proxy-6c8b7f9d4: the pods the hand-back starts get hash 5499867df/,
            );
            api.set({
                name: "kube-proxy-1",
                node: "node-1",
                restarts: 0,
                labels: { "controller-revision-hash": "5499867df" },
            });
            api.set({
                name: "kube-proxy-2",
                node: "node-2",
                restarts: 0,
                labels: { "controller-revision-hash": "6c8b7f9d4" },
            });
            assert.equal((await cluster.waitForKubeProxy("node-1", null, 10, handBack))?.name, "kube-proxy-1");
            assert.equal(api.patches.length, 0, "no label write");
            assert.equal(api.lists, 2, "the informer's list, and the confirming read");
            assert.equal((await cluster.waitForKubeProxy("node-2", null, 10, handBack))?.name, "kube-proxy-2");
            assert.deepEqual(
                api.patches.map((p) => p.pod),
                ["kube-proxy-2"],
            );
            assert.equal(api.lists, 2, "the label write's answer confirmed node-2's wait");
            // a second run (one that died in the hand-back) finds the revision relabelled and writes nothing
            await cluster.prepareHandBack(() => undefined);
            assert.equal(api.revisionPatches.length, 1);
        });

        it("a run that died after the restore's last write left the revision relabelled: the next restore puts its own hash back and removes the annotation", async () => {
            await cluster.prepareHandBack(() => undefined);
            assert.equal(api.revisions[1].hash, "5499867df");
            assert.deepEqual(api.revisions[1].annotations, { [MARKS.revisionHashAnnotation]: "6c8b7f9d4" });
            api.daemonSetInRollout = false; // the restore's last write landed: no saved spec is left
            const said: string[] = [];
            await cluster.restoreInstallation((l) => said.push(l));
            assert.equal(api.revisions[1].hash, "6c8b7f9d4");
            assert.deepEqual(api.revisions[1].annotations, {});
            assert.deepEqual(said, [
                "ControllerRevision kube-system/kube-proxy-6c8b7f9d4: its own hash 6c8b7f9d4 put back",
            ]);
            assert.equal(api.revisions[0].hash, "5499867df", "the installer's revision is untouched");
        });

        it("without the installer's own revision (pruned), prepareHandBack writes nothing and says so, and every hand-back labels its pod", async () => {
            api.revisions = api.revisions.filter((r) => r.revision === 2);
            const said: string[] = [];
            await cluster.prepareHandBack((l) => said.push(l));
            assert.deepEqual(api.revisionPatches, []);
            assert.match(
                said.join("\n"),
                /no ControllerRevision records the installer's own template .*each hand-back labels its pod/,
            );
            api.set({
                name: "kube-proxy-1",
                node: "node-1",
                restarts: 0,
                labels: { "controller-revision-hash": "5499867df" },
            });
            await cluster.waitForKubeProxy("node-1", null, 10, handBack);
            assert.deepEqual(
                api.patches.map((p) => p.pod),
                ["kube-proxy-1"],
            );
        });

        it("no label when the DaemonSet is not in the rollout's shape: the wait reads the node's pods to confirm, as any other", async () => {
            api.daemonSetInRollout = false;
            api.set({ name: "kube-proxy-1", node: "node-1", restarts: 0 });
            assert.equal((await cluster.waitForKubeProxy("node-1", null, 10, handBack))?.name, "kube-proxy-1");
            assert.deepEqual(api.patches, []);
            assert.equal(api.lists, 2, "the informer's list, and the confirming read");
        });
    });
});
