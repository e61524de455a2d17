// components/core/firstSync.ts: a node's first sync in its new mode, its deadline from the old
// mode's sync, and the verdict on the sampler's lines (synced, waiting, stalled, crashed, late).
import assert from "node:assert/strict";
import {
    FIRST_SYNC_DEFAULTS,
    firstSyncLimits,
    fullSyncTotals,
    judgeFirstSync,
    parseNodeSyncs,
    parseSyncSample,
    recordedBaseline,
    slowSyncProblem,
    syncBaseline,
    withSync,
    type FirstSyncLimits,
    type SyncSample,
} from "../../components/core/index.js";

const LIMITS: FirstSyncLimits = { deadlineSeconds: 120, stallSeconds: 30, why: "test" };

/** Samples every 2 s from t=1000: `cpu` per sample (undefined: unreadable), mode and synced from `at`. */
function samples(cpu: (number | undefined)[], at: (i: number) => Partial<SyncSample> = () => ({})): SyncSample[] {
    return cpu.map((c, i) => ({ t: 1000 + 2 * i, synced: [], cpu: c, pids: c === undefined ? [] : ["42"], ...at(i) }));
}

describe("first sync: the old mode's sync read from kube-proxy's metrics", () => {
    it("takes the mean of the full-sync histogram, the larger family's when both report", () => {
        const b = syncBaseline({
            'kubeproxy_sync_full_proxy_rules_duration_seconds_sum{ip_family="IPv4"}': 12,
            'kubeproxy_sync_full_proxy_rules_duration_seconds_count{ip_family="IPv4"}': 4,
            'kubeproxy_sync_full_proxy_rules_duration_seconds_sum{ip_family="IPv6"}': 10,
            'kubeproxy_sync_full_proxy_rules_duration_seconds_count{ip_family="IPv6"}': 2,
            'kubeproxy_sync_proxy_rules_duration_seconds_sum{ip_family="IPv4"}': 1,
            'kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family="IPv4"}': 10,
        });
        assert.deepEqual(b, { seconds: 5, metric: "full" });
    });

    it("falls back to every sync's histogram (ipvs mode has no full-sync one), and to nothing", () => {
        assert.deepEqual(
            syncBaseline({
                'kubeproxy_sync_proxy_rules_duration_seconds_sum{ip_family="IPv4"}': 3,
                'kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family="IPv4"}': 6,
            }),
            { seconds: 0.5, metric: "all" },
        );
        assert.deepEqual(
            syncBaseline({ 'kubeproxy_sync_full_proxy_rules_duration_seconds_count{ip_family="IPv4"}': 0 }),
            {},
        );
    });
});

