// scripts/apiRequests.ts: which of the API server's requests the bench counts as the move's.
import assert from "node:assert/strict";
import { countedRequests } from "../../scripts/apiRequests.js";

describe("the bench's count of a move's API requests", () => {
    it("counts every kind but the nodes' status heartbeats (kwok's timer, not the move)", () => {
        const totals = new Map([
            ["PATCH nodes", 8],
            ["PATCH nodes/status", 1000],
            ["DELETE pods", 4],
            ["PATCH pods/status", 2],
        ]);
        assert.equal(countedRequests(totals), 14);
    });

    it("counts a node's own writes and its pods' status, which share a resource or subresource with a heartbeat", () => {
        assert.equal(
            countedRequests(
                new Map([
                    ["PATCH nodes", 3],
                    ["GET nodes/status", 2],
                    ["PATCH pods/status", 5],
                ]),
            ),
            10,
        );
    });
});
