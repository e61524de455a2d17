// The Temporal side of `kube-proxy-mode fleet` (issue #42): the embedded dev server (one per state
// dir, found again by its pid file so a rerun resumes), a client on it or on --temporal-address,
// and the fleet's worker. The Temporal SDK is an optional peer dependency: it is loaded here, when
// a fleet command needs it, and its absence is said with the npm command that installs it.
import { spawn } from "node:child_process";
import {
    accessSync,
    closeSync,
    constants,
    existsSync,
    mkdirSync,
    openSync,
    readFileSync,
    readdirSync,
    renameSync,
    statSync,
    unlinkSync,
    writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { homedir } from "node:os";
import { delimiter, join, resolve } from "node:path";
import type { Client, Connection } from "@temporalio/client";
import type { NativeConnection, Worker } from "@temporalio/worker";
import { sdkMissing } from "../cli/commands/fleet.js";
import { CliError, EXIT } from "../cli/output.js";
import { FLEET_TASK_QUEUE, type StackActivities } from "./contract.js";
import { stackActivities } from "./activities.js";
import { workflowBundlePath } from "./workflowBundle.js";

/** One of the SDK's packages, or a CliError (exit 2) naming the install command. */
function sdk<T>(load: () => T): T {
    try {
        return load();
    } catch (e) {
        throw sdkMissing(e) ?? e;
    }
}

/* eslint-disable @typescript-eslint/no-require-imports -- optional peer dependencies, loaded when a fleet command runs */
export const temporalClient = () => sdk(() => require("@temporalio/client") as typeof import("@temporalio/client"));
export const temporalWorker = () => sdk(() => require("@temporalio/worker") as typeof import("@temporalio/worker"));
/* eslint-enable @typescript-eslint/no-require-imports */

/** Where the embedded server keeps its state: --state-dir, else $XDG_CACHE_HOME or ~/.cache, /kube-proxy-mode/fleet. */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env, home: string = homedir()): string {
    const cache = env.XDG_CACHE_HOME && env.XDG_CACHE_HOME.trim() !== "" ? env.XDG_CACHE_HOME : join(home, ".cache");
    return join(cache, "kube-proxy-mode", "fleet");
}

function executable(path: string): boolean {
    try {
        accessSync(path, constants.X_OK);
        return statSync(path).isFile();
    } catch {
        return false;
    }
}

/**
 * The temporal binary: --temporal-bin, else KPM_TEMPORAL_BIN, else `temporal` on PATH. Missing or
 * not executable: exit 2 with where it looked and the fix.
 */
export function findTemporalBin(given: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
    const fix =
        "install the Temporal CLI (bash scripts/toolchain.sh builds it into the toolchain's bin dir; or https://github.com/temporalio/cli v1.9.1), then pass --temporal-bin PATH, set KPM_TEMPORAL_BIN, or put temporal on PATH; or pass --temporal-address HOST:PORT to use a Temporal cluster";
    for (const [value, what] of [
        [given, "--temporal-bin"],
        [env.KPM_TEMPORAL_BIN, "KPM_TEMPORAL_BIN"],
    ] as const) {
        if (value === undefined || value === "") continue;
        const path = resolve(value);
        if (!executable(path)) throw new CliError(`${what} ${value}: no executable file there; ${fix}`);
        return path;
    }
    for (const dir of (env.PATH ?? "").split(delimiter).filter((d) => d !== "")) {
        const path = join(dir, "temporal");
        if (executable(path)) return path;
    }
    throw new CliError(
        `no temporal binary: --temporal-bin is not given, KPM_TEMPORAL_BIN is not set and PATH has no temporal; ${fix}`,
    );
}

/** The embedded server as its pid file records it. */
export interface ServerRecord {
    pid: number;
    /** the front end's gRPC port (the address is 127.0.0.1:port) */
    port: number;
    httpPort: number;
    metricsPort: number;
    uiPort: number;
    /** the SQLite file it serves */
    db: string;
    /** epoch ms */
    startedAt: number;
    /** the CLI that stops it when it ends; a server whose owner died is adopted by the next CLI */
    owner: number;
    /** set when its CLI stopped it (the record stays for its ports) */
    stopped?: boolean;
}

