// kube-proxy-mode promote: environments in order. Previews every stack, then (with --yes) applies
// them one after the other through the Automation API, stopping at the first failure, and prints
// one summary table. It uses whatever backend the user is logged into (the project's own
// workspace settings), and each stack's promotion gate decides whether it may move.
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { formatDuration } from "../../core/duration.js";
import type { ModeChange, PromotionRecord } from "../../core/types.js";
import { commandFlags, flag, listValue } from "../args.js";
import { CliError, EXIT, table } from "../output.js";
import type { Io } from "../io.js";

export const PROMOTE_HELP = `kube-proxy-mode promote --stacks dev,staging,prod [--yes] [--cwd DIR] [--json|-o yaml]

Environments in order. Previews every stack of the Pulumi project in DIR (the config-driven
program, or any program with a KubeProxyMode that exports change and promotion), then, with
--yes, runs pulumi up on each in the given order, stopping at the first failure. Without --yes
it only previews: nothing is changed.

A stack whose promotion gate waits for a stack earlier in the list is not a preview failure:
its gate is checked again when its turn comes (and refuses then if the earlier stack has not
held its target for minSoak: promote stops there; run it again later).

  --stacks A,B,C   the stacks, in order (names as pulumi stack ls shows them)
  --yes            apply, in order; without it: preview only
  --cwd DIR        the Pulumi project directory (default: the current directory)
  --json           one JSON object on stdout (progress and engine output go to stderr)
  -o, --output json|yaml   -o json is --json; -o yaml the same object as YAML

Uses the backend you are logged into (pulumi login; PULUMI_BACKEND_URL) and the stacks'
secrets provider (PULUMI_CONFIG_PASSPHRASE for passphrase stacks).

Summary: stack, cluster, from -> to, nodes verified, duration, result.
Exit codes: 0 every stack previewed (and applied with --yes), 1 a stack failed or its gate
refused, 2 invalid input (no such stack, no project).`;

export type StackResult =
    "previewed" | "waits for upstream" | "applied" | "unchanged" | "refused by gate" | "failed" | "not run";

export interface StackRow {
    stack: string;
    cluster: string | null;
    from: string | null;
    to: string | null;
    moving: number | null;
    nodesVerified: string | null;
    durationSeconds: number | null;
    result: StackResult;
    detail?: string;
}

/**
 * What the program exports (change, promotion), as the engine reports it: KubeProxyMode's own
 * `change` and `promotion` output types (pure types, so the CLI does not load Pulumi to name them).
 */
export interface StackOutputs {
    change?: ModeChange;
    promotion?: PromotionRecord;
}

/** The gate refusal a preview or update failed with, if that is why: the upstream's full name. */
export function gateUpstream(message: string): string | undefined {
    return /promotion gate refused: (\S+) is not ready to be followed/.exec(message)?.[1];
}

/** The stack's lines of a refusal or failure, without the engine's framing. */
export function failureDetail(message: string): string {
    // The refusal's lines, up to the engine's framing or the program's stack trace. The engine's
    // text names the refusal twice: first in a progress row (its first line, then more progress),
    // then whole in the Diagnostics section; the last one is read.
    const from = message.lastIndexOf("promotion gate refused:");
    const gate =
        from < 0
            ? null
            : /^promotion gate refused:[\s\S]*?(?=\n\s*\n|\n\s*error:|\n\s+at |$)/.exec(message.slice(from));
    if (gate) return gate[0].replace(/\s+/g, " ").trim();
    const lines = message
        .split("\n")
        .map((l) => l.trim())
        .filter((l) => /error|failed|refuses/i.test(l) && !/^stderr:|^code:|^stdout:/.test(l));
    return (lines.slice(-3).join(" ") || message.split("\n")[0]).slice(0, 600);
}

function describe(c: StackOutputs["change"]): Pick<StackRow, "cluster" | "from" | "to" | "moving"> {
    if (!c) return { cluster: null, from: null, to: null, moving: null };
    return {
        cluster: c.cluster,
        from: `${c.from.mode} (${c.from.configHash})`,
        to: `${c.to.mode} (${c.to.configHash})`,
        moving: c.moving,
    };
}

type EngineEvent = import("@pulumi/pulumi/automation").EngineEvent;

