// What every command writes through: the CLI's one output path (credentials redacted, lines
// escaped and capped).
import * as YAML from "../libraries/yaml.js";
import { redact } from "../core/redact.js";
import { capText } from "../core/text.js";
import { terminalSafeText, wrapLine } from "./output.js";

/** The process's two streams, as main is given them. */
export interface Streams {
    out(text: string): void;
    err(text: string): void;
    /** the width of the terminal stderr writes to; undefined when it is not one */
    columns?: number;
}

/**
 * What a command writes through: text, every line made terminal-safe and capped (core/text.ts:
 * the command plugin stalls a step on a line of 64 KiB), and JSON documents, written whole.
 */
export interface Io extends Streams {
    /** a --json result: pretty-printed, so a list is one short line per item; as YAML for -o yaml */
    json(doc: unknown, format?: "json" | "yaml"): void;
    /** a change or finding on stderr, wrapped to the terminal's width (never the JSON) */
    finding(text: string): void;
}

/** The io of a command given -o: its result in that format (--json's object either way). */
export function withOutput(io: Io, format: "json" | "yaml" | undefined): Io {
    return format === "yaml" ? { ...io, json: (doc) => io.json(doc, "yaml") } : io;
}

/** The one place every line the CLI writes passes: no credential it loaded, escaped, then capped. */
export function cappedIo(streams: Streams): Io {
    const line = (text: string) => capText(terminalSafeText(redact(text)));
    return {
        out: (text) => streams.out(line(text)),
        err: (text) => streams.err(line(text)),
        finding: (text) => streams.err(capText(wrapLine(terminalSafeText(redact(text)), streams.columns))),
        json: (doc, format = "json") => {
            const text = JSON.stringify(doc, null, 2);
            // the object --json prints, not what JSON would drop (undefined, functions)
            streams.out(
                redact(
                    format === "yaml"
                        ? YAML.stringify(JSON.parse(text), { lineWidth: 0, blockQuote: "literal" }).replace(/\n$/, "")
                        : text,
                ),
            );
        },
    };
}
