// RolloutStep: one step of the rollout (a pool, or the finish) as a Pulumi resource. Creating
// (or updating) it runs the project's own CLI, `kube-proxy-mode rollout <args>`, as a child
// process without a shell, and streams its progress lines. It never runs during preview, and
// deleting or replacing it runs nothing: rollback is only ever a new target, never a delete.
//
// It is a dynamic provider (part of @pulumi/pulumi) rather than @pulumi/command's Command: the
// behaviour is the same (argv, environment, triggers, streamed output), and it needs no plugin
// binary, which air-gapped machines (and this project's CI) cannot download.
//
// Stable across machines and credentials: the inputs hold no path (node and the CLI are found
// when the step runs, from the Pulumi project's directory) and the diff compares only the
// triggers and the CLI's arguments, never the environment (which carries the kubeconfig). A
// rotated token, another machine or another checkout re-run nothing and keep `finishedAt`, and a
// plan saved on one machine (`preview --save-plan`) applies on another.
import * as pulumi from "@pulumi/pulumi";
import { STEP_RESULT_PREFIX } from "../core/promotion.js";

// a plain string captured by the serialized provider (not the module it comes from)
const RESULT_PREFIX: string = STEP_RESULT_PREFIX;

export interface RolloutStepInputs {
    /** the CLI's arguments, e.g. ["rollout", "--pool=canary"] (the CLI itself is found when the step runs) */
    command: pulumi.Input<pulumi.Input<string>[]>;
    /** extra environment, secret (it carries the kubeconfig); not compared: a change in it alone runs nothing */
    environment: pulumi.Input<Record<string, pulumi.Input<string>>>;
    /** what the step moves; any change replaces the step, which runs it again (the CLI resumes; it never undoes) */
    triggers: pulumi.Input<pulumi.Input<string>[]>;
    /** what the step describes, for the reader of the preview */
    description: pulumi.Input<string>;
}

export interface StepState {
    command: string[];
    /** state written by versions before `command`: node, the CLI's path, then its arguments */
    argv?: string[];
    environment: Record<string, string>;
    triggers: string[];
    description: string;
    output: string;
    /** the JSON the CLI ended with after RESULT_PREFIX (the finish's verification record), or null */
    result: unknown;
    /** when the step last completed (ISO 8601) */
    finishedAt: string;
}

/** The CLI's arguments of a step's state, also of state written with argv (node, CLI, args...). */
function commandOf(s: Partial<StepState>): string[] {
    return s.command ?? (Array.isArray(s.argv) ? s.argv.slice(2) : []);
}

function same(a: unknown, b: unknown): boolean {
    return JSON.stringify(a) === JSON.stringify(b);
}

export const stepProvider: pulumi.dynamic.ResourceProvider = {
    async diff(_id: string, olds: StepState, news: StepState): Promise<pulumi.dynamic.DiffResult> {
        const replaces = same(olds.triggers, news.triggers) ? [] : ["triggers"];
        const changed = replaces.length > 0 || !same(commandOf(olds), commandOf(news));
        return { changes: changed, replaces, deleteBeforeReplace: false };
    },
    async create(inputs: StepState): Promise<pulumi.dynamic.CreateResult> {
        return { id: `step-${Date.now().toString(36)}`, outs: await runStep(inputs) };
    },
    async update(_id: string, olds: StepState, news: StepState): Promise<pulumi.dynamic.UpdateResult> {
        // nothing it moves changed (e.g. only the credential): keep the run it already made
        if (same(olds.triggers, news.triggers) && same(commandOf(olds), commandOf(news))) {
            return { outs: { ...news, output: olds.output, result: olds.result ?? null, finishedAt: olds.finishedAt } };
        }
        return { outs: await runStep(news) };
    },
    async delete(): Promise<void> {
        // deliberately nothing: deleting the stack or replacing a step leaves the cluster as it is
    },
};

/**
 * The argv that runs the kube-proxy-mode CLI here and now: this node, and the package found from
 * the Pulumi project's directory (installed as a dependency, or the project is the package
 * itself). KPM_CLI in the engine's environment overrides it (a JavaScript file run with node).
 */
