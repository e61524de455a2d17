// Lines the product writes stay far below the command plugin's 64 KiB line limit: the real
// pulumi-resource-command stops reading a step's logged output at a longer line, and the step then
// hangs for good (scripts/commandStandin.ts says where). One cap for every line the CLI writes,
// lists summarized, and a long text's whole kept in pieces for the --json result.

/** The most a line the CLI writes may take, in UTF-8 bytes: a sixteenth of the plugin's 64 KiB. */
export const LINE_LIMIT = 4096;

/** A list in a message shows at most this many names, and at most LIST_BYTES of them. */
export const LIST_SHOWN = 20;
const LIST_BYTES = LINE_LIMIT / 2;

/** A JSON document's string stays this far below LINE_LIMIT: room for its key and indentation. */
const JSON_KEY_ROOM = 256;

/** Piece size of `pieces`: a piece's JSON form is at most six bytes per code unit (`\u001b`). */
export const PIECE_UNITS = 512;

/** The UTF-8 length of a string (what the plugin's scanner counts). */
export function utf8Bytes(s: string): number {
    return Buffer.byteLength(s, "utf8");
}

const isHigh = (s: string, i: number) => (s.charCodeAt(i) & 0xfc00) === 0xd800;

/** The first `n` code units of `s`, not ending inside a surrogate pair. */
function head(s: string, n: number): string {
    return n > 0 && isHigh(s, n - 1) ? s.slice(0, n - 1) : s.slice(0, n);
}

/** The last `n` code units of `s`, not starting inside a surrogate pair. */
function tail(s: string, n: number): string {
    const from = s.length - n;
    return n <= 0 ? "" : from > 0 && isHigh(s, from - 1) ? s.slice(from + 1) : s.slice(from);
}

/**
 * One line at most `limit` bytes (by `size`, UTF-8 by default): a longer one keeps its start and
 * its end (where an error usually says what failed) and says how much was cut between them.
 */
export function capLine(line: string, limit = LINE_LIMIT, size: (s: string) => number = utf8Bytes): string {
    if (size(line) <= limit) return line;
    let keep = Math.floor(limit / 2);
    for (;;) {
        const start = head(line, keep);
        const end = tail(line, keep);
        const cut = `${start} [... ${line.length - start.length - end.length} characters cut ...] ${end}`;
        const bytes = size(cut);
        if (bytes <= limit || keep === 0) return cut;
        keep = Math.max(0, Math.min(keep - 1, Math.floor((keep * limit) / bytes) - 32));
    }
}

/** Every line of a text capped (capLine); the line breaks kept. */
export function capText(text: string, limit = LINE_LIMIT): string {
    return text
        .split("\n")
        .map((l) => capLine(l, limit))
        .join("\n");
}

/**
 * A list of names for a message: the first `shown` (fewer if they would pass LIST_BYTES), then
 * "... and K more". Where the whole list is, the message says.
 */
export function nameList(names: readonly string[], shown = LIST_SHOWN): string {
    const separator = ", ";
    const listed: string[] = [];
    let bytes = 0;
    for (const n of names) {
        if (listed.length === shown) break;
        const name = capLine(n, LIST_BYTES / 4);
        bytes += utf8Bytes(name) + separator.length;
        if (listed.length > 0 && bytes > LIST_BYTES) break;
        listed.push(name);
    }
    const more = names.length - listed.length;
    return `${listed.join(separator)}${more > 0 ? ` ... and ${more} more` : ""}`;
}

/**
 * A text whole, in pieces short enough for one line each of a JSON document: at most PIECE_UNITS
 * code units, a line break ending a piece, surrogate pairs kept together. Joined, they are the text.
 */
export function pieces(text: string): string[] {
    const out: string[] = [];
    for (let i = 0; i < text.length;) {
        const newline = text.indexOf("\n", i);
        let end = Math.min(newline === -1 ? text.length : newline + 1, i + PIECE_UNITS);
        if (end < text.length && isHigh(text, end - 1)) end--;
        out.push(text.slice(i, end));
        i = end;
    }
    return out;
}

/**
 * A JSON value with every string capped so that its JSON form fits one line under LINE_LIMIT
 * (with room for its key): a document whose lines all stay short, still valid JSON.
 */
export function capStrings<T>(value: T): T {
    const limit = LINE_LIMIT - JSON_KEY_ROOM;
    const json = (s: string) => utf8Bytes(JSON.stringify(s));
    const walk = (v: unknown): unknown => {
        if (typeof v === "string") return capLine(v, limit, json);
        if (Array.isArray(v)) return v.map(walk);
        if (v !== null && typeof v === "object")
            return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
        return v;
    };
    return walk(value) as T;
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
