// scripts/auditLog.ts: the bench's count of an up's API requests by client, from the audit log.
import assert from "node:assert/strict";
import { clientOf, perNodeByClient, requestsByClient } from "../../scripts/auditLog.js";

const KCM = "kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/4b8e8b5";

function event(at: string, verb: string, resource: string, userAgent: string, extra: Record<string, unknown> = {}) {
    const [res, sub] = resource.split("/");
    return JSON.stringify({
        kind: "Event",
        stage: "ResponseComplete",
        verb,
        userAgent,
        user: { username: "admin" },
        objectRef: { resource: res, ...(sub ? { subresource: sub } : {}), namespace: "kube-system" },
        requestReceivedTimestamp: at,
        ...extra,
    });
}

describe("the bench's API requests by client, from kube-apiserver's audit log", () => {
    it("names a client by its program, and a controller-manager's or scheduler's request by its controller", () => {
        assert.equal(
            clientOf(`${KCM}/daemon-set-controller`, "system:kube-controller-manager"),
            "kube-controller-manager daemon-set-controller",
        );
        assert.equal(
            clientOf("kube-scheduler/v1.37.2 (linux/amd64) kubernetes/4b8e8b5/scheduler", "x"),
            "kube-scheduler scheduler",
        );
        assert.equal(
            clientOf("kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/$Format/daemon-set-controller", "x"),
            "kube-controller-manager daemon-set-controller",
        );
        assert.equal(clientOf("kwok/v0.8.0 (linux/amd64)", "admin"), "kwok");
        assert.equal(clientOf("node-fetch", "admin"), "node-fetch");
        assert.equal(clientOf(undefined, "admin"), "user admin");
    });

    it("counts the requests received inside the window only, per client and verb/resource, one per completed request", () => {
        const lines = [
            event("2026-12-02T10:00:00.500Z", "patch", "nodes", "kpm"), // before the window
            event("2026-12-02T10:00:01.000Z", "patch", "nodes", "kpm"),
            event("2026-12-02T10:00:02.000Z", "patch", "nodes", "kpm"),
            event("2026-12-02T10:00:02.000Z", "delete", "pods", `${KCM}/daemon-set-controller`),
            event("2026-12-02T10:00:02.500Z", "delete", "pods", "kwok/v0.8.0", { responseStatus: { code: 404 } }),
            event("2026-12-02T10:00:02.600Z", "delete", "pods", "kwok/v0.8.0", { responseStatus: { code: 200 } }),
            event(
                "2026-12-02T10:00:03.000Z",
                "create",
                "pods/binding",
                "kube-scheduler/v1.37.2 (linux/amd64) kubernetes/4b8e8b5/scheduler",
            ),
            event("2026-12-02T10:00:03.000Z", "get", "", "kpm", { objectRef: undefined, requestURI: "/metrics?x=1" }),
            event("2026-12-02T10:00:03.500Z", "watch", "pods", "kpm", { stage: "ResponseStarted" }), // not a completion
            "not json",
            "{broken",
            event("2026-12-02T10:00:04.000Z", "patch", "nodes", "kpm"), // after the window
        ];
        const byClient = requestsByClient(lines, new Date("2026-12-02T10:00:01Z"), new Date("2026-12-02T10:00:03.9Z"));
        assert.deepEqual(Object.fromEntries([...byClient].map(([c, k]) => [c, Object.fromEntries(k)])), {
            kpm: { "patch nodes": 2, "get /metrics": 1 },
            "kube-controller-manager daemon-set-controller": { "delete pods": 1 },
            "kube-scheduler scheduler": { "create pods/binding": 1 },
            kwok: { "delete pods (404)": 1, "delete pods": 1 },
        });
        assert.deepEqual(perNodeByClient(byClient, 2), [
            { client: "kpm", perNode: 1.5, kinds: { "patch nodes": 1, "get /metrics": 0.5 } },
            { client: "kwok", perNode: 1, kinds: { "delete pods (404)": 0.5, "delete pods": 0.5 } },
            { client: "kube-controller-manager daemon-set-controller", perNode: 0.5, kinds: { "delete pods": 0.5 } },
            { client: "kube-scheduler scheduler", perNode: 0.5, kinds: { "create pods/binding": 0.5 } },
        ]);
    });
});
