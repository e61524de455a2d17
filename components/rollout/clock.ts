// Time as the rollout sees it: one clock for the runner's soaks and the cluster client's waits.

/** Time as the runner sees it (tests pass a fake clock so a 24h soak takes no time). */
export interface Clock {
    now(): number;
    /** resolves after `ms`, or at once when `signal` aborts */
    sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const realClock: Clock = {
    now: () => Date.now(),
    sleep: (ms, signal) =>
        new Promise((resolve) => {
            if (signal?.aborted) return resolve();
            const t = setTimeout(done, ms);
            function done() {
                clearTimeout(t);
                signal?.removeEventListener("abort", done);
                resolve();
            }
            signal?.addEventListener("abort", done); // done removes it
        }),
};
