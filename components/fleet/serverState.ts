// The embedded Temporal dev server's state dir (issue #42): its files, the pid file's record of
// the server, the lock under which one CLI at a time starts or reuses it, and the users that
// decide which CLI stops it. What it does to processes and ports goes through a ServerHost.
import { spawn } from "node:child_process";
import {
    closeSync,
    mkdirSync,
    openSync,
    readFileSync,
    readdirSync,
    renameSync,
    unlinkSync,
    writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { homedir } from "node:os";
import { join } from "node:path";
import { FleetSetupError } from "./errors.js";

/** Where the embedded server keeps its state: --state-dir, else $XDG_CACHE_HOME or ~/.cache, /kube-proxy-mode/fleet. */
export function defaultStateDir(env: NodeJS.ProcessEnv = process.env, home: string = homedir()): string {
    const cache = env.XDG_CACHE_HOME && env.XDG_CACHE_HOME.trim() !== "" ? env.XDG_CACHE_HOME : join(home, ".cache");
    return join(cache, "kube-proxy-mode", "fleet");
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
            if (child.pid === undefined) throw new FleetSetupError(`cannot start ${bin}`);
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
                throw new FleetSetupError(
                    `${files.lock}: process ${holder} has been starting the embedded Temporal server for a minute; stop it or remove the lock`,
                    1,
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
