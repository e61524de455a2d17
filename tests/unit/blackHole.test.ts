// An API server that accepts connections and never answers (a black-holed network, a hung load
// balancer). Each path of the tool's cluster client is pointed at a plain TCP server on 127.0.0.1
// that accepts and stays silent (the black hole: no TLS handshake, no HTTP answer), or at a
// SIMULATED API server that answers part of a request and then goes silent, and must fail within
// the request timeout (KPM_API_TIMEOUT_SECONDS), naming the server and the timeout.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readSnapshot } from "../../components/cluster/snapshot.js";
import { CLI, environmentFor, runAsync } from "../helpers.js";
import { answer, clusterOn, listenSimulated, openStream } from "./simulatedApi.js";

/** the request timeout these tests run with, in seconds */
const TIMEOUT = 0.3;

/** A black hole on 127.0.0.1: accepts every connection, reads what it is sent, never writes a byte. */
async function blackHole(): Promise<{ port: number; open: () => number; close: () => Promise<void> }> {
    const sockets = new Set<Socket>();
    const server = createServer((s) => {
        sockets.add(s);
        s.on("data", () => undefined);
        s.on("error", () => undefined);
        s.on("close", () => sockets.delete(s));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return {
        port: (server.address() as AddressInfo).port,
        open: () => sockets.size,
        close: async () => {
            for (const s of sockets) s.destroy();
            await new Promise((r) => server.close(r));
        },
    };
}

/** Runs `fn`, which must reject within `withinMs`; returns its error's message. */
async function failsWithin(withinMs: number, fn: () => Promise<unknown>): Promise<string> {
    const started = Date.now();
    let message: string | undefined;
    await fn().then(
        (v) => assert.fail(`it answered ${JSON.stringify(v)}`),
        (e: unknown) => (message = (e as Error).message),
    );
    const took = Date.now() - started;
    assert.ok(took < withinMs, `it failed after ${took} ms, not within ${withinMs} ms: ${message}`);
    return message!;
}

const escaped = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

/** The timeout's error, naming the server, the request and the timeout. */
const timedOut = (server: string, request: string) =>
    new RegExp(`the API server ${escaped(server)} did not answer ${request} within ${TIMEOUT}s \\(request timeout`);

async function until(what: string, ok: () => boolean, ms = 3000): Promise<void> {
    const end = Date.now() + ms;
    while (!ok()) {
        if (Date.now() > end) assert.fail(`not within ${ms} ms: ${what}`);
        await new Promise((r) => setTimeout(r, 20));
    }
}

describe("a black-holed API server: every request fails within the request timeout, naming the server", function () {
    this.timeout(15_000);
    environmentFor({ KPM_API_TIMEOUT_SECONDS: String(TIMEOUT) });
    let hole: Awaited<ReturnType<typeof blackHole>>;
    beforeEach(async () => (hole = await blackHole()));
    afterEach(() => hole.close());

    for (const scheme of ["http", "https"])
        it(`an API call over ${scheme} (no ${scheme === "https" ? "TLS handshake" : "answer"}): the server version`, async () => {
            const server = `${scheme}://127.0.0.1:${hole.port}`;
            const message = await failsWithin(2000, () => clusterOn(server).serverVersion());
            assert.match(message, timedOut(server, "GET /version/?"));
            await until("the abandoned connection is closed", () => hole.open() === 0);
        });

    it("the node list (protobuf) and the pod list (JSON)", async () => {
        const server = `https://127.0.0.1:${hole.port}`;
        const cluster = clusterOn(server);
        assert.match(await failsWithin(2000, () => cluster.nodes()), timedOut(server, "GET /api/v1/nodes"));
        assert.match(
            await failsWithin(2000, () => cluster.kubeProxyPods("n1")),
            timedOut(server, "GET /api/v1/namespaces/kube-system/pods"),
        );
    });

    it("an answer that stops after its headers: the node list (protobuf), its body cut off", async () => {
        const sim = await listenSimulated((_req, res) => {
            res.writeHead(200, { "content-type": "application/vnd.kubernetes.protobuf" });
            res.write(Buffer.from([0x6b, 0x38, 0x73, 0x00])); // the envelope's first bytes, then nothing
        });
        try {
            const message = await failsWithin(2000, () => clusterOn(sim.url).nodes());
            assert.match(message, timedOut(sim.url, "GET /api/v1/nodes"));
        } finally {
            await sim.close();
        }
    });

    it("a log read gives up, saying why", async () => {
        const server = `https://127.0.0.1:${hole.port}`;
        const started = Date.now();
        const log = await clusterOn(server).podLog("kube-proxy-abcde");
        assert.ok(Date.now() - started < 2000);
        assert.match(log, /^\(no log: /);
        assert.match(log, timedOut(server, "GET /api/v1/namespaces/kube-system/pods/kube-proxy-abcde/log"));
    });

    it("the rollout Lease: taking it", async () => {
        const server = `https://127.0.0.1:${hole.port}`;
        const message = await failsWithin(2000, () => clusterOn(server).acquireLease("run-1", 60, () => undefined));
        assert.match(
            message,
            timedOut(server, "GET /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-proxy-mode"),
        );
    });

    it("a probe pod: the read of the tolerations it copies", async () => {
        const server = `https://127.0.0.1:${hole.port}`;
        const message = await failsWithin(2000, () =>
            clusterOn(server).runProbe("n1", { image: "busybox", action: "probe", env: {}, timeoutSeconds: 60 }),
        );
        assert.match(message, timedOut(server, "GET /apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy"));
    });

    it("a wait on a watch (the installer's DaemonSet): the watch's start, then the read", async () => {
        const server = `https://127.0.0.1:${hole.port}`;
        const message = await failsWithin(3000, () => clusterOn(server).waitForDaemonSetRollout(60, () => undefined));
        assert.match(message, timedOut(server, "GET /apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy"));
    });

    it("the preview's read of the cluster, and no request of it is left open", async () => {
        const server = `https://127.0.0.1:${hole.port}`;
        const kubeconfig = [
            "apiVersion: v1",
            "kind: Config",
            `clusters: [{name: hole, cluster: {server: "${server}", insecure-skip-tls-verify: true}}]`,
            "users: [{name: hole, user: {token: not-a-secret}}]",
            "contexts: [{name: hole, context: {cluster: hole, user: hole}}]",
            "current-context: hole",
        ].join("\n");
        const message = await failsWithin(2000, () => readSnapshot({ kubeconfigContent: kubeconfig }, "kubeadm"));
        assert.match(message, new RegExp(`the API server ${escaped(server)} did not answer .* within ${TIMEOUT}s`));
        // the reads that lost the race (the CRD's, the access reviews) end too
        await until("every connection of the preview's reads is closed", () => hole.open() === 0);
    });

    for (const command of [["status"], ["precheck", "--mode", "nftables"]])
        it(`the CLI's ${command[0]} exits 1 within the timeout, naming the server and the timeout`, async () => {
            const dir = mkdtempSync(join(tmpdir(), "kpm-hole-"));
            try {
                const server = `https://127.0.0.1:${hole.port}`;
                const kubeconfig = join(dir, "kubeconfig");
                writeFileSync(
                    kubeconfig,
                    `apiVersion: v1\nkind: Config\nclusters: [{name: hole, cluster: {server: "${server}", insecure-skip-tls-verify: true}}]\n` +
                        "users: [{name: hole, user: {}}]\ncontexts: [{name: hole, context: {cluster: hole, user: hole}}]\ncurrent-context: hole\n",
                );
                const started = Date.now();
                const r = await runAsync(process.execPath, [CLI, ...command, "--kubeconfig", kubeconfig], {
                    env: { KPM_API_TIMEOUT_SECONDS: "1" },
                });
                const took = Date.now() - started;
                assert.equal(r.code, 1, r.stderr);
                assert.match(
                    r.stderr,
                    new RegExp(`the API server ${escaped(server)} did not answer .* within 1s \\(request timeout`),
                );
                // a process start (about 1 s here) plus the timeout, with room for a loaded machine
                assert.ok(took < 8000, `took ${took} ms`);
            } finally {
                rmSync(dir, { recursive: true, force: true });
            }
        });
});

describe("a watch that goes silent (SIMULATED API server)", function () {
    this.timeout(15_000);
    environmentFor({ KPM_API_TIMEOUT_SECONDS: String(TIMEOUT) });

    it("the pod informer: a watch silent past its window is restarted; a restart with no answer fails the wait, naming the server and the timeout", async () => {
        const streams = new Set<ServerResponse>();
        const watches: URLSearchParams[] = [];
        const sim = await listenSimulated((req, res) => {
            const url = new URL(req.url ?? "/", "http://sim");
            if (url.pathname !== "/api/v1/namespaces/kube-system/pods") return answer(res, 404, {});
            if (url.searchParams.get("watch") !== "true")
                return answer(res, 200, { kind: "PodList", metadata: { resourceVersion: "7" }, items: [] });
            watches.push(url.searchParams);
            // the first watch opens and then says nothing, not even its end; every later one gets no answer at all
            if (watches.length === 1) openStream(res, streams);
        }, streams);
        try {
            const cluster = clusterOn(sim.url);
            const message = await failsWithin(10_000, () => cluster.waitForKubeProxy("n1", null, 60));
            assert.match(message, timedOut(sim.url, "GET /api/v1/namespaces/kube-system/pods \\(a watch's start\\)"));
            assert.equal(watches.length, 2, "the silent watch was given up and started again once");
            // the server is asked to end each watch (and to send bookmarks), so a silent one is told from a quiet one
            assert.equal(watches[0].get("allowWatchBookmarks"), "true");
            assert.ok(Number(watches[0].get("timeoutSeconds")) > 0, watches[0].toString());
            cluster.close();
        } finally {
            await sim.close();
        }
    });
});
