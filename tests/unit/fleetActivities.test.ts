// The fleet's stack activities (issue #42) without a Temporal server and without the engine: how a
// preview's or update's failure is classified from engine events and error texts (a gate refusal,
// a program's error, a locked stack, the wrong target, no change exported), what an update
// heartbeats, and how a lock left by a dead `pulumi` of this host is cleared. The activities run
// in Temporal's MockActivityEnvironment, on a stand-in stack where the engine would run.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { LocalWorkspace } from "@pulumi/pulumi/automation";
import { ApplicationFailure, CancelledFailure, type Logger } from "@temporalio/common";
import { MockActivityEnvironment } from "@temporalio/testing";
import type { EngineEvent } from "../../components/automation/stacks.js";
import { forgetSecrets, rememberSecret } from "../../components/core/redact.js";
import type { ModeChange, PromotionRecord, ProxyMode } from "../../components/core/types.js";
import { enginePath, toolchainBin } from "../../scripts/referenceCluster.js";
import { ROOT } from "../helpers.js";
import {
    classifyStackFailure,
    clearDeadLocks,
    parseStackLocks,
    previewTargetRefusal,
    type RunnableStack,
    STACK_LOCKED,
    stackActivities,
    stackFailure,
    UpProgressTracker,
} from "../../components/fleet/activities.js";
import { STACK_FAILURES, type StackInput, type StackOutcome } from "../../components/fleet/contract.js";

const URN = "urn:pulumi:staging::p::kube-proxy-mode:index:KubeProxyMode::kube-proxy";

const diagnostic = (severity: "info" | "warning" | "error", message: string): EngineEvent => ({
    sequence: 0,
    timestamp: 0,
    diagnosticEvent: { urn: URN, message, color: "never", severity },
});

const step = (
    kind: "resourcePreEvent" | "resOutputsEvent" | "resOpFailedEvent",
    type: string,
    name: string,
    op: string,
    outputs?: Record<string, unknown>,
): EngineEvent =>
    ({
        sequence: 0,
        timestamp: 0,
        [kind]: {
            metadata: {
                op,
                urn: `urn:pulumi:staging::p::${type}::${name}`,
                type,
                new: outputs ? { outputs } : undefined,
            },
            ...(kind === "resOpFailedEvent" ? { status: 1, steps: 1 } : {}),
        },
    }) as unknown as EngineEvent;

/** The engine's error as the Automation API throws it: a CommandError whose message is the command's result. */
function commandError(stderr: string, stdout = "", name = "CommandError"): Error {
    const e = new Error(`code: 255\n stdout: ${stdout}\n stderr: ${stderr}\n err?: \n`);
    e.name = name;
    return e;
}

const LEFT = "promotion.minSoak is 1h: 59m55s left (retry after 2026-12-01T09:43:41.965Z)";
const GATE =
    "KubeProxyMode kube-proxy: promotion gate refused: organization/kube-proxy-mode/dev is not ready to be followed:\n" +
    `- organization/kube-proxy-mode/dev finished at 2026-12-01T08:43:41.965Z and has held it for 5s; ${LEFT}\n`;

const NODE_FAILED = [
    "Updating (staging):",
    " +  kube-proxy-mode:index:KubeProxyMode kube-proxy creating (12s) error: node workers-1 failed its checks and was rolled back",
    "Diagnostics:",
    "  kube-proxy-mode:index:KubeProxyMode (kube-proxy):",
    "    error: node workers-1 failed its checks (probe to 10.96.0.10:53 timed out) and was rolled back to ipvs",
    "",
].join("\n");

const lockLine = (url: string, pid: number, host = hostname()) =>
    `  ${url}: created by root@${host} (pid ${pid}) at 2026-12-07T02:00:00Z`;
const lockedError = (...lines: string[]) =>
    commandError(
        [
            "error: the stack is currently locked by 1 lock(s). Either wait for the other process(es) to end or delete the lock file with `pulumi cancel`.",
            ...lines,
        ].join("\n"),
        "",
        "ConcurrentUpdateError",
    );

