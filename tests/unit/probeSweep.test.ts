// Probe pods are privileged with the node's root mounted: one a dead run leaves must not live on.
// Each has a deadline the kubelet enforces, labels saying it is the tool's probe and when it is
// certainly stale, and the run that made it; the next run, once it holds the lease, deletes what a
// dead run left (the lease says who is live) and nothing that may still be in use.
import assert from "node:assert/strict";
import type { ServerResponse } from "node:http";
import type * as k8s from "@kubernetes/client-node";
import { MARKS } from "../../components/core/plan.js";
import {
    PROBE_DEADLINE_MARGIN_SECONDS,
    PROBE_STALE_MARGIN_SECONDS,
    probePodLifetime,
    probePodsToSweep,
} from "../../components/core/probePods.js";
import { configHash } from "../../components/core/plan.js";
import { RolloutBusy, runPools, type Context } from "../../components/rollout/runner.js";
import { rolloutSpecSchema } from "../../components/rollout/spec.js";
import { FakeClock, FakeCluster, kubeProxyConfig } from "./fakeCluster.js";
import { answer, clusterOn, failure, listenSimulated, openStream, withBody } from "./simulatedApi.js";

const NOW = Date.parse("2026-12-06T01:00:00Z");
const seconds = (ms: number) => String(Math.floor(ms / 1000));

describe("a probe pod's deadline and staleness", () => {
    it("the kubelet stops it a margin after its own timeout; it is certainly stale a further margin after that", () => {
        const { activeDeadlineSeconds, staleAfter } = probePodLifetime(120, NOW);
        assert.equal(activeDeadlineSeconds, 120 + PROBE_DEADLINE_MARGIN_SECONDS);
        assert.equal(staleAfter, NOW / 1000 + activeDeadlineSeconds + PROBE_STALE_MARGIN_SECONDS);
    });

    it("a run holding the lease sweeps another run's pods at any age and stale lease-less ones, never its own or a live command's", () => {
        const swept = probePodsToSweep(
            [
                { name: "dead-run-young", run: "run-1", staleAfter: seconds(NOW + 600_000) },
                { name: "mine", run: "run-2", staleAfter: seconds(NOW - 1000) },
                { name: "cli-live", staleAfter: seconds(NOW + 60_000) },
                { name: "cli-stale", staleAfter: seconds(NOW - 1000) },
                { name: "old-unlabelled", createdAt: new Date(NOW - 2 * 3600_000).toISOString() },
                { name: "young-unlabelled", createdAt: new Date(NOW - 60_000).toISOString() },
                { name: "garbled-label", staleAfter: "soon", createdAt: new Date(NOW - 60_000).toISOString() },
            ],
            { holder: "run-2", nowMs: NOW },
        );
        assert.deepEqual(
            swept.map((s) => s.name),
            ["dead-run-young", "cli-stale", "old-unlabelled"],
        );
        assert.match(swept[0].why, /left by the run run-1, which no longer holds the rollout lease/);
        assert.match(swept[1].why, /^stale since 2026-12-06T00:59:59/);
    });
});

/** The pods of kube-system on a SIMULATED API server: list (by label selector), create, get, log, delete. */
async function simulatedPods(pods: k8s.V1Pod[]) {
    const requests: { method: string; url: string; body?: any }[] = [];
    const streams = new Set<ServerResponse>();
    const server = await listenSimulated((req, res) => {
        withBody(req, (raw) => {
            const url = new URL(req.url ?? "/", "http://sim");
            const body = raw ? JSON.parse(raw) : undefined;
            requests.push({ method: req.method ?? "", url: url.pathname + url.search, body });
            const path = url.pathname;
            if (path === "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy")
                return answer(res, 200, { metadata: { name: "kube-proxy" }, spec: { template: { spec: {} } } });
            if (url.searchParams.get("watch")) return openStream(res, streams);
            if (path === "/api/v1/namespaces/kube-system/pods" && req.method === "GET") {
                const selector = url.searchParams.get("labelSelector") ?? "";
                const wanted = selector.split(",").filter(Boolean);
                const items = pods.filter((p) =>
                    wanted.every((w) => {
                        const [k, v] = w.split("=");
                        const has = p.metadata?.labels?.[k];
                        return v === undefined ? has !== undefined : has === v;
                    }),
                );
                return answer(res, 200, { kind: "PodList", metadata: { resourceVersion: "1" }, items });
            }
            if (path === "/api/v1/namespaces/kube-system/pods" && req.method === "POST") {
                const pod = { ...body, metadata: { ...body.metadata, uid: `uid-${body.metadata.name}` } };
                pods.push(pod);
                return answer(res, 201, pod);
            }
            const m = /^\/api\/v1\/namespaces\/kube-system\/pods\/([^/]+)(\/log)?$/.exec(path);
            const pod = m && pods.find((p) => p.metadata?.name === m[1]);
            if (!pod) return answer(res, 404, failure(404, "NotFound"));
            if (m[2]) return res.writeHead(200, { "content-type": "text/plain" }).end("### kpm:end\n");
            if (req.method === "GET") return answer(res, 200, { ...pod, status: { phase: "Succeeded" } });
            if (req.method === "DELETE") {
                const uid = body?.preconditions?.uid;
                if (uid !== undefined && uid !== pod.metadata?.uid)
                    return answer(res, 409, failure(409, "Conflict", "precondition failed: uid"));
                pods.splice(pods.indexOf(pod), 1);
                return answer(res, 200, pod);
            }
            answer(res, 405, failure(405, "MethodNotAllowed"));
        });
    }, streams);
    return { ...server, requests, pods };
}

