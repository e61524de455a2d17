// The rollout Lease under concurrent writes. A renewal in flight when the run ends, or another run
// taking over, lands between a read of the Lease and the replace that follows it; the API server
// then answers 409. These tests run the tool's cluster client against a SIMULATED API server that
// keeps one Lease with a resourceVersion (compare-and-swap, as the real one) and lets a test land
// a write at exactly that moment.
import assert from "node:assert/strict";
import type * as k8s from "@kubernetes/client-node";
import { configHash } from "../../components/core/plan.js";
import { defaultHolder, RolloutBusy, runPools, type Context } from "../../components/rollout/runner.js";
import { rolloutSpecSchema } from "../../components/rollout/spec.js";
import { kubeProxyConfig } from "./fakeCluster.js";
import { answer, clusterOn, failure, listenSimulated, withBody, type SimulatedServer } from "./simulatedApi.js";

interface SimulatedLeaseServer extends SimulatedServer {
    lease: () => k8s.V1Lease | undefined;
    /** runs once, when the next replace arrives and before it is judged: a write that lands in between */
    beforeNextReplace: (write: (lease: k8s.V1Lease) => k8s.V1LeaseSpec) => void;
    /** every replace from now on finds the Lease changed (a writer that never stops) */
    alwaysChanged: () => void;
    conflicts: () => number;
    /** a write of the Lease by another client, as it lands (a new resourceVersion); undefined: a Lease with no spec */
    rewrite: (write: (spec: k8s.V1LeaseSpec) => k8s.V1LeaseSpec | undefined) => void;
    /** the Lease deleted by another client */
    remove: () => void;
    /** every replace from now on is answered with this status code (e.g. 403: the identity may not update Leases) */
    refuseReplaces: (code: number) => void;
    /** how many creates and replaces arrived */
    writes: () => { creates: number; replaces: number };
}

/** SIMULATED API server holding one Lease, with resourceVersion compare-and-swap on replace. */
async function simulatedLeaseServer(): Promise<SimulatedLeaseServer> {
    let lease: k8s.V1Lease | undefined;
    let version = 0;
    let interloper: ((l: k8s.V1Lease) => k8s.V1LeaseSpec) | undefined;
    let endless = false;
    let conflicts = 0;
    let refusal: number | undefined;
    const writes = { creates: 0, replaces: 0 };
    const stored = (l: k8s.V1Lease): k8s.V1Lease => {
        lease = {
            ...l,
            apiVersion: "coordination.k8s.io/v1",
            kind: "Lease",
            metadata: { ...l.metadata, resourceVersion: String(++version) },
        };
        return lease;
    };
    const server = await listenSimulated((req, res) => {
        withBody(req, (raw) => {
            // a run asks its permissions first: every one allowed; nothing but the Lease is served
            if (req.url?.includes("/selfsubjectaccessreviews"))
                return answer(res, 201, { ...JSON.parse(raw), status: { allowed: true } });
            if (!req.url?.includes("/leases")) return answer(res, 404, failure(404, "NotFound"));
            const body = raw ? (JSON.parse(raw) as k8s.V1Lease) : undefined;
            if (req.method === "GET")
                return lease ? answer(res, 200, lease) : answer(res, 404, failure(404, "NotFound"));
            if (req.method === "POST") {
                writes.creates++;
                if (lease) return answer(res, 409, failure(409, "AlreadyExists"));
                return answer(res, 201, stored(body!));
            }
            if (req.method === "PUT") {
                writes.replaces++;
                if (refusal) return answer(res, refusal, failure(refusal, "Forbidden", "SIMULATED: replace refused"));
                if (interloper && lease) {
                    const write = interloper;
                    interloper = undefined;
                    stored({ ...lease, spec: write(lease) });
                }
                if (endless && lease) stored(lease);
                if (!lease || body?.metadata?.resourceVersion !== lease.metadata?.resourceVersion) {
                    conflicts++;
                    return answer(res, 409, failure(409, "Conflict"));
                }
                return answer(res, 200, stored(body!));
            }
            answer(res, 405, failure(405, "MethodNotAllowed"));
        });
    });
    return {
        ...server,
        lease: () => lease,
        beforeNextReplace: (write) => void (interloper = write),
        alwaysChanged: () => void (endless = true),
        conflicts: () => conflicts,
        rewrite: (write) => void (lease && stored({ ...lease, spec: write(lease.spec ?? {}) })),
        remove: () => void (lease = undefined),
        refuseReplaces: (code) => void (refusal = code),
        writes: () => ({ ...writes }),
    };
}

