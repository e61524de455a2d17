// kube-proxy-mode fleet (issue #42): many Pulumi stacks moved in waves by a Temporal workflow.
// `up` starts (or attaches to) the fleet's workflow and follows it; `worker` runs a worker for a
// Temporal cluster; `status` reads the workflow's memo; pause/resume/retry/skip signal it. With no
// --temporal-address the embedded dev server (state under the user's cache) and an in-process
// worker run it. What needs no Temporal (arguments, the table, the event lines, exit codes) is
// pure and exported for the tests; Temporal is loaded only once a command needs it.
import { dirname, resolve } from "node:path";
import { formatDuration } from "../../core/duration.js";
import { fleetId, parseFleet, type Fleet, type FleetFinding } from "../../core/fleet.js";
import {
    FLEET_SIGNALS,
    FLEET_STATUS_MEMO,
    FLEET_TASK_QUEUE,
    FLEET_WORKFLOW,
    type FleetEvent,
    type FleetInput,
    type FleetPhase,
    type FleetStatus,
} from "../../fleet/contract.js";
import { commandFlags, flag, modeValue, nonEmptyValue, readInput, type Flags } from "../args.js";
import { CliError, EXIT, table } from "../output.js";
import type { Io } from "../io.js";

export const FLEET_HELP = `kube-proxy-mode fleet up|worker|status|pause|resume|retry STACK|skip STACK [flags]

Many clusters' stacks moved in waves (fleet.yaml: waves of { dir, stack }, maxParallel, soak),
run by a Temporal workflow whose id comes from the fleet file and the target, so rerunning
fleet up after anything (the CLI killed, a worker killed, the server restarted) resumes it.

  up                 start the fleet's workflow (or attach to it), run a worker, follow it:
                     a line per state change on stderr, a summary table at the end
  worker             run a fleet worker for --temporal-address until SIGINT/SIGTERM
  status             the fleet's state from the workflow's memo (no worker needed)
  pause | resume     no new stack starts (running ones finish) | go on
  retry STACK        a failed stack (its key or name) is previewed and moved again
  skip STACK         a failed or pending stack is left as it is; its wave goes on

  --file F           the fleet file (default: fleet.yaml)
  --to MODE          the mode every stack's preview must move to (default: what each declares)
  --id ID            status, pause, resume, retry, skip: the workflow's id instead of --file/--to
  --temporal-address HOST:PORT   a Temporal cluster's front end; without it: the
                                 embedded dev server and a worker in this process
  --namespace NS     the Temporal namespace (default: default)
  --worker           up with --temporal-address: also run a worker in this process
  --state-dir DIR    the embedded server's state (default: $XDG_CACHE_HOME or ~/.cache,
                     then /kube-proxy-mode/fleet)
  --temporal-bin PATH   the temporal binary (default: $KPM_TEMPORAL_BIN, then temporal on PATH)
  --json             the fleet's status as one JSON object on stdout (progress on stderr)
  -o, --output json|yaml   -o json is --json; -o yaml the same object as YAML

The web UI shows the workflow: fleet up prints its address (embedded: http://127.0.0.1:PORT).
Summary: wave, stack, dir, state, from -> to, nodes verified, duration, detail.
Exit codes: 0 every wave succeeded (status: or still running), 1 a stack failed and the fleet
stopped (fleet retry STACK or fleet skip STACK, then fleet up), 2 invalid input (a fleet file's
findings with their field and line, an unknown subcommand, a bad mode), before anything starts.`;

/** fleet's flags. */
export const FLEET_FLAGS = {
    file: flag.value(nonEmptyValue),
    to: flag.value(modeValue),
    id: flag.value(nonEmptyValue),
    "temporal-address": flag.value(addressValue),
    namespace: flag.value(nonEmptyValue),
    worker: flag.switch(),
    "state-dir": flag.value(nonEmptyValue),
    "temporal-bin": flag.value(nonEmptyValue),
    json: flag.switch(),
    output: flag.output(),
};