/** What the pid-file logic does to processes and ports: the real one below, a fake in the tests. */
export interface ServerHost {
    /** whether the process runs (signal 0) */
    alive(pid: number): boolean;
    /** the process's command line, when the system shows it (/proc); undefined when it cannot be read */
    commandLine(pid: number): string[] | undefined;
    /** starts `bin args`, its output appended to `logFile`; returns its pid */
    spawn(bin: string, args: string[], logFile: string): number;
    /** `n` ports free on 127.0.0.1 now: `prefer` (the last server's, so the web UI's address stays) when all are free */
    freePorts(n: number, prefer?: number[]): Promise<number[]>;
    sleep(ms: number): Promise<void>;
}

const freePort = (port = 0) =>
    new Promise<number>((ok, fail) => {
        const server = createServer();
        server.once("error", fail);
        server.listen(port, "127.0.0.1", () => {
            const port = (server.address() as { port: number }).port;
            server.close(() => ok(port));
        });
    });

export const realHost: ServerHost = {
    alive(pid) {
        try {
            process.kill(pid, 0);
            return true;
        } catch (e) {
            return (e as NodeJS.ErrnoException).code === "EPERM";
        }
    },
    commandLine(pid) {
        try {
            return readFileSync(`/proc/${pid}/cmdline`, "utf8")
                .split("\0")
                .filter((a) => a !== "");
        } catch {
            return undefined;
        }
    },
    spawn(bin, args, logFile) {
        const log = openSync(logFile, "a");
        try {
            // its own process group: a Ctrl-C of the terminal reaches the CLI, which stops it in order
            const child = spawn(bin, args, { stdio: ["ignore", log, log], detached: true });
            child.unref();
            if (child.pid === undefined) throw new CliError(`cannot start ${bin}`, EXIT.failed);
            return child.pid;
        } finally {
            closeSync(log);
        }
    },
    async freePorts(n, prefer) {
        if (prefer?.length === n) {
            const free = await Promise.all(prefer.map((p) => freePort(p).catch(() => 0)));
            if (free.every((p, i) => p === prefer[i])) return prefer;
        }
        const ports = new Set<number>();
        while (ports.size < n) ports.add(await freePort());
        return [...ports];
    },
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
};

/** The files of a state dir. */
export function stateFiles(stateDir: string) {
    return {
        db: join(stateDir, "temporal.db"),
        record: join(stateDir, "server.json"),
        lock: join(stateDir, "server.lock"),
        log: join(stateDir, "server.log"),
        /** one empty file per CLI using the server, named by its pid */
        users: join(stateDir, "users"),
    };
}

/** The pid file's record, when it is one. */
export function readRecord(file: string): ServerRecord | undefined {
    try {
        const r = JSON.parse(readFileSync(file, "utf8")) as ServerRecord;
        return Number.isInteger(r.pid) &&
            r.pid > 0 &&
            Number.isInteger(r.port) &&
            typeof r.db === "string" &&
            Number.isInteger(r.uiPort)
            ? r
            : undefined;
    } catch {
        return undefined;
    }
}

/** Whether the CLI that owns `record`'s server still runs. */
const ownerAlive = (record: ServerRecord, host: ServerHost) =>
    Number.isInteger(record.owner) && host.alive(record.owner);

/** Whether `record` names a live temporal server on `db`: its pid runs and (where /proc shows it) serves that db. */
export function liveServer(record: ServerRecord | undefined, db: string, host: ServerHost): boolean {
    if (!record || record.stopped || record.db !== db || !host.alive(record.pid)) return false;
    const cmd = host.commandLine(record.pid);
    // a pid reused by another program after the server died is not the server
    return cmd === undefined || (cmd.includes(db) && cmd.some((a) => a.endsWith("temporal")));
}

/** The server's arguments: the dev server on 127.0.0.1 with its state in `db`. */
export function serverArgs(db: string, ports: Pick<ServerRecord, "port" | "httpPort" | "metricsPort" | "uiPort">) {
    return [
        "server",
        "start-dev",
        "--db-filename",
        db,
        "--namespace",
        "default",
        "--ip",
        "127.0.0.1",
        "--port",
        String(ports.port),
        "--http-port",
        String(ports.httpPort),
        "--metrics-port",
        String(ports.metricsPort),
        "--ui-port",
        String(ports.uiPort),
        "--ui-disable-news-fetch",
        "--log-level",
        "warn",
    ];
}

