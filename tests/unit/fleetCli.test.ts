// kube-proxy-mode fleet without Temporal (issue #42): its arguments (exit 2 before anything
// starts), the fleet file's findings, the summary table, the event lines, the exit codes, and the
// embedded server's pid file (a live server is reused, never a second one started on its db).
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkFleetFlags, loadFleet, splitFleetArgs } from "../../components/cli/commands/fleet.js";
import { eventLine, eventPrinter, exitCodeOfPhase, fleetTable, phaseLines } from "../../components/cli/fleetOutput.js";
import { followEnds } from "../../components/cli/fleetFollow.js";
import { main } from "../../components/cli/main.js";
import { CliError } from "../../components/cli/output.js";
import type { FleetStatus } from "../../components/fleet/contract.js";
import { FleetSetupError } from "../../components/fleet/errors.js";
import {
    claimServer,
    defaultStateDir,
    liveServer,
    readRecord,
    releaseServer,
    stateFiles,
    type ServerHost,
    type ServerRecord,
} from "../../components/fleet/serverState.js";
import { findTemporalBin } from "../../components/fleet/temporal.js";
import { sdkMissing } from "../../components/fleet/temporalSdk.js";

const tmp = () => mkdtempSync(join(tmpdir(), "kpm-fleet-cli-"));

/** main's exit code and what it printed (stdout and stderr apart). */
async function run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(argv, { out: (l) => out.push(l), err: (l) => err.push(l) });
    return { code, out: out.join("\n"), err: err.join("\n") };
}

const GOOD = `waves:
  - name: canary
    stacks:
      - { dir: ./infra, stack: dev }
  - name: rest
    maxParallel: 2
    stacks:
      - { dir: ./infra, stack: staging }
      - { dir: ./infra, stack: prod }
`;

const BAD = `waves:
  - name: canary
    stacks:
      - { dir: ./infra, stak: dev }
  - name: rest
    maxParallel: 0
    stacks:
      - { dir: ./infra, stack: prod }
`;

/** The refusal `f` throws: the CLI's own, or the fleet's setup error the CLI shows as its own. */
const refusal = (f: () => unknown): CliError | FleetSetupError => {
    try {
        f();
    } catch (e) {
        assert.ok(e instanceof CliError || e instanceof FleetSetupError, String(e));
        return e;
    }
    assert.fail("expected a CliError or a FleetSetupError");
};