export type FleetFlags = Flags<typeof FLEET_FLAGS>;

export const FLEET_SUBCOMMANDS = ["up", "worker", "status", "pause", "resume", "retry", "skip"] as const;
export type FleetSubcommand = (typeof FLEET_SUBCOMMANDS)[number];

/** HOST:PORT, the port a number. */
function addressValue(raw: string, name: string): string {
    const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/.exec(raw.trim());
    if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535)
        throw new CliError(`${name} ${JSON.stringify(raw)}: expected HOST:PORT, e.g. temporal.example.com:7233`);
    return raw.trim();
}

/**
 * The subcommand, its STACK (retry, skip) and the flags after them. `fleet --help` (or -h) is
 * `help`. Unknown or missing subcommand, a missing STACK or a stray argument: exit 2.
 */
export function splitFleetArgs(argv: string[]): { sub: FleetSubcommand | "help"; stack?: string; rest: string[] } {
    const [sub, ...after] = argv;
    if (sub === "--help" || sub === "-h" || sub === "help") return { sub: "help", rest: [] };
    const usage = `; use one of ${FLEET_SUBCOMMANDS.join(", ")} (see kube-proxy-mode fleet --help)`;
    if (sub === undefined || sub.startsWith("-")) throw new CliError(`fleet: a subcommand is required${usage}`);
    if (!(FLEET_SUBCOMMANDS as readonly string[]).includes(sub))
        throw new CliError(`fleet: unknown subcommand ${JSON.stringify(sub)}${usage}`);
    const command = sub as FleetSubcommand;
    if (command === "retry" || command === "skip") {
        const [stack, ...rest] = after;
        if (rest.includes("--help") || rest.includes("-h") || stack === "--help" || stack === "-h")
            return { sub: command, rest: ["--help"] };
        if (stack === undefined || stack.startsWith("-") || stack.trim() === "")
            throw new CliError(
                `fleet ${command}: STACK is required: the stack's key (prod@/path/infra) or name, e.g. fleet ${command} prod`,
            );
        return { sub: command, stack, rest };
    }
    return { sub: command, rest: after };
}

/** Each finding of a fleet file as one line: file:line: field: message. */
export function findingLines(file: string, findings: FleetFinding[]): string[] {
    return findings.map((f) => `  ${file}${f.line ? `:${f.line}` : ""}: ${f.field}: ${f.message}`);
}

/** The fleet file parsed, or exit 2 with every finding (its field and line). */
export function loadFleet(file: string, read: (path: string) => string = (p) => readInput(p, "--file")): Fleet {
    const path = resolve(file);
    const { fleet, findings } = parseFleet(read(file), dirname(path));
    if (!fleet)
        throw new CliError(
            `fleet: ${file} is not a valid fleet file (${findings.length} problem${findings.length === 1 ? "" : "s"}):`,
            EXIT.invalid,
            findingLines(file, findings),
        );
    return fleet;
}

/** What a subcommand checks before anything starts (exit 2 otherwise). */
export function checkFleetFlags(sub: FleetSubcommand, flags: FleetFlags): void {
    const address = flags["temporal-address"];
    if (sub === "worker" && address === undefined)
        throw new CliError(
            "fleet worker needs --temporal-address HOST:PORT (the embedded server's worker runs inside fleet up)",
        );
    if (flags.worker && sub !== "up") throw new CliError(`fleet ${sub}: --worker is for fleet up`);
    if (flags.id !== undefined && (sub === "up" || sub === "worker"))
        throw new CliError(`fleet ${sub}: --id is for status, pause, resume, retry and skip; up reads --file`);
    if (flags.id !== undefined && (flags.file !== undefined || flags.to !== undefined))
        throw new CliError(`fleet ${sub}: --id names the workflow; pass it or --file/--to, not both`);
    if (sub === "worker" && (flags.file !== undefined || flags.to !== undefined))
        throw new CliError("fleet worker: --file and --to are for fleet up; a worker runs every fleet it is given");
    if (address !== undefined && (flags["state-dir"] !== undefined || flags["temporal-bin"] !== undefined))
        throw new CliError(
            `fleet ${sub}: --state-dir and --temporal-bin are for the embedded server; --temporal-address uses a cluster`,
        );
}

