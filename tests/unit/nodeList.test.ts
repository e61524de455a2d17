// Reading every node: the list is read page by page (`limit`/`continue`), in protobuf when the
// server answers in it and in JSON when it does not (components/cluster/client.ts, Cluster.eachNode;
// components/cluster/nodeProtobuf.ts). These tests run it against a SIMULATED API server (a small
// HTTP server that lists nodes in pages and nothing else). The protobuf pages it serves, and the JSON
// of the same pages, are real kube-apiserver 1.37 answers (tests/fixtures/wire/README.md).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { FIXTURES } from "../helpers.js";
import { NODE_PAGE } from "../../components/cluster/client.js";
import { decodeNodeListPage, decodeStatus, NODE_LIST_ACCEPT, PROTOBUF } from "../../components/cluster/nodeProtobuf.js";
import { answer, clusterOn, failure, listenSimulated, withBody, type SimulatedServer } from "./simulatedApi.js";
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

/** A real kube-apiserver 1.37 answer kept in tests/fixtures/wire (see its README). */
function wire(file: string): Buffer {
    return readFileSync(join(FIXTURES, "wire", file));
}
const json = (file: string) => JSON.parse(wire(file).toString()) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- a fixture's JSON

/**
 * What this tool reads of a node ("*": every key of a map), the oracle the decoding is held to:
 * the protobuf decoding of a node must give these fields as its JSON has them.
 */
const READ = {
    metadata: { name: 1, resourceVersion: 1, labels: "*", annotations: "*" },
    spec: { unschedulable: 1, taints: [{ key: 1, value: 1, effect: 1, timeAdded: 1 }] },
    status: { nodeInfo: { kernelVersion: 1, osImage: 1, kubeProxyVersion: 1, operatingSystem: 1 } },
} as const;

/**
 * `value` cut to the fields of `read`, with what Kubernetes' JSON leaves out (omitempty) and its
 * protobuf writes as empty (an empty string, false) taken as absent, as every reader here takes it.
 */
function fieldsRead(read: unknown, value: unknown): unknown {
    if (value === "" || value === false || value === undefined || value === null) return undefined;
    if (read === 1 || read === "*") return value;
    if (Array.isArray(read)) return (value as unknown[]).map((v) => fieldsRead(read[0], v));
    const out: Record<string, unknown> = {};
    for (const [k, r] of Object.entries(read as object)) {
        const v = fieldsRead(r, (value as Record<string, unknown>)[k]);
        if (v !== undefined) out[k] = v;
    }
    return Object.keys(out).length ? out : undefined;
}

/**
 * SIMULATED API server serving the two real pages of three nodes (workers-4997 to workers-4999), in
 * protobuf when the request's Accept puts it first and in JSON otherwise, as kube-apiserver does;
 * a PATCH of a node is kept and answered with the node as the JSON page has it.
 */
async function recordedPagesServer(
    opts: { protobuf: boolean } = { protobuf: true },
): Promise<SimulatedServer & { accepts: string[]; lists: URL[]; patches: string[] }> {
    const accepts: string[] = [];
    const lists: URL[] = [];
    const patches: string[] = [];
    const page1 = json("nodes-page1.json");
    const server = await listenSimulated((req, res) => {
        const url = new URL(req.url ?? "/", "http://sim");
        if (req.method === "PATCH") {
            const name = url.pathname.split("/").at(-1);
            return withBody(req, (raw) => {
                patches.push(raw);
                answer(res, 200, {
                    apiVersion: "v1",
                    kind: "Node",
                    ...page1.items.find((n: any) => n.metadata.name === name),
                }); // eslint-disable-line @typescript-eslint/no-explicit-any -- a fixture's JSON
            });
        }
        lists.push(url);
        accepts.push(req.headers.accept ?? "");
        const page = url.searchParams.has("continue") ? "nodes-page2" : "nodes-page1";
        if (opts.protobuf && (req.headers.accept ?? "").startsWith(PROTOBUF))
            return void res.writeHead(200, { "content-type": PROTOBUF }).end(wire(`${page}.pb`));
        res.writeHead(200, { "content-type": "application/json" }).end(wire(`${page}.json`));
    });
    return { ...server, accepts, lists, patches };
}