describe("kube-proxy-mode fleet: arguments (exit 2 before anything starts)", () => {
    it("splits the subcommand, retry's and skip's STACK, and the flags", () => {
        assert.deepEqual(splitFleetArgs(["up", "--file", "f.yaml"]), { sub: "up", rest: ["--file", "f.yaml"] });
        assert.deepEqual(splitFleetArgs(["retry", "prod", "--file", "f.yaml"]), {
            sub: "retry",
            stack: "prod",
            rest: ["--file", "f.yaml"],
        });
        assert.deepEqual(splitFleetArgs(["--help"]).sub, "help");
    });

    it("refuses an unknown or missing subcommand and a retry/skip without STACK", () => {
        assert.match(refusal(() => splitFleetArgs(["frob"])).message, /unknown subcommand "frob".*up, worker, status/);
        assert.match(refusal(() => splitFleetArgs([])).message, /a subcommand is required/);
        assert.match(refusal(() => splitFleetArgs(["--file", "x"])).message, /a subcommand is required/);
        for (const sub of ["retry", "skip"]) {
            const e = refusal(() => splitFleetArgs([sub, "--file", "f.yaml"]));
            assert.match(e.message, /STACK is required/);
            assert.equal(e.exitCode, 2);
        }
    });

    it("refuses flags that do not go together", () => {
        assert.match(refusal(() => checkFleetFlags("worker", {})).message, /--temporal-address/);
        assert.match(refusal(() => checkFleetFlags("up", { id: "x" })).message, /--id is for status/);
        assert.match(refusal(() => checkFleetFlags("status", { id: "x", file: "f" })).message, /not both/);
        assert.match(
            refusal(() => checkFleetFlags("up", { "temporal-address": "h:7233", "state-dir": "/s" })).message,
            /embedded server/,
        );
        checkFleetFlags("up", { "temporal-address": "h:7233", worker: true });
        checkFleetFlags("status", { id: "x" });
    });

    it("prints every finding of a bad fleet file with its field and line", () => {
        const e = refusal(() => loadFleet("fleet.yaml", () => BAD));
        assert.equal(e.exitCode, 2);
        assert.match(e.message, /fleet.yaml is not a valid fleet file \(3 problems\)/);
        assert.deepEqual(
            e.lines.map((l) => /^ {2}fleet\.yaml:(\d+): (\S+):/.exec(l)?.slice(1)),
            [
                ["4", "waves[0].stacks[0].stack"],
                ["4", "waves[0].stacks[0]"],
                ["6", "waves[1].maxParallel"],
            ],
        );
        assert.equal(loadFleet("fleet.yaml", () => GOOD).waves.length, 2);
    });

    for (const [what, argv, expected] of [
        ["a bad fleet file", ["up", "--file", "BAD"], /waves\[1\]\.maxParallel/],
        ["an unknown subcommand", ["frob"], /unknown subcommand/],
        ["a bad mode", ["up", "--file", "GOOD", "--to", "userspace"], /--to "userspace" is not a kube-proxy mode/],
        ["a bad address", ["up", "--file", "GOOD", "--temporal-address", "nohost"], /expected HOST:PORT/],
        ["an unknown flag", ["status", "--fiel", "GOOD"], /did you mean --file/],
        ["a missing fleet file", ["status", "--file", "MISSING"], /cannot read/],
    ] as const) {
        it(`exits 2 on ${what}, starting no server`, async () => {
            const dir = tmp();
            writeFileSync(join(dir, "bad.yaml"), BAD);
            writeFileSync(join(dir, "good.yaml"), GOOD);
            const files: Record<string, string> = {
                BAD: join(dir, "bad.yaml"),
                GOOD: join(dir, "good.yaml"),
                MISSING: join(dir, "none.yaml"),
            };
            const state = join(dir, "state");
            // a temporal binary that would say so if it were run
            const bin = join(dir, "temporal");
            writeFileSync(bin, `#!/bin/sh\ntouch ${join(dir, "ran")}\n`);
            chmodSync(bin, 0o755);
            const r = await run([
                "fleet",
                ...argv.map((a) => files[a] ?? a),
                ...((argv as readonly string[]).includes("--temporal-address")
                    ? []
                    : ["--state-dir", state, "--temporal-bin", bin]),
            ]);
            assert.equal(r.code, 2, r.err);
            assert.match(r.err, expected);
            assert.equal(existsSync(state), false, "the state dir was created");
            assert.equal(existsSync(join(dir, "ran")), false, "the temporal binary was run");
        });
    }

    it("prints its help, naming every subcommand (exit 0)", async () => {
        const r = await run(["fleet", "--help"]);
        assert.equal(r.code, 0);
        for (const sub of ["up", "worker", "status", "pause", "resume", "retry STACK", "skip STACK"])
            assert.ok(r.out.includes(sub), sub);
    });
});

const STATUS: FleetStatus = {
    phase: "stopped",
    paused: false,
    wave: "rest",
    file: "/f/fleet.yaml",
    target: "nftables",
    counts: { pending: 1, running: 0, succeeded: 1, failed: 1, skipped: 0 },
    runs: 1,
    stacks: [
        {
            key: "dev@/f/infra",
            wave: "canary",
            dir: "/f/infra",
            stack: "dev",
            state: "succeeded",
            attempts: 2,
            outcome: {
                key: "dev@/f/infra",
                cluster: "c1",
                from: "ipvs (3f2a)",
                to: "nftables (9c1b)",
                moving: 3,
                result: "applied",
                nodesVerified: "3/3",
                durationSeconds: 125,
            },
        },
        {
            key: "prod@/f/infra",
            wave: "rest",
            dir: "/f/infra",
            stack: "prod",
            state: "failed",
            attempts: 1,
            preview: { key: "prod@/f/infra", cluster: "c2", from: "ipvs (1111)", to: "nftables (2222)", moving: 4 },
            failure: { type: "StackFailed", message: "node n3 failed its checks and was rolled back" },
            startedAt: 1_000_000,
            endedAt: 1_042_000,
        },
        { key: "qa@/f/infra", wave: "rest", dir: "/f/infra", stack: "qa", state: "pending", attempts: 0 },
    ],
    events: [],
};