/** The exit code of a fleet's phase: 1 stopped, else 0 (done, or still running for status). */
export function exitCodeOfPhase(phase: FleetPhase): number {
    return phase === "stopped" ? EXIT.failed : EXIT.ok;
}

/**
 * A FleetEvent as one progress line: `[wave/stack] text`; a stack's key (`prod@/path/infra`) is
 * shown by its name where `names` has it (a name no other stack of the fleet has).
 */
export function eventLine(e: FleetEvent, names: ReadonlyMap<string, string> = new Map()): string {
    const stack = e.stack === undefined ? undefined : (names.get(e.stack) ?? e.stack);
    const where = [e.wave, stack].filter((p) => p !== undefined && p !== "").join("/");
    return where ? `[${where}] ${e.text}` : `[fleet] ${e.text}`;
}

/**
 * The printer of a followed fleet: given each status polled, prints the events it has not printed
 * yet, in order (an event is the same event when its time, wave, stack and text are).
 */
export function eventPrinter(print: (line: string) => void): (status: FleetStatus) => number {
    const seen = new Set<string>();
    return (status) => {
        const count = new Map<string, number>();
        for (const s of status.stacks) count.set(s.stack, (count.get(s.stack) ?? 0) + 1);
        const names = new Map(status.stacks.filter((s) => count.get(s.stack) === 1).map((s) => [s.key, s.stack]));
        let printed = 0;
        for (const e of status.events) {
            const key = JSON.stringify([e.at, e.wave ?? "", e.stack ?? "", e.text]);
            if (seen.has(key)) continue;
            seen.add(key);
            print(eventLine(e, names));
            printed++;
        }
        return printed;
    };
}

/** A stack's failure: its type (a StackFailureType) and message; an unclassified one by its message. */
function failureText(f: NonNullable<FleetStatus["stacks"][number]["failure"]>): string {
    return f.type === "Unknown" ? f.message : `${f.type}: ${f.message}`;
}

/** "ipvs (3f2a...) -> nftables (9c1b...)" of a stack, or "-". */
function fromTo(s: FleetStatus["stacks"][number]): string {
    const p = s.outcome ?? s.preview;
    return p?.from && p?.to ? `${p.from} -> ${p.to}` : p?.to ? `-> ${p.to}` : "-";
}

function duration(s: FleetStatus["stacks"][number]): string {
    if (s.outcome) return formatDuration(s.outcome.durationSeconds);
    if (s.startedAt !== undefined && s.endedAt !== undefined)
        return formatDuration(Math.max(0, Math.round((s.endedAt - s.startedAt) / 1000)));
    return "-";
}

function detail(s: FleetStatus["stacks"][number]): string {
    const parts: string[] = [];
    if (s.failure) parts.push(failureText(s.failure));
    else if (s.outcome) parts.push(s.outcome.result);
    else if (s.preview && s.state === "pending")
        parts.push(`previewed${s.preview.moving !== null ? `: ${s.preview.moving} nodes move` : ""}`);
    if (s.attempts > 1) parts.push(`${s.attempts} attempts`);
    return parts.join("; ") || "-";
}

/** The summary table of a fleet's status, one row per stack in wave order. */
export function fleetTable(status: FleetStatus): string {
    return table(
        ["WAVE", "STACK", "DIR", "STATE", "FROM -> TO", "NODES VERIFIED", "DURATION", "DETAIL"],
        status.stacks.map((s) => [
            s.wave,
            s.stack,
            s.dir,
            s.state,
            fromTo(s),
            s.outcome?.nodesVerified ?? "-",
            duration(s),
            detail(s),
        ]),
    );
}

