// How the CLI speaks: findings and changes as one line each, tables, and the exit codes.
import { InputError, type Change, type Finding } from "../core/types.js";
import { terminalSafe, terminalSafeText } from "../core/text.js";

export { terminalSafe, terminalSafeText };

/** Every exit code of the CLI: docs/cli.md's table lists these, and a unit test holds the two together. */
export const EXIT = {
    /** done; warnings allowed */
    ok: 0,
    /** the cluster or a node fails a rule, a check or a rollout step; the cluster cannot be read; an unexpected failure */
    failed: 1,
    /** invalid input (flags, files, the spec, KPM_* variables, a kubeconfig that cannot be loaded), or what was asked violates a rule */
    invalid: 2,
} as const;

/** The exit code of an error that ended a command: its own for a CliError, 2 for input that cannot be read, else 1. */
export function exitCodeOf(e: unknown): number {
    if (e instanceof CliError) return e.exitCode;
    if (e instanceof InputError) return EXIT.invalid;
    return EXIT.failed;
}

export class CliError extends Error {
    constructor(
        message: string,
        readonly exitCode: number = EXIT.invalid,
        readonly lines: string[] = [],
    ) {
        super(message);
    }
}

export function formatValue(v: unknown): string {
    return v === undefined ? "(unset)" : JSON.stringify(v);
}

export function formatChange(c: Change): string {
    return `change: ${c.path}: ${formatValue(c.from)} -> ${formatValue(c.to)} (${c.reason})`;
}

export function formatFinding(f: Finding): string {
    return `${f.severity}: ${f.field}: ${f.message}${f.fix ? `. Fix: ${f.fix}` : ""}`;
}

/** A plain text table: columns padded to their widest cell; every cell made terminal-safe, so one value is one cell. */
export function table(header: string[], unsafeRows: string[][]): string {
    const rows = unsafeRows.map((r) => r.map((c) => terminalSafe(c ?? "")));
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
    const line = (cells: string[]) =>
        cells
            .map((c, i) => (i === cells.length - 1 ? c : (c ?? "").padEnd(widths[i])))
            .join("  ")
            .trimEnd();
    return [line(header), ...rows.map(line)].join("\n");
}

/** How far a wrapped line's continuation lines are indented, so each finding reads as one block. */
export const WRAP_INDENT = "    ";

/**
 * A line broken at spaces to fit `width` columns, its continuation lines indented; unchanged with
 * no width (not a terminal: one finding stays one line for grep), or one too narrow to be useful.
 * A word longer than the width stays whole rather than be cut.
 */
export function wrapLine(text: string, width: number | undefined): string {
    if (!width || width < 20 || text.length <= width) return text;
    const lines: string[] = [];
    let line = "";
    for (const word of text.split(" ")) {
        if (line === "") line = word;
        else if (line.length + 1 + word.length <= width) line += ` ${word}`;
        else {
            lines.push(line);
            line = WRAP_INDENT + word;
        }
    }
    lines.push(line);
    return lines.join("\n");
}