/**
 * The error diagnostics of a run, one per line group: a refusal is one, on the KubeProxyMode
 * component, its text as the component wrote it (the engine's own rendering adds progress rows
 * and indentation around it).
 */
export function errorDiagnostics(events: EngineEvent[]): string {
    return events
        .map((e) => e.diagnosticEvent)
        .filter((d) => d?.severity === "error")
        .map((d) => d!.message.trim())
        .join("\n\n");
}

/** What a failed preview or update said: the error diagnostics when one is a gate's refusal, else the engine's whole message. */
function failureText(events: EngineEvent[], e: unknown): string {
    const diagnostics = errorDiagnostics(events);
    return gateUpstream(diagnostics) ? diagnostics : messageOf(e);
}

/** The stack outputs a preview or update reports through its engine events (the root Stack's outputs). */
function outputsFrom(events: EngineEvent[]): StackOutputs {
    for (const e of events.slice().reverse()) {
        const m = e.resOutputsEvent?.metadata;
        if (m?.type === "pulumi:pulumi:Stack") return (m.new?.outputs ?? {}) as StackOutputs;
    }
    return {};
}

type Stack = import("@pulumi/pulumi/automation").Stack;

/** One promotion run: the stacks in order, their rows, and the progress log. */
interface Promotion {
    names: string[];
    stacks: Stack[];
    rows: StackRow[];
    progress: (line: string) => void;
}

const messageOf = (e: unknown) => (e as Error)?.message ?? String(e);

function finished(run: Promotion, i: number, phase: string, started: number): void {
    const row = run.rows[i];
    row.durationSeconds = Math.round((Date.now() - started) / 1000);
    run.progress(`[${run.names[i]}] ${phase}: ${row.result}${row.detail ? `: ${row.detail}` : ""}`);
}

/** The stacks named by --stacks, selected in the project at --cwd (every name checked before anything runs). */
async function selectStacks(names: string[], workDir: string): Promise<Stack[]> {
    if (!["Pulumi.yaml", "Pulumi.yml", "Pulumi.json"].some((f) => existsSync(join(workDir, f)))) {
        throw new CliError(
            `--cwd ${workDir}: no Pulumi.yaml there; run promote in the project directory or pass --cwd`,
        );
    }
    // loaded here: the other commands do not need the Pulumi SDK
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded lazily, as above
    const { LocalWorkspace } = require("@pulumi/pulumi/automation") as typeof import("@pulumi/pulumi/automation");
    const stacks: Stack[] = [];
    for (const stackName of names) {
        try {
            stacks.push(await LocalWorkspace.selectStack({ stackName, workDir }));
        } catch (e) {
            const first =
                messageOf(e)
                    .split("\n")
                    .find((l) => /error|no stack/i.test(l)) ?? "";
            throw new CliError(
                `--stacks: cannot select stack ${stackName} in ${workDir}: ${first.trim() || "unknown stack"} (pulumi stack ls lists them; pulumi login selects the backend)`,
            );
        }
    }
    return stacks;
}

/** 1. Previews every stack; returns whether any preview failed (a gate waiting for an earlier stack of this run is not a failure). */
async function previewAll(run: Promotion): Promise<boolean> {
    const earlier = (i: number, upstream: string) =>
        run.names.slice(0, i).some((n) => upstream === n || upstream.endsWith(`/${n}`));
    let previewFailed = false;
    for (const [i, stack] of run.stacks.entries()) {
        const row = run.rows[i];
        run.progress(`[${run.names[i]}] preview`);
        const events: EngineEvent[] = [];
        const started = Date.now();
        try {
            await stack.preview({ onEvent: (e) => events.push(e) });
            Object.assign(row, describe(outputsFrom(events).change), { result: "previewed" satisfies StackResult });
        } catch (e) {
            const message = failureText(events, e);
            const upstream = gateUpstream(message);
            if (upstream && earlier(i, upstream)) {
                row.result = "waits for upstream";
                row.detail = `its gate waits for ${upstream}, which moves first`;
            } else {
                row.result = upstream ? "refused by gate" : "failed";
                row.detail = failureDetail(message);
                previewFailed = true;
            }
        }
        if (row.cluster === null) {
            // the last update's view of the cluster, when this preview could not say
            const last: Record<string, { value: unknown }> = await stack.outputs().catch(() => ({}));
            row.cluster = (last.change?.value as StackOutputs["change"])?.cluster ?? null;
        }
        finished(run, i, "preview", started);
    }
    return previewFailed;
}