const change = (to: ModeChange["to"]["mode"]): ModeChange => ({
    cluster: "https://10.0.0.1:6443",
    from: { mode: "ipvs", configHash: "3f2a" },
    to: { mode: to, configHash: "9c1b" },
    moving: 4,
});

describe("fleet stack activities: classifying failures", () => {
    afterEach(() => forgetSecrets());

    it("a gate refusal in a preview's or an update's diagnostics is GateRefused, with the refusal's own text", () => {
        const events = [diagnostic("info", "cluster ..."), diagnostic("error", GATE)];
        for (const phase of ["preview", "up"] as const) {
            const v = classifyStackFailure(phase, "staging@/infra", events, commandError("error: update failed"));
            assert.equal(v.kind, "refused");
            assert.equal(v.kind === "refused" && v.type, STACK_FAILURES.gateRefused);
            assert.match(
                v.message,
                /^stack staging@\/infra: promotion gate refused: organization\/kube-proxy-mode\/dev is not ready/,
            );
            assert.ok(v.message.includes(LEFT), v.message);
        }
    });

    it("a gate that lacks only the upstream's soak says when it is held (the failure's details); with another gap, nothing", () => {
        const soakOnly = classifyStackFailure(
            "preview",
            "staging@/infra",
            [diagnostic("error", GATE)],
            commandError("x"),
        );
        assert.deepEqual(soakOnly.kind === "refused" && soakOnly.details, { retryAfter: "2026-12-01T09:43:41.965Z" });
        assert.deepEqual(stackFailure(soakOnly).details, [{ retryAfter: "2026-12-01T09:43:41.965Z" }]);
        const twoGaps = GATE + "- organization/kube-proxy-mode/dev verified 1 of 2 node(s) on configuration 3f2a\n";
        const other = classifyStackFailure(
            "preview",
            "staging@/infra",
            [diagnostic("error", twoGaps)],
            commandError("x"),
        );
        assert.equal(other.kind === "refused" && other.type, STACK_FAILURES.gateRefused);
        assert.equal(other.kind === "refused" && other.details, undefined);
        assert.deepEqual(stackFailure(other).details, []);
    });

    it("a program's or a node's error is PreviewRefused in a preview and StackFailed in an update, with the component's own words", () => {
        const refusal =
            "kube-proxy-mode refuses this change (2 problem(s)):\n  - nodes[0]: kernel 5.4\n  - featureGates.Foo: unknown";
        const events = [diagnostic("error", refusal)];
        const preview = classifyStackFailure("preview", "prod@/infra", events, commandError("", NODE_FAILED));
        assert.deepEqual(preview.kind === "refused" && [preview.type, preview.message], [
            STACK_FAILURES.previewRefused,
            "stack prod@/infra: preview failed: kube-proxy-mode refuses this change (2 problem(s)): - nodes[0]: kernel 5.4 - featureGates.Foo: unknown",
        ]);
        // no error diagnostic: the engine's error lines
        const bare = classifyStackFailure("preview", "prod@/infra", [], commandError("", NODE_FAILED));
        assert.deepEqual(bare.kind === "refused" && [bare.type, bare.message], [
            STACK_FAILURES.previewRefused,
            "stack prod@/infra: preview failed: " +
                "+  kube-proxy-mode:index:KubeProxyMode kube-proxy creating (12s) error: node workers-1 failed its checks and was rolled back " +
                "error: node workers-1 failed its checks (probe to 10.96.0.10:53 timed out) and was rolled back to ipvs",
        ]);
        const up = classifyStackFailure("up", "prod@/infra", events, commandError("", NODE_FAILED));
        assert.equal(up.kind === "refused" && up.type, STACK_FAILURES.stackFailed);
        assert.match(up.message, /^stack prod@\/infra: pulumi up failed: kube-proxy-mode refuses this change/);
    });

    it("never puts a kubeconfig's secret in a message", () => {
        const token = "kpm-test-token-4f8a9b2c1d";
        rememberSecret(token);
        const v = classifyStackFailure(
            "up",
            "prod@/infra",
            [],
            commandError("", `error: Unauthorized: token ${token} refused`),
        );
        assert.ok(!v.message.includes(token), v.message);
        assert.match(v.message, /\[secret\]/);
    });

    it("a stack locked by another update is retried (StackLocked), naming the lock's holder", () => {
        const url = "file:///var/state/.pulumi/locks/organization/p/staging/1f2e.json";
        const v = classifyStackFailure("up", "staging@/infra", [], lockedError(lockLine(url, 4242, "worker-2")));
        assert.equal(v.kind, "locked");
        assert.deepEqual(v.kind === "locked" && v.locks, [
            { url, user: "root", hostname: "worker-2", pid: 4242, at: "2026-12-07T02:00:00Z" },
        ]);
        assert.equal(
            v.message,
            "stack staging@/infra is locked by another update: root@worker-2 (pid 4242) since 2026-12-07T02:00:00Z",
        );
        const f = stackFailure(v);
        assert.equal(f.nonRetryable, false);
        assert.equal(f.type, STACK_LOCKED);
        // Pulumi Cloud's answer, and a CommandError whose text alone says so
        const cloud = classifyStackFailure(
            "up",
            "s",
            [],
            commandError("error: [409] Conflict: Another update is currently in progress."),
        );
        assert.equal(cloud.kind, "locked");
    });

    it("the stack's own verdicts are never retried", () => {
        const v = classifyStackFailure("up", "s", [], commandError("", NODE_FAILED));
        const f = stackFailure(v);
        assert.ok(f instanceof ApplicationFailure);
        assert.equal(f.nonRetryable, true);
        assert.equal(f.type, STACK_FAILURES.stackFailed);
    });
});

