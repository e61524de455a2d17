// An API server restarting under the tool: it drops connections, then for a moment answers 403
// while its authorizer loads RBAC, then serves again. These tests run the tool's cluster client
// (components/cluster/client.ts, retry.ts) against a SIMULATED API server that plays those
// phases, so the real HTTP stack sees real refused connections and real 403 answers.
import assert from "node:assert/strict";
import { RETRY } from "../../components/cluster/retry.js";
import { answer, clusterOn, failure, listenSimulated, type SimulatedServer } from "./simulatedApi.js";

type Phase = "drop" | "forbid" | "serve";

/** SIMULATED API server: answers /api/v1/nodes/<name> in the phase the test sets. */
async function simulatedRestartingServer(): Promise<SimulatedServer & { set: (phase: Phase) => void; seen: Phase[] }> {
    let phase: Phase = "serve";
    const seen: Phase[] = [];
    const server = await listenSimulated((req, res) => {
        seen.push(phase);
        if (phase === "drop") return void req.socket.destroy();
        if (phase === "forbid") {
            answer(
                res,
                403,
                failure(403, "Forbidden", 'SIMULATED: nodes "workers-1" is forbidden: RBAC not loaded yet'),
            );
            phase = "serve"; // the authorizer has loaded: the next request is served
            return;
        }
        const name = decodeURIComponent(new URL(req.url ?? "/", "http://sim").pathname.split("/").pop() ?? "");
        answer(res, 200, { apiVersion: "v1", kind: "Node", metadata: { name } });
    });
    return { ...server, set: (p) => void (phase = p), seen };
}

describe("an API server restarting under the tool (SIMULATED API server)", () => {
    const firstDelay = RETRY.firstDelayMs;
    before(() => void (RETRY.firstDelayMs = 5));
    after(() => void (RETRY.firstDelayMs = firstDelay));

    it("rides out the dropped connections and then the warm-up 403, in the same call and in the next one", async () => {
        const sim = await simulatedRestartingServer();
        try {
            const cluster = clusterOn(sim.url);
            const retried: string[] = [];
            cluster.onRetry = (call, attempt, e) =>
                retried.push(`${call}#${attempt} ${String((e as { code?: unknown }).code)}`);
            sim.set("drop");
            setTimeout(() => sim.set("forbid"), 100);
            const node = await cluster.core.readNode({ name: "workers-1" });
            assert.equal(node.metadata?.name, "workers-1");
            assert.ok(sim.seen.includes("drop") && sim.seen.includes("forbid"), sim.seen.join());
            assert.ok(
                retried.some((r) => / 403$/.test(r)),
                `the 403 was retried: ${retried.join(", ")}`,
            );
            // a new call whose first answer is the warm-up 403 (the server came back between calls)
            sim.set("forbid");
            const again = await cluster.core.readNode({ name: "workers-2" });
            assert.equal(again.metadata?.name, "workers-2");
        } finally {
            await sim.close();
        }
    });

    it("fails a 403 at once, naming the server's reason, when the server was never unreachable", async () => {
        const sim = await simulatedRestartingServer();
        try {
            sim.set("forbid");
            await assert.rejects(clusterOn(sim.url).core.readNode({ name: "workers-1" }), /403.*forbidden/i);
            assert.deepEqual(sim.seen, ["forbid"]);
        } finally {
            await sim.close();
        }
    });
});