describe("first sync: the deadline", () => {
    const settings = { factor: 20, minSeconds: 120, stallSeconds: 60 };

    it("is factor x the old mode's sync above the floor, the floor below it, and says which", () => {
        const above = firstSyncLimits({ seconds: 9.2, metric: "full" }, settings);
        assert.equal(above.deadlineSeconds, 184);
        assert.match(above.why, /^20 x the old mode's mean full sync of 9\.20s$/);
        const below = firstSyncLimits({ seconds: 2, metric: "full" }, settings);
        assert.equal(below.deadlineSeconds, 120);
        assert.match(below.why, /^the floor 2m \(20 x/);
        assert.equal(below.stallSeconds, 60);
    });

    it("is the floor when the old mode reported no sync, and the pool's override when it has one", () => {
        assert.match(firstSyncLimits({}, settings).why, /the old mode reported no sync duration/);
        const slower = firstSyncLimits(
            { seconds: 10, metric: "full" },
            { ...settings, slower: { by: 8.75, why: "iptables syncs slower than nftables" } },
        );
        assert.equal(slower.deadlineSeconds, Math.ceil(settings.factor * 10 * 8.75));
        assert.match(slower.why, /of 10\.00s x 8\.75 \(iptables syncs slower than nftables\)$/);
        const notSlower = firstSyncLimits(
            { seconds: 10, metric: "full" },
            { ...settings, slower: { by: 1, why: "x" } },
        );
        assert.doesNotMatch(notSlower.why, / x 1\.00/);
        const pool = firstSyncLimits({ seconds: 30, metric: "full" }, { ...settings, overrideSeconds: 900 });
        assert.equal(pool.deadlineSeconds, 900);
        assert.equal(pool.why, "the pool's firstSyncTimeout 15m");
    });

    it("the documented defaults: factor 20, floor 2m, stall 60s", () => {
        assert.deepEqual(FIRST_SYNC_DEFAULTS, { factor: 20, minSeconds: 120, stallSeconds: 60 });
    });
});

describe("first sync: the sampler's lines", () => {
    it("parses a sample, with - for what is not there", () => {
        assert.deepEqual(parseSyncSample("sample 1700000000 mode=nftables synced=IPv4,IPv6 cpu=1234 pids=17,18"), {
            t: 1700000000,
            mode: "nftables",
            synced: ["IPv4", "IPv6"],
            cpu: 1234,
            pids: ["17", "18"],
        });
        assert.deepEqual(parseSyncSample("sample 5 mode=- synced=- cpu=- pids=-"), {
            t: 5,
            mode: undefined,
            synced: [],
            cpu: undefined,
            pids: [],
        });
        assert.equal(parseSyncSample("### kpm:samples"), undefined);
        assert.equal(parseSyncSample("sample x mode=- synced=- cpu=- pids=-"), undefined);
    });
});

describe("first sync: the verdict", () => {
    it("synced once /proxyMode answers the mode and a family finished a sync, with the seconds waited", () => {
        const s = samples([1, 5, 9], (i) => (i === 2 ? { mode: "nftables", synced: ["IPv4"] } : {}));
        assert.deepEqual(judgeFirstSync(s, "nftables", LIMITS), { kind: "synced", seconds: 4 });
    });

    it("a process that synced in another mode fails the mode check at once", () => {
        const s = samples([1, 5], (i) => (i === 1 ? { mode: "iptables", synced: ["IPv4"] } : {}));
        assert.deepEqual(judgeFirstSync(s, "nftables", LIMITS), {
            kind: "failed",
            check: "mode",
            seconds: 2,
            detail: "/proxyMode says iptables, expected nftables",
        });
    });

    it("a slow kube-proxy (CPU growing, no sync yet) keeps waiting past the stall limit, busy", () => {
        const s = samples(Array.from({ length: 40 }, (_, i) => i));
        const v = judgeFirstSync(s, "nftables", LIMITS);
        assert.deepEqual(v, { kind: "waiting", seconds: 78, busy: true });
    });

    it("a stalled kube-proxy (no CPU used for the stall limit) fails, naming the quiet time and what /proxyMode says", () => {
        const quiet = samples([1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3]);
        const v = judgeFirstSync(quiet, "nftables", LIMITS);
        assert.equal(v.kind, "failed");
        assert.equal(v.kind === "failed" && v.check, "first-sync");
        assert.match(
            v.kind === "failed" ? v.detail : "",
            /^kube-proxy stalled before its first sync: no CPU used for 30s \(limit 30s; \/proxyMode not answering yet\)$/,
        );
        assert.equal(judgeFirstSync(quiet.slice(0, -1), "nftables", LIMITS).kind, "waiting", "28 s quiet still waits");
    });

    it("a process that exits or is replaced before its first sync has crashed", () => {
        const gone = samples([1, 2, 3], (i) => (i === 2 ? { pids: [], cpu: undefined } : {}));
        assert.match(
            (judgeFirstSync(gone, "nftables", LIMITS) as { detail: string }).detail,
            /process 42 exited before its first sync/,
        );
        const replaced = samples([1, 2, 3], (i) => (i === 2 ? { pids: ["77"] } : {}));
        assert.match(
            (judgeFirstSync(replaced, "nftables", LIMITS) as { detail: string }).detail,
            /restarted before its first sync \(process 42, now 77\)/,
        );
    });

    it("a process seen beside the first one (a child between its fork and its exec) is no restart; the first one gone is", () => {
        const beside = samples([1, 2, 3], (i) => (i === 2 ? { pids: ["42", "43"] } : {}));
        assert.equal(judgeFirstSync(beside, "nftables", LIMITS).kind, "waiting");
        const childFirst = samples([1, 2, 3], (i) => (i === 0 ? { pids: ["42", "43"] } : {}));
        assert.equal(judgeFirstSync(childFirst, "nftables", LIMITS).kind, "waiting", "the child exited, 42 runs");
        const replaced = samples([1, 2, 3], (i) => (i === 2 ? { pids: ["77", "78"] } : {}));
        assert.match(
            (judgeFirstSync(replaced, "nftables", LIMITS) as { detail: string }).detail,
            /restarted before its first sync \(process 42, now 77,78\)/,
        );
    });

    it("past the deadline a busy kube-proxy fails as late; where its CPU cannot be read only the deadline applies", () => {
        const busy = samples(Array.from({ length: 61 }, (_, i) => i));
        const late = judgeFirstSync(busy, "nftables", LIMITS);
        assert.equal(late.kind === "failed" && late.check, "first-sync");
        assert.match(
            (late as { detail: string }).detail,
            /^no first sync within 2m \(test; \/proxyMode not answering yet, still busy\)$/,
        );
        const blind = samples(Array.from({ length: 60 }, () => undefined));
        assert.equal(judgeFirstSync(blind, "nftables", LIMITS).kind, "waiting", "no stall judged without CPU figures");
        const blindLate = samples(Array.from({ length: 61 }, () => undefined));
        assert.match(
            (judgeFirstSync(blindLate, "nftables", LIMITS) as { detail: string }).detail,
            /its CPU time could not be read/,
        );
    });

    it("with no sample yet it waits", () => {
        assert.deepEqual(judgeFirstSync([], "nftables", LIMITS), { kind: "waiting", seconds: 0 });
    });
});

describe("first sync: full syncs slowing during a soak", () => {
    const F = "kubeproxy_sync_full_proxy_rules_duration_seconds";
    it("sums the families' totals; none reported is undefined", () => {
        assert.deepEqual(
            fullSyncTotals({
                [`${F}_sum{ip_family="IPv4"}`]: 10,
                [`${F}_count{ip_family="IPv4"}`]: 4,
                [`${F}_sum{ip_family="IPv6"}`]: 6,
                [`${F}_count{ip_family="IPv6"}`]: 3,
            }),
            { sum: 16, count: 7 },
        );
        assert.equal(fullSyncTotals({}), undefined);
    });

    it("only the syncs between the soak's start and end count, against the bound", () => {
        const start = { sum: 400, count: 2 }; // a long first sync before the soak does not count
        assert.equal(slowSyncProblem(start, { sum: 420, count: 6 }, 120), undefined);
        assert.equal(
            slowSyncProblem(start, { sum: 700, count: 4 }, 120),
            "full syncs during the soak took 150.0s on average (2 of them), more than 2m (verify.firstSyncMin)",
        );
    });

    it("no sync in between, or totals gone back (a restarted process), is no finding here", () => {
        assert.equal(slowSyncProblem({ sum: 10, count: 2 }, { sum: 10, count: 2 }, 1), undefined);
        assert.equal(slowSyncProblem({ sum: 900, count: 9 }, { sum: 5, count: 10 }, 1), undefined);
        assert.equal(slowSyncProblem(undefined, { sum: 5, count: 1 }, 1), undefined);
    });
});

describe("a node's measured syncs, as its annotation keeps them", () => {
    it("parses what the rollout wrote and leaves out what is not a measurement", () => {
        assert.deepEqual(
            parseNodeSyncs(
                JSON.stringify({
                    iptables: { mean: 183.27, metric: "full" },
                    nftables: { first: 11, mean: -1, metric: "odd" },
                    ipvs: { first: "soon" },
                    userspace: { mean: 1 },
                }),
            ),
            { iptables: { mean: 183.27, metric: "full" }, nftables: { first: 11 } },
        );
        for (const text of [undefined, "", "not json", "[]", "null", '{"ipvs":{}}'])
            assert.equal(parseNodeSyncs(text), undefined, String(text));
    });

    it("a newer figure replaces the older one of its kind and keeps the others; the baseline comes from the mean", () => {
        const before = { iptables: { mean: 100, metric: "full" as const, first: 50 } };
        const after = withSync(withSync(before, "iptables", { mean: 80.123456 }), "nftables", { first: 9.876 });
        assert.deepEqual(after, { iptables: { mean: 80.12, metric: "full", first: 50 }, nftables: { first: 9.88 } });
        assert.deepEqual(before, { iptables: { mean: 100, metric: "full", first: 50 } }, "the input is left as it was");
        assert.deepEqual(recordedBaseline(after, "iptables"), { seconds: 80.12, metric: "full" });
        assert.deepEqual(recordedBaseline(after, "nftables"), {}, "a first sync is no baseline");
        assert.deepEqual(recordedBaseline(undefined, "ipvs"), {});
    });
});
