// What every command writes through: the CLI's one output path (credentials redacted, lines
// escaped and capped).
import { redact } from "../core/redact.js";
import { capText } from "../core/text.js";
import { terminalSafeText } from "./output.js";

/** The process's two streams, as main is given them. */
export interface Streams {
    out(text: string): void;
    err(text: string): void;
}

/**
 * What a command writes through: text, every line made terminal-safe and capped (core/text.ts:
 * the command plugin stalls a step on a line of 64 KiB), and JSON documents, written whole.
 */
export interface Io extends Streams {
    /** a --json result: pretty-printed, so a list is one short line per item */
    json(doc: unknown): void;
}

/** The one place every line the CLI writes passes: no credential it loaded, escaped, then capped. */
export function cappedIo(streams: Streams): Io {
    const line = (text: string) => capText(terminalSafeText(redact(text)));
    return {
        out: (text) => streams.out(line(text)),
        err: (text) => streams.err(line(text)),
        json: (doc) => streams.out(redact(JSON.stringify(doc, null, 2))),
    };
}
