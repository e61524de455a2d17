// components/rollout/clock.ts realClock: the runner's soaks and the cluster client's waits sleep on
// it, and a stop (SIGTERM, a lost lease) aborts the sleep; nothing of a sleep may outlive it.
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { realClock } from "../../components/rollout/clock.js";

const HOUR = 3_600_000;
/**
 * Timers alive in this process: an abandoned one would keep a finished run's process up. Counted
 * after a first await, once mocha has started the test's own timeout timer.
 */
async function timers(): Promise<number> {
    await Promise.resolve();
    return process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
}

describe("realClock", () => {
    it("now is the wall clock in milliseconds", () => {
        const before = Date.now();
        const now = realClock.now();
        assert.ok(now >= before && now <= Date.now(), String(now));
    });
    it("a sleep on an aborted signal ends at once and starts no timer", async () => {
        const before = await timers();
        await realClock.sleep(HOUR, AbortSignal.abort());
        assert.equal(await timers(), before);
    });
    it("an abort ends a sleep, and leaves neither its timer nor its listener", async () => {
        const stop = new AbortController();
        const before = await timers();
        const sleeping = realClock.sleep(HOUR, stop.signal);
        assert.equal(getEventListeners(stop.signal, "abort").length, 1);
        stop.abort();
        await sleeping;
        assert.equal(await timers(), before);
        assert.equal(getEventListeners(stop.signal, "abort").length, 0);
    });
    it("a sleep that runs out removes its abort listener", async () => {
        const stop = new AbortController();
        await realClock.sleep(1, stop.signal);
        assert.equal(getEventListeners(stop.signal, "abort").length, 0);
        assert.equal(stop.signal.aborted, false);
    });
    it("a sleep without a signal runs out", async () => {
        await realClock.sleep(1);
    });
});
