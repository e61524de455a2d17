// SIMULATED pulumi-resource-command: a stand-in for the command provider's plugin (v1.2.1), for
// tests and the demo only. The real plugin is a Go binary whose module the Go module proxy here
// refuses at every version (scripts/toolchain.versions), and no registry ships it. This stand-in
// serves the one resource the component uses, `command:local:Command`, with the contract the
// provider documents (its schema descriptions and its Create/Update/Delete semantics, read from
// github.com/pulumi/pulumi-command, provider/pkg/provider/local and common; no code copied):
//
// - check: the inputs as given (wrong types are check failures naming the field);
// - diff: a change of `triggers` REPLACES the resource; a change of any other input UPDATES it;
//   no change, nothing (the outputs stdout/stderr/assets/archive are not compared);
// - create: runs `create` (if set) as [...interpreter, create], interpreter defaulting to
//   ["/bin/sh", "-c"], in `dir` (default: the plugin's working directory) with the plugin's
//   environment plus `environment`; `stdin` is fed to it; stdout and stderr become the outputs
//   (one trailing newline trimmed); a non-zero exit fails the step with the command's output;
// - update: runs `update` if set, else `create`; the previous stdout/stderr are in its environment
//   as PULUMI_COMMAND_STDOUT/PULUMI_COMMAND_STDERR unless addPreviousOutputInEnv is false;
// - delete: runs `delete` if set (previous outputs in its environment likewise), else nothing;
// - logging: "stdout", "stderr", "stdoutAndStderr" (default) or "none": which stream's lines are
//   also sent to the engine's log for the resource as they come (ephemeral status messages, as
//   the real provider's logger does). The real plugin reads them with a bufio.Scanner of Go's
//   default 64 KiB (pulumi/pulumi-command v1.2.1, provider/pkg/provider/util/util.go, LogOutput):
//   a line of 64 KiB or more stops it for good, so the command's next writes block, and the step
//   never ends; the stand-in does the same (see LineScanner);
// - secrets: an input that came secret goes back secret; stdout and stderr are secret when any
//   input was (every output depends on every input, the provider framework's default);
// - cancel (the engine's, on a first Ctrl-C): the running commands' processes are killed with
//   SIGKILL, as the real provider's exec.CommandContext does when the request context is
//   cancelled; their output pipes are read until every process holding them has exited (a step
//   stalled by a long line stays stalled: exec.Cmd.Wait still waits for its stuck copy).
//
// Not served (the component does not use them): assetPaths/archivePaths, command:remote:*, the
// run/runOutput invokes. ignoreChanges is the engine's: it hands the provider the old value of an
// ignored field before check and diff, so the stand-in sees no change there, like the real one.
//
// Launched by scripts/plugins/pulumi-resource-command (see commandPluginPath in scripts/referenceCluster.ts).
import { spawn } from "node:child_process";
import * as grpc from "@grpc/grpc-js";
import { main, type Provider } from "@pulumi/pulumi/provider";

export const STANDIN_VERSION = "1.2.1";
export const COMMAND_TYPE = "command:local:Command";

const SECRET_KEY = "4dabf18193072939515e22adb298388d";
const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";
const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

const INPUTS = [
    "triggers",
    "create",
    "update",
    "delete",
    "stdin",
    "logging",
    "interpreter",
    "dir",
    "environment",
    "assetPaths",
    "archivePaths",
    "addPreviousOutputInEnv",
] as const;
const LOGGING = ["stdout", "stderr", "stdoutAndStderr", "none"];

function isSecret(v: unknown): v is { value: unknown } {
    return typeof v === "object" && v !== null && (v as Record<string, unknown>)[SECRET_KEY] === SECRET_SIG;
}

/** A value with every secret wrapper taken off (the stand-in works on plain values). */
export function reveal(v: unknown): unknown {
    if (isSecret(v)) return reveal(v.value);
    if (Array.isArray(v)) return v.map(reveal);
    if (typeof v === "object" && v !== null)
        return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, reveal(x)]));
    return v;
}

function hasSecret(v: unknown): boolean {
    if (isSecret(v)) return true;
    if (Array.isArray(v)) return v.some(hasSecret);
    if (typeof v === "object" && v !== null) return Object.values(v).some(hasSecret);
    return false;
}

function hasUnknown(v: unknown): boolean {
    if (v === UNKNOWN) return true;
    if (Array.isArray(v)) return v.some(hasUnknown);
    if (typeof v === "object" && v !== null) return Object.values(v).some(hasUnknown);
    return false;
}

