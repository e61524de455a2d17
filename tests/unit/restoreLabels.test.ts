// The hand-back's label for the restore (KubeProxyCluster.labelForRestore) against a SIMULATED API
// server that serves the installer's DaemonSet kube-system/kube-proxy (in the rollout's shape, its
// template generation 3) and records the pod patches it is sent. The real DaemonSet controller's
// reading of the label is proven in e2e (faults.e2e.test.ts F1: the restore labels no pod).
import assert from "node:assert/strict";
import { MARKS } from "../../components/core/plan.js";
import { answer, clusterOn, failure, listenSimulated, withBody, type SimulatedServer } from "./simulatedApi.js";

async function simulated(opts: { inRollout: boolean }) {
    let daemonSetReads = 0;
    const patches: { pod: string; body: unknown }[] = [];
    const server = await listenSimulated((req, res) => {
        const url = new URL(req.url ?? "/", "http://sim");
        if (req.method === "GET" && url.pathname === "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy") {
            daemonSetReads++;
            return answer(res, 200, {
                apiVersion: "apps/v1",
                kind: "DaemonSet",
                metadata: {
                    name: "kube-proxy",
                    namespace: "kube-system",
                    annotations: {
                        "deprecated.daemonset.template.generation": "3",
                        ...(opts.inRollout ? { [MARKS.originalSpecAnnotation]: "{}" } : {}),
                    },
                },
                spec: {},
            });
        }
        const pod = /^\/api\/v1\/namespaces\/kube-system\/pods\/([^/]+)$/.exec(url.pathname)?.[1];
        if (req.method === "PATCH" && pod)
            return withBody(req, (raw) => {
                if (pod === "gone") return answer(res, 404, failure(404, "NotFound"));
                patches.push({ pod, body: JSON.parse(raw) });
                answer(res, 200, { apiVersion: "v1", kind: "Pod", metadata: { name: pod } });
            });
        answer(res, 404, failure(404, "NotFound"));
    });
    return { server, patches, daemonSetReads: () => daemonSetReads };
}

describe("the hand-back labels its pod for the restore (SIMULATED API server)", () => {
    let sim: SimulatedServer | undefined;
    afterEach(async () => sim?.close());

    it("labels each pod with the template generation the restore will record (one more), reading the DaemonSet once per run", async () => {
        const s = await simulated({ inRollout: true });
        sim = s.server;
        const cluster = clusterOn(s.server.url);
        await Promise.all([cluster.labelForRestore("kube-proxy-a"), cluster.labelForRestore("kube-proxy-b")]);
        await cluster.labelForRestore("kube-proxy-c");
        assert.equal(s.daemonSetReads(), 1);
        assert.deepEqual(s.patches.map((p) => p.pod).sort(), ["kube-proxy-a", "kube-proxy-b", "kube-proxy-c"]);
        for (const p of s.patches)
            assert.deepEqual(p.body, { metadata: { labels: { "pod-template-generation": "4" } } });
    });

    it("a pod deleted since it settled is not an error; a DaemonSet not in the rollout's shape gets no label", async () => {
        const s = await simulated({ inRollout: true });
        sim = s.server;
        await clusterOn(s.server.url).labelForRestore("gone");
        assert.deepEqual(s.patches, []);
        await s.server.close();

        const t = await simulated({ inRollout: false });
        sim = t.server;
        await clusterOn(t.server.url).labelForRestore("kube-proxy-a");
        assert.deepEqual(t.patches, []);
    });
});