export function cliArgv(args: string[], cwd: string = process.cwd()): string[] {
    // required here, not at the top: this function is serialized into the provider
    const { existsSync, readFileSync } = require("node:fs") as typeof import("node:fs");
    const path = require("node:path") as typeof import("node:path");
    const run = (mainJs: string) => [process.execPath, "-e", "require(process.argv[1]).runCli()", mainJs, ...args];
    if (process.env.KPM_CLI) return run(process.env.KPM_CLI);
    let root: string | undefined;
    try {
        root = path.dirname(require.resolve("kube-proxy-mode/package.json", { paths: [cwd] }));
    } catch {
        for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
            const pkg = path.join(dir, "package.json");
            try {
                if (existsSync(pkg) && JSON.parse(readFileSync(pkg, "utf8")).name === "kube-proxy-mode") {
                    root = dir;
                    break;
                }
            } catch {
                /* not a package.json we can read: go on up */
            }
            if (dir === path.dirname(dir)) break;
        }
    }
    const mainJs = root && path.join(root, "dist", "components", "cli", "main.js");
    if (!mainJs || !existsSync(mainJs)) {
        throw new Error(`cannot find the kube-proxy-mode CLI from ${cwd}: install the kube-proxy-mode package in the Pulumi project (npm install kube-proxy-mode), or set KPM_CLI to its dist/components/cli/main.js`);
    }
    return run(mainJs);
}

function runStep(inputs: StepState): Promise<StepState> {
    return runCommand(cliArgv(commandOf(inputs)), inputs.environment, inputs.description).then((r) => ({ ...inputs, ...r }));
}

/**
 * Runs a command without a shell, echoing each line as it comes (whole lines, however the output
 * is cut into chunks); resolves with the tail of its output, the result it reported (a line
 * RESULT_PREFIX + JSON, of any size) and when it finished. Rejects with the output on failure.
 */
export function runCommand(argv: string[], environment: Record<string, string>, description: string): Promise<{ output: string; result: unknown; finishedAt: string }> {
    // required here, not at the top: this function is serialized into the provider
    const { spawn } = require("node:child_process") as typeof import("node:child_process");
    const readline = require("node:readline") as typeof import("node:readline");
    return new Promise((resolve, reject) => {
        const [cmd, ...args] = argv;
        const child = spawn(cmd, args, { env: { ...process.env, ...environment }, stdio: ["ignore", "pipe", "pipe"] });
        const lines: string[] = [];
        let result: unknown = null;
        const take = (line: string) => {
            if (line === "") return;
            if (line.startsWith(RESULT_PREFIX)) {
                try {
                    result = JSON.parse(line.slice(RESULT_PREFIX.length));
                } catch {
                    /* not ours: keep it as output */
                }
                // the record is kept as `result`; the output keeps a short mention of it
                line = line.length > 2000 ? `${line.slice(0, 2000)}... (${line.length} characters)` : line;
            }
            lines.push(line);
            if (lines.length > 400) lines.shift();
            process.stderr.write(`${line}\n`);
        };
        // readline carries a partial last line across chunks: a line is taken only when it is whole
        const streams = [child.stdout, child.stderr].map(
            (s) =>
                new Promise<void>((done) => {
                    const rl = readline.createInterface({ input: s, crlfDelay: Infinity });
                    rl.on("line", take);
                    rl.on("close", () => done());
                }),
        );
        let spawnError: Error | undefined;
        child.on("error", (e) => {
            spawnError = e;
            reject(new Error(`cannot run ${cmd}: ${e.message}`));
        });
        const exited = new Promise<number | null>((done) => child.on("close", (code) => done(code)));
        Promise.all([exited, ...streams]).then(([code]) => {
            if (spawnError) return reject(new Error(`cannot run ${cmd}: ${spawnError.message}`));
            const tail = lines.slice(-60).join("\n");
            if (code === 0) resolve({ output: tail, result, finishedAt: new Date().toISOString() });
            else reject(new Error(`${description} failed (exit ${code}):\n${lines.filter((l) => /FAILED|failed|error|rolled back|cordoned|ROLLBACK|refus/i.test(l)).slice(-25).join("\n") || tail}`));
        });
    });
}

export class RolloutStep extends pulumi.dynamic.Resource {
    /** the last lines the step printed */
    declare public readonly output: pulumi.Output<string>;
    /** what the CLI reported at the end (the finish step: its verification record), or null */
    declare public readonly result: pulumi.Output<unknown>;
    /** when the step last completed (ISO 8601); kept while the step is unchanged */
    declare public readonly finishedAt: pulumi.Output<string>;

    constructor(name: string, inputs: RolloutStepInputs, opts?: pulumi.CustomResourceOptions) {
        super(stepProvider, name, { ...inputs, output: undefined, result: undefined, finishedAt: undefined }, opts, "kube-proxy-mode", "RolloutStep");
    }
}