function probePod(name: string, labels: Record<string, string>, annotations?: Record<string, string>): k8s.V1Pod {
    return {
        metadata: {
            name,
            namespace: "kube-system",
            uid: `uid-${name}`,
            labels,
            ...(annotations ? { annotations } : {}),
            creationTimestamp: new Date(Date.now() - 60_000),
        },
    };
}

describe("probe pods on the API server (SIMULATED API server)", () => {
    it("runProbe makes its pod with activeDeadlineSeconds from its timeout, the stale-after label and the run that made it", async () => {
        const sim = await simulatedPods([]);
        try {
            const before = Date.now();
            const { succeeded } = await clusterOn(sim.url).runProbe("n1", {
                image: "img",
                action: "probe",
                env: {},
                timeoutSeconds: 45,
                run: "stack dev@host-a/pid 42",
            });
            assert.equal(succeeded, true);
            const created = sim.requests.find((r) => r.method === "POST")!.body as k8s.V1Pod;
            assert.equal(created.spec?.activeDeadlineSeconds, 45 + PROBE_DEADLINE_MARGIN_SECONDS);
            const labels = created.metadata!.labels!;
            assert.equal(labels[MARKS.managedByLabel], "kube-proxy-mode");
            assert.equal(labels[MARKS.probeLabel], "probe");
            const staleAfter = Number(labels[MARKS.staleAfterLabel]);
            const lifetime = 45 + PROBE_DEADLINE_MARGIN_SECONDS + PROBE_STALE_MARGIN_SECONDS;
            assert.ok(
                staleAfter >= Math.floor(before / 1000) + lifetime && staleAfter <= Date.now() / 1000 + lifetime + 1,
            );
            assert.equal(created.metadata!.annotations![MARKS.runAnnotation], "stack dev@host-a/pid 42");
            assert.equal(sim.pods.length, 0, "the pod is deleted once its output is read");
        } finally {
            await sim.close();
        }
    });

    it("the sweep deletes, by uid and at once, only the tool's probe pods a dead run left or that are stale", async () => {
        const ours = { [MARKS.managedByLabel]: "kube-proxy-mode" };
        const future = seconds(Date.now() + 600_000);
        const past = seconds(Date.now() - 1000);
        const sim = await simulatedPods([
            probePod(
                "kpm-probe-dead",
                { ...ours, [MARKS.probeLabel]: "probe", [MARKS.staleAfterLabel]: future },
                {
                    [MARKS.runAnnotation]: "run-1",
                },
            ),
            probePod("kpm-probe-cli", { ...ours, [MARKS.probeLabel]: "probe", [MARKS.staleAfterLabel]: future }),
            probePod("kpm-cleanup-stale", { ...ours, [MARKS.probeLabel]: "cleanup", [MARKS.staleAfterLabel]: past }),
            // another tool's pod that looks stale, and a rollout object of ours that is no probe
            probePod("other-probe", { [MARKS.probeLabel]: "probe", [MARKS.staleAfterLabel]: past }),
            probePod("kube-proxy-abc", { ...ours, [MARKS.staleAfterLabel]: past }, { [MARKS.runAnnotation]: "run-1" }),
        ]);
        try {
            const lines: string[] = [];
            await clusterOn(sim.url).sweepProbePods("run-2", (l) => lines.push(l));
            assert.deepEqual(sim.pods.map((p) => p.metadata?.name).sort(), [
                "kpm-probe-cli",
                "kube-proxy-abc",
                "other-probe",
            ]);
            const deletes = sim.requests.filter((r) => r.method === "DELETE");
            assert.deepEqual(
                deletes.map((d) => {
                    const u = new URL(d.url, "http://sim");
                    return [
                        u.pathname.split("/").pop(),
                        u.searchParams.get("gracePeriodSeconds") ?? d.body?.gracePeriodSeconds,
                        d.body?.preconditions?.uid,
                    ];
                }),
                [
                    ["kpm-probe-dead", "0", "uid-kpm-probe-dead"],
                    ["kpm-cleanup-stale", "0", "uid-kpm-cleanup-stale"],
                ],
            );
            assert.deepEqual(lines, [
                "probe pod kube-system/kpm-probe-dead: deleted (left by the run run-1, which no longer holds the rollout lease)",
                `probe pod kube-system/kpm-cleanup-stale: deleted (stale since ${new Date(Number(past) * 1000).toISOString()})`,
            ]);
        } finally {
            await sim.close();
        }
    });
});

