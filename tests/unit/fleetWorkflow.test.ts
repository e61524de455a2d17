// components/fleet/workflow.ts on Temporal's time-skipping test server, with the stack activities
// faked: the waves' order, maxParallel, soaks (skipped in seconds), previews before a wave, a
// failure stopping the fleet, and the signals a human sends (retry, skip, pause, resume). The
// worker loads the workflow from the build's prebundled file, as a fleet worker does.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ApplicationFailure, Context } from "@temporalio/activity";
import type { WorkflowHandleWithFirstExecutionRunId } from "@temporalio/client";
import { TestWorkflowEnvironment } from "@temporalio/testing";
import { temporal } from "@temporalio/proto";
import { DefaultLogger, Runtime, Worker } from "@temporalio/worker";
import type { Fleet } from "../../components/core/fleetSchedule.js";
import {
    FLEET_SIGNALS,
    FLEET_STATUS_MEMO,
    FLEET_STATUS_QUERY,
    FLEET_WORKFLOW,
    STACK_FAILURES,
    type FleetInput,
    type FleetStatus,
    type FleetTiming,
    type StackActivities,
    type StackInput,
    type StackOutcome,
    type StackPreview,
} from "../../components/fleet/contract.js";
import { workflowBundlePath } from "../../components/fleet/workflowBundle.js";
import { toolchainBin } from "../../scripts/referenceCluster.js";

/** The time-skipping test server: KPM_TEMPORAL_TEST_SERVER, else the toolchain's. */
function testServerPath(): string {
    const path = process.env.KPM_TEMPORAL_TEST_SERVER ?? join(toolchainBin(), "temporal-test-server");
    if (!existsSync(path)) {
        throw new Error(
            `no Temporal test server at ${path}: run bash scripts/toolchain.sh (it builds temporal-test-server into the toolchain's bin dir), or set KPM_TEMPORAL_TEST_SERVER to one`,
        );
    }
    return path;
}

const DIR = "/infra";
const key = (stack: string, dir = DIR) => `${stack}@${dir}`;

interface WaveSpec {
    name: string;
    maxParallel?: number;
    soakSeconds?: number;
    /** stack names in DIR, or [name, dir] */
    stacks: (string | [string, string])[];
}

function fleetOf(waves: WaveSpec[]): Fleet {
    return {
        waves: waves.map((w) => ({
            name: w.name,
            maxParallel: w.maxParallel ?? 1,
            soakSeconds: w.soakSeconds ?? 0,
            stacks: w.stacks.map((s) => {
                const [stack, dir] = typeof s === "string" ? [s, DIR] : s;
                return { stack, dir, key: key(stack, dir) };
            }),
        })),
    };
}

/**
 * What a fake `up` does on one call: succeed; fail for good (a non-retryable StackFailed); throw
 * a StackFailed not flagged non-retryable (only the workflow's nonRetryableErrorTypes stop its
 * retry); fail as a lost worker does (retryable); or wait for release().
 */
type UpBehaviour = "ok" | "fail" | "failTyped" | "lost" | "block";

/** The stack activities, faked: each call recorded in order, concurrency counted. */
class FakeStacks {
    /** "preview a@/infra", "up a@/infra", "upDone a@/infra", in the order they happened */
    readonly log: string[] = [];
    running = 0;
    maxRunning = 0;
    /** previews refused, by key */
    readonly refuse = new Set<string>();
    /** per key, how many of its first previews its gate refuses for the upstream's soak alone */
    readonly soaking = new Map<string, number>();
    /** the retry time the last such refusal named (epoch ms) */
    retryAfter = 0;
    /** per key, what each successive up call does; past the end: "ok" */
    readonly ups = new Map<string, UpBehaviour[]>();
    /** ms an up takes when it succeeds */
    upMs = 0;
    private readonly gates = new Map<string, () => void>();