describe("the rollout Lease under concurrent writes (SIMULATED API server)", () => {
    let sim: SimulatedLeaseServer;
    beforeEach(async () => (sim = await simulatedLeaseServer()));
    afterEach(() => sim.close());

    it("the release frees the Lease when the run's own renewal lands between its read and its write", async () => {
        const cluster = clusterOn(sim.url);
        assert.equal((await cluster.acquireLease("run-a", 60)).acquired, true);
        sim.beforeNextReplace((l) => ({ ...l.spec, renewTime: new Date() }));
        await cluster.releaseLease("run-a");
        assert.equal(sim.conflicts(), 1, "the release's first write met the renewal");
        assert.equal(sim.lease()?.spec?.holderIdentity, undefined, "nobody holds the Lease");
        assert.equal(sim.lease()?.spec?.leaseDurationSeconds, 60);
    });

    it("the release keeps how often the Lease changed hands (leaseTransitions), and the next takeover counts on from it", async () => {
        await clusterOn(sim.url).acquireLease("run-a", 60);
        sim.rewrite((s) => ({ ...s, leaseTransitions: 4 }));
        await clusterOn(sim.url).releaseLease("run-a");
        assert.deepEqual(sim.lease()?.spec, { leaseDurationSeconds: 60, leaseTransitions: 4 });
        await clusterOn(sim.url).acquireLease("run-b", 60);
        assert.equal(sim.lease()?.spec?.leaseTransitions, 5);
    });

    it("the release leaves the Lease alone when another run took it over between its read and its write", async () => {
        const cluster = clusterOn(sim.url);
        await cluster.acquireLease("run-a", 60);
        sim.beforeNextReplace((l) => ({ ...l.spec, holderIdentity: "run-b" }));
        await cluster.releaseLease("run-a");
        assert.equal(sim.lease()?.spec?.holderIdentity, "run-b");
    });

    it("a renewal says the Lease is lost when another run took it over between its read and its write", async () => {
        const cluster = clusterOn(sim.url);
        await cluster.acquireLease("run-a", 60);
        sim.beforeNextReplace((l) => ({ ...l.spec, holderIdentity: "run-b" }));
        assert.equal(await cluster.renewLease("run-a"), false);
        assert.equal(sim.lease()?.spec?.holderIdentity, "run-b");
    });

    it("a renewal by the holder moves renewTime forward and keeps the rest of the Lease", async () => {
        const cluster = clusterOn(sim.url);
        await cluster.acquireLease("run-a", 60);
        sim.rewrite((s) => ({ ...s, renewTime: new Date(Date.now() - 30_000).toISOString() as unknown as Date }));
        const before = sim.lease()!.spec!;
        assert.equal(await cluster.renewLease("run-a"), true);
        const after = sim.lease()!.spec!;
        assert.ok(new Date(after.renewTime!) > new Date(before.renewTime!), `renewed at ${String(after.renewTime)}`);
        assert.deepEqual({ ...after, renewTime: undefined }, { ...before, renewTime: undefined });
    });

    it("a renewal or a release finds nothing to do when the Lease is not the run's: freed, gone, or left with no spec", async () => {
        const cluster = clusterOn(sim.url);
        await cluster.acquireLease("run-a", 60);
        await cluster.releaseLease("run-a");
        assert.equal(await cluster.renewLease("run-a"), false, "freed");
        sim.rewrite(() => undefined);
        assert.equal(await cluster.renewLease("run-a"), false, "no spec");
        await cluster.releaseLease("run-a");
        sim.remove();
        assert.equal(await cluster.renewLease("run-a"), false, "gone");
        await cluster.releaseLease("run-a");
        assert.deepEqual(sim.writes(), { creates: 1, replaces: 1 }, "the acquire and the first release only");
    });

    it("a renewal that meets a change on every attempt fails naming the 409, instead of looping", async () => {
        const cluster = clusterOn(sim.url);
        await cluster.acquireLease("run-a", 60);
        sim.alwaysChanged();
        await assert.rejects(
            cluster.renewLease("run-a"),
            /could not renew the rollout Lease.*5 attempts \(409 Conflict/,
        );
        assert.equal(sim.conflicts(), 5);
    });

    it("a renewal or a release refused for another reason (403) fails at once with the server's reason, not as a conflict", async () => {
        const cluster = clusterOn(sim.url);
        await cluster.acquireLease("run-a", 60);
        sim.refuseReplaces(403);
        await assert.rejects(cluster.renewLease("run-a"), /replace refused/);
        await assert.rejects(cluster.releaseLease("run-a"), /replace refused/);
        assert.deepEqual(sim.writes(), { creates: 1, replaces: 2 });
    });

    it("the Lease is created under its name, labelled as the tool's as every object it creates", async () => {
        await clusterOn(sim.url).acquireLease("run-a", 60);
        const { name, namespace, labels } = sim.lease()!.metadata!;
        assert.deepEqual(
            { name, namespace, labels },
            {
                name: "kube-proxy-mode",
                namespace: "kube-system",
                labels: { "app.kubernetes.io/managed-by": "kube-proxy-mode" },
            },
        );
    });

    it("a takeover that meets a change on every attempt gives up after 3, naming the holder it last read", async () => {
        const cluster = clusterOn(sim.url);
        await cluster.acquireLease("run-a", 60);
        await cluster.releaseLease("run-a");
        sim.alwaysChanged();
        const got = await cluster.acquireLease("run-b", 60);
        assert.equal(sim.conflicts(), 3);
        assert.deepEqual(got, {
            acquired: false,
            current: { holder: "unknown", renewedAt: "never", durationSeconds: 60 },
        });
    });

    it("a release that meets a change on every attempt fails naming the 409, instead of looping", async () => {
        const cluster = clusterOn(sim.url);
        await cluster.acquireLease("run-a", 60);
        sim.alwaysChanged();
        await assert.rejects(
            cluster.releaseLease("run-a"),
            /could not release the rollout Lease.*5 attempts \(409 Conflict/,
        );
        assert.equal(sim.conflicts(), 5);
    });
});

describe("a Lease another run holds (SIMULATED API server)", () => {
    let sim: SimulatedLeaseServer;
    beforeEach(async () => (sim = await simulatedLeaseServer()));
    afterEach(() => sim.close());
    const theirs = "stack dev/app/prod@ci-runner/pid 7/run 0123456789ab";
    const target = kubeProxyConfig("nftables");
    /** a run of the canary pool through the runner, on the tool's cluster client */
    const run = (holder?: string): Context => ({
        cluster: clusterOn(sim.url),
        spec: rolloutSpecSchema.parse({
            target: { hash: configHash(target), mode: "nftables", config: target },
            pools: [{ name: "canary", nodeSelector: "pool=canary" }],
            verify: { hooks: [] },
        }),
        log: () => undefined,
        ...(holder ? { holder } : {}),
    });
    /** the Lease as it stands: who holds it, since when, and its version (any write changes it) */
    const held = () => ({
        holder: sim.lease()?.spec?.holderIdentity,
        renewedAt: new Date(String(sim.lease()?.spec?.renewTime)).toISOString(),
        version: sim.lease()?.metadata?.resourceVersion,
    });

    it("is refused while renewed within its duration, naming its holder, its last renewal and its duration; nothing written", async () => {
        await clusterOn(sim.url).acquireLease(theirs, 60);
        const before = held();
        const got = await clusterOn(sim.url).acquireLease("stack prod/app/prod@host-b/pid 9/run ba9876543210", 60);
        assert.deepEqual(got, {
            acquired: false,
            current: { holder: theirs, renewedAt: before.renewedAt, durationSeconds: 60 },
        });
        assert.deepEqual(held(), before, "the Lease unchanged");
    });

    it("refuses the run, whose error names the holder, its last renewal and when it expires; nothing written", async () => {
        await clusterOn(sim.url).acquireLease(theirs, 60);
        const before = held();
        const err = await runPools(run("stack prod/app/prod@host-b/pid 9/run ba9876543210")).catch((e) => e);
        assert.ok(err instanceof RolloutBusy, String(err));
        assert.equal(
            err.message,
            `another rollout holds this cluster: ${theirs} (lease renewed ${before.renewedAt}, lasts 60s). ` +
                "Wait for it to finish; if it died, its lease expires 60s after its last renewal and the next run takes over",
        );
        assert.deepEqual(held(), before, "the Lease unchanged");
    });

    it("held by the same holder (one run's pools, then its finish, after a release that got no answer) is taken back at once", async () => {
        await clusterOn(sim.url).acquireLease(theirs, 60);
        const started = performance.now();
        assert.equal((await clusterOn(sim.url).acquireLease(theirs, 60)).acquired, true, "its own Lease refused");
        assert.ok(performance.now() - started < 1000, "not watched for the Lease's 60 s");
        assert.equal(sim.lease()?.spec?.holderIdentity, theirs);
        assert.equal(sim.lease()?.spec?.leaseTransitions, 1);
    });

    it("held by a run in another container with the same KPM_HOLDER, hostname and pid, is refused: each run's holder has a run id of its own", async () => {
        // what that run wrote: the holder this process would name, but for the run id
        const other = defaultHolder();
        await clusterOn(sim.url).acquireLease(other, 60);
        const before = held();
        const err = await runPools(run()).catch((e) => e);
        assert.ok(err instanceof RolloutBusy, String(err));
        assert.ok(err.message.startsWith(`another rollout holds this cluster: ${other} (`), err.message);
        assert.deepEqual(held(), before, "the Lease unchanged");
    });
});

describe("taking over a Lease whose holder's clock may differ from this machine's (SIMULATED API server)", () => {
    let sim: SimulatedLeaseServer;
    beforeEach(async () => (sim = await simulatedLeaseServer()));
    afterEach(() => sim.close());
    /** what a holder whose clock runs ten minutes behind this machine's writes as its renewTime */
    const behind = () => new Date(Date.now() - 10 * 60_000).toISOString();

    it("a Lease that looks expired here but is renewed meanwhile (its holder's clock ten minutes behind) is not taken over", async () => {
        await clusterOn(sim.url).acquireLease("run-a", 1);
        sim.rewrite((s) => ({ ...s, renewTime: behind() as unknown as Date }));
        // run-a is alive: it renews every 300 ms, by its own clock
        const renewals = setInterval(() => sim.rewrite((s) => ({ ...s, renewTime: behind() as unknown as Date })), 300);
        const lines: string[] = [];
        try {
            const got = await clusterOn(sim.url).acquireLease("run-b", 60, (l) => lines.push(l));
            assert.equal(got.acquired, false);
        } finally {
            clearInterval(renewals);
        }
        assert.equal(sim.lease()?.spec?.holderIdentity, "run-a");
        assert.match(lines.join("\n"), /has expired by this machine's clock; watching it for 1s/);
        assert.equal(lines.length, 1, "watched once, then refused");
        assert.deepEqual(sim.writes(), { creates: 1, replaces: 0 }, "run-a's create only: no takeover tried");
    });

    it("a Lease freed, deleted or left with no spec while watched is decided again and taken at once", async () => {
        const meanwhile: [string, () => void][] = [
            ["freed", () => sim.rewrite((s) => ({ leaseDurationSeconds: s.leaseDurationSeconds }))],
            ["deleted", () => sim.remove()],
            ["left with no spec", () => sim.rewrite(() => undefined)],
        ];
        for (const [what, change] of meanwhile) {
            await clusterOn(sim.url).releaseLease("run-b");
            await clusterOn(sim.url).acquireLease("run-a", 1);
            sim.rewrite((s) => ({ ...s, renewTime: behind() as unknown as Date }));
            const lines: string[] = [];
            // the watch starts right after its log line: the change lands during it
            const got = await clusterOn(sim.url).acquireLease("run-b", 60, (l) => {
                lines.push(l);
                change();
            });
            assert.deepEqual(
                { acquired: got.acquired, holder: sim.lease()?.spec?.holderIdentity, watches: lines.length },
                { acquired: true, holder: "run-b", watches: 1 },
                what,
            );
        }
    });

    it("a Lease renewed by another holder 1 s ago that lasts 2 s is refused at once, without a watch", async () => {
        await clusterOn(sim.url).acquireLease("run-a", 2);
        sim.rewrite((s) => ({ ...s, renewTime: new Date(Date.now() - 1000).toISOString() as unknown as Date }));
        const lines: string[] = [];
        const got = await clusterOn(sim.url).acquireLease("run-b", 60, (l) => lines.push(l));
        assert.equal(got.acquired, false);
        assert.deepEqual(lines, []);
    });

    it("a Lease with a holder but no renewal and no duration (written by hand) has expired: taken over at once; each takeover counts in leaseTransitions", async () => {
        await clusterOn(sim.url).acquireLease("run-a", 60);
        sim.rewrite(() => ({ holderIdentity: "someone" }));
        const lines: string[] = [];
        assert.equal((await clusterOn(sim.url).acquireLease("run-b", 60, (l) => lines.push(l))).acquired, true);
        assert.match(lines.join("\n"), /^the rollout lease of someone \(renewed never, lasts 0s\) has expired/);
        assert.equal(sim.lease()?.spec?.leaseTransitions, 1);
        await clusterOn(sim.url).releaseLease("run-b");
        assert.equal((await clusterOn(sim.url).acquireLease("run-a", 60)).acquired, true);
        assert.deepEqual(
            { holder: sim.lease()?.spec?.holderIdentity, transitions: sim.lease()?.spec?.leaseTransitions },
            { holder: "run-a", transitions: 2 },
        );
    });

    it("a stop (Ctrl-C) while watching a Lease that looks expired ends the watch at once and leaves the Lease to its holder", async () => {
        await clusterOn(sim.url).acquireLease("run-a", 30);
        sim.rewrite((s) => ({ ...s, renewTime: behind() as unknown as Date }));
        const stop = new AbortController();
        setTimeout(() => stop.abort("SIGINT"), 200);
        const started = performance.now();
        const got = await clusterOn(sim.url).acquireLease("run-b", 60, undefined, stop.signal);
        const waited = performance.now() - started;
        assert.equal(got.acquired, false);
        assert.ok(waited < 5000, `stopped after ${Math.round(waited)} ms, not the Lease's 30 s`);
        assert.equal(sim.lease()?.spec?.holderIdentity, "run-a");
    });

    it("a Lease whose holder stopped renewing is taken over once it stayed unchanged for its duration on this machine's clock", async () => {
        await clusterOn(sim.url).acquireLease("run-a", 1);
        sim.rewrite((s) => ({ ...s, renewTime: behind() as unknown as Date }));
        const started = performance.now();
        assert.equal((await clusterOn(sim.url).acquireLease("run-b", 60)).acquired, true);
        assert.ok(performance.now() - started >= 1000, "watched for the Lease's 1 s first");
        assert.equal(sim.lease()?.spec?.holderIdentity, "run-b");
    });
});

describe("a Lease another run creates first every time, gone again when read (SIMULATED API server)", () => {
    let sim: SimulatedServer | undefined;
    afterEach(async () => sim?.close());

    it("gives up after 3 creates, naming no holder", async () => {
        let creates = 0;
        sim = await listenSimulated((req, res) => {
            withBody(req, () => {
                if (req.method === "POST") creates++;
                if (req.method === "POST") return answer(res, 409, failure(409, "AlreadyExists"));
                answer(res, 404, failure(404, "NotFound"));
            });
        });
        const got = await clusterOn(sim.url).acquireLease("run-a", 60);
        assert.deepEqual(got, {
            acquired: false,
            current: { holder: "unknown", renewedAt: "never", durationSeconds: 0 },
        });
        assert.equal(creates, 3);
    });
});

describe("the run's writes are fenced by its lease (SIMULATED API server)", () => {
    let sim: SimulatedServer | undefined;
    afterEach(async () => sim?.close());

    it("a node write being retried (503s) stops at its next attempt once the fence closes; the node's read and the Lease's own calls still go out", async () => {
        const seen: string[] = [];
        sim = await listenSimulated((req, res) => {
            withBody(req, () => {
                seen.push(`${req.method} ${req.url?.split("?")[0]}`);
                if (req.method === "GET" && req.url?.includes("/leases/"))
                    return answer(res, 404, failure(404, "NotFound"));
                if (req.method === "POST" && req.url?.includes("/leases"))
                    return answer(res, 201, { metadata: { name: "kube-proxy-mode", resourceVersion: "1" } });
                if (req.method === "GET")
                    return answer(res, 200, { metadata: { name: "workers-1", resourceVersion: "7" } });
                return answer(res, 503, failure(503, "ServiceUnavailable", "SIMULATED: the API server is unavailable"));
            });
        });
        const cluster = clusterOn(sim.url);
        const patches = () => seen.filter((s) => s.startsWith("PATCH")).length;
        let open = true;
        cluster.fenceWrites(() => {
            if (!open) throw new Error("SIMULATED: the run's lease lapsed");
        });
        cluster.onRetry = (call) => {
            if (call === "patchNode" && patches() === 2) open = false;
        };
        await assert.rejects(
            cluster.startMove("workers-1", { to: "abc123", from: null, phase: "started" }),
            /lease lapsed/,
        );
        assert.equal(patches(), 2, `no attempt after the fence closed: ${seen.join(", ")}`);
        // with the fence closed: a read, and the Lease's own calls (compare-and-swaps on the holder), still reach the server
        assert.equal((await cluster.acquireLease("run-a", 60)).acquired, true);
        assert.ok(seen.includes("POST /apis/coordination.k8s.io/v1/namespaces/kube-system/leases"), seen.join(", "));
        cluster.close();
    });
});