describe("kube-proxy-mode fleet: what it prints", () => {
    it("the summary table: a row per stack with its wave, state, modes, nodes, duration and detail", () => {
        const lines = fleetTable(STATUS).split("\n");
        assert.match(lines[0], /^WAVE +STACK +DIR +STATE +FROM -> TO +NODES VERIFIED +DURATION +DETAIL$/);
        const cells = lines.slice(1).map((l) => l.split(/ {2,}/));
        assert.deepEqual(cells[0], [
            "canary",
            "dev",
            "/f/infra",
            "succeeded",
            "ipvs (3f2a) -> nftables (9c1b)",
            "3/3",
            "2m5s",
            "applied; 2 attempts",
        ]);
        assert.deepEqual(cells[1], [
            "rest",
            "prod",
            "/f/infra",
            "failed",
            "ipvs (1111) -> nftables (2222)",
            "-",
            "42s",
            "StackFailed: node n3 failed its checks and was rolled back",
        ]);
        assert.deepEqual(cells[2], ["rest", "qa", "/f/infra", "pending", "-", "-", "-", "-"]);
    });

    it("a stopped fleet names its failed stack, its error, and retry/skip", () => {
        const text = phaseLines(STATUS, "fleet.yaml").join("\n");
        assert.match(text, /stopped in wave rest/);
        assert.match(text, /prod \(prod@\/f\/infra\) failed: StackFailed: node n3 failed/);
        assert.match(text, /kube-proxy-mode fleet retry STACK --file fleet.yaml/);
        assert.match(text, /kube-proxy-mode fleet skip STACK --file fleet.yaml/);
        assert.doesNotMatch(text, /dev/);
        assert.match(phaseLines({ ...STATUS, phase: "done" }).join("\n"), /done/);
        const unknown = {
            ...STATUS,
            stacks: [{ ...STATUS.stacks[1], failure: { type: "Unknown" as const, message: "Error: boom" } }],
        };
        assert.match(phaseLines(unknown).join("\n"), /\(prod@\/f\/infra\) failed: Error: boom$/m);
        assert.match(fleetTable(unknown), /failed .* Error: boom$/m);
        assert.deepEqual(phaseLines({ ...STATUS, phase: "running" }), ["fleet: running wave rest"]);
        assert.match(
            phaseLines({ ...STATUS, phase: "paused" }, "f.yaml")[0],
            /paused in wave rest; .*fleet resume --file f.yaml/,
        );
    });

    it("an event is one line [wave/stack] text", () => {
        assert.equal(eventLine({ at: 1, kind: "started", wave: "rest", stack: "prod", text: "up" }), "[rest/prod] up");
        assert.equal(eventLine({ at: 1, kind: "soaking", wave: "rest", text: "soaking 10m" }), "[rest] soaking 10m");
        assert.equal(eventLine({ at: 1, kind: "done", text: "done" }), "[fleet] done");
    });

    it("the printer prints only the events it has not printed, in order", () => {
        const printed: string[] = [];
        const print = eventPrinter((l) => printed.push(l));
        const e1 = { at: 1, kind: "previewed" as const, wave: "canary", stack: "dev", text: "preview" };
        const e2 = { at: 2, kind: "started" as const, wave: "canary", stack: "dev", text: "up" };
        const e3 = { at: 3, kind: "succeeded" as const, wave: "canary", stack: "dev", text: "succeeded" };
        assert.equal(print({ ...STATUS, events: [e1] }), 1);
        assert.equal(print({ ...STATUS, events: [e1] }), 0);
        assert.equal(print({ ...STATUS, events: [e1, e2, e3] }), 2);
        assert.equal(print({ ...STATUS, events: [e2, e3] }), 0);
        assert.deepEqual(printed, ["[canary/dev] preview", "[canary/dev] up", "[canary/dev] succeeded"]);
        // a stack's key is shown by its name when no other stack has that name
        const named: string[] = [];
        const printKeys = eventPrinter((l) => named.push(l));
        const dup = { ...STATUS.stacks[2], key: "qa@/g/infra", dir: "/g/infra" };
        printKeys({
            ...STATUS,
            stacks: [...STATUS.stacks, dup],
            events: [
                { at: 1, kind: "started", wave: "rest", stack: "prod@/f/infra", text: "up" },
                { at: 2, kind: "started", wave: "rest", stack: "qa@/f/infra", text: "up" },
            ],
        });
        assert.deepEqual(named, ["[rest/prod] up", "[rest/qa@/f/infra] up"]);
    });

    it("the printer says how many events came and went between two reads (the memo keeps the last 10)", () => {
        const printed: string[] = [];
        const print = eventPrinter((l) => printed.push(l));
        const ev = (at: number) => ({ at, kind: "started" as const, wave: "canary", stack: "dev", text: `e${at}` });
        print({ ...STATUS, events: [ev(1)] });
        // e2 and e3 were dropped from the memo before this read
        print({ ...STATUS, events: [ev(4)], eventsDropped: 3 });
        print({ ...STATUS, events: [ev(4), ev(5)], eventsDropped: 3 });
        assert.deepEqual(printed, [
            "[canary/dev] e1",
            "[fleet] 2 event(s) came and went between two reads; the web UI has them",
            "[canary/dev] e4",
            "[canary/dev] e5",
        ]);
    });

    it("the printer names stacks from the fleet, not from the memo's partial list of stacks", () => {
        const printed: string[] = [];
        const fleet = [...STATUS.stacks, { ...STATUS.stacks[2], key: "qa@/g/infra", dir: "/g/infra" }];
        const print = eventPrinter((l) => printed.push(l), fleet);
        // the memo lists only qa@/f/infra (running): its name is still shared with qa@/g/infra
        const memo: FleetStatus = {
            ...STATUS,
            stacks: [{ ...STATUS.stacks[2], state: "running" }],
            stacksOmitted: 3,
            events: [
                { at: 1, kind: "started", wave: "rest", stack: "qa@/f/infra", text: "started" },
                { at: 2, kind: "started", wave: "canary", stack: "dev@/f/infra", text: "started" },
            ],
        };
        print(memo);
        assert.deepEqual(printed, ["[rest/qa@/f/infra] started", "[canary/dev] started"]);
    });

    it("a status that leaves stacks out says how many and in which states, before the phase", () => {
        const memo: FleetStatus = {
            ...STATUS,
            phase: "running",
            stacks: [STATUS.stacks[1]],
            stacksOmitted: 2,
            counts: { pending: 45, running: 2, succeeded: 3, failed: 0, skipped: 0 },
        };
        const lines = phaseLines(memo);
        assert.match(lines[0], /^fleet: 2 more stack\(s\) not listed \(3 succeeded, 2 running, 45 pending\)/);
        assert.equal(lines[1], "fleet: running wave rest");
        assert.equal(phaseLines(STATUS)[0], "fleet: stopped in wave rest; later waves are not started");
    });

    it("fleet up follows a stopped fleet until its running stacks end and no signal is pending", () => {
        const stopped: FleetStatus = { ...STATUS, phase: "stopped" };
        const running: FleetStatus = {
            ...stopped,
            stacks: stopped.stacks.map((s) => (s.stack === "qa" ? { ...s, state: "running" as const } : s)),
        };
        assert.equal(followEnds(stopped, false), true);
        assert.equal(followEnds(stopped, true), false, "a retry or skip is pending");
        assert.equal(followEnds(running, false), false, "qa's up is still running, maybe on this process's worker");
        assert.equal(followEnds({ ...STATUS, phase: "done" }, false), true);
        assert.equal(followEnds({ ...STATUS, phase: "running" }, false), false);
    });

    it("exit codes: 1 stopped, 0 done or still running", () => {
        assert.equal(exitCodeOfPhase("stopped"), 1);
        assert.equal(exitCodeOfPhase("done"), 0);
        for (const phase of ["previewing", "running", "soaking", "paused"] as const)
            assert.equal(exitCodeOfPhase(phase), 0);
    });
});