describe("fleet stack activities: the fleet's target", () => {
    it("refuses a preview that moves elsewhere than the fleet's target, naming both", () => {
        assert.equal(
            previewTargetRefusal("prod@/infra", { change: change("iptables") }, "nftables"),
            "stack prod@/infra moves to iptables, the fleet's target is nftables",
        );
    });
    it("refuses a program that exports no change when the fleet has a target", () => {
        assert.match(
            previewTargetRefusal("prod@/infra", {}, "nftables") ?? "",
            /^stack prod@\/infra: its program does not export KubeProxyMode's change output/,
        );
        // an unknown output (a preview's placeholder string) says no more
        const unknown = { change: "04da6b54-80e4-46f7-96ec-b56ff0331ba9" as unknown as ModeChange };
        assert.match(previewTargetRefusal("prod", unknown, "nftables") ?? "", /does not export KubeProxyMode's change/);
    });
    it("lets the preview on when it moves to the target, or when the fleet has none", () => {
        assert.equal(previewTargetRefusal("prod", { change: change("nftables") }, "nftables"), undefined);
        assert.equal(previewTargetRefusal("prod", {}, undefined), undefined);
    });
});

describe("fleet stack activities: locks left on this host", () => {
    let dir: string;
    beforeEach(() => (dir = mkdtempSync(join(tmpdir(), "kpm-locks-"))));
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    function lockFile(name: string, pid: number, host = hostname()): string {
        const path = join(dir, ".pulumi", "locks", "organization", "p", "dev", `${name}.json`);
        mkdirSync(join(path, ".."), { recursive: true });
        writeFileSync(
            path,
            JSON.stringify({ pid, username: "root", hostname: host, timestamp: "2026-12-07T02:00:00Z" }),
        );
        return path;
    }

    it("reads every lock the engine lists", () => {
        const text = lockedError(lockLine("file:///a/1.json", 11), lockLine("file:///a/2.json", 12, "other")).message;
        assert.deepEqual(
            parseStackLocks(text).map((l) => [l.url, l.pid, l.hostname]),
            [
                ["file:///a/1.json", 11, hostname()],
                ["file:///a/2.json", 12, "other"],
            ],
        );
    });

    it("clears only a file:// lock of this host whose process is gone and whose file still says so", () => {
        const dead = lockFile("dead", 999_991);
        const alive = lockFile("alive", 999_992);
        const elsewhere = lockFile("elsewhere", 999_993, "worker-2");
        const changed = lockFile("changed", 999_994);
        const locks = parseStackLocks(
            lockedError(
                lockLine(pathToFileURL(dead).href, 999_991),
                lockLine(pathToFileURL(alive).href, 999_992),
                lockLine(pathToFileURL(elsewhere).href, 999_993, "worker-2"),
                // the engine saw another holder than the file now names: not cleared
                lockLine(pathToFileURL(changed).href, 999_995),
                lockLine("s3://bucket/.pulumi/locks/organization/p/dev/x.json", 999_996),
            ).message,
        );
        const cleared = clearDeadLocks(locks, hostname(), (pid) => pid === 999_992);
        assert.deepEqual(cleared, [dead]);
        assert.deepEqual(
            [dead, alive, elsewhere, changed].map((p) => existsSync(p)),
            [false, true, true, true],
        );
    });
});

describe("fleet stack activities: heartbeats", () => {
    it("an update's progress is its last resource step, the resources done and the last output line", () => {
        const t = new UpProgressTracker();
        t.event(step("resourcePreEvent", "pulumi:pulumi:Stack", "p-staging", "create"));
        t.event(step("resourcePreEvent", "kube-proxy-mode:index:KubeProxyMode", "kube-proxy", "update"));
        assert.deepEqual(t.progress, { done: 0, resource: "kube-proxy update" });
        t.event(step("resourcePreEvent", "command:local:Command", "kube-proxy-rollout", "create"));
        t.event(step("resOutputsEvent", "command:local:Command", "kube-proxy-rollout", "create"));
        t.output("     command:local:Command kube-proxy-rollout creating (31s) node workers-2 verified\n\n");
        assert.deepEqual(t.progress, {
            done: 1,
            resource: "kube-proxy-rollout create done",
            output: "command:local:Command kube-proxy-rollout creating (31s) node workers-2 verified",
        });
        t.event(step("resOpFailedEvent", "command:local:Command", "kube-proxy-finish", "create"));
        assert.deepEqual([t.progress.done, t.progress.resource], [2, "kube-proxy-finish create failed"]);
    });
});

/** A stand-in for a selected stack: the engine's part played by the given functions. */
function standIn(up: RunnableStack["up"], preview?: RunnableStack["preview"]): RunnableStack {
    return {
        up,
        preview: preview ?? (() => Promise.reject(new Error("no preview here"))),
        outputs: () => Promise.resolve({}),
    };
}

const INPUT: StackInput = { stack: { dir: "/infra", stack: "staging", key: "staging@/infra" }, target: "nftables" };

const upResult = (outputs: Record<string, unknown>, changes: Record<string, number>) =>
    ({
        stdout: "",
        stderr: "",
        outputs: Object.fromEntries(Object.entries(outputs).map(([k, value]) => [k, { value, secret: false }])),
        summary: { resourceChanges: changes },
    }) as unknown as Awaited<ReturnType<RunnableStack["up"]>>;

const PROMOTION: PromotionRecord = {
    targetHash: "t",
    target: {},
    configHash: "9c1b",
    mode: "nftables",
    finishedAt: "2026-12-07T02:00:00Z",
    nodesVerified: 4,
    nodesChecked: 3,
    nodesTotal: 4,
    unverified: [],
};

/** An activity environment whose log lines are kept (the worker's "Activity failed" warnings too), not printed. */
function quietEnv(): MockActivityEnvironment & { logged: string[] } {
    const logged: string[] = [];
    const keep = (message: string) => void logged.push(message);
    const logger: Logger = { log: (_l, m) => keep(m), trace: keep, debug: keep, info: keep, warn: keep, error: keep };
    return Object.assign(new MockActivityEnvironment(undefined, { logger }), { logged });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("fleet stack activities (in Temporal's mock activity environment)", () => {
    it("a project directory without Pulumi.yaml is StackNotFound, never retried", async () => {
        const dir = mkdtempSync(join(tmpdir(), "kpm-noproject-"));
        try {
            const env = quietEnv();
            const input: StackInput = { stack: { dir, stack: "dev", key: `dev@${dir}` } };
            await assert.rejects(env.run(stackActivities().previewStack, input), (e: ApplicationFailure) => {
                assert.equal(e.type, STACK_FAILURES.stackNotFound);
                assert.equal(e.nonRetryable, true);
                assert.match(e.message, /no Pulumi\.yaml there/);
                return true;
            });
        } finally {
            rmSync(dir, { recursive: true, force: true });
        }
    });

    it("previewStack returns the change as promote shows it, and refuses a preview that moves elsewhere", async () => {
        const preview =
            (to: ModeChange["to"]["mode"]): RunnableStack["preview"] =>
            (opts) => {
                opts?.onEvent?.(
                    step("resOutputsEvent", "pulumi:pulumi:Stack", "p-staging", "same", { change: change(to) }),
                );
                return Promise.resolve({ stdout: "", stderr: "", changeSummary: {} });
            };
        const env = quietEnv();
        const ok = stackActivities({
            select: () => Promise.resolve(standIn(() => Promise.reject(new Error()), preview("nftables"))),
        });
        assert.deepEqual(await env.run(ok.previewStack, INPUT), {
            key: "staging@/infra",
            cluster: "https://10.0.0.1:6443",
            from: "ipvs (3f2a)",
            to: "nftables (9c1b)",
            moving: 4,
        });
        const wrong = stackActivities({
            select: () => Promise.resolve(standIn(() => Promise.reject(new Error()), preview("iptables"))),
        });
        await assert.rejects(env.run(wrong.previewStack, INPUT), (e: ApplicationFailure) => {
            assert.deepEqual(
                [e.type, e.nonRetryable, e.message],
                [
                    STACK_FAILURES.previewRefused,
                    true,
                    "stack staging@/infra moves to iptables, the fleet's target is nftables",
                ],
            );
            return true;
        });
    });

    it("upStack heartbeats the engine's progress while it runs and returns the outcome", async () => {
        const up: RunnableStack["up"] = async (opts) => {
            opts?.onEvent?.(step("resourcePreEvent", "command:local:Command", "kube-proxy-rollout", "create"));
            opts?.onOutput?.("kube-proxy-rollout creating node workers-1\n");
            await sleep(80);
            opts?.onEvent?.(step("resOutputsEvent", "command:local:Command", "kube-proxy-rollout", "create"));
            await sleep(80);
            return upResult({ change: change("nftables"), promotion: PROMOTION }, { same: 3, create: 2 });
        };
        const env = quietEnv();
        const beats: unknown[] = [];
        env.on("heartbeat", (d: unknown) => beats.push(d));
        const outcome = (await env.run(
            stackActivities({ heartbeatMs: 20, select: () => Promise.resolve(standIn(up)) }).upStack,
            INPUT,
        )) as StackOutcome;
        assert.deepEqual(
            { ...outcome, durationSeconds: 0 },
            {
                key: "staging@/infra",
                cluster: "https://10.0.0.1:6443",
                from: "ipvs (3f2a)",
                to: "nftables (9c1b)",
                moving: 4,
                result: "applied",
                nodesVerified: "4/4 (1 by hooks only)",
                durationSeconds: 0,
                attempt: 1,
            },
        );
        assert.ok(beats.length >= 4, `heartbeats: ${beats.length}`);
        assert.deepEqual(beats.at(-1), {
            done: 1,
            resource: "kube-proxy-rollout create done",
            output: "kube-proxy-rollout creating node workers-1",
        });
        const count = beats.length;
        await sleep(60);
        assert.equal(beats.length, count, "no heartbeat after the activity returned");
    });

    it("previewStack and upStack heartbeat while the stack is still being selected (a slow workspace)", async () => {
        const preview: RunnableStack["preview"] = (opts) => {
            opts?.onEvent?.(
                step("resOutputsEvent", "pulumi:pulumi:Stack", "p-staging", "same", { change: change("nftables") }),
            );
            return Promise.resolve({ stdout: "", stderr: "", changeSummary: {} });
        };
        const up: RunnableStack["up"] = () =>
            Promise.resolve(upResult({ change: change("nftables"), promotion: PROMOTION }, { same: 3 }));
        for (const name of ["previewStack", "upStack"] as const) {
            let selected = false;
            let beatsBeforeSelected = 0;
            const env = quietEnv();
            env.on("heartbeat", () => {
                if (!selected) beatsBeforeSelected++;
            });
            const slowSelect = async () => {
                await sleep(150);
                selected = true;
                return standIn(up, preview);
            };
            await env.run(stackActivities({ heartbeatMs: 20, select: slowSelect })[name], INPUT);
            assert.ok(beatsBeforeSelected >= 3, `${name}: ${beatsBeforeSelected} heartbeat(s) while selecting`);
        }
    });

    it("upStack passes Temporal's cancellation to the engine and ends as cancelled", async () => {
        let aborted = false;
        const up: RunnableStack["up"] = (opts) =>
            new Promise((_, reject) =>
                opts?.signal?.addEventListener("abort", () => {
                    aborted = true;
                    reject(commandError("error: update canceled"));
                }),
            );
        const env = quietEnv();
        const run = env.run(
            stackActivities({ heartbeatMs: 20, select: () => Promise.resolve(standIn(up)) }).upStack,
            INPUT,
        );
        await sleep(50);
        env.cancel();
        await assert.rejects(run, (e) => e instanceof CancelledFailure);
        assert.equal(aborted, true);
    });

    it("upStack clears a lock its dead pulumi left on this host and runs the update again", async () => {
        const dir = mkdtempSync(join(tmpdir(), "kpm-locks-"));
        try {
            const path = join(dir, "dead.json");
            writeFileSync(path, JSON.stringify({ pid: 999_991, username: "root", hostname: hostname() }));
            let calls = 0;
            // as the engine does: refused while the lock file is there
            const up: RunnableStack["up"] = () =>
                ++calls && existsSync(path)
                    ? Promise.reject(lockedError(lockLine(pathToFileURL(path).href, 999_991)))
                    : Promise.resolve(upResult({}, { same: 5 }));
            const env = quietEnv();
            const outcome = (await env.run(
                stackActivities({ select: () => Promise.resolve(standIn(up)) }).upStack,
                INPUT,
            )) as StackOutcome;
            assert.deepEqual(
                [calls, existsSync(path), outcome.result, outcome.nodesVerified],
                [2, false, "unchanged", null],
            );
            assert.ok(
                env.logged.includes(
                    `stack staging@/infra: cleared the lock ${path}: its pulumi process is gone from this host`,
                ),
                env.logged.join("\n"),
            );
        } finally {
            rmSync(dir, { recursive: true, force: true });
        }
    });

    it("upStack waits for a live pulumi of this host to release the stack, then runs the update", async () => {
        const child = spawn("sleep", ["0.4"]);
        const url = "file:///nowhere/.pulumi/locks/organization/p/staging/live.json";
        let calls = 0;
        let exited = false;
        child.on("exit", () => (exited = true));
        const up: RunnableStack["up"] = () =>
            ++calls === 1
                ? Promise.reject(lockedError(lockLine(url, child.pid!)))
                : Promise.resolve(upResult({}, { same: 5 }));
        const env = quietEnv();
        const beats: { waitingFor?: string }[] = [];
        env.on("heartbeat", (d: { waitingFor?: string }) => beats.push(d));
        const outcome = (await env.run(
            stackActivities({ heartbeatMs: 20, lockPollMs: 20, select: () => Promise.resolve(standIn(up)) }).upStack,
            INPUT,
        )) as StackOutcome;
        assert.deepEqual([calls, exited, outcome.result], [2, true, "unchanged"]);
        assert.ok(
            beats.some((b) => b.waitingFor === `pid ${child.pid}`),
            JSON.stringify(beats),
        );
    });

    it("upStack leaves a lock of another host to Temporal's retry", async () => {
        const up: RunnableStack["up"] = () =>
            Promise.reject(lockedError(lockLine("file:///shared/.pulumi/locks/o/p/s/x.json", 4242, "worker-2")));
        const env = quietEnv();
        await assert.rejects(
            env.run(stackActivities({ select: () => Promise.resolve(standIn(up)) }).upStack, INPUT),
            (e: ApplicationFailure) => {
                assert.deepEqual([e.type, e.nonRetryable], [STACK_LOCKED, false]);
                return true;
            },
        );
    });

    it("upStack's gate refusal and node failure are never retried", async () => {
        for (const [events, error, type] of [
            [[diagnostic("error", GATE)], commandError("error: update failed"), STACK_FAILURES.gateRefused],
            [[], commandError("", NODE_FAILED), STACK_FAILURES.stackFailed],
        ] as const) {
            const up: RunnableStack["up"] = (opts) => {
                for (const e of events) opts?.onEvent?.(e);
                return Promise.reject(error);
            };
            const env = quietEnv();
            await assert.rejects(
                env.run(stackActivities({ select: () => Promise.resolve(standIn(up)) }).upStack, INPUT),
                (e: ApplicationFailure) => {
                    assert.deepEqual([e.type, e.nonRetryable], [type, true]);
                    return true;
                },
            );
        }
    });
});

/**
 * A program that exports what KubeProxyMode would (change, promotion), moves to config `to`, and
 * fails as config `fail` says: no cluster, no component, only the engine.
 */
const FIXTURE_PROGRAM = `
const pulumi = require("@pulumi/pulumi");
const config = new pulumi.Config();
const fail = config.get("fail");
if (fail) throw new pulumi.RunError(fail);
exports.change = {
    cluster: "https://fixture:6443",
    from: { mode: "ipvs", configHash: "3f2a" },
    to: { mode: config.get("to") ?? "nftables", configHash: "9c1b" },
    moving: 2,
};
exports.promotion = {
    targetHash: "t", target: {}, configHash: "9c1b", mode: config.get("to") ?? "nftables",
    finishedAt: "2026-12-07T02:00:00Z", nodesVerified: 2, nodesChecked: 2, nodesTotal: 2, unverified: [],
};
`;

describe("@e2e fleet stack activities on the real engine (a local file backend, no cluster)", function () {
    this.timeout(240_000);
    let dir: string;
    const saved: Record<string, string | undefined> = {};
    const input = (stack: string, target?: ProxyMode): StackInput => ({
        stack: { dir, stack, key: `${stack}@fixture` },
        target,
    });

    before(async function () {
        // the engine comes from the toolchain: without it this fails, naming bash scripts/toolchain.sh
        const bin = toolchainBin();
        dir = mkdtempSync(join(tmpdir(), "kpm-fleet-engine-"));
        mkdirSync(join(dir, ".state"));
        writeFileSync(join(dir, "Pulumi.yaml"), "name: fleet-fixture\nruntime: nodejs\n");
        writeFileSync(join(dir, "index.js"), FIXTURE_PROGRAM);
        writeFileSync(join(dir, "package.json"), '{ "name": "fleet-fixture", "main": "index.js" }\n');
        symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
        // the activities select stacks with the worker's environment, as a fleet worker does
        const env: Record<string, string> = {
            PULUMI_BACKEND_URL: `file://${join(dir, ".state")}`,
            PULUMI_CONFIG_PASSPHRASE: "x",
            PULUMI_HOME: join(dir, ".pulumi-home"),
            PULUMI_SKIP_UPDATE_CHECK: "true",
            PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
            PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK: "true",
            PATH: enginePath(bin).path,
        };
        for (const [k, v] of Object.entries(env)) {
            saved[k] = process.env[k];
            process.env[k] = v;
        }
        for (const [name, config] of [
            ["dev", {}],
            ["wrong", { to: "iptables" }],
            ["broken", { fail: "KubeProxyMode kube-proxy: node workers-1 failed its checks and was rolled back" }],
            [
                "gated",
                {
                    fail: "KubeProxyMode kube-proxy: promotion gate refused: organization/fleet-fixture/dev is not ready to be followed:\n- dev has held it for 5s; promotion.minSoak is 1h",
                },
            ],
        ] as const) {
            const stack = await LocalWorkspace.createStack({ stackName: name, workDir: dir });
            for (const [k, v] of Object.entries(config)) await stack.setConfig(k, { value: v });
        }
    });

    after(() => {
        for (const [k, v] of Object.entries(saved)) {
            if (v === undefined) delete process.env[k];
            else process.env[k] = v;
        }
        if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it("previews, then ups a stack heartbeating the engine's progress; a second up is unchanged", async () => {
        const env = quietEnv();
        const beats: unknown[] = [];
        env.on("heartbeat", (d: unknown) => beats.push(d));
        const activities = stackActivities({ heartbeatMs: 100 });
        assert.deepEqual(await env.run(activities.previewStack, input("dev", "nftables")), {
            key: "dev@fixture",
            cluster: "https://fixture:6443",
            from: "ipvs (3f2a)",
            to: "nftables (9c1b)",
            moving: 2,
        });
        const first = (await env.run(activities.upStack, input("dev", "nftables"))) as StackOutcome;
        assert.deepEqual([first.result, first.to, first.nodesVerified], ["applied", "nftables (9c1b)", "2/2"]);
        assert.ok(beats.length >= 2, `heartbeats: ${JSON.stringify(beats)}`);
        assert.ok(
            beats.some((b) => typeof (b as { output?: string }).output === "string"),
            `an output line heartbeated: ${JSON.stringify(beats)}`,
        );
        const second = (await env.run(activities.upStack, input("dev", "nftables"))) as StackOutcome;
        assert.equal(second.result, "unchanged");
    });

    it("classifies a real engine's refusals: wrong target, program error, gate, no such stack", async () => {
        const env = quietEnv();
        const activities = stackActivities();
        const failsWith = async (run: Promise<unknown>, type: string, message: RegExp) =>
            assert.rejects(run, (e: ApplicationFailure) => {
                assert.deepEqual([e.type, e.nonRetryable], [type, true], e.message);
                assert.match(e.message, message);
                return true;
            });
        await failsWith(
            env.run(activities.previewStack, input("wrong", "nftables")),
            STACK_FAILURES.previewRefused,
            /^stack wrong@fixture moves to iptables, the fleet's target is nftables$/,
        );
        await failsWith(
            env.run(activities.previewStack, input("broken")),
            STACK_FAILURES.previewRefused,
            /node workers-1 failed its checks and was rolled back/,
        );
        await failsWith(
            env.run(activities.upStack, input("broken")),
            STACK_FAILURES.stackFailed,
            /^stack broken@fixture: pulumi up failed: .*node workers-1 failed its checks and was rolled back/,
        );
        await failsWith(
            env.run(activities.upStack, input("gated")),
            STACK_FAILURES.gateRefused,
            /^stack gated@fixture: promotion gate refused: organization\/fleet-fixture\/dev is not ready/,
        );
        await failsWith(
            env.run(activities.previewStack, input("nosuch")),
            STACK_FAILURES.stackNotFound,
            /cannot select stack nosuch in .*: .*no stack named/,
        );
    });
});