/** The line under the table: the phase, and for a stopped fleet its failed stacks and what to do. */
export function phaseLines(status: FleetStatus, file?: string): string[] {
    const f = file ? ` --file ${file}` : "";
    switch (status.phase) {
        case "done":
            return ["fleet: done: every wave succeeded"];
        case "stopped": {
            const failed = status.stacks.filter((s) => s.state === "failed");
            return [
                `fleet: stopped in wave ${status.wave ?? "?"}; later waves are not started`,
                ...failed.map((s) => `  ${s.stack} (${s.key}) failed: ${s.failure ? failureText(s.failure) : "?"}`),
                `fleet: after a fix: kube-proxy-mode fleet retry STACK${f}, or leave it: kube-proxy-mode fleet skip STACK${f}; then kube-proxy-mode fleet up${f}`,
            ];
        }
        case "paused":
            return [`fleet: paused in wave ${status.wave ?? "?"}; kube-proxy-mode fleet resume${f} goes on`];
        case "soaking":
            return [
                `fleet: running: wave ${status.wave ?? "?"} soaking${status.soakUntil ? ` until ${new Date(status.soakUntil).toISOString()}` : ""}`,
            ];
        default:
            return [`fleet: ${status.phase}${status.wave ? ` wave ${status.wave}` : ""}`];
    }
}

/** The status and the lines under it, as text or as JSON. */
function printStatus(io: Io, flags: FleetFlags, status: FleetStatus): void {
    if (flags.json) io.json(status);
    else io.out(fleetTable(status));
    for (const l of phaseLines(status, flags.file)) io.err(l);
}

// ---------------------------------------------------------------------------------------------
// The parts that talk to Temporal.

type Temporal = typeof import("../../fleet/temporal.js");
type Client = import("@temporalio/client").Client;
type WorkflowHandle = import("@temporalio/client").WorkflowHandle;

/** What installs the Temporal SDK (optional peer dependencies of kube-proxy-mode). */
export const TEMPORAL_INSTALL =
    "npm install @temporalio/client@^1.24.0 @temporalio/worker@^1.24.0 @temporalio/workflow@^1.24.0 @temporalio/activity@^1.24.0 @temporalio/common@^1.24.0";

/** A require that failed because a package of the Temporal SDK is not installed: exit 2 naming the install; else undefined. */
export function sdkMissing(e: unknown): CliError | undefined {
    const name = /Cannot find module '(@temporalio\/[a-z-]+)/.exec(String((e as Error)?.message ?? ""))?.[1];
    if ((e as NodeJS.ErrnoException)?.code !== "MODULE_NOT_FOUND" || !name) return undefined;
    return new CliError(
        `fleet needs the Temporal SDK (${name} is not installed); install it beside kube-proxy-mode: ${TEMPORAL_INSTALL}`,
    );
}

/** The Temporal module (and through it the SDK), loaded when a command needs it. */
function temporal(): Temporal {
    try {
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- the SDK is an optional peer dependency
        return require("../../fleet/temporal.js") as Temporal;
    } catch (e) {
        throw sdkMissing(e) ?? e;
    }
}

/** Where a command talks to: a cluster at --temporal-address, or the embedded server. */
interface Target {
    client: Client;
    address: string;
    namespace: string;
    /** the web UI's page of a workflow, when known */
    ui(id: string): string;
    /** stops what this CLI started (the embedded server) and closes the client */
    close(): Promise<void>;
}

async function target(flags: FleetFlags, io: Io): Promise<Target> {
    const t = temporal();
    // the SDK before any server starts
    t.temporalClient();
    const namespace = flags.namespace ?? "default";
    const address = flags["temporal-address"];
    if (address !== undefined) {
        const client = await t.connectClient(address, namespace);
        return {
            client,
            address,
            namespace,
            ui: (id) => `the Temporal cluster's own (${address}): namespace ${namespace}, workflow ${id}`,
            close: () => client.connection.close(),
        };
    }
    const bin = t.findTemporalBin(flags["temporal-bin"]);
    const server = await t.embeddedServer({
        stateDir: resolve(flags["state-dir"] ?? t.defaultStateDir()),
        bin,
        namespace,
        progress: (l) => io.err(l),
    });
    try {
        const client = await t.connectClient(server.address, namespace);
        return {
            client,
            address: server.address,
            namespace,
            ui: (id) => server.uiUrl(id, namespace),
            close: async () => {
                await client.connection.close().catch(() => undefined);
                await server.stop();
            },
        };
    } catch (e) {
        await server.stop();
        throw e;
    }
}