/** 2. Applies the stacks in order, stopping at the first failure; returns whether one failed. */
async function applyInOrder(run: Promotion): Promise<boolean> {
    for (const [i, stack] of run.stacks.entries()) {
        const row = run.rows[i];
        run.progress(`[${run.names[i]}] up`);
        const events: EngineEvent[] = [];
        const started = Date.now();
        let failed = false;
        try {
            const r = await stack.up({
                onEvent: (e) => events.push(e),
                onOutput: (s) => run.progress(`[${run.names[i]}] ${s.replace(/\n$/, "")}`),
            });
            const outputs = Object.fromEntries(Object.entries(r.outputs).map(([k, v]) => [k, v.value])) as StackOutputs;
            const changed = Object.entries(r.summary.resourceChanges ?? {}).some(
                ([op, n]) => op !== "same" && (n ?? 0) > 0,
            );
            Object.assign(row, describe(outputs.change ?? outputsFrom(events).change), {
                result: (changed ? "applied" : "unchanged") satisfies StackResult,
                detail: undefined,
            });
            const p = outputs.promotion;
            row.nodesVerified = p
                ? `${p.nodesVerified}/${p.nodesTotal}${p.nodesChecked < p.nodesVerified ? ` (${p.nodesVerified - p.nodesChecked} by hooks only)` : ""}`
                : null;
        } catch (e) {
            const message = failureText(events, e);
            row.result = gateUpstream(message) ? "refused by gate" : "failed";
            row.detail = failureDetail(message);
            failed = true;
        }
        finished(run, i, "up", started);
        if (failed) {
            for (const later of run.rows.slice(i + 1)) {
                later.result = "not run";
                later.detail = `stopped at ${run.names[i]}`;
                later.durationSeconds = null;
            }
            return true;
        }
    }
    return false;
}

function summaryTable(rows: StackRow[]): string {
    return table(
        ["STACK", "CLUSTER", "FROM -> TO", "NODES VERIFIED", "DURATION", "RESULT"],
        rows.map((r) => [
            r.stack,
            r.cluster ?? "-",
            r.from && r.to ? `${r.from} -> ${r.to}` : "-",
            r.nodesVerified ?? "-",
            r.durationSeconds === null ? "-" : formatDuration(r.durationSeconds),
            `${r.result}${r.detail ? `: ${r.detail}` : ""}`,
        ]),
    );
}

/** promote's flags. */
export const PROMOTE_FLAGS = {
    stacks: flag.value(listValue),
    yes: flag.switch(),
    cwd: flag.value(),
    json: flag.switch(),
    output: flag.output(),
};

export async function promoteCommand(argv: string[], given: Io): Promise<number> {
    const command = commandFlags("promote", argv, given, PROMOTE_FLAGS, PROMOTE_HELP);
    if (!command) return EXIT.ok;
    const { flags, io } = command;
    const names = flags.stacks ?? [];
    if (names.length === 0)
        throw new CliError("--stacks is required: the stacks in order, e.g. --stacks dev,staging,prod");
    const dupes = names.filter((n, i) => names.indexOf(n) !== i);
    if (dupes.length) throw new CliError(`--stacks names ${dupes.join(", ")} more than once`);
    const run: Promotion = {
        names,
        stacks: await selectStacks(names, resolve(flags.cwd ?? process.cwd())),
        rows: names.map((stack) => ({
            stack,
            cluster: null,
            from: null,
            to: null,
            moving: null,
            nodesVerified: null,
            durationSeconds: null,
            result: "not run",
        })),
        progress: (l: string) => io.err(l),
    };
    const previewFailed = await previewAll(run);
    const failed = previewFailed || (flags.yes === true && (await applyInOrder(run)));
    if (flags.json) {
        io.json({ applied: flags.yes === true && !previewFailed, ok: !failed, stacks: run.rows });
    } else {
        io.out(summaryTable(run.rows));
        if (!flags.yes)
            io.err(
                previewFailed
                    ? "promote: a preview failed; nothing was applied"
                    : "promote: preview only; pass --yes to apply the stacks in this order",
            );
        else if (previewFailed) io.err("promote: a preview failed; nothing was applied");
    }
    return failed ? EXIT.failed : EXIT.ok;
}
