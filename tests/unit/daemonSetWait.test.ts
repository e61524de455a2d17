// The finish's waits on the installer's DaemonSet (KubeProxyCluster.waitForDaemonSetRollout) are
// woken by a watch of that one DaemonSet. These tests run them against a SIMULATED API server (a
// small HTTP server that serves one DaemonSet, its status moved by the test, and its watch): the
// wait wakes on the watch's event rather than its 5 s fallback, and a watch the server refuses
// is named as the missing permission at once, where it used to cost 5 s per wait, unseen.
import assert from "node:assert/strict";
import type { ServerResponse } from "node:http";
import { answer, clusterOn, failure, listenSimulated, openStream } from "./simulatedApi.js";

const PATH = "/apis/apps/v1/namespaces/kube-system/daemonsets";

/** SIMULATED API server: the DaemonSet kube-system/kube-proxy, read and watched. */
async function simulatedDaemonSetServer(opts: { forbidWatch: boolean }) {
    const generation = 2;
    let observed = 1;
    const watches = new Set<ServerResponse>();
    const object = () => ({
        apiVersion: "apps/v1",
        kind: "DaemonSet",
        metadata: { name: "kube-proxy", namespace: "kube-system", generation, resourceVersion: String(10 + observed) },
        spec: {},
        status: {
            observedGeneration: observed,
            desiredNumberScheduled: 3,
            updatedNumberScheduled: observed === generation ? 3 : 0,
            numberAvailable: 3,
        },
    });
    const server = await listenSimulated((req, res) => {
        const url = new URL(req.url ?? "/", "http://sim");
        if (url.pathname === PATH && url.searchParams.get("watch") === "true") {
            if (opts.forbidWatch) return answer(res, 403, failure(403, "Forbidden"));
            return openStream(res, watches);
        }
        if (url.pathname === `${PATH}/kube-proxy`) return answer(res, 200, object());
        res.writeHead(404).end();
    }, watches);
    return {
        ...server,
        /** the controller records the generation and rolls every pod; the watch says so */
        rolled: () => {
            observed = generation;
            for (const w of watches) w.write(JSON.stringify({ type: "MODIFIED", object: object() }) + "\n");
        },
    };
}

describe("the finish's wait on the installer's DaemonSet (SIMULATED API server)", function () {
    this.timeout(20_000);

    it("wakes on the watch's event, not on its 5 s fallback", async () => {
        const sim = await simulatedDaemonSetServer({ forbidWatch: false });
        try {
            const lines: string[] = [];
            const started = Date.now();
            const wait = clusterOn(sim.url).waitForDaemonSetRollout(30, (l) => lines.push(l));
            setTimeout(sim.rolled, 300);
            await wait;
            const took = Date.now() - started;
            assert.ok(took < 2000, `the wait took ${took} ms`);
            assert.deepEqual(lines, [
                "DaemonSet kube-proxy: 0/3 updated, 3 available",
                "DaemonSet kube-proxy: 3/3 updated, 3 available",
            ]);
        } finally {
            await sim.close();
        }
    });

    it('a watch the server refuses (no "watch" on daemonsets) fails at once, naming the permission', async () => {
        const sim = await simulatedDaemonSetServer({ forbidWatch: true });
        try {
            const started = Date.now();
            await assert.rejects(
                clusterOn(sim.url).waitForDaemonSetRollout(30, () => undefined),
                /watching daemonsets in namespace kube-system was refused \(403 Forbidden\): the identity that runs rollouts needs "watch" on daemonsets in namespace kube-system/,
            );
            assert.ok(Date.now() - started < 2000, `failed after ${Date.now() - started} ms`);
        } finally {
            await sim.close();
        }
    });
});