/** Records `me` as a user of the state dir's server (released by {@link releaseServer}). */
function addUser(stateDir: string, me: number): void {
    const dir = stateFiles(stateDir).users;
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, String(me)), "");
}

/**
 * This CLI is done with the server: whether it should stop it. It stops it when it is the last
 * live user (a user SIGKILLed does not count); otherwise the server is left to the others, and
 * when this CLI owned it, ownership passes to one of them. Synchronous, so process exit can run it.
 */
export function releaseServer(stateDir: string, record: ServerRecord, me: number, host: ServerHost): boolean {
    const files = stateFiles(stateDir);
    const remove = (pid: number) => {
        try {
            unlinkSync(join(files.users, String(pid)));
        } catch {
            /* gone */
        }
    };
    remove(me);
    let names: string[] = [];
    try {
        names = readdirSync(files.users);
    } catch {
        /* no users */
    }
    const others: number[] = [];
    for (const n of names) {
        const pid = Number(n);
        if (!Number.isInteger(pid) || pid <= 0 || pid === me) continue;
        if (host.alive(pid)) others.push(pid);
        else remove(pid);
    }
    const current = readRecord(files.record);
    if (current?.pid !== record.pid) return false; // another server now: not this CLI's to stop
    if (others.length === 0) return true;
    if (!ownerAlive(current, host) || current.owner === me)
        writeFileSync(files.record, JSON.stringify({ ...current, owner: others[0] }, null, 2) + "\n");
    return false;
}

/**
 * Claims the state dir's server: a live one its pid file names is reused (`started` false; when
 * the CLI that started it is gone, e.g. SIGKILLed, this one adopts it: `owned`); otherwise a new
 * one is started and recorded (`started` and `owned`). One CLI at a time decides, under
 * server.lock (created exclusively; a lock whose pid is dead is taken over), so two CLIs never
 * start two servers on the same db file.
 */
export async function claimServer(
    stateDir: string,
    bin: string,
    host: ServerHost,
    me: number = process.pid,
): Promise<{ record: ServerRecord; started: boolean; owned: boolean }> {
    mkdirSync(stateDir, { recursive: true });
    const files = stateFiles(stateDir);
    const deadline = Date.now() + 60_000;
    for (;;) {
        const existing = readRecord(files.record);
        if (liveServer(existing, files.db, host) && ownerAlive(existing!, host)) {
            addUser(stateDir, me);
            return { record: existing!, started: false, owned: false };
        }
        let fd: number;
        try {
            fd = openSync(files.lock, "wx");
        } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
            const holder = Number(readFileSync(files.lock, "utf8").trim());
            if (!Number.isInteger(holder) || holder <= 0 || !host.alive(holder)) {
                // a stale lock: its CLI died while starting a server
                try {
                    unlinkSync(files.lock);
                } catch {
                    /* another CLI took it over first */
                }
            } else if (Date.now() > deadline)
                throw new CliError(
                    `${files.lock}: process ${holder} has been starting the embedded Temporal server for a minute; stop it or remove the lock`,
                    EXIT.failed,
                );
            else await host.sleep(250);
            continue;
        }
        try {
            writeFileSync(fd, String(me));
            closeSync(fd);
            // checked again under the lock: another CLI may have started one since
            const again = readRecord(files.record);
            const write = (record: ServerRecord) => {
                const tmp = `${files.record}.${me}`;
                writeFileSync(tmp, JSON.stringify(record, null, 2) + "\n");
                renameSync(tmp, files.record);
                return record;
            };
            addUser(stateDir, me);
            if (liveServer(again, files.db, host)) {
                if (ownerAlive(again!, host) && again!.owner !== me)
                    return { record: again!, started: false, owned: false };
                // its CLI is gone: this one stops it when it ends
                return { record: write({ ...again!, owner: me }), started: false, owned: true };
            }
            const prefer = again ? [again.port, again.httpPort, again.metricsPort, again.uiPort] : undefined;
            const [port, httpPort, metricsPort, uiPort] = await host.freePorts(4, prefer);
            const ports = { port, httpPort, metricsPort, uiPort };
            const pid = host.spawn(bin, serverArgs(files.db, ports), files.log);
            const record = write({ pid, ...ports, db: files.db, startedAt: Date.now(), owner: me });
            return { record, started: true, owned: true };
        } finally {
            try {
                unlinkSync(files.lock);
            } catch {
                /* gone already */
            }
        }
    }
}

