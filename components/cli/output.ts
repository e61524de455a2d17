// How the CLI speaks: findings and changes as one line each, tables, and the exit codes.
import { InputError, type Change, type Finding } from "../core/types.js";

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

// C0 controls (ESC, CR, BS, ...), DEL, C1 controls (8-bit CSI) and the bidi/direction overrides
// that reorder what a terminal shows: none of them may reach the terminal from a cluster value
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const UNSAFE_BUT_NEWLINE =
    // eslint-disable-next-line no-control-regex -- as above, keeping newlines
    /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

function escapeChar(c: string): string {
    if (c === "\n") return "\\n";
    if (c === "\r") return "\\r";
    if (c === "\t") return "\\t";
    return `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
}

/**
 * A value from the cluster (node name, kernel, OS image, label, log line) as one printable line:
 * every control character, newline included, and every direction override is shown as an escape
 * (`\u001b`, `\n`), so a value can neither drive the terminal nor forge a row. The one escaping
 * function of the CLI: `table` applies it to every cell, and the CLI's output applies
 * `terminalSafeText` to every line it writes.
 */
export function terminalSafe(value: string): string {
    return value.replace(UNSAFE, escapeChar);
}

/** As terminalSafe, keeping line breaks: for text that is several lines on purpose (the CLI's own messages). */
export function terminalSafeText(text: string): string {
    return text.replace(UNSAFE_BUT_NEWLINE, escapeChar);
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