/**
 * SIGINT/SIGTERM while `run` runs: `onSignal` is called, to end gracefully; a second signal ends
 * the process at once (the embedded server is still stopped on exit). The handlers are removed after.
 */
async function withSignals<T>(onSignal: (signal: NodeJS.Signals) => void, run: () => Promise<T>): Promise<T> {
    let fired = false;
    const handler = (signal: NodeJS.Signals) => {
        if (fired) process.exit(130);
        fired = true;
        onSignal(signal);
    };
    process.on("SIGINT", handler);
    process.on("SIGTERM", handler);
    try {
        return await run();
    } finally {
        process.removeListener("SIGINT", handler);
        process.removeListener("SIGTERM", handler);
    }
}

/** The workflow's id: --id, else from the fleet file and --to. */
function workflowId(flags: FleetFlags): string {
    if (flags.id !== undefined) return flags.id;
    return fleetId(loadFleet(flags.file ?? "fleet.yaml"), flags.to);
}

/**
 * The status the workflow last published in its memo, its execution's state, and whether a
 * workflow task is pending (a signal, e.g. retry, not yet seen by the workflow: the memo is older).
 */
async function memoStatus(
    handle: WorkflowHandle,
): Promise<{ status?: FleetStatus; execution: string; pending: boolean }> {
    const d = await handle.describe();
    return {
        status: d.memo?.[FLEET_STATUS_MEMO] as FleetStatus | undefined,
        execution: d.status.name,
        pending: Boolean(d.raw.pendingWorkflowTask),
    };
}

const messageOf = (e: unknown) => ((e as Error)?.message ?? String(e)).split("\n")[0];

/** A workflow that is not found: exit 1 naming it and how it starts. */
function notFound(id: string, e: unknown): CliError {
    return new CliError(
        `fleet: no fleet workflow ${id} on this Temporal server (${messageOf(e)}); kube-proxy-mode fleet up --file F starts it`,
        EXIT.failed,
    );
}

const isNotFound = (e: unknown) => (e as Error)?.name === "WorkflowNotFoundError";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Follows a fleet until it is done or stopped (or `signalled`): prints each new event, reading the
 * status the workflow keeps in its memo every second. The memo, not the status query: describe()
 * needs no worker, and a query abandoned while a restarted worker's sticky queue times out would
 * outlive the connection. A server that does not answer is retried for a minute.
 */
async function follow(
    handle: WorkflowHandle,
    io: Io,
    stop: { signalled: boolean },
): Promise<{ status?: FleetStatus; execution: string }> {
    const print = eventPrinter((l) => io.err(l));
    let last: FleetStatus | undefined;
    let pausedSaid = false;
    let unanswered = 0;
    for (;;) {
        let read: Awaited<ReturnType<typeof memoStatus>>;
        try {
            read = await memoStatus(handle);
            unanswered = 0;
        } catch (e) {
            if (isNotFound(e) || ++unanswered > 60 || stop.signalled) throw e;
            if (unanswered % 10 === 1) io.err(`fleet: the Temporal server does not answer (${messageOf(e)}); retrying`);
            await sleep(1000);
            continue;
        }
        const { execution } = read;
        let status = read.status;
        if (execution === "COMPLETED")
            status = (await handle.result().catch(() => read.status)) as FleetStatus | undefined;
        if (status) {
            last = status;
            print(status);
            if (status.phase === "paused" && !pausedSaid) {
                pausedSaid = true;
                io.err("fleet: paused; kube-proxy-mode fleet resume continues it (this command keeps following)");
            }
            if (status.phase !== "paused") pausedSaid = false;
            // a stopped fleet with a signal pending (fleet retry, then fleet up) is not stopped yet
            if (status.phase === "done" || (status.phase === "stopped" && !read.pending)) return { status, execution };
        }
        if (execution !== "RUNNING") return { status: last, execution };
        if (stop.signalled) return { status: last, execution };
        await sleep(1000);
    }
}