/** The last lines of the server's log, for an error. */
export function logTail(file: string, lines = 20): string[] {
    try {
        return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines);
    } catch {
        return [`(no log at ${file})`];
    }
}

/** A running embedded server, as the CLI holds it. */
export interface EmbeddedServer {
    record: ServerRecord;
    /** 127.0.0.1:port */
    address: string;
    /** whether this CLI started it */
    started: boolean;
    /** whether this CLI owns it: it started it, or adopted it from a CLI that is gone */
    owned: boolean;
    stateDir: string;
    /** the web UI's page of a workflow */
    uiUrl(workflowId: string, namespace?: string): string;
    /**
     * This CLI is done with it: stopped (SIGTERM, then SIGKILL after 10 s) when this CLI is its last
     * live user; otherwise left to the others
     */
    stop(): Promise<void>;
}

export interface EmbeddedOptions {
    stateDir: string;
    bin: string;
    namespace?: string;
    /** progress lines (stderr) */
    progress: (line: string) => void;
    host?: ServerHost;
    /** this CLI's pid (the tests' fake CLIs) */
    me?: number;
    /** how long to wait for the server to accept connections. Default 90 s. */
    readySeconds?: number;
}

/**
 * The state dir's embedded Temporal dev server, started when none runs (or reused), once it
 * accepts connections and its namespace answers. The CLIs using it are recorded; the last one
 * to end stops it (through {@link EmbeddedServer.stop}, normally or on SIGINT/SIGTERM; a SIGTERM
 * on process exit otherwise), so a CLI that started it does not stop it under another one still
 * following its fleet. A CLI SIGKILLed leaves it running for the next one to reuse.
 */
export async function embeddedServer(options: EmbeddedOptions): Promise<EmbeddedServer> {
    const host = options.host ?? realHost;
    const namespace = options.namespace ?? "default";
    const files = stateFiles(options.stateDir);
    const { record, started, owned } = await claimServer(options.stateDir, options.bin, host);
    const address = `127.0.0.1:${record.port}`;
    const me = options.me ?? process.pid;
    let released = false;
    /** whether this CLI stops the server now: the first call decides, once */
    const release = () => {
        if (released) return false;
        released = true;
        return releaseServer(options.stateDir, record, me, host);
    };
    const onExit = () => {
        if (release() && host.alive(record.pid)) process.kill(record.pid, "SIGTERM");
    };
    process.once("exit", onExit);
    const server: EmbeddedServer = {
        record,
        address,
        started,
        owned,
        stateDir: options.stateDir,
        uiUrl: (id, ns = namespace) =>
            `http://127.0.0.1:${record.uiPort}/namespaces/${encodeURIComponent(ns)}/workflows/${encodeURIComponent(id)}`,
        async stop() {
            process.removeListener("exit", onExit);
            if (!release()) return;
            if (host.alive(record.pid)) {
                try {
                    process.kill(record.pid, "SIGTERM");
                } catch {
                    /* gone */
                }
                for (let i = 0; i < 100 && host.alive(record.pid); i++) await host.sleep(100);
                if (host.alive(record.pid)) process.kill(record.pid, "SIGKILL");
            }
            // kept, marked stopped: the next server takes the same ports (the web UI's address stays)
            if (readRecord(files.record)?.pid === record.pid)
                writeFileSync(files.record, JSON.stringify({ ...record, stopped: true }, null, 2) + "\n");
        },
    };
    options.progress(
        started
            ? `fleet: starting the embedded Temporal server on ${address} (state in ${options.stateDir}; log ${files.log})`
            : `fleet: using the embedded Temporal server already running on ${address} (pid ${record.pid}${owned ? ", left by a CLI that is gone" : ""}; state in ${options.stateDir})`,
    );
    try {
        await waitReady(server, namespace, host, options.readySeconds ?? 90, options.progress);
    } catch (e) {
        await server.stop();
        throw e;
    }
    return server;
}