    calls(kind: "preview" | "up", stack: string, dir = DIR): number {
        return this.log.filter((l) => l === `${kind} ${key(stack, dir)}`).length;
    }
    index(entry: string): number {
        const i = this.log.indexOf(entry);
        assert.ok(i >= 0, `${entry} not in ${JSON.stringify(this.log)}`);
        return i;
    }
    /** lets a blocked up of `stack` return, once the worker has called it */
    async release(stack: string) {
        const deadline = Date.now() + 10_000;
        while (!this.gates.has(key(stack)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
        const open = this.gates.get(key(stack));
        assert.ok(open, `no up of ${stack} is blocked: ${JSON.stringify(this.log)}`);
        open();
    }

    /** lets every blocked up return: a failed assertion must not leave the worker waiting on one */
    releaseAll() {
        for (const open of [...this.gates.values()]) open();
    }

    activities(): StackActivities {
        return {
            previewStack: (input: StackInput): Promise<StackPreview> => {
                this.log.push(`preview ${input.stack.key}`);
                if (
                    this.calls("preview", input.stack.stack, input.stack.dir) <=
                    (this.soaking.get(input.stack.key) ?? 0)
                ) {
                    this.retryAfter = Date.now() + 2 * 3600_000;
                    const at = new Date(this.retryAfter).toISOString();
                    throw ApplicationFailure.create({
                        type: STACK_FAILURES.gateRefused,
                        nonRetryable: true,
                        message: `stack ${input.stack.key}: promotion gate refused: o/p/up is not ready to be followed: - o/p/up finished at T and has held it for 1m; promotion.minSoak is 2h: 1h59m left (retry after ${at})`,
                        details: [{ retryAfter: at }],
                    });
                }
                if (this.refuse.has(input.stack.key)) {
                    throw ApplicationFailure.nonRetryable(
                        `${input.stack.key}: a blocking finding`,
                        STACK_FAILURES.previewRefused,
                    );
                }
                return Promise.resolve({
                    key: input.stack.key,
                    cluster: `cluster-${input.stack.stack}`,
                    from: "iptables",
                    to: "ipvs",
                    moving: 3,
                });
            },
            upStack: async (input: StackInput): Promise<StackOutcome> => {
                const k = input.stack.key;
                const n = this.log.filter((l) => l === `up ${k}`).length;
                this.log.push(`up ${k}`);
                const behaviour = this.ups.get(k)?.[n] ?? "ok";
                this.running++;
                this.maxRunning = Math.max(this.maxRunning, this.running);
                try {
                    if (behaviour === "fail") {
                        throw ApplicationFailure.nonRetryable(
                            `${k}: node n1 failed its checks`,
                            STACK_FAILURES.stackFailed,
                        );
                    }
                    if (behaviour === "failTyped") {
                        throw ApplicationFailure.retryable(`${k}: the program failed`, STACK_FAILURES.stackFailed);
                    }
                    if (behaviour === "lost") throw new Error(`${k}: the worker was lost`);
                    if (behaviour === "block") {
                        await new Promise<void>((resolve) => {
                            const beat = setInterval(() => Context.current().heartbeat(), 100);
                            this.gates.set(k, () => {
                                clearInterval(beat);
                                this.gates.delete(k);
                                resolve();
                            });
                        });
                    }
                    if (this.upMs > 0) await new Promise((r) => setTimeout(r, this.upMs));
                    this.log.push(`upDone ${k}`);
                    return {
                        key: k,
                        cluster: `cluster-${input.stack.stack}`,
                        from: "iptables",
                        to: "ipvs",
                        moving: 3,
                        result: "applied",
                        nodesVerified: "3/3",
                        durationSeconds: 1,
                        attempt: Context.current().info.attempt,
                    };
                } finally {
                    this.running--;
                }
            },
        };
    }
}

const TIMING = { heartbeatSeconds: 60, maxAttempts: 3, retryInitialSeconds: 0.01 };

let env: TestWorkflowEnvironment;
let queues = 0;

/** Runs `body` with a worker of the fake's activities on a task queue of its own, the workflow started. */
async function withFleet(
    fake: FakeStacks,
    fleet: Fleet,
    body: (handle: Handle) => Promise<void>,
    timing: FleetTiming = TIMING,
) {
    const taskQueue = `fleet-test-${++queues}`;
    const worker = await Worker.create({
        connection: env.nativeConnection,
        taskQueue,
        workflowBundle: { codePath: workflowBundlePath() },
        activities: fake.activities(),
    });
    await worker.runUntil(async () => {
        const input: FleetInput = { fleet, file: "/fleets/fleet.yaml", target: "ipvs", timing };
        const handle = await env.client.workflow.start<(input: FleetInput) => Promise<FleetStatus>>(FLEET_WORKFLOW, {
            taskQueue,
            workflowId: `${taskQueue}-wf`,
            args: [input],
        });
        try {
            await body(handle);
        } finally {
            fake.releaseAll();
        }
    });
}

type Handle = WorkflowHandleWithFirstExecutionRunId<(input: FleetInput) => Promise<FleetStatus>>;

/** The status query, given up after 5 s (a query sent while the run continues as new may go unanswered). */
const status = (h: Handle) =>
    env.client.withDeadline(Date.now() + 5000, () => h.query<FleetStatus>(FLEET_STATUS_QUERY));

/** Polls the status until `ok` holds (real time: the workflow waits on activities, not timers). */
async function waitFor(h: Handle, what: string, ok: (s: FleetStatus) => boolean): Promise<FleetStatus> {
    const deadline = Date.now() + 15_000;
    let last: FleetStatus | undefined;
    const unanswered: string[] = [];
    while (Date.now() < deadline) {
        try {
            last = await status(h);
        } catch (e) {
            unanswered.push((e as Error).message);
            continue;
        }
        if (ok(last)) return last;
        await new Promise((r) => setTimeout(r, 25));
    }
    assert.fail(
        `timed out waiting for ${what}; queries unanswered: ${unanswered.join("; ") || "none"}; status: ${JSON.stringify(last, null, 1)}`,
    );
}

const stateOf = (s: FleetStatus, stack: string, dir = DIR) => {
    const st = s.stacks.find((x) => x.key === key(stack, dir));
    assert.ok(st, `no stack ${stack}`);
    return st;
};
const states = (s: FleetStatus) => Object.fromEntries(s.stacks.map((x) => [x.stack, x.state]));
const eventTexts = (s: FleetStatus) => s.events.map((e) => `${e.stack ?? e.wave ?? "-"}: ${e.text}`);

/**
 * The workflow's result; past 30 s, a failure showing where it stands (its status), not a bare
 * timeout. Its last run is polled too: the time-skipping server sometimes never answers a
 * result() that follows a chain of continued runs, though the last run has completed.
 */
async function resultOf(h: Handle): Promise<FleetStatus> {
    let ended = false;
    const lastRun = async (): Promise<FleetStatus> => {
        while (!ended) {
            const d = await env.client.workflow.getHandle(h.workflowId).describe();
            if (d.status.name === "COMPLETED")
                return (await env.client.workflow.getHandle(h.workflowId, d.runId).result()) as FleetStatus;
            if (d.status.name !== "RUNNING") throw new Error(`the fleet's last run ended ${d.status.name}`);
            await new Promise((r) => setTimeout(r, 100));
        }
        return new Promise<never>(() => undefined);
    };
    const late = new Promise<never>((_, reject) => {
        setTimeout(() => {
            if (ended) return;
            void status(h)
                .then((s) => JSON.stringify({ ...s, stacks: states(s) }, null, 1))
                .catch((e: Error) => `no status: ${e.message}`)
                .then((shown) => reject(new Error(`the fleet did not end in 30 s; status: ${shown}`)));
        }, 30_000).unref();
    });
    try {
        const polled = lastRun();
        // once the race is settled, a poll cut off by the environment's teardown is no failure
        polled.catch(() => undefined);
        return await Promise.race([h.result(), polled, late]);
    } finally {
        ended = true;
    }
}

/** Lets the workflow take any step it would (real time), to show it took none. */
const settle = () => new Promise((r) => setTimeout(r, 400));

/** Each run of the workflow (it continues as new when its history grows), first to last: its history. */
async function histories(h: Handle): Promise<Awaited<ReturnType<Handle["fetchHistory"]>>[]> {
    const runs: Awaited<ReturnType<Handle["fetchHistory"]>>[] = [];
    let runId: string | undefined = h.firstExecutionRunId;
    while (runId) {
        const history = await env.client.workflow.getHandle(h.workflowId, runId).fetchHistory();
        runs.push(history);
        runId = history.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
    }
    return runs;
}

/** Each run of the workflow replays with the bundle: no nondeterminism (the soak's end, the signals, continuing). */
async function replays(h: Handle) {
    for (const history of await histories(h))
        await Worker.runReplayHistory({ workflowBundle: { codePath: workflowBundlePath() } }, history, h.workflowId);
}

/** Each run of the workflow: its history's events and bytes, its largest memo write, its last event. */
async function runsOf(h: Handle): Promise<{ events: number; bytes: number; maxMemoBytes: number; last: string }[]> {
    return (await histories(h)).map((history) => {
        const memos = (history.events ?? []).map((e) =>
            e.workflowPropertiesModifiedEventAttributes?.upsertedMemo
                ? temporal.api.common.v1.Memo.encode(e.workflowPropertiesModifiedEventAttributes.upsertedMemo).finish()
                      .length
                : 0,
        );
        return {
            events: history.events?.length ?? 0,
            bytes: temporal.api.history.v1.History.encode(history).finish().length,
            maxMemoBytes: Math.max(0, ...memos),
            last: String(history.events?.at(-1)?.eventType),
        };
    });
}

async function isOpen(h: Handle): Promise<boolean> {
    return (await h.describe()).status.name === "RUNNING";
}

describe("fleetWorkflow on Temporal's time-skipping test server", function () {
    this.timeout(60_000);

    before(async function () {
        this.timeout(120_000);
        // first: with no server, fail before the SDK's runtime starts (it would keep mocha alive)
        const path = testServerPath();
        try {
            // the activities' expected failures would each print a warning with a stack trace
            Runtime.install({
                logger: new DefaultLogger("ERROR"),
                telemetryOptions: { logging: { filter: { core: "ERROR", other: "ERROR" }, forward: {} } },
            });
        } catch {
            // another test file installed the runtime first: its logger stays
        }
        env = await TestWorkflowEnvironment.createTimeSkipping({
            server: { executable: { type: "existing-path", path } },
        });
    });
    after(async () => {
        await env?.teardown();
    });

    it("runs the waves in order: a wave's stacks all previewed first, a later wave only after the earlier succeeded", async () => {
        const fake = new FakeStacks();
        const fleet = fleetOf([
            { name: "canary", stacks: ["a", "b"] },
            { name: "rest", maxParallel: 2, stacks: ["c", "d"] },
        ]);
        await withFleet(fake, fleet, async (h) => {
            const done = await resultOf(h);
            assert.equal(done.phase, "done");
            assert.equal(done.wave, null);
            assert.deepEqual(states(done), { a: "succeeded", b: "succeeded", c: "succeeded", d: "succeeded" });
            const i = (e: string) => fake.index(e);
            const firstUp = Math.min(i(`up ${key("a")}`), i(`up ${key("b")}`));
            assert.ok(i(`preview ${key("a")}`) < firstUp && i(`preview ${key("b")}`) < firstUp, fake.log.join("\n"));
            // canary's maxParallel is 1: b after a ended
            assert.ok(i(`upDone ${key("a")}`) < i(`up ${key("b")}`), fake.log.join("\n"));
            const canaryEnd = Math.max(i(`upDone ${key("a")}`), i(`upDone ${key("b")}`));
            for (const s of ["c", "d"]) {
                assert.ok(
                    canaryEnd < i(`preview ${key(s)}`),
                    `${s} previewed before canary ended: ${fake.log.join("\n")}`,
                );
                assert.ok(i(`preview ${key("c")}`) < i(`up ${key(s)}`) && i(`preview ${key("d")}`) < i(`up ${key(s)}`));
            }
            for (const s of done.stacks) {
                assert.equal(s.attempts, 1);
                assert.equal(s.preview?.to, "ipvs");
                assert.equal(s.outcome?.result, "applied");
            }
            const texts = eventTexts(done);
            assert.ok(texts.some((t) => t === "canary: wave canary: previewing 2 stack(s) before any of them starts"));
            assert.ok(texts.includes(`${key("a")}: previewed: iptables -> ipvs, 3 node(s) to move`), texts.join("\n"));
            assert.ok(texts.includes(`${key("a")}: started (wave canary)`), texts.join("\n"));
            assert.ok(
                texts.some((t) => t.startsWith(`${key("d")}: succeeded: applied`)),
                texts.join("\n"),
            );
            assert.equal(texts.at(-1), "-: done: 4 succeeded, 0 skipped");
        });
    });

    it("a preview refused only for its upstream's soak is previewed again once the soak is held, and the wave goes on (never a failure)", async () => {
        const fake = new FakeStacks();
        fake.soaking.set(key("b"), 1);
        const fleet = fleetOf([
            { name: "first", stacks: ["a"] },
            { name: "second", maxParallel: 2, stacks: ["b", "c"] },
        ]);
        await withFleet(fake, fleet, async (h) => {
            const done = await resultOf(h);
            assert.equal(done.phase, "done");
            assert.deepEqual(states(done), { a: "succeeded", b: "succeeded", c: "succeeded" });
            assert.equal(fake.calls("preview", "b"), 2);
            assert.equal(stateOf(done, "b").attempts, 1);
            const wait = done.events.find((e) => e.kind === "gate");
            assert.ok(wait?.until, eventTexts(done).join("\n"));
            assert.equal(wait.stack, key("b"));
            assert.ok(
                wait.until >= fake.retryAfter + 5000,
                `previewed again at ${wait.until}, soak held at ${fake.retryAfter}`,
            );
            assert.match(
                wait.text,
                /^its promotion gate waits for the upstream's soak; previewed again at \S+ \(stack b@\/infra: promotion gate refused/,
            );
            // the wave's stacks start only after all of them passed their preview: c waited with b
            for (const s of ["b", "c"])
                assert.ok(stateOf(done, s).startedAt! >= wait.until, `${s} started before b's gate opened`);
            assert.ok(fake.index(`preview ${key("c")}`) < fake.index(`up ${key("c")}`));
            await replays(h);
        });
    });

    it("starts at most maxParallel stacks of a wave at once, and that many", async () => {
        const fake = new FakeStacks();
        fake.upMs = 150;
        const fleet = fleetOf([{ name: "all", maxParallel: 2, stacks: ["a", "b", "c", "d", "e"] }]);
        await withFleet(fake, fleet, async (h) => {
            const done = await resultOf(h);
            assert.equal(done.phase, "done");
            assert.equal(fake.maxRunning, 2, `max running stacks: ${fake.maxRunning}`);
        });
    });

    it("waits out a wave's soak in workflow time before the next wave starts (skipped: the test takes seconds)", async () => {
        const fake = new FakeStacks();
        const fleet = fleetOf([
            { name: "canary", soakSeconds: 3600, stacks: ["a"] },
            { name: "rest", stacks: ["b"] },
        ]);
        const started = Date.now();
        await withFleet(fake, fleet, async (h) => {
            const done = await resultOf(h);
            assert.equal(done.phase, "done");
            const a = stateOf(done, "a");
            const b = stateOf(done, "b");
            assert.ok(a.endedAt && b.startedAt);
            assert.ok(b.startedAt - a.endedAt >= 3600_000, `b started ${b.startedAt - a.endedAt} ms after a ended`);
            const soak = done.events.find((e) => e.text.includes("soaking until"));
            assert.ok(soak, eventTexts(done).join("\n"));
            assert.equal(
                soak.text,
                `wave canary: succeeded; soaking until ${new Date(a.endedAt + 3600_000).toISOString()}`,
            );
            await replays(h);
        });
        assert.ok(Date.now() - started < 20_000, `took ${Date.now() - started} ms of real time`);
    });

    it("a refused preview stops the fleet before any stack of the wave starts, and the workflow stays open", async () => {
        const fake = new FakeStacks();
        fake.refuse.add(key("b"));
        const fleet = fleetOf([
            { name: "canary", stacks: ["x"] },
            { name: "rest", maxParallel: 2, stacks: ["a", "b"] },
            { name: "last", stacks: ["c"] },
        ]);
        await withFleet(fake, fleet, async (h) => {
            const s = await waitFor(h, "stopped", (s) => s.phase === "stopped");
            await settle();
            assert.deepEqual(
                fake.log.filter((l) => l.startsWith("up ")),
                [`up ${key("x")}`],
            );
            assert.deepEqual(states(s), { x: "succeeded", a: "pending", b: "failed", c: "pending" });
            assert.deepEqual(stateOf(s, "b").failure, {
                type: STACK_FAILURES.previewRefused,
                message: `${key("b")}: a blocking finding`,
            });
            assert.equal(s.wave, "rest");
            assert.equal(fake.calls("preview", "c"), 0);
            assert.ok(
                eventTexts(s).includes(
                    `${key("b")}: preview refused (PreviewRefused): ${key("b")}: a blocking finding`,
                ),
            );
            assert.ok(await isOpen(h), "the workflow waits for a human");
        });
    });

    it("a failed stack stops its wave: running stacks finish, none starts, later waves never; the fleet stays stopped", async () => {
        const fake = new FakeStacks();
        fake.ups.set(key("a"), ["fail"]);
        fake.ups.set(key("b"), ["block"]);
        const fleet = fleetOf([
            { name: "first", maxParallel: 2, stacks: ["a", "b", "c"] },
            { name: "second", stacks: ["d"] },
        ]);
        await withFleet(fake, fleet, async (h) => {
            let s = await waitFor(h, "a failed while b runs", (s) => stateOf(s, "a").state === "failed");
            assert.equal(s.phase, "stopped");
            assert.equal(stateOf(s, "b").state, "running");
            await fake.release("b");
            s = await waitFor(h, "b succeeded", (s) => stateOf(s, "b").state === "succeeded");
            await settle();
            s = await status(h);
            assert.deepEqual(states(s), { a: "failed", b: "succeeded", c: "pending", d: "pending" });
            assert.equal(s.phase, "stopped");
            // a and b started together (maxParallel 2), in either order; c never
            assert.deepEqual(fake.log.filter((l) => l.startsWith("up ")).sort(), [`up ${key("a")}`, `up ${key("b")}`]);
            assert.equal(fake.calls("preview", "d"), 0);
            assert.deepEqual(stateOf(s, "a").failure, {
                type: STACK_FAILURES.stackFailed,
                message: `${key("a")}: node n1 failed its checks`,
            });
            assert.ok(
                eventTexts(s).includes(
                    `first: stopped: wave first: ${key("a")} failed; waiting for fleet retry or skip`,
                ),
                eventTexts(s).join("\n"),
            );
            assert.ok(await isOpen(h));
        });
    });

    it("retry: the failed stack is previewed again, moved, and the fleet completes", async () => {
        const fake = new FakeStacks();
        fake.ups.set(key("a"), ["fail"]);
        const fleet = fleetOf([
            { name: "first", stacks: ["a"] },
            { name: "second", stacks: ["b"] },
        ]);
        await withFleet(fake, fleet, async (h) => {
            await waitFor(h, "a failed", (s) => s.phase === "stopped");
            assert.equal(fake.calls("preview", "a"), 1);
            // the fake is fixed: a's second up succeeds
            await h.signal(FLEET_SIGNALS.retry, "a");
            const done = await resultOf(h);
            assert.equal(done.phase, "done");
            assert.deepEqual(states(done), { a: "succeeded", b: "succeeded" });
            assert.equal(fake.calls("preview", "a"), 2);
            assert.equal(fake.calls("up", "a"), 2);
            assert.equal(stateOf(done, "a").attempts, 2);
            assert.equal(stateOf(done, "a").failure, undefined);
            const log = fake.log;
            assert.ok(log.lastIndexOf(`preview ${key("a")}`) > log.indexOf(`up ${key("a")}`), log.join("\n"));
            assert.ok(log.lastIndexOf(`preview ${key("a")}`) < log.lastIndexOf(`up ${key("a")}`), log.join("\n"));
            assert.ok(
                eventTexts(done).includes(
                    `${key("a")}: retry by signal: pending again; previewed again before it runs`,
                ),
            );
            await replays(h);
        });
    });

    it("skip: the failed stack is skipped and its wave goes on without it", async () => {
        const fake = new FakeStacks();
        fake.ups.set(key("a"), ["fail"]);
        const fleet = fleetOf([
            { name: "first", stacks: ["a", "b"] },
            { name: "second", stacks: ["c"] },
        ]);
        await withFleet(fake, fleet, async (h) => {
            await waitFor(h, "a failed", (s) => s.phase === "stopped");
            assert.equal(fake.calls("up", "b"), 0);
            await h.signal(FLEET_SIGNALS.skip, key("a"));
            const done = await resultOf(h);
            assert.deepEqual(states(done), { a: "skipped", b: "succeeded", c: "succeeded" });
            assert.equal(fake.calls("up", "a"), 1);
            assert.ok(
                eventTexts(done).includes(`${key("a")}: skipped by signal (was failed); its wave goes on without it`),
            );
            assert.equal(eventTexts(done).at(-1), "-: done: 2 succeeded, 1 skipped");
        });
    });

    it("pause: running stacks finish, no new one starts; resume: the fleet goes on", async () => {
        const fake = new FakeStacks();
        fake.ups.set(key("a"), ["block"]);
        const fleet = fleetOf([{ name: "all", stacks: ["a", "b", "c"] }]);
        await withFleet(fake, fleet, async (h) => {
            await waitFor(h, "a running", (s) => stateOf(s, "a").state === "running");
            await h.signal(FLEET_SIGNALS.pause);
            let s = await waitFor(h, "paused", (s) => s.paused);
            assert.equal(s.phase, "paused");
            await fake.release("a");
            await waitFor(h, "a succeeded", (s) => stateOf(s, "a").state === "succeeded");
            await settle();
            s = await status(h);
            assert.equal(s.phase, "paused");
            assert.deepEqual(states(s), { a: "succeeded", b: "pending", c: "pending" });
            assert.equal(fake.calls("up", "b"), 0);
            await h.signal(FLEET_SIGNALS.resume);
            const done = await resultOf(h);
            assert.deepEqual(states(done), { a: "succeeded", b: "succeeded", c: "succeeded" });
            assert.equal(done.paused, false);
            const texts = eventTexts(done);
            assert.ok(
                texts.includes("-: paused by signal: no new stack starts; running ones finish"),
                texts.join("\n"),
            );
            assert.ok(texts.includes("-: resumed by signal"), texts.join("\n"));
        });
    });

    it("retries a lost worker's failure up to maxAttempts, never a stack's own failure", async () => {
        const fake = new FakeStacks();
        fake.ups.set(key("a"), ["lost", "lost", "ok"]);
        fake.ups.set(key("b"), ["fail", "ok"]);
        fake.ups.set(key("c"), ["lost", "lost", "lost", "ok"]);
        fake.ups.set(key("d"), ["failTyped", "ok"]);
        const fleet = fleetOf([{ name: "all", maxParallel: 4, stacks: ["a", "b", "c", "d"] }]);
        await withFleet(fake, fleet, async (h) => {
            const s = await waitFor(
                h,
                "every stack ended",
                (s) => s.stacks.every((x) => x.state !== "running" && x.state !== "pending") && s.phase === "stopped",
            );
            assert.deepEqual(states(s), { a: "succeeded", b: "failed", c: "failed", d: "failed" });
            assert.equal(fake.calls("up", "a"), 3, "a retried after two lost workers");
            assert.equal(stateOf(s, "a").attempts, 3);
            assert.equal(fake.calls("up", "b"), 1, "a stack's own failure is not retried");
            assert.equal(stateOf(s, "b").attempts, 1);
            assert.equal(fake.calls("up", "c"), TIMING.maxAttempts, "at most maxAttempts");
            assert.equal(stateOf(s, "c").attempts, TIMING.maxAttempts);
            assert.equal(stateOf(s, "c").failure?.type, "Unknown");
            assert.match(stateOf(s, "c").failure?.message ?? "", /the worker was lost/);
            assert.equal(fake.calls("up", "d"), 1, "a StackFailed is not retried even when not flagged non-retryable");
            assert.equal(stateOf(s, "d").failure?.type, STACK_FAILURES.stackFailed);
        });
    });

    it("publishes its status by query and in the memo (readable from describe() without a worker)", async () => {
        const fake = new FakeStacks();
        fake.ups.set(key("b"), ["fail"]);
        const fleet = fleetOf([{ name: "all", stacks: ["a", "b", "c"] }]);
        await withFleet(fake, fleet, async (h) => {
            const queried = await waitFor(h, "stopped", (s) => s.phase === "stopped");
            await settle();
            const memo = (await h.describe()).memo?.[FLEET_STATUS_MEMO] as FleetStatus | undefined;
            assert.ok(memo, "no status in the memo");
            assert.equal(memo.phase, "stopped");
            assert.equal(memo.file, "/fleets/fleet.yaml");
            assert.equal(memo.target, "ipvs");
            assert.deepEqual(memo.stacks, queried.stacks);
            assert.deepEqual(memo.events, queried.events);
        });
    });

    it("a signal naming no stack, an ambiguous one or a stack in the wrong state leaves an event and changes nothing", async () => {
        const fake = new FakeStacks();
        fake.ups.set(key("a"), ["fail"]);
        const fleet = fleetOf([
            { name: "first", stacks: ["a", "prod", ["prod", "/other"]] },
            { name: "second", stacks: ["b"] },
        ]);
        await withFleet(fake, fleet, async (h) => {
            const before = await waitFor(h, "stopped", (s) => s.phase === "stopped");
            await h.signal(FLEET_SIGNALS.retry, "nope");
            await h.signal(FLEET_SIGNALS.skip, "prod");
            await h.signal(FLEET_SIGNALS.retry, "b");
            await h.signal(FLEET_SIGNALS.skip, "");
            const after = await waitFor(h, "four events more", (s) => s.events.length >= before.events.length + 4);
            assert.deepEqual(eventTexts(after).slice(before.events.length), [
                '-: signal retry ignored: no stack "nope" in the fleet',
                `-: signal skip ignored: "prod" is ambiguous (${key("prod")}, ${key("prod", "/other")}); give <stack>@<dir>`,
                `${key("b")}: signal retry ignored: the stack is pending, not failed`,
                "-: signal skip ignored: it names no stack (give <stack>@<dir> or a stack name)",
            ]);
            assert.deepEqual(after.stacks, before.stacks);
            assert.equal(after.phase, "stopped");
            assert.ok(await isOpen(h));
        });
    });
    it("while stacks move the memo lists only the running and failed ones; stopped with none running, all", async () => {
        const fake = new FakeStacks();
        fake.ups.set(key("b"), ["block"]);
        fake.ups.set(key("c"), ["fail"]);
        const fleet = fleetOf([{ name: "all", maxParallel: 1, stacks: ["a", "b", "c", "d"] }]);
        await withFleet(fake, fleet, async (h) => {
            await waitFor(h, "b running", (s) => stateOf(s, "b").state === "running");
            await settle();
            let memo = (await h.describe()).memo?.[FLEET_STATUS_MEMO] as FleetStatus;
            assert.deepEqual(
                memo.stacks.map((s) => [s.stack, s.state]),
                [["b", "running"]],
            );
            assert.equal(memo.stacksOmitted, 3);
            assert.deepEqual(memo.counts, { pending: 2, running: 1, succeeded: 1, failed: 0, skipped: 0 });
            assert.ok(memo.events.length <= 10, `${memo.events.length} events in the memo`);
            assert.equal((await status(h)).stacks.length, 4, "the query lists every stack");
            await fake.release("b");
            await waitFor(h, "stopped", (s) => s.phase === "stopped");
            await settle();
            memo = (await h.describe()).memo?.[FLEET_STATUS_MEMO] as FleetStatus;
            assert.deepEqual(states(memo), { a: "succeeded", b: "succeeded", c: "failed", d: "pending" });
            assert.equal(memo.stacksOmitted, undefined);
        });
    });
});

// A long fleet's history, on the dev server `fleet up` starts (the toolchain's temporal): the real
// server's history sizes and continue-as-new. Not on the time-skipping server: it sometimes never
// answers a result() that follows continued runs, and its fetchHistory chain misses runs.
describe("fleetWorkflow's history on the Temporal dev server", function () {
    this.timeout(60_000);
    let timeSkipping: TestWorkflowEnvironment;

    before(async function () {
        this.timeout(120_000);
        timeSkipping = env;
        const path = join(toolchainBin(), "temporal");
        if (!existsSync(path)) throw new Error(`no temporal at ${path}: run bash scripts/toolchain.sh`);
        env = await TestWorkflowEnvironment.createLocal({ server: { executable: { type: "existing-path", path } } });
    });
    after(async () => {
        await env?.teardown();
        env = timeSkipping;
    });

    it(
        "continues as a new run when its history grows: no stack runs twice or past maxParallel, signals and status carry over",
        continuesAsNew,
    );

    it("a fleet of 500 stacks keeps each run's history under Temporal's warning (10,240 events, 10 MB)", async function () {
        this.timeout(300_000);
        await fiveHundredStacks();
    });
});

/** A fleet whose history passes the (lowered) lines mid-wave and while stopped. */
async function continuesAsNew() {
    const fake = new FakeStacks();
    fake.upMs = 20;
    fake.ups.set(key("s17"), ["fail"]);
    const names = Array.from({ length: 24 }, (_, i) => `s${i}`);
    const fleet = fleetOf([
        { name: "first", maxParallel: 3, stacks: names.slice(0, 20) },
        { name: "second", maxParallel: 2, stacks: names.slice(20) },
    ]);
    const timing = { ...TIMING, historyQuietEvents: 60, historyDrainEvents: 120 };
    await withFleet(
        fake,
        fleet,
        async (h) => {
            const stopped = await waitFor(h, "s17 failed", (s) => s.phase === "stopped");
            await h.signal(FLEET_SIGNALS.retry, "s17");
            const done = await resultOf(h);
            assert.equal(done.phase, "done");
            assert.ok(
                done.stacks.every((s) => s.state === "succeeded"),
                JSON.stringify(states(done)),
            );
            for (const n of names) assert.equal(fake.calls("up", n), n === "s17" ? 2 : 1, `ups of ${n}`);
            assert.ok(fake.maxRunning <= 3, `${fake.maxRunning} stacks ran at once`);
            const runs = await runsOf(h);
            assert.ok(runs.length >= 2, `${runs.length} run(s): ${JSON.stringify(runs)}`);
            assert.equal(done.runs, runs.length);
            // each run ends soon after it passes the drain line: the running stacks' ends
            for (const r of runs) assert.ok(r.events <= 120 + 40, `a run of ${r.events} events`);
            const texts = eventTexts(done);
            // the first run's events are carried to the last
            assert.ok(texts[0].startsWith("-: fleet of 24 stack(s) in 2 wave(s)"), texts[0]);
            assert.ok(texts.some((t) => /the history is long \(\d+ events, .*\): the fleet goes on in run 2$/.test(t)));
            assert.ok(texts.includes(`${key("s17")}: retry by signal: pending again; previewed again before it runs`));
            assert.ok(stopped.runs >= 1);
            await replays(h);
        },
        timing,
    );
}

/** 500 stacks in three waves, the default lines: each run's history, measured. */
async function fiveHundredStacks() {
    const fake = new FakeStacks();
    const names = Array.from({ length: 500 }, (_, i) => `s${i}`);
    const fleet = fleetOf([
        { name: "canary", stacks: names.slice(0, 2) },
        { name: "wide", maxParallel: 10, stacks: names.slice(2, 302) },
        { name: "rest", maxParallel: 5, stacks: names.slice(302) },
    ]);
    const started = Date.now();
    await withFleet(
        fake,
        fleet,
        async (h) => {
            const done = await resultOf(h);
            assert.equal(done.phase, "done");
            assert.equal(done.counts.succeeded, 500);
            assert.equal(fake.log.filter((l) => l.startsWith("up ")).length, 500, "every stack moved once");
            const runs = await runsOf(h);
            const worst = runs.reduce((a, b) => (b.bytes > a.bytes ? b : a));
            console.log(
                `      500 stacks: ${runs.length} runs in ${((Date.now() - started) / 1000).toFixed(1)} s; largest run ${worst.events} events, ${(worst.bytes / 1024 / 1024).toFixed(2)} MB; largest memo write ${(Math.max(...runs.map((r) => r.maxMemoBytes)) / 1024).toFixed(1)} KB`,
            );
            for (const r of runs) {
                assert.ok(r.events < 10_240, `a run of ${r.events} events`);
                assert.ok(r.bytes < 10 * 1024 * 1024, `a run of ${r.bytes} bytes`);
            }
        },
        { ...TIMING, maxAttempts: 1 },
    );
}