const secret = (value: unknown) => ({ [SECRET_KEY]: SECRET_SIG, value });

export interface CommandInputs {
    triggers?: unknown[];
    create?: string;
    update?: string;
    delete?: string;
    stdin?: string;
    logging?: string;
    interpreter?: string[];
    dir?: string;
    environment?: Record<string, string>;
    addPreviousOutputInEnv?: boolean;
}

/** check: what the provider's schema types say, one failure per wrong field. */
export function checkInputs(news: Record<string, unknown>): { property: string; reason: string }[] {
    const v = reveal(news) as Record<string, unknown>;
    const failures: { property: string; reason: string }[] = [];
    const known = (x: unknown) => x !== undefined && x !== null && !hasUnknown(x);
    for (const f of ["create", "update", "delete", "stdin", "dir"] as const) {
        if (known(v[f]) && typeof v[f] !== "string") failures.push({ property: f, reason: `${f} must be a string` });
    }
    if (known(v.logging) && !LOGGING.includes(v.logging as string))
        failures.push({ property: "logging", reason: `logging must be one of ${LOGGING.join(", ")}` });
    if (known(v.interpreter) && !(Array.isArray(v.interpreter) && v.interpreter.every((a) => typeof a === "string")))
        failures.push({ property: "interpreter", reason: "interpreter must be a list of strings" });
    if (
        known(v.environment) &&
        !(
            typeof v.environment === "object" &&
            !Array.isArray(v.environment) &&
            Object.values(v.environment as object).every((x) => typeof x === "string" || x === UNKNOWN)
        )
    ) {
        failures.push({ property: "environment", reason: "environment must be a map of strings" });
    }
    if (known(v.triggers) && !Array.isArray(v.triggers))
        failures.push({ property: "triggers", reason: "triggers must be a list" });
    if (known(v.addPreviousOutputInEnv) && typeof v.addPreviousOutputInEnv !== "boolean")
        failures.push({ property: "addPreviousOutputInEnv", reason: "addPreviousOutputInEnv must be a boolean" });
    return failures;
}

/** diff: triggers replace, any other input updates, outputs are not compared. */
export function diffInputs(
    olds: Record<string, unknown>,
    news: Record<string, unknown>,
): { changes: boolean; replaces: string[] } {
    const o = reveal(olds) as Record<string, unknown>;
    const n = reveal(news) as Record<string, unknown>;
    const differs = (k: string) => hasUnknown(n[k]) || JSON.stringify(o[k] ?? null) !== JSON.stringify(n[k] ?? null);
    const changed = INPUTS.filter(differs);
    const replaces = changed.filter((k) => k === "triggers");
    return { changes: changed.length > 0, replaces };
}

/** The commands running now: a cancel kills them (SIGKILL), as the real provider's request context does. */
const running = new Set<ReturnType<typeof spawn>>();

/** cancel: the engine asks (a first Ctrl-C of `pulumi up`); every running command's process is killed. */
export async function cancelCommands(): Promise<void> {
    for (const child of running) child.kill("SIGKILL");
}

/** bufio.MaxScanTokenSize: the real plugin's scanner holds a line and its newline in this many bytes. */
export const LOG_LINE_LIMIT = 64 * 1024;

/**
 * The real plugin's reader of the logged streams (pulumi/pulumi-command v1.2.1,
 * provider/pkg/provider/util/util.go, LogOutput): a bufio.Scanner with its default buffer, fed by
 * every logged stream through one io.Pipe (provider/pkg/provider/local/commandOutputs.go, run).
 * A line of LOG_LINE_LIMIT bytes or more fills the buffer with no newline: bufio.ErrTooLong, the
 * loop ends (the error is not read) and nothing reads the pipe again.
 */
class LineScanner {
    private pending: Buffer[] = [];
    private size = 0;
    stopped = false;

    constructor(private readonly emit: (line: string) => void) {}

    /** Takes a chunk; returns how many of its bytes the scanner read (fewer than all once it stopped). */
    feed(chunk: Buffer): number {
        if (this.stopped) return 0;
        for (let start = 0; ;) {
            const newline = chunk.indexOf(10, start);
            const end = newline === -1 ? chunk.length : newline;
            if (this.size + end - start >= LOG_LINE_LIMIT) {
                this.stopped = true;
                this.pending = [];
                return start + LOG_LINE_LIMIT - this.size;
            }
            this.pending.push(chunk.subarray(start, end));
            this.size += end - start;
            if (newline === -1) return chunk.length;
            this.flush();
            start = newline + 1;
        }
    }

