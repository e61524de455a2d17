// The bench's tables: GitHub-flavoured markdown, a header row and one row per record.

/** A markdown table; a `|` inside a cell is escaped so it stays one cell. */
export function markdownTable(head: readonly string[], rows: readonly (readonly string[])[]): string {
    return [head, head.map(() => "---"), ...rows]
        .map((cells) => `| ${cells.map((c) => c.replace(/\|/g, "\\|")).join(" | ")} |`)
        .join("\n");
}
