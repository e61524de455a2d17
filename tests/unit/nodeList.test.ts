// Reading every node: the list is read page by page (`limit`/`continue`) as plain JSON
// (components/cluster/client.ts, Cluster.eachNode). These tests run it against a SIMULATED API server (a
// small HTTP server that lists nodes in pages and nothing else).
import assert from "node:assert/strict";
import { NODE_PAGE } from "../../components/cluster/client.js";
import { answer, clusterOn, failure, listenSimulated, type SimulatedServer } from "./simulatedApi.js";
import { MARKS } from "../../components/core/plan.js";

/** SIMULATED API server: `count` nodes, listed in pages of `limit` with an opaque continue token. */
async function simulatedNodeServer(count: number, failPage?: number): Promise<SimulatedServer & { requests: URL[] }> {
    const requests: URL[] = [];
    const server = await listenSimulated((req, res) => {
        const url = new URL(req.url ?? "/", "http://sim");
        requests.push(url);
        if (url.pathname !== "/api/v1/nodes") return void res.writeHead(404).end();
        const limit = Number(url.searchParams.get("limit") ?? count);
        const from = Number(Buffer.from(url.searchParams.get("continue") ?? "MA==", "base64").toString());
        if (failPage !== undefined && from / limit === failPage) {
            return answer(res, 410, failure(410, "Expired", "SIMULATED: the continue token expired"));
        }
        const to = Math.min(count, from + limit);
        const items = [];
        for (let i = from; i < to; i++)
            items.push({
                apiVersion: "v1",
                kind: "Node",
                metadata: {
                    name: `workers-${i + 1}`,
                    creationTimestamp: "2026-12-01T00:00:00Z",
                    labels: { pool: "workers", ...(i % 2 ? { [MARKS.configLabel]: "abc123" } : {}) },
                    annotations: i === 0 ? { [MARKS.verifiedAnnotation]: "abc123@2026-12-01T00:00:00Z" } : {},
                },
                spec: { unschedulable: i === 1 },
                status: { nodeInfo: { kernelVersion: "6.8.0", osImage: "Ubuntu", operatingSystem: "linux" } },
            });
        const next = to < count ? Buffer.from(String(to)).toString("base64") : undefined;
        answer(res, 200, {
            apiVersion: "v1",
            kind: "NodeList",
            metadata: { resourceVersion: "7", continue: next },
            items,
        });
    });
    return { ...server, requests };
}

describe("reading every node (SIMULATED API server)", () => {
    it("follows the continue token through every page and keeps what each node says", async () => {
        const sim = await simulatedNodeServer(2 * NODE_PAGE + 50);
        try {
            const nodes = await clusterOn(sim.url).nodes();
            assert.equal(nodes.length, 2 * NODE_PAGE + 50);
            assert.deepEqual(
                nodes.slice(0, 3).map((n) => n.name),
                ["workers-1", "workers-2", "workers-3"],
            );
            assert.equal(nodes.at(-1)!.name, `workers-${2 * NODE_PAGE + 50}`);
            assert.equal(sim.requests.length, 3, "three pages");
            assert.ok(sim.requests.every((u) => u.searchParams.get("limit") === String(NODE_PAGE)));
            const [first, second] = nodes;
            assert.equal(first.verified, "abc123");
            assert.equal(first.verifiedAt, "2026-12-01T00:00:00Z");
            assert.equal(first.placement, null);
            assert.equal(second.placement, "abc123");
            assert.equal(second.unschedulable, true);
            assert.equal(first.kernelVersion, "6.8.0");
        } finally {
            await sim.close();
        }
    });

    it("fails, naming the server's reason, when a later page is refused, instead of returning the pages it read", async () => {
        const sim = await simulatedNodeServer(2 * NODE_PAGE + 50, 1);
        try {
            await assert.rejects(clusterOn(sim.url).nodes(), /410 Expired: SIMULATED: the continue token expired/);
        } finally {
            await sim.close();
        }
    });
});