    /** The pipe closed: a last line without its newline is a line too. */
    end(): void {
        if (!this.stopped && this.size > 0) this.flush();
    }

    private flush(): void {
        // bufio.ScanLines drops the newline and a carriage return before it
        this.emit(Buffer.concat(this.pending).toString("utf8").replace(/\r$/, ""));
        this.pending = [];
        this.size = 0;
    }
}

/** Stalled commands' pipes, kept for releaseStalledCommands. */
const stalled = new Set<() => void>();

/**
 * For tests only: closes the pipes of the commands whose logged line was too long, so the test's
 * process can exit. The real plugin's stay blocked until the engine kills the plugin.
 */
export function releaseStalledCommands(): void {
    for (const release of stalled) release();
    stalled.clear();
}

export interface RunResult {
    stdout: string;
    stderr: string;
}

/**
 * Runs one command as the provider does: argv = [...interpreter, command], the plugin's environment
 * plus `environment` (plus the previous outputs when asked), lines of the logged streams handed
 * to `log` as they complete (however they are chunked). Rejects on a non-zero exit with the
 * command's combined output. A logged line of LOG_LINE_LIMIT bytes or more stalls it as the real
 * plugin stalls: the logged streams are read no further, the command blocks once its pipe is
 * full, and the promise never settles (the real run's cmd.Wait waits for the blocked copy).
 */
export function runCommand(
    command: string,
    inputs: CommandInputs,
    previous: RunResult | undefined,
    log: (line: string) => void,
): Promise<RunResult> {
    const interpreter = inputs.interpreter && inputs.interpreter.length > 0 ? inputs.interpreter : ["/bin/sh", "-c"];
    const argv = [...interpreter, command];
    const env: NodeJS.ProcessEnv = { ...process.env, ...(inputs.environment ?? {}) };
    if (previous && inputs.addPreviousOutputInEnv !== false) {
        if (previous.stdout) env.PULUMI_COMMAND_STDOUT = previous.stdout;
        if (previous.stderr) env.PULUMI_COMMAND_STDERR = previous.stderr;
    }
    const logging = inputs.logging ?? "stdoutAndStderr";
    return new Promise((resolve, reject) => {
        const child = spawn(argv[0], argv.slice(1), {
            cwd: inputs.dir ?? process.cwd(),
            env,
            stdio: ["pipe", "pipe", "pipe"],
        });
        running.add(child);
        child.on("exit", () => running.delete(child));
        const out: Buffer[] = [];
        const err: Buffer[] = [];
        const both: Buffer[] = [];
        const scanner = new LineScanner(log);
        const logged = [
            ...(logging === "stdout" || logging === "stdoutAndStderr" ? [child.stdout] : []),
            ...(logging === "stderr" || logging === "stdoutAndStderr" ? [child.stderr] : []),
        ];
        let stuck = false;
        const stall = () => {
            // nothing reads the logged pipes again: the command blocks once they are full, and the
            // step never ends even when the command does (its copy into the scanner's pipe is stuck)
            stuck = true;
            for (const s of logged) s.pause();
            stalled.add(() => {
                for (const s of [child.stdout, child.stderr]) s.destroy();
                child.kill("SIGKILL");
            });
        };
        let open = logged.length;
        const collect = (stream: NodeJS.ReadableStream, into: Buffer[]) =>
            new Promise<void>((done) => {
                const isLogged = logged.includes(stream as typeof child.stdout);
                stream.on("data", (c: Buffer) => {
                    into.push(c);
                    both.push(c);
                    if (isLogged && scanner.feed(c) < c.length) stall();
                });
                stream.on("end", () => {
                    if (isLogged && --open === 0) scanner.end();
                    done();
                });
            });
        const streams = [collect(child.stdout, out), collect(child.stderr, err)];
        child.stdin.on("error", () => undefined);
        child.stdin.end(inputs.stdin ?? "");
        let spawnError: Error | undefined;
        child.on("error", (e) => (spawnError = e));
        const exited = new Promise<number | null>((done) => child.on("close", (code) => done(code)));
        void Promise.all([exited, ...streams]).then(([code]) => {
            if (stuck) return;
            if (spawnError) return reject(new Error(`${spawnError.message}: running ${JSON.stringify(command)}`));
            if (code !== 0)
                return reject(
                    new Error(
                        `${code === null ? "signal: killed" : `exit status ${code}`}: running ${JSON.stringify(command)}:\n${text(both)}`,
                    ),
                );
            resolve({ stdout: text(out).replace(/\n$/, ""), stderr: text(err).replace(/\n$/, "") });
        });
        if (child.stdout === null) reject(new Error("no stdout"));
    });
}