async function up(flags: FleetFlags, io: Io): Promise<number> {
    const file = flags.file ?? "fleet.yaml";
    const fleet = loadFleet(file);
    const id = fleetId(fleet, flags.to);
    const input: FleetInput = { fleet, file: resolve(file), ...(flags.to ? { target: flags.to } : {}) };
    const t = temporal();
    if (flags["temporal-address"] === undefined || flags.worker) t.temporalWorker();
    const where = await target(flags, io);
    const stop = { signalled: false };
    let worker: import("@temporalio/worker").Worker | undefined;
    let workerConnection: import("@temporalio/worker").NativeConnection | undefined;
    let workerRun: Promise<void> | undefined;
    try {
        return await withSignals(
            (signal) => {
                stop.signalled = true;
                io.err(`fleet: ${signal}: stopping (the fleet goes on where it stopped at the next fleet up)`);
                try {
                    worker?.shutdown();
                } catch {
                    /* already stopping */
                }
            },
            async () => {
                const { WorkflowExecutionAlreadyStartedError } = t.temporalClient();
                let handle: WorkflowHandle;
                try {
                    handle = await where.client.workflow.start(FLEET_WORKFLOW, {
                        taskQueue: FLEET_TASK_QUEUE,
                        workflowId: id,
                        args: [input],
                        workflowIdReusePolicy: "REJECT_DUPLICATE",
                    });
                    io.err(
                        `fleet: started ${id} (${fleet.waves.length} wave${fleet.waves.length === 1 ? "" : "s"}) on ${where.address}`,
                    );
                } catch (e) {
                    if (!(e instanceof WorkflowExecutionAlreadyStartedError)) throw e;
                    handle = where.client.workflow.getHandle(id);
                    const { execution, status } = await memoStatus(handle);
                    if (execution !== "RUNNING") {
                        io.err(`fleet: ${id} has already finished (${execution.toLowerCase()}); nothing is changed`);
                        const result =
                            execution === "COMPLETED"
                                ? ((await handle.result().catch(() => status)) as FleetStatus | undefined)
                                : status;
                        if (!result) return EXIT.failed;
                        printStatus(io, flags, result);
                        return execution === "COMPLETED" ? exitCodeOfPhase(result.phase) : EXIT.failed;
                    }
                    io.err(`fleet: ${id} is already running; following it`);
                }
                io.err(`fleet: web UI: ${where.ui(id)}`);
                if (flags["temporal-address"] === undefined || flags.worker) {
                    ({ worker, connection: workerConnection } = await t.fleetWorker(where.address, where.namespace));
                    workerRun = worker.run();
                    workerRun.catch((e) => io.err(`fleet: the worker stopped: ${messageOf(e)}`));
                }
                const { status, execution } = await follow(handle, io, stop);
                if (stop.signalled) return 130;
                if (!status) {
                    io.err(`fleet: ${id} ended (${execution.toLowerCase()}) without a status`);
                    return EXIT.failed;
                }
                printStatus(io, flags, status);
                if (execution !== "RUNNING" && execution !== "COMPLETED") {
                    io.err(`fleet: the workflow ${execution.toLowerCase()}`);
                    return EXIT.failed;
                }
                return exitCodeOfPhase(status.phase);
            },
        );
    } finally {
        if (worker) {
            try {
                worker.shutdown();
            } catch {
                /* already stopping */
            }
            await workerRun?.catch(() => undefined);
            await workerConnection?.close().catch(() => undefined);
        }
        await where.close();
    }
}

