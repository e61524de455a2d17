// How the CLI speaks: findings and changes as one line each, tables, and the exit codes.
import type { Change, Finding } from "../core/types.js";

export const EXIT = {
    ok: 0,
    /** the cluster or its nodes fail a rule, a check or a rollout step */
    failed: 1,
    /** invalid input, or what was asked violates a rule */
    invalid: 2,
} as const;

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

/** A plain text table: columns padded to their widest cell. */
export function table(header: string[], rows: string[][]): string {
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
    const line = (cells: string[]) =>
        cells
            .map((c, i) => (i === cells.length - 1 ? c : (c ?? "").padEnd(widths[i])))
            .join("  ")
            .trimEnd();
    return [line(header), ...rows.map(line)].join("\n");
}