/** A host of fake processes: pids alive, their command lines, what was spawned. */
function fakeHost(alive: Set<number>, cmdlines: Record<number, string[]> = {}) {
    const spawned: { bin: string; args: string[] }[] = [];
    let next = 5000;
    const host: ServerHost = {
        alive: (pid) => alive.has(pid),
        commandLine: (pid) => cmdlines[pid],
        spawn(bin, args) {
            spawned.push({ bin, args });
            const pid = next++;
            alive.add(pid);
            cmdlines[pid] = [bin, ...args];
            return pid;
        },
        freePorts: async (n, prefer) => prefer ?? Array.from({ length: n }, (_, i) => 20000 + i),
        sleep: async () => undefined,
    };
    return { host, spawned };
}

function writeRecord(stateDir: string, record: Partial<ServerRecord>): ServerRecord {
    mkdirSync(stateDir, { recursive: true });
    const full: ServerRecord = {
        pid: 4242,
        port: 17233,
        httpPort: 17234,
        metricsPort: 17235,
        uiPort: 18233,
        db: stateFiles(stateDir).db,
        startedAt: 1,
        owner: 77,
        ...record,
    };
    writeFileSync(stateFiles(stateDir).record, JSON.stringify(full));
    return full;
}

describe("kube-proxy-mode fleet: the embedded server's pid file", () => {
    const BIN = "/opt/bin/temporal";

    it("starts a server when none runs, and records it", async () => {
        const state = tmp();
        // 99: the first CLI, still running
        const { host, spawned } = fakeHost(new Set([99]));
        const { record, started, owned } = await claimServer(state, BIN, host, 99);
        assert.deepEqual([started, owned, spawned.length], [true, true, 1]);
        assert.ok(spawned[0].args.includes(stateFiles(state).db));
        assert.deepEqual(spawned[0].args.slice(0, 2), ["server", "start-dev"]);
        assert.equal(record.owner, 99);
        // a second CLI finds it and starts nothing
        const second = await claimServer(state, BIN, host, 100);
        assert.deepEqual([second.started, second.owned, spawned.length], [false, false, 1]);
        assert.equal(second.record.pid, record.pid);
    });

    it("reuses a live server its pid file names, and never starts a second one on the db", async () => {
        const state = tmp();
        const live = writeRecord(state, { pid: 4242, owner: 77 });
        const { host, spawned } = fakeHost(new Set([4242, 77]), {
            4242: [BIN, "server", "start-dev", "--db-filename", live.db],
        });
        const { record, started, owned } = await claimServer(state, BIN, host, 99);
        assert.equal(spawned.length, 0, "a second server was started over a live one");
        assert.deepEqual([record.pid, started, owned], [4242, false, false]);
    });

    it("adopts a live server whose CLI was SIGKILLed (stops it at its end), starting none", async () => {
        const state = tmp();
        const live = writeRecord(state, { pid: 4242, owner: 77 });
        const { host, spawned } = fakeHost(new Set([4242]), {
            4242: [BIN, "server", "start-dev", "--db-filename", live.db],
        });
        const { record, started, owned } = await claimServer(state, BIN, host, 99);
        assert.equal(spawned.length, 0);
        assert.deepEqual([record.pid, record.owner, started, owned], [4242, 99, false, true]);
    });

    it("starts a new server (on the same ports) when the recorded one is dead or its pid is another program's", async () => {
        for (const [alive, cmdline] of [
            [new Set<number>(), undefined],
            [new Set([4242, 77]), ["/usr/bin/sleep", "100"]],
        ] as const) {
            const state = tmp();
            writeRecord(state, { pid: 4242 });
            const { host, spawned } = fakeHost(new Set(alive), cmdline ? { 4242: [...cmdline] } : {});
            const { record, started } = await claimServer(state, BIN, host, 99);
            assert.deepEqual([started, spawned.length], [true, 1]);
            assert.notEqual(record.pid, 4242);
            assert.equal(record.uiPort, 18233, "the web UI's address stays");
        }
    });

    it("waits while another live CLI holds the lock, then uses the server it started", async () => {
        const state = tmp();
        mkdirSync(state, { recursive: true });
        writeFileSync(stateFiles(state).lock, "555");
        const alive = new Set([555]);
        const { host, spawned } = fakeHost(alive);
        let waits = 0;
        host.sleep = async () => {
            if (++waits === 3) {
                // the other CLI finishes starting its server
                const rec = writeRecord(state, { pid: 4243, owner: 555 });
                alive.add(4243);
                (host as { commandLine: ServerHost["commandLine"] }).commandLine = () => [BIN, "--db-filename", rec.db];
                unlinkSync(stateFiles(state).lock);
            }
        };
        const { record, started } = await claimServer(state, BIN, host, 99);
        assert.equal(spawned.length, 0);
        assert.deepEqual([record.pid, started], [4243, false]);
        assert.ok(waits >= 3);
    });

    it("takes over a lock whose CLI is dead", async () => {
        const state = tmp();
        mkdirSync(state, { recursive: true });
        writeFileSync(stateFiles(state).lock, "555");
        const { host, spawned } = fakeHost(new Set());
        const { started } = await claimServer(state, BIN, host, 99);
        assert.deepEqual([started, spawned.length], [true, 1]);
    });

    it("a server its CLI stopped is not reused even if its pid runs again; its ports are", async () => {
        const state = tmp();
        const rec = writeRecord(state, { pid: 4242, owner: 77, stopped: true });
        const { host, spawned } = fakeHost(new Set([4242, 77]), { 4242: [BIN, "--db-filename", rec.db] });
        const { record, started } = await claimServer(state, BIN, host, 99);
        assert.deepEqual([started, spawned.length, record.uiPort, record.stopped], [true, 1, 18233, undefined]);
    });

    it("the last live CLI using the server stops it; the owner leaving hands it to another user", async () => {
        const state = tmp();
        const alive = new Set([10, 11]);
        const { host, spawned } = fakeHost(alive);
        const first = await claimServer(state, BIN, host, 10);
        const second = await claimServer(state, BIN, host, 11);
        assert.deepEqual([first.started, second.started, spawned.length], [true, false, 1]);
        // the owner (10) ends first: the server stays, owned by 11 now
        assert.equal(releaseServer(state, first.record, 10, host), false);
        assert.equal(readRecord(stateFiles(state).record)?.owner, 11);
        // a third CLI, SIGKILLed, does not keep it running
        await claimServer(state, BIN, host, 12);
        assert.equal(releaseServer(state, first.record, 11, host), true);
    });

    it("a record for another db file is not this state dir's server", () => {
        const { host } = fakeHost(new Set([1]));
        const r = {
            pid: 1,
            port: 1,
            httpPort: 2,
            metricsPort: 3,
            uiPort: 4,
            db: "/a/temporal.db",
            startedAt: 0,
            owner: 1,
        };
        assert.equal(liveServer(r, "/a/temporal.db", host), true);
        assert.equal(liveServer(r, "/b/temporal.db", host), false);
    });
});