async function runWorkerCommand(flags: FleetFlags, io: Io): Promise<number> {
    const address = flags["temporal-address"]!;
    const namespace = flags.namespace ?? "default";
    const { worker, connection } = await temporal().fleetWorker(address, namespace);
    io.err(
        `fleet: worker on ${address} (namespace ${namespace}, task queue ${FLEET_TASK_QUEUE}); SIGINT or SIGTERM stops it`,
    );
    try {
        await withSignals(
            (signal) => {
                io.err(`fleet: ${signal}: the worker finishes its tasks and stops`);
                try {
                    worker.shutdown();
                } catch {
                    /* already stopping */
                }
            },
            () => worker.run(),
        );
    } finally {
        await connection.close().catch(() => undefined);
    }
    io.err("fleet: worker stopped");
    return EXIT.ok;
}

async function status(flags: FleetFlags, io: Io): Promise<number> {
    const id = workflowId(flags);
    const where = await target(flags, io);
    try {
        const handle = where.client.workflow.getHandle(id);
        let read: { status?: FleetStatus; execution: string };
        try {
            read = await memoStatus(handle);
        } catch (e) {
            if (isNotFound(e)) throw notFound(id, e);
            throw e;
        }
        io.err(`fleet: ${id} (${read.execution.toLowerCase()}); web UI: ${where.ui(id)}`);
        if (!read.status) {
            io.err("fleet: the workflow has not published a status yet (no worker has run it); fleet up runs it");
            return read.execution === "RUNNING" ? EXIT.ok : EXIT.failed;
        }
        printStatus(io, flags, read.status);
        if (read.execution !== "RUNNING" && read.execution !== "COMPLETED") return EXIT.failed;
        return exitCodeOfPhase(read.status.phase);
    } finally {
        await where.close();
    }
}

async function signal(
    sub: "pause" | "resume" | "retry" | "skip",
    stack: string | undefined,
    flags: FleetFlags,
    io: Io,
) {
    const id = workflowId(flags);
    const where = await target(flags, io);
    try {
        const handle = where.client.workflow.getHandle(id);
        const name = FLEET_SIGNALS[sub];
        try {
            if (stack !== undefined) await handle.signal(name, stack);
            else await handle.signal(name);
        } catch (e) {
            if (isNotFound(e)) throw notFound(id, e);
            throw new CliError(`fleet: cannot signal ${id}: ${messageOf(e)}`, EXIT.failed);
        }
        io.err(`fleet: sent ${name}${stack !== undefined ? ` ${stack}` : ""} to ${id}`);
        const f = flags.file ? ` --file ${flags.file}` : "";
        io.err(
            flags["temporal-address"] === undefined
                ? `fleet: a running kube-proxy-mode fleet up acts on it; if none runs, kube-proxy-mode fleet up${f}${flags.to ? ` --to ${flags.to}` : ""} continues the fleet (its worker runs there)`
                : "fleet: the cluster's workers act on it; kube-proxy-mode fleet status shows the fleet",
        );
        return EXIT.ok;
    } finally {
        await where.close();
    }
}

export async function fleetCommand(argv: string[], given: Io): Promise<number> {
    const { sub, stack, rest } = splitFleetArgs(argv);
    const command = commandFlags(
        sub === "help" ? "fleet" : `fleet ${sub}`,
        sub === "help" ? ["--help"] : rest,
        given,
        FLEET_FLAGS,
        FLEET_HELP,
    );
    if (!command) return EXIT.ok;
    const { flags, io } = command;
    if (sub === "help") return EXIT.ok;
    checkFleetFlags(sub, flags);
    // the fleet file and its findings before anything starts
    if (flags.id === undefined && sub !== "worker") loadFleet(flags.file ?? "fleet.yaml");
    switch (sub) {
        case "up":
            return up(flags, io);
        case "worker":
            return runWorkerCommand(flags, io);
        case "status":
            return status(flags, io);
        default:
            return signal(sub, stack, flags, io);
    }
}
