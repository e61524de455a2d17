// RolloutStep: one step of the rollout (a pool, or the finish) as a Pulumi resource. Creating
// (or updating) it runs the project's own CLI, `kube-proxy-mode rollout <args>`, as a child
// process without a shell, and streams its progress lines. It never runs during preview, and
// deleting or replacing it runs nothing: rollback is only ever a new target, never a delete.
//
// It is a dynamic provider (part of @pulumi/pulumi) rather than @pulumi/command's Command: the
// behaviour is the same (argv, environment, triggers, streamed output), and it needs no plugin
// binary, which air-gapped machines (and this project's CI) cannot download.
import * as pulumi from "@pulumi/pulumi";
import { STEP_RESULT_PREFIX } from "../core/promotion.js";

// a plain string captured by the serialized provider (not the module it comes from)
const RESULT_PREFIX: string = STEP_RESULT_PREFIX;

export interface RolloutStepInputs {
    /** node, then the CLI, then its arguments */
    argv: pulumi.Input<pulumi.Input<string>[]>;
    /** extra environment; mark secret values with pulumi.secret */
    environment: pulumi.Input<Record<string, pulumi.Input<string>>>;
    /** any change replaces the step, which runs it again (the CLI resumes; it never undoes) */
    triggers: pulumi.Input<pulumi.Input<string>[]>;
    /** what the step describes, for the reader of the preview */
    description: pulumi.Input<string>;
}

interface StepState {
    argv: string[];
    environment: Record<string, string>;
    triggers: string[];
    description: string;
    output: string;
    /** the JSON the CLI ended with after RESULT_PREFIX (the finish's verification record), or null */
    result: unknown;
    /** when the step last completed (ISO 8601) */
    finishedAt: string;
}

const stepProvider: pulumi.dynamic.ResourceProvider = {
    async diff(_id: string, olds: StepState, news: StepState): Promise<pulumi.dynamic.DiffResult> {
        const replaces = JSON.stringify(olds.triggers) !== JSON.stringify(news.triggers) ? ["triggers"] : [];
        const changed = replaces.length > 0 || JSON.stringify(olds.argv) !== JSON.stringify(news.argv) || JSON.stringify(olds.environment) !== JSON.stringify(news.environment);
        return { changes: changed, replaces, deleteBeforeReplace: false };
    },
    async create(inputs: StepState): Promise<pulumi.dynamic.CreateResult> {
        return { id: `step-${Date.now().toString(36)}`, outs: await runStep(inputs) };
    },
    async update(_id: string, _olds: StepState, news: StepState): Promise<pulumi.dynamic.UpdateResult> {
        return { outs: await runStep(news) };
    },
    async delete(): Promise<void> {
        // deliberately nothing: deleting the stack or replacing a step leaves the cluster as it is
    },
};

/**
 * Runs the CLI, echoing each line as it comes; resolves with the step's state: the inputs, the
 * tail of its output, the result it reported (a line RESULT_PREFIX + JSON) and when it finished.
 * Rejects with the output on failure.
 */
function runStep(inputs: StepState): Promise<StepState> {
    // required here, not at the top: this function is serialized into the provider
    const { spawn } = require("node:child_process") as typeof import("node:child_process");
    return new Promise((resolve, reject) => {
        const [cmd, ...args] = inputs.argv;
        const child = spawn(cmd, args, { env: { ...process.env, ...inputs.environment }, stdio: ["ignore", "pipe", "pipe"] });
        const lines: string[] = [];
        let result: unknown = null;
        const take = (prefix: string) => (chunk: Buffer) => {
            for (const line of chunk.toString("utf8").split("\n")) {
                if (line === "") continue;
                if (line.startsWith(RESULT_PREFIX)) {
                    try {
                        result = JSON.parse(line.slice(RESULT_PREFIX.length));
                    } catch {
                        /* not ours: keep it as output */
                    }
                }
                lines.push(line);
                if (lines.length > 400) lines.shift();
                process.stderr.write(`${prefix}${line}\n`);
            }
        };
        child.stdout.on("data", take(""));
        child.stderr.on("data", take(""));
        child.on("error", (e) => reject(new Error(`cannot run ${cmd}: ${e.message}`)));
        child.on("close", (code) => {
            const tail = lines.slice(-60).join("\n");
            if (code === 0) resolve({ ...inputs, output: tail, result, finishedAt: new Date().toISOString() });
            else reject(new Error(`${inputs.description} failed (exit ${code}):\n${lines.filter((l) => /FAILED|failed|error|rolled back|cordoned|ROLLBACK/i.test(l)).slice(-25).join("\n") || tail}`));
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
