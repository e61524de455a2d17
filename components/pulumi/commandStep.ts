// One step of the rollout (a pool, or the finish) as a `command.local.Command` from @pulumi/command.
// Creating it runs the project's own CLI, `kube-proxy-mode rollout --json ...`, with no shell: the
// Command's `interpreter` is node running STEP_LAUNCHER (a constant program), which finds the CLI
// from the Pulumi project's directory when the step runs and runs it, as a child process, with the
// arguments it reads from the environment. Killed by the provider on a cancel (Ctrl-C), the
// launcher dies and the CLI stops as on SIGINT: the node in hand finishes or is rolled back. The `create` string is a constant; the pool's name, the spec and the kubeconfig
// travel in `environment`, which is secret. It never runs during preview (the provider does not
// run commands in preview), and deleting it runs nothing (no `delete` command): rollback is only
// ever a new target, never a delete.
//
// What a diff compares, and why (the command provider: a change of `triggers` replaces the
// Command, which runs `create` again; a change of any other input updates it, which runs `create`
// again too, since there is no `update` command):
// - `triggers`: what the step moves (configuration hash, the pool's settings, a digest of its node
//   set, the API server). A change replaces the step: it runs again (the CLI resumes, never undoes).
// - `environment` is in ignoreChanges: it carries the kubeconfig (a rotated token), the spec and
//   the holder, none of which is a reason to move a node again. The engine (checked on the CLI
//   3.276 this project pins) does NOT apply ignoreChanges to a replacement: a step replaced by its
//   triggers is created with the NEW environment, so it never runs with a stale credential.
// - `interpreter` is in ignoreChanges: it carries the launcher's source, which may change with a
//   kube-proxy-mode upgrade; an upgrade is not a reason to move a node again either (an update
//   would also run with the stored, possibly stale, environment). A replaced step takes the new one.
// The inputs hold no path of the machine (node is found on PATH, the CLI from the project's
// directory or KPM_CLI in the engine's environment), so another machine or checkout changes
// nothing, and a plan saved with `preview --save-plan` applies on another machine.
//
// Output: `logging: "stderr"` streams the CLI's progress (its --json mode writes progress lines on
// stderr) into `pulumi up` as it comes, and keeps stdout, the one JSON document the CLI ends with
// (pretty-printed: short lines, however many nodes), out of the log. The real provider reads the
// logged streams line by line with a 64 KiB line limit, and a longer line hangs the step for good
// (scripts/commandStandin.ts): every line the CLI writes is capped at 4 KiB (core/text.ts). The
// finish's document carries the verification record the promotion record is made of.
import * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";

// The launcher is these three functions' source (see STEP_LAUNCHER): each is self-contained (its
// own require calls, nothing from this module's scope) and calls the others by name only.

/**
 * The CLI's main.js for the project in `cwd`: KPM_CLI, else the kube-proxy-mode package the
 * project installed, else a kube-proxy-mode package at or above `cwd` (the package itself, or a
 * link to its build). Part of the step launcher's source.
 */
function findStepCli(cwd: string): string | undefined {
    /* eslint-disable @typescript-eslint/no-require-imports */
    const fs = require("node:fs") as typeof import("node:fs");
    const path = require("node:path") as typeof import("node:path");
    if (process.env.KPM_CLI) return process.env.KPM_CLI;
    const main = (root: string) => path.join(root, "dist", "components", "cli", "main.js");
    try {
        return main(path.dirname(require.resolve("kube-proxy-mode/package.json", { paths: [cwd] })));
    } catch {
        // the project is the package itself (or links to its build): look upwards
    }
    for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
        try {
            const name = (JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: unknown })
                .name;
            if (name === "kube-proxy-mode") return main(dir);
        } catch {
            // no package.json we can read here: go on up
        }
        if (dir === path.dirname(dir)) return undefined;
    }
    /* eslint-enable @typescript-eslint/no-require-imports */
}

/**
 * The CLI's arguments after the step's command: KPM_STEP_ARGS, a JSON array of strings; else
 * exit 2. Part of the step launcher's source.
 */
function stepArgs(): string[] {
    let args: unknown;
    try {
        args = JSON.parse(process.env.KPM_STEP_ARGS ?? "[]");
    } catch {
        args = undefined;
    }
    if (!Array.isArray(args) || !args.every((a): a is string => typeof a === "string")) {
        process.stderr.write(
            "KPM_STEP_ARGS must be a JSON array of strings (the CLI's arguments after the step's command)\n",
        );
        process.exit(2);
    }
    return args;
}

/**
 * The program the step's interpreter runs (`node -e STEP_LAUNCHER <create>`): finds the CLI when
 * the step runs and calls it with `<create>` then the JSON array of KPM_STEP_ARGS, as argv (never
 * through a shell). Functions so it is type-checked and testable; their source is the constant.
 */
