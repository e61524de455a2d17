// kube-proxy-mode: the command line. Every subcommand shares the core engine.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { redact } from "../core/redact.js";
import { capText } from "../core/text.js";
import { InputError } from "../core/types.js";
import { fleetCommand } from "./commands/fleet.js";
import { policyPackCommand } from "./commands/policyPack.js";
import { precheckCommand } from "./commands/precheck.js";
import { promoteCommand } from "./commands/promote.js";
import { renderCommand } from "./commands/render.js";
import { cleanupCommand, rolloutCommand, statusCommand, verifyCommand } from "./commands/cluster.js";
import { CliError, EXIT, exitCodeOf, terminalSafeText } from "./output.js";
import { cappedIo, type Io, type Streams } from "./io.js";

type Command = { run: (argv: string[], io: Io) => Promise<number>; summary: string };

const COMMANDS: Record<string, Command> = {
    render: { run: renderCommand, summary: "print the configuration for a mode, its diff and every change explained" },
    precheck: { run: precheckCommand, summary: "check that every node can run a mode (kernel, OS)" },
    rollout: { run: rolloutCommand, summary: "move nodes pool by pool, verify each, roll back on failure, resume" },
    status: { run: statusCommand, summary: "per node: configuration, mode, kernel, verified" },
    verify: { run: verifyCommand, summary: "run the built-in checks on one node" },
    cleanup: { run: cleanupCommand, summary: "remove ipvs leftovers from one node" },
    promote: {
        run: promoteCommand,
        summary: "preview stacks (dev,staging,prod), then apply them in order; one summary table",
    },
    fleet: {
        run: fleetCommand,
        summary: "move many clusters' stacks in gated waves on Temporal (up, status, pause, retry, skip)",
    },
    "policy-pack": {
        run: policyPackCommand,
        summary: "where the guard-rail policy pack is (for pulumi preview --policy-pack)",
    },
};

function usage(): string {
    const names = Object.keys(COMMANDS);
    const w = Math.max(...names.map((n) => n.length));
    return [
        "kube-proxy-mode: move Kubernetes clusters between kube-proxy modes safely",
        "",
        "Usage: kube-proxy-mode <command> [flags]   (kube-proxy-mode <command> --help for its flags)",
        "",
        ...names.map((n) => `  ${n.padEnd(w)}  ${COMMANDS[n].summary}`),
        "",
        "Exit codes: 0 fine (warnings allowed), 1 the cluster or a node fails (or cannot be read), 2 invalid input or a violated rule (docs/cli.md).",
    ].join("\n");
}

function version(): string {
    const pkg = JSON.parse(readFileSync(join(__dirname, "..", "..", "..", "package.json"), "utf8"));
    return pkg.version;
}

export async function main(argv: string[], streams: Streams): Promise<number> {
    const io = cappedIo(streams);
    const [name, ...rest] = argv;
    if (name === undefined || name === "help" || name === "--help" || name === "-h") {
        io.out(usage());
        return name === undefined ? EXIT.invalid : EXIT.ok;
    }
    if (name === "--version" || name === "version") {
        io.out(version());
        return EXIT.ok;
    }
    const command = COMMANDS[name];
    if (!command) {
        io.err(
            `kube-proxy-mode: unknown command ${JSON.stringify(name)}; commands: ${Object.keys(COMMANDS).join(", ")}`,
        );
        return EXIT.invalid;
    }
    try {
        return await command.run(rest, io);
    } catch (e) {
        if (e instanceof CliError) {
            io.err(`${e.message.startsWith(name) ? "" : `${name}: `}${e.message}`);
            for (const l of e.lines) io.err(l);
        } else if (e instanceof InputError) io.err(`${name}: ${e.message}`);
        else {
            io.err(`${name}: unexpected failure: ${(e as Error)?.message ?? String(e)}`);
            if (process.env.KPM_DEBUG) io.err(String((e as Error)?.stack));
        }
        return exitCodeOf(e);
    }
}

/** The process entry point (bin/kube-proxy-mode). */
export function runCli(): void {
    // every line goes through terminalSafeText: a cluster value in a message cannot drive the terminal
    const io: Streams = {
        out: (l) => process.stdout.write(terminalSafeText(l) + "\n"),
        err: (l) => process.stderr.write(terminalSafeText(l) + "\n"),
        columns: process.stderr.isTTY ? process.stderr.columns : undefined,
    };
    main(process.argv.slice(2), io).then(
        (code) => {
            process.exitCode = code;
        },
        (e) => {
            process.stderr.write(`${capText(terminalSafeText(redact(`kube-proxy-mode: ${(e as Error)?.message ?? e}`)))}
`);
            process.exitCode = EXIT.failed;
        },
    );
}
