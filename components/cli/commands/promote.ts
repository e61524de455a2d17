// kube-proxy-mode promote: environments in order. Previews every stack, then (with --yes) applies
// them one after the other through the Automation API, stopping at the first failure, and prints
// one summary table. It uses whatever backend the user is logged into (the project's own
// workspace settings), and each stack's promotion gate decides whether it may move.
import { resolve } from "node:path";
import {
    anyResourceChanged,
    type AutomationStack,
    changeColumns,
    type EngineEvent,
    failureDetail,
    failureText,
    gateUpstream,
    hasPulumiProject,
    nodesVerifiedText,
    outputsFrom,
    outputValues,
    selectStack,
    StackSelectError,
    type StackOutputs,
} from "../../automation/stacks.js";
import { formatDuration } from "../../core/duration.js";
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

/** One promotion run: the stacks in order, their rows, and the progress log. */
interface Promotion {
    names: string[];
    stacks: AutomationStack[];
    rows: StackRow[];
    progress: (line: string) => void;
}

function finished(run: Promotion, i: number, phase: string, started: number): void {
    const row = run.rows[i];
    row.durationSeconds = Math.round((Date.now() - started) / 1000);
    run.progress(`[${run.names[i]}] ${phase}: ${row.result}${row.detail ? `: ${row.detail}` : ""}`);
}

/** The stacks named by --stacks, selected in the project at --cwd (every name checked before anything runs). */
async function selectStacks(names: string[], workDir: string): Promise<AutomationStack[]> {
    if (!hasPulumiProject(workDir)) {
        throw new CliError(
            `--cwd ${workDir}: no Pulumi.yaml there; run promote in the project directory or pass --cwd`,
        );
    }
    const stacks: AutomationStack[] = [];
    for (const stackName of names) {
        try {
            stacks.push(await selectStack(workDir, stackName));
        } catch (e) {
            if (!(e instanceof StackSelectError)) throw e;
            throw new CliError(`--stacks: ${e.message} (pulumi stack ls lists them; pulumi login selects the backend)`);
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
            Object.assign(row, changeColumns(outputsFrom(events).change), {
                result: "previewed" satisfies StackResult,
            });
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
            const outputs = outputValues(r.outputs);
            const changed = anyResourceChanged(r.summary.resourceChanges);
            Object.assign(row, changeColumns(outputs.change ?? outputsFrom(events).change), {
                result: (changed ? "applied" : "unchanged") satisfies StackResult,
                detail: undefined,
            });
            row.nodesVerified = nodesVerifiedText(outputs.promotion);
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