/** Waits until the server accepts connections and answers for its namespace; else a CliError with its log's tail. */
async function waitReady(
    server: EmbeddedServer,
    namespace: string,
    host: ServerHost,
    seconds: number,
    progress: (line: string) => void,
): Promise<void> {
    const { Connection } = temporalClient();
    const files = stateFiles(server.stateDir);
    const began = Date.now();
    let said = 0;
    let last = "";
    while (Date.now() - began < seconds * 1000) {
        if (!host.alive(server.record.pid))
            throw new CliError(
                `the embedded Temporal server (pid ${server.record.pid}) exited while starting; its log (${files.log}) ends:`,
                EXIT.failed,
                logTail(files.log).map((l) => `  ${l}`),
            );
        let connection: Connection | undefined;
        try {
            connection = await Connection.connect({ address: server.address, connectTimeout: 2000 });
            await connection.workflowService.describeNamespace({ namespace });
            return;
        } catch (e) {
            last = (e as Error).message ?? String(e);
        } finally {
            await connection?.close().catch(() => undefined);
        }
        const waited = Math.floor((Date.now() - began) / 1000);
        if (waited >= said + 5) {
            said = waited;
            progress(`fleet: waiting for the Temporal server on ${server.address} (${waited}s)`);
        }
        await host.sleep(500);
    }
    throw new CliError(
        `the embedded Temporal server on ${server.address} did not answer within ${seconds}s (last: ${last.split("\n")[0]}); its log (${files.log}) ends:`,
        EXIT.failed,
        logTail(files.log).map((l) => `  ${l}`),
    );
}

/** A client on `address` (HOST:PORT), in `namespace` (the embedded server's or --temporal-address). A server that cannot be reached is exit 1, naming it. */
export async function connectClient(address: string, namespace = "default"): Promise<Client> {
    const { Client, Connection } = temporalClient();
    try {
        const connection = await Connection.connect({ address, connectTimeout: 10_000 });
        return new Client({ connection, namespace });
    } catch (e) {
        throw new CliError(
            `cannot reach the Temporal server at ${address}: ${((e as Error).message ?? String(e)).split("\n")[0]}`,
            EXIT.failed,
        );
    }
}

export interface WorkerOptions {
    connection: NativeConnection;
    namespace?: string;
    activities: StackActivities;
    /** the prebundled workflow code (dist/components/fleet/workflow-bundle.js) */
    workflowBundle: string;
}

/** A fleet worker on FLEET_TASK_QUEUE (not yet running: call run(), stop with shutdown()). */
export async function runWorker(options: WorkerOptions): Promise<Worker> {
    const { Worker } = temporalWorker();
    if (!existsSync(options.workflowBundle))
        throw new CliError(
            `the fleet's workflow bundle is missing at ${options.workflowBundle}; rebuild kube-proxy-mode (npm run build)`,
            EXIT.failed,
        );
    return Worker.create({
        connection: options.connection,
        namespace: options.namespace ?? "default",
        taskQueue: FLEET_TASK_QUEUE,
        workflowBundle: { codePath: options.workflowBundle },
        activities: options.activities,
    });
}

/** The fleet's worker on `address`: the product's stack activities and workflow bundle. */
export async function fleetWorker(
    address: string,
    namespace = "default",
): Promise<{ worker: Worker; connection: NativeConnection }> {
    const { NativeConnection, Runtime, DefaultLogger } = temporalWorker();
    try {
        // the SDK's own lines (worker state changes, each failed activity attempt with its stack)
        // are not the fleet's progress: the fleet's events say what failed
        Runtime.install({ logger: new DefaultLogger("ERROR") });
    } catch {
        /* installed already (a second worker in this process) */
    }
    let connection: NativeConnection;
    try {
        connection = await NativeConnection.connect({ address });
    } catch (e) {
        throw new CliError(
            `cannot reach the Temporal server at ${address}: ${((e as Error).message ?? String(e)).split("\n")[0]}`,
            EXIT.failed,
        );
    }
    try {
        const worker = await runWorker({
            connection,
            namespace,
            activities: stackActivities(),
            workflowBundle: workflowBundlePath(),
        });
        return { worker, connection };
    } catch (e) {
        await connection.close().catch(() => undefined);
        throw e;
    }
}
