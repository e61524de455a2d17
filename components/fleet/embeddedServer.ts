// The embedded Temporal dev server of `kube-proxy-mode fleet` (issue #42): one per state dir,
// found again by its pid file so a rerun resumes; started or reused, waited for until it
// answers, and stopped by the last CLI using it.
import { readFileSync, writeFileSync } from "node:fs";
import type { Connection } from "@temporalio/client";
import { FleetSetupError } from "./errors.js";
import {
    claimServer,
    readRecord,
    realHost,
    releaseServer,
    stateFiles,
    type ServerHost,
    type ServerRecord,
} from "./serverState.js";
import { temporalClient } from "./temporalSdk.js";

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

/** Waits until the server accepts connections and answers for its namespace; else a FleetSetupError with its log's tail. */
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
            throw new FleetSetupError(
                `the embedded Temporal server (pid ${server.record.pid}) exited while starting; its log (${files.log}) ends:`,
                1,
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
    throw new FleetSetupError(
        `the embedded Temporal server on ${server.address} did not answer within ${seconds}s (last: ${last.split("\n")[0]}); its log (${files.log}) ends:`,
        1,
        logTail(files.log).map((l) => `  ${l}`),
    );
}
