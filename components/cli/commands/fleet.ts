// kube-proxy-mode fleet (issue #42): many Pulumi stacks moved in waves by a Temporal workflow.
// `up` starts (or attaches to) the fleet's workflow and follows it; `worker` runs a worker for a
// Temporal cluster; `status` reads the workflow's memo; pause/resume/retry/skip signal it. With no
// --temporal-address the embedded dev server (state under the user's cache) and an in-process
// worker run it. What needs no Temporal (the arguments here; the table, the event lines and exit
// codes in ../fleetOutput.ts) is pure and exported for the tests; Temporal is loaded only once a
// command needs it, and followed in ../fleetFollow.ts.
import { dirname, resolve } from "node:path";
import { fleetId, parseFleet, type Fleet, type FleetFinding } from "../../core/fleet.js";
import {
    FLEET_SIGNALS,
    FLEET_TASK_QUEUE,
    FLEET_WORKFLOW,
    type FleetInput,
    type FleetStatus,
} from "../../fleet/contract.js";
import { FleetSetupError } from "../../fleet/errors.js";
import { sdkMissing } from "../../fleet/temporalSdk.js";
import { commandFlags, flag, modeValue, nonEmptyValue, readInput, type Flags } from "../args.js";
import {
    follow,
    isWorkflowNotFound as isNotFound,
    memoStatus,
    messageOf,
    notFound,
    queriedStatus,
    withSignals,
} from "../fleetFollow.js";
import { exitCodeOfPhase, fleetTable, phaseLines } from "../fleetOutput.js";
import { CliError, EXIT } from "../output.js";
import type { Io } from "../io.js";

export const FLEET_HELP = `kube-proxy-mode fleet up|worker|status|pause|resume|retry STACK|skip STACK [flags]

Many clusters' stacks moved in waves (fleet.yaml: waves of { dir, stack }, maxParallel, soak),
run by a Temporal workflow whose id comes from the fleet file and the target, so rerunning
fleet up after anything (the CLI killed, a worker killed, the server restarted) resumes it.

  up                 start the fleet's workflow (or attach to it), run a worker, follow it:
                     a line per state change on stderr, a summary table at the end
  worker             run a fleet worker for --temporal-address until SIGINT/SIGTERM
  status             the fleet's state: from a worker, else the workflow's memo (no worker
                     needed; while stacks move it lists the running and failed ones)
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

/** The workflow's id: --id, else from the fleet file and --to. */
function workflowId(flags: FleetFlags): string {
    if (flags.id !== undefined) return flags.id;
    return fleetId(loadFleet(flags.file ?? "fleet.yaml"), flags.to);
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
                const { status, execution } = await follow(
                    handle,
                    io,
                    stop,
                    fleet.waves.flatMap((w) => w.stacks),
                );
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
        // while stacks move the memo lists only the running and failed ones; a worker lists all
        const shown =
            (read.execution === "RUNNING" && read.status.stacksOmitted && (await queriedStatus(handle))) || read.status;
        printStatus(io, flags, shown);
        if (read.execution !== "RUNNING" && read.execution !== "COMPLETED") return EXIT.failed;
        return exitCodeOfPhase(shown.phase);
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
    try {
        switch (sub) {
            case "up":
                return await up(flags, io);
            case "worker":
                return await runWorkerCommand(flags, io);
            case "status":
                return await status(flags, io);
            default:
                return await signal(sub, stack, flags, io);
        }
    } catch (e) {
        // the fleet's Temporal side says why it cannot go on; the CLI speaks it as its own
        if (e instanceof FleetSetupError) throw new CliError(e.message, e.exitCode, e.lines);
        throw e;
    }
}