function stepLauncher(): void {
    /* eslint-disable @typescript-eslint/no-require-imports */
    const fs = require("node:fs") as typeof import("node:fs");
    const cwd = process.cwd();
    const main = findStepCli(cwd);
    if (!main || !fs.existsSync(main)) {
        process.stderr.write(
            `cannot find the kube-proxy-mode CLI from ${cwd}: install the kube-proxy-mode package in the Pulumi project from its packed tarball (npm install /path/to/kube-proxy-mode-<version>.tgz; a checkout's npm pack writes it; it is not on the npm registry), or set KPM_CLI to its dist/components/cli/main.js\n`,
        );
        process.exit(2);
    }
    const args = stepArgs();
    // The CLI runs in a child process that writes straight into the step's output. The command
    // provider kills the step's process (SIGKILL) when the engine cancels (a first Ctrl-C of
    // `pulumi up`): that is this launcher, never the CLI. The CLI sees its parent gone and stops
    // as on SIGINT (the node in hand finishes or is rolled back, the lease is released).
    // SIGINT/SIGTERM sent to the launcher are passed on.
    const { spawn } = require("node:child_process") as typeof import("node:child_process");
    const watchdog = `const parent = ${process.pid}; const t = setInterval(() => { if (process.ppid !== parent) { clearInterval(t); process.kill(process.pid, "SIGINT"); } }, 250); t.unref(); require(process.argv[1]).runCli();`;
    const child = spawn(process.execPath, ["-e", watchdog, main, ...process.argv.slice(1), ...args], {
        stdio: "inherit",
    });
    for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => child.kill(signal));
    child.on("error", (e) => {
        process.stderr.write(`cannot run the kube-proxy-mode CLI: ${e.message}\n`);
        process.exit(2);
    });
    child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
    /* eslint-enable @typescript-eslint/no-require-imports */
}

/** The launcher's source: the interpreter's program, the same on every machine. */
export const STEP_LAUNCHER = [findStepCli, stepArgs, stepLauncher].map(String).join("\n") + "\nstepLauncher();";

/** The step's `create`: a constant, the CLI's subcommand (its other arguments are in KPM_STEP_ARGS). */
export const STEP_CREATE = "rollout";

/** Inputs of the Command that are not compared by a diff (see the header). */
export const STEP_IGNORE_CHANGES = ["environment", "interpreter"];

export interface StepInputs {
    /** the CLI's arguments after `rollout --json`, e.g. ["--pool=canary"] or ["--finish"] */
    args: string[];
    /** the CLI's environment: the spec, context, holder and the kubeconfig (made secret here) */
    environment: pulumi.Input<Record<string, pulumi.Input<string>>>;
    /** what the step moves; any change replaces the step, which runs it again */
    triggers: pulumi.Input<pulumi.Input<string>[]>;
}

/** The Command's arguments and options of a step: one place, for the component and its tests. */
export function stepCommand(
    inputs: StepInputs,
    opts: pulumi.CustomResourceOptions,
): { args: command.local.CommandArgs; opts: pulumi.CustomResourceOptions } {
    const environment = pulumi.secret(
        pulumi
            .output(inputs.environment)
            .apply((env) => ({ ...env, KPM_STEP_ARGS: JSON.stringify(["--json", ...inputs.args]) })),
    );
    return {
        args: {
            interpreter: ["node", "-e", STEP_LAUNCHER],
            create: STEP_CREATE,
            environment,
            triggers: inputs.triggers,
            logging: command.types.enums.local.Logging.Stderr,
            // the previous run's output is not the next run's business (and could exceed the argument limit)
            addPreviousOutputInEnv: false,
        },
        opts: { ...opts, ignoreChanges: [...(opts.ignoreChanges ?? []), ...STEP_IGNORE_CHANGES] },
    };
}

/** A rollout step: a Command running the CLI (see the header). */
export function rolloutStep(
    name: string,
    inputs: StepInputs,
    opts: pulumi.CustomResourceOptions,
): command.local.Command {
    const c = stepCommand(inputs, opts);
    return new command.local.Command(name, c.args, c.opts);
}

/**
 * The verification record of a finish step's stdout (the CLI's --json document, `verification`),
 * or null when there is none (a step that has not run, or a pool step). Never throws: stdout that
 * is not the CLI's document is no record.
 */
export function stepResult(stdout: string | undefined): Record<string, unknown> | null {
    if (!stdout) return null;
    try {
        const doc = JSON.parse(stdout) as { verification?: unknown } | null;
        const v = doc?.verification;
        return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
    } catch {
        return null;
    }
}

/** The last lines a step printed (its progress, on stderr): the `status` output. */
export function stepReport(stderr: string | undefined, lines = 60): string {
    return (stderr ?? "").split("\n").slice(-lines).join("\n");
}
