// API calls that ride out blips (components/cluster/retry.ts): what is tried again, how often, and what is not.
import assert from "node:assert/strict";
import {
    isClusterWrite,
    isTransient,
    RETRY,
    retrying,
    ServerRecovery,
    withRetries,
} from "../../components/cluster/retry.js";

const apiError = (code: number) => Object.assign(new Error(`HTTP-Code: ${code}`), { code, body: "{}" });
const connectionError = (code: string) =>
    Object.assign(new Error(`request to https://127.0.0.1:6443 failed, reason: connect ${code}`), {
        type: "system",
        code,
        errno: code,
    });

describe("API retries", () => {
    it("tries 429, 5xx and broken connections again; not 4xx, and not an eviction's 429 (a PodDisruptionBudget)", () => {
        assert.equal(isTransient(apiError(429), "listNode"), true);
        assert.equal(isTransient(apiError(503), "patchNode"), true);
        assert.equal(isTransient(apiError(500), "readNode"), true);
        assert.equal(isTransient(connectionError("ECONNREFUSED"), "readNode"), true);
        assert.equal(isTransient(connectionError("ECONNRESET"), "readNode"), true);
        assert.equal(isTransient(apiError(404), "readNode"), false);
        assert.equal(isTransient(apiError(403), "patchNode"), false);
        assert.equal(isTransient(apiError(409), "replaceNamespacedLease"), false);
        assert.equal(isTransient(apiError(429), "createNamespacedPodEviction"), false);
    });

    it("backs off with jitter until the call succeeds", async () => {
        const delays: number[] = [];
        let calls = 0;
        const result = await retrying(
            "listNode",
            async () => {
                if (++calls < 4) throw connectionError("ECONNREFUSED");
                return "nodes";
            },
            { sleep: async (ms) => void delays.push(ms), random: () => 0.5 },
        );
        assert.equal(result, "nodes");
        assert.equal(calls, 4);
        assert.deepEqual(delays, [188, 375, 750]);
    });

    it("gives up after its budget with the last error, and fails a permanent error at once", async () => {
        let calls = 0;
        const err = await retrying(
            "patchNode",
            async () => {
                calls++;
                throw apiError(503);
            },
            { sleep: async () => undefined, random: () => 1 },
        ).catch((e) => e);
        assert.equal(err.code, 503);
        assert.ok(calls > 1 && calls <= RETRY.attempts, `${calls} calls`);
        calls = 0;
        const forbidden = await retrying("patchNode", async () => {
            calls++;
            throw apiError(403);
        }).catch((e) => e);
        assert.equal(forbidden.code, 403);
        assert.equal(calls, 1);
    });

    it("tries a 401 or 403 again only within RETRY.recoveryMs of a call that found the server unreachable", async () => {
        let now = 1_000_000;
        const server = new ServerRecovery(() => now);
        assert.equal(isTransient(apiError(403), "patchNode", server.recovering), false, "never unreachable");
        let calls = 0;
        const answers = [connectionError("ECONNREFUSED"), apiError(403), apiError(401)];
        const result = await retrying(
            "patchNode",
            async () => {
                const answer = answers[calls++];
                if (answer) throw answer;
                return "patched";
            },
            { sleep: async () => undefined, server },
        );
        assert.equal(result, "patched");
        assert.equal(calls, 4);
        // another call, later in the window: its first 403 is the warm-up too
        now += RETRY.recoveryMs;
        calls = 0;
        assert.equal(
            await retrying(
                "readNamespacedLease",
                async () => {
                    if (++calls < 2) throw apiError(403);
                    return "lease";
                },
                { sleep: async () => undefined, server },
            ),
            "lease",
        );
        // past the window a 403 is a refusal again, and fails at once
        now += 1;
        calls = 0;
        const refused = await retrying(
            "patchNode",
            async () => {
                calls++;
                throw apiError(403);
            },
            { sleep: async () => undefined, server },
        ).catch((e) => e);
        assert.equal(refused.code, 403);
        assert.equal(calls, 1);
    });

    it("wraps every method of an API client, keeping its this", async () => {
        class Api {
            n = 0;
            async readNode(): Promise<number> {
                if (++this.n < 2) throw apiError(502);
                return this.n;
            }
        }
        const seen: string[] = [];
        const original = RETRY.firstDelayMs;
        RETRY.firstDelayMs = 1;
        try {
            const api = withRetries(new Api(), (call, attempt) => seen.push(`${call}#${attempt}`));
            assert.equal(await api.readNode(), 2);
        } finally {
            RETRY.firstDelayMs = original;
        }
        assert.deepEqual(seen, ["readNode#1"]);
    });

    it("fences the calls that write to the cluster, not reads, the Lease's own compare-and-swaps or access reviews", () => {
        for (const call of [
            "patchNode",
            "createNamespacedPodEviction",
            "createNamespacedPod",
            "deleteNamespacedPod",
            "patchNamespacedDaemonSet",
            "replaceNamespacedConfigMap",
            "deleteNamespacedDaemonSet",
        ])
            assert.equal(isClusterWrite(call), true, call);
        for (const call of [
            "readNode",
            "listNode",
            "listNamespacedPod",
            "readNamespacedPodLog",
            "readNamespacedLease",
            "createNamespacedLease",
            "replaceNamespacedLease",
            "createSelfSubjectAccessReview",
            "createSelfSubjectReview",
        ])
            assert.equal(isClusterWrite(call), false, call);
    });
});
