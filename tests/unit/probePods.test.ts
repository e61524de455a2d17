// components/core/probePods.ts: a probe pod's deadline and stale-after time, and which pods a run
// holding the rollout lease sweeps (the boundaries of "stale"; probeSweep.test.ts has the whole sweep).
import assert from "node:assert/strict";
import {
    PROBE_DEADLINE_MARGIN_SECONDS,
    PROBE_STALE_MARGIN_SECONDS,
    probePodLifetime,
    probePodsToSweep,
    UNLABELLED_PROBE_STALE_SECONDS,
} from "../../components/core/probePods.js";

const NOW = Date.parse("2026-12-06T01:00:00Z");

describe("a probe pod's lifetime", () => {
    it("rounds a fractional timeout and the creation time up, never cutting the pod's run short", () => {
        const { activeDeadlineSeconds, staleAfter } = probePodLifetime(119.2, NOW + 1);
        assert.equal(activeDeadlineSeconds, 120 + PROBE_DEADLINE_MARGIN_SECONDS);
        assert.equal(staleAfter, NOW / 1000 + 1 + activeDeadlineSeconds + PROBE_STALE_MARGIN_SECONDS);
    });
});

describe("which probe pods a run holding the lease sweeps", () => {
    const sweep = (pods: Parameters<typeof probePodsToSweep>[0]) =>
        probePodsToSweep(pods, { holder: "run-2", nowMs: NOW });

    it("a lease-less pod goes only once past its stale-after label, not at it", () => {
        assert.deepEqual(sweep([{ name: "at", staleAfter: String(NOW / 1000) }]), []);
        assert.deepEqual(sweep([{ name: "past", staleAfter: String(NOW / 1000 - 1) }]), [
            { name: "past", why: "stale since 2026-12-06T00:59:59.000Z" },
        ]);
    });

    it("an unlabelled or garbled-label pod is stale an hour after its creation", () => {
        const created = (ms: number) => new Date(NOW - ms).toISOString();
        const hour = UNLABELLED_PROBE_STALE_SECONDS * 1000;
        assert.deepEqual(
            sweep([
                { name: "an-hour-old", createdAt: created(hour) },
                { name: "older", createdAt: created(hour + 1000) },
                { name: "too-long-label", staleAfter: "1234567890123", createdAt: created(hour + 1000) },
                { name: "signed-label", staleAfter: "-1", createdAt: created(60_000) },
                { name: "label-with-text", staleAfter: "1x", createdAt: created(60_000) },
                { name: "empty-label", staleAfter: "", createdAt: created(60_000) },
            ]).map((s) => [s.name, s.why]),
            [
                ["older", "stale since 2026-12-06T00:59:59.000Z"],
                ["too-long-label", "stale since 2026-12-06T00:59:59.000Z"],
            ],
        );
    });

    it("a pod with neither a label nor a readable creation time stays: nothing says it is stale", () => {
        assert.deepEqual(sweep([{ name: "unknown" }, { name: "bad-date", createdAt: "yesterday" }]), []);
    });

    it("another run's pod goes whatever its labels say; this run's own never", () => {
        assert.deepEqual(
            sweep([
                { name: "theirs", run: "run-1", staleAfter: String(NOW / 1000 + 600) },
                { name: "mine", run: "run-2", staleAfter: String(NOW / 1000 - 600) },
            ]),
            [{ name: "theirs", why: "left by the run run-1, which no longer holds the rollout lease" }],
        );
    });
});