const text = (chunks: Buffer[]) => Buffer.concat(chunks).toString("utf8");

/** The engine's log, for status lines of a resource (what the real provider's logger sends). */
function engineLog(engineAddress: string | undefined): Log {
    if (!engineAddress)
        return Object.assign((_urn: string, line: string) => void process.stderr.write(`${line}\n`), {
            flush: async () => undefined,
        });
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const engrpc = require("@pulumi/pulumi/proto/engine_grpc_pb.js");
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const engproto = require("@pulumi/pulumi/proto/engine_pb.js");
    const client = new engrpc.EngineClient(engineAddress, grpc.credentials.createInsecure());
    const pending = new Set<Promise<void>>();
    const log = (urn: string, line: string) => {
        const req = new engproto.LogRequest();
        req.setSeverity(engproto.LogSeverity.INFO);
        req.setMessage(line);
        req.setUrn(urn);
        req.setEphemeral(true);
        const p: Promise<void> = new Promise((done) => client.log(req, () => done()));
        pending.add(p);
        void p.then(() => pending.delete(p));
    };
    // a step's last lines reach the engine before the step's result does
    return Object.assign(log, { flush: async () => void (await Promise.all([...pending])) });
}

/** Sends a line to the engine's log of a resource; flush waits until every line sent so far is delivered. */
export type Log = ((urn: string, line: string) => void) & { flush(): Promise<void> };

/** Outputs: the inputs as given (secrets kept secret) plus stdout and stderr. */
function outputs(news: Record<string, unknown>, r: RunResult): Record<string, unknown> {
    const anySecret = hasSecret(news);
    const wrap = (v: string) => (anySecret ? secret(v) : v);
    return { ...news, stdout: wrap(r.stdout), stderr: wrap(r.stderr) };
}

function previousOf(olds: Record<string, unknown>): RunResult {
    const o = reveal(olds) as Record<string, unknown>;
    return {
        stdout: typeof o.stdout === "string" ? o.stdout : "",
        stderr: typeof o.stderr === "string" ? o.stderr : "",
    };
}

/** The provider: exported for the unit tests, which call it as the engine would. */
export function commandProvider(log: Log): Provider {
    let ids = 0;
    const newId = (urn: string) => `${urn.split("::").pop()}-${Date.now().toString(16)}${(ids++).toString(16)}`;
    const guard = (urn: string) => {
        // urn:pulumi:<stack>::<project>::<parent types $>...<type>::<name>
        if (urn.split("::")[2]?.split("$").pop() !== COMMAND_TYPE)
            throw new Error(`the SIMULATED pulumi-resource-command serves only ${COMMAND_TYPE}, not ${urn}`);
    };
    return {
        version: STANDIN_VERSION,
        cancel: cancelCommands,
        async check(urn, _olds, news) {
            guard(urn);
            return { inputs: news, failures: checkInputs(news) };
        },
        async diff(_id, urn, olds, news) {
            guard(urn);
            return { ...diffInputs(olds, news), deleteBeforeReplace: false };
        },
        async create(urn, inputs) {
            guard(urn);
            const v = reveal(inputs) as CommandInputs;
            const r =
                v.create === undefined || v.create === null
                    ? { stdout: "", stderr: "" }
                    : await runCommand(v.create, v, undefined, (l) => log(urn, l)).finally(() => log.flush());
            return { id: newId(urn), outs: outputs(inputs, r) };
        },
        async update(_id, urn, olds, news) {
            guard(urn);
            const v = reveal(news) as CommandInputs;
            const previous = previousOf(olds);
            const command = v.update ?? v.create;
            const r =
                command === undefined || command === null
                    ? previous
                    : await runCommand(command, v, previous, (l) => log(urn, l)).finally(() => log.flush());
            return { outs: outputs(news, r) };
        },
        async delete(_id, urn, props) {
            guard(urn);
            const v = reveal(props) as CommandInputs;
            if (v.delete !== undefined && v.delete !== null)
                await runCommand(v.delete, v, previousOf(props), (l) => log(urn, l)).finally(() => log.flush());
        },
    };
}

if (require.main === module) {
    const args = process.argv.slice(2);
    const engineAddress = args.find((a) => !a.startsWith("-"));
    void main(commandProvider(engineLog(engineAddress)), args);
}