describe("kube-proxy-mode fleet: where the temporal binary and the state are", () => {
    it("--temporal-bin, then KPM_TEMPORAL_BIN, then PATH; none: exit 2 with the fix", () => {
        const dir = tmp();
        const bin = join(dir, "temporal");
        writeFileSync(bin, "#!/bin/sh\n");
        chmodSync(bin, 0o755);
        assert.equal(findTemporalBin(bin, { PATH: "" }), bin);
        assert.equal(findTemporalBin(undefined, { KPM_TEMPORAL_BIN: bin, PATH: "" }), bin);
        assert.equal(findTemporalBin(undefined, { PATH: `/nonexistent:${dir}` }), bin);
        const none = refusal(() => findTemporalBin(undefined, { PATH: "/nonexistent" }));
        assert.equal(none.exitCode, 2);
        assert.match(none.message, /no temporal binary.*--temporal-bin.*KPM_TEMPORAL_BIN/);
        const wrong = refusal(() => findTemporalBin(join(dir, "nope"), { PATH: dir }));
        assert.match(wrong.message, /--temporal-bin .*nope: no executable file there/);
    });

    it("a missing Temporal SDK package is exit 2 with the npm install; another missing module is not", () => {
        const missing = (name: string) =>
            Object.assign(new Error(`Cannot find module '${name}'\nRequire stack:\n- x.js`), {
                code: "MODULE_NOT_FOUND",
            });
        const e = sdkMissing(missing("@temporalio/activity"));
        assert.equal(e?.exitCode, 2);
        assert.match(e!.message, /@temporalio\/activity is not installed.*npm install @temporalio\/client@\^1\.24\.0 /);
        assert.equal(sdkMissing(missing("left-pad")), undefined);
        assert.equal(sdkMissing(new Error("Cannot find module '@temporalio/client'")), undefined);
    });

    it("the state dir: $XDG_CACHE_HOME or ~/.cache, then kube-proxy-mode/fleet", () => {
        assert.equal(defaultStateDir({ XDG_CACHE_HOME: "/x" }, "/home/u"), "/x/kube-proxy-mode/fleet");
        assert.equal(defaultStateDir({}, "/home/u"), "/home/u/.cache/kube-proxy-mode/fleet");
    });
});