describe("the next run sweeps the probe pods a killed run left (SIMULATED in-memory cluster)", () => {
    const TARGET = kubeProxyConfig("nftables");
    function setup() {
        const clock = new FakeClock();
        const cluster = new FakeCluster(clock, { installerMode: "iptables", pools: { canary: 1 } });
        const lines: string[] = [];
        const spec = rolloutSpecSchema.parse({
            target: { hash: configHash(TARGET), mode: "nftables", config: TARGET },
            pools: [{ name: "canary", nodeSelector: "pool=canary" }],
            verify: { hooks: [] },
        });
        const ctx = (holder: string): Context => ({
            cluster,
            spec,
            log: (l) => lines.push(l),
            holder,
            clock,
            soakCheckSeconds: 30,
        });
        return { clock, cluster, lines, ctx };
    }

    it("a run killed while its probe pod runs leaves the pod; the next run, once it holds the lease, deletes it first", async () => {
        const { clock, cluster, lines, ctx } = setup();
        cluster.faults.dieDuringProbeOn = (n) => n === "canary-1";
        await assert.rejects(runPools(ctx("run-1")), /SIMULATED crash at probe on canary-1/);
        assert.deepEqual(
            cluster.probePods.map((p) => [p.node, p.run]),
            [["canary-1", "run-1"]],
        );
        cluster.revive();
        cluster.faults.dieDuringProbeOn = undefined;
        clock.t += 61_000; // run-1's lease expires
        await runPools(ctx("run-2"));
        assert.deepEqual(cluster.probePods, [], "no probe pod is left");
        assert.deepEqual(cluster.sweeps, ["run-1", "run-2"], "each run sweeps once, at its start");
        // under the lease, before anything else is written
        assert.equal(
            cluster.history[cluster.history.lastIndexOf("lease taken") + 1],
            "probe pod kpm-probe-canary-1-1 deleted",
        );
        assert.ok(
            lines.some((l) =>
                /probe pod kube-system\/kpm-probe-canary-1-1: deleted \(left by the run run-1, which no longer holds the rollout lease\)/.test(
                    l,
                ),
            ),
            lines.join("\n"),
        );
    });

    it("a run refused because another run holds the lease sweeps nothing: that run's probe pod may be in use", async () => {
        const { cluster, ctx } = setup();
        cluster.faults.dieDuringProbeOn = (n) => n === "canary-1";
        await assert.rejects(runPools(ctx("run-1")), /SIMULATED crash at probe on canary-1/);
        cluster.revive();
        await assert.rejects(runPools(ctx("run-2")), RolloutBusy);
        assert.deepEqual(cluster.sweeps, ["run-1"], "only run-1 swept, at its own start");
        assert.equal(cluster.probePods.length, 1);
    });

    it("a lease-less command's probe pod (status --probe, verify) stays until it is stale", async () => {
        const { clock, cluster, ctx } = setup();
        cluster.probePods.push(
            { name: "kpm-probe-cli-live", node: "canary-1", staleAfter: seconds(clock.now() + 60_000) },
            { name: "kpm-probe-cli-stale", node: "canary-1", staleAfter: seconds(clock.now() - 1000) },
        );
        await runPools(ctx("run-1"));
        assert.deepEqual(
            cluster.probePods.map((p) => p.name),
            ["kpm-probe-cli-live"],
        );
    });
});