describe("reading every node in protobuf (real kube-apiserver 1.37 answers, SIMULATED API server)", () => {
    it("a protobuf page decodes to what the JSON of the same page says, for every field this tool reads", () => {
        for (const page of ["nodes-page1", "nodes-page2"]) {
            const decoded = decodeNodeListPage(wire(`${page}.pb`));
            const expected = json(`${page}.json`);
            assert.equal(decoded.items.length, expected.items.length, page);
            assert.equal(
                decoded.metadata?.continue || undefined,
                expected.metadata.continue,
                `${page}: its continue token`,
            );
            decoded.items.forEach((node, i) =>
                assert.deepEqual(fieldsRead(READ, node), fieldsRead(READ, expected.items[i]), `${page} item ${i}`),
            );
        }
        const cordoned = decodeNodeListPage(wire("nodes-page1.pb")).items[1];
        assert.equal(cordoned.metadata?.name, "workers-4998");
        assert.deepEqual(
            cordoned.spec?.taints?.map((t) => t.timeAdded),
            ["2026-12-03T10:00:01Z", "2026-12-03T10:00:02Z", undefined],
            "times as the API's JSON writes them",
        );
        assert.equal(cordoned.metadata?.labels?.["empty-label"], "", "an empty label value kept");
    });

    it("the cluster client asks for protobuf and reads the same nodes from it as from JSON, page by page, and builds the same uncordon patch", async () => {
        const pb = await recordedPagesServer();
        const plain = await recordedPagesServer({ protobuf: false });
        try {
            const [viaProtobuf, viaJson] = [clusterOn(pb.url), clusterOn(plain.url)];
            const nodes = await viaProtobuf.nodes();
            assert.deepEqual(nodes, await viaJson.nodes());
            assert.deepEqual(
                nodes.map((n) => n.name),
                ["workers-4997", "workers-4998", "workers-4999"],
            );
            const cordoned = nodes[1];
            assert.equal(cordoned.unschedulable, true);
            assert.equal(cordoned.cordonedByRollout, true);
            assert.equal(cordoned.placement, "abc123");
            assert.equal(cordoned.verified, "abc123");
            assert.equal(pb.lists.length, 2, "two pages");
            assert.ok(pb.lists[1].searchParams.get("continue"), "the second page asked with the first's token");
            assert.deepEqual(pb.accepts, [NODE_LIST_ACCEPT, NODE_LIST_ACCEPT]);
            // the uncordon's JSON Patch tests the taints and marks as the list read them
            await viaProtobuf.writeNode("workers-4998", { move: null, uncordon: true });
            await viaJson.writeNode("workers-4998", { move: null, uncordon: true });
            assert.equal(pb.patches.length, 1);
            assert.match(pb.patches[0], /"op":"test","path":"\/spec\/taints"/);
            assert.equal(pb.patches[0], plain.patches[0]);
        } finally {
            await pb.close();
            await plain.close();
        }
    });

    it("a refusal in protobuf reads as the server's Status in JSON, and fails the list naming its reason and message", async () => {
        const status = { kind: 1, apiVersion: 1, status: 1, message: 1, reason: 1, code: 1, details: 1 };
        assert.deepEqual(
            fieldsRead(status, decodeStatus(wire("refusal-400.pb"))),
            fieldsRead(status, json("refusal-400.json")),
        );
        const sim = await listenSimulated((_req, res) =>
            res.writeHead(400, { "content-type": PROTOBUF }).end(wire("refusal-400.pb")),
        );
        try {
            await assert.rejects(
                clusterOn(sim.url).nodes(),
                /400 BadRequest: invalid continue token: continue key is not valid/,
            );
        } finally {
            await sim.close();
        }
    });

    it("an answer labelled protobuf that is not Kubernetes' protobuf fails the list, naming what arrived", async () => {
        const sim = await listenSimulated((_req, res) =>
            res.writeHead(200, { "content-type": PROTOBUF }).end("SIMULATED: not protobuf"),
        );
        try {
            await assert.rejects(clusterOn(sim.url).nodes(), /does not start with Kubernetes' protobuf prefix/);
        } finally {
            await sim.close();
        }
        assert.throws(() => decodeNodeListPage(wire("refusal-400.pb")), /holds a Status, not a NodeList/);
    });
});
