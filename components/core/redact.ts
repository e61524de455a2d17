// The one redactor: every text that leaves the process (the CLI's lines, the component's refusal,
// a hook's output) passes `redact`. One rule: a credential the process has loaded (remembered here
// by the kubeconfig loader, cluster/credentials.ts) is replaced by "[secret]" in any of its encodings and
// however the text breaks its lines; so is anything shaped like a credential that no loader could
// know (an exec plugin's token on its stderr, a Bearer header a library quotes, a private key).
// No I/O and no client library here: the CLI's output and the component's errors import it.

export const SECRET_MARK = "[secret]";

/**
 * Shorter values would blank ordinary words of the output; no credential is that short. A form
 * of a secret (its base64 at one offset) is held to the same length.
 */
const MIN_LENGTH = 8;

/** Credentials by shape, whoever made them. */
const SHAPES = [
    // a JWT (ServiceAccount and OIDC tokens): its header is base64url of `{"`
    String.raw`eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`,
    // EKS's token (aws eks get-token)
    String.raw`k8s-aws-v1\.[A-Za-z0-9_-]+`,
    // what follows the scheme of an Authorization header
    String.raw`(?<=\b(?:[Bb]earer|[Bb]asic) +)[A-Za-z0-9._~+/=-]{${MIN_LENGTH},}`,
    // a private key's body, between its PEM lines
    String.raw`(?<=-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)[\s\S]+?(?=-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`,
];

/** The forms of every remembered secret, whitespace removed: a Set, so remembering again costs nothing. */
const forms = new Set<string>();
/** The forms, longest first (so a longer form wins where two overlap). */
let sorted: string[] | undefined;
const SHAPE = new RegExp(SHAPES.join("|"), "g");

/**
 * Remembers a credential so `redact` removes it: the value as given, trimmed and JSON-escaped, its
 * base64 (whole, and at each of the three offsets it can take inside a longer base64 text, standard
 * and URL alphabets), and, when it is or decodes to PEM, the base64 body of each PEM block.
 */
export function rememberSecret(value: unknown): void {
    if (typeof value !== "string") return;
    const before = forms.size;
    for (const v of new Set([value, value.trim()])) {
        add(v);
        // as a JSON string writes it (the CLI's --json, a quoted error): `"` and `\` escaped
        add(JSON.stringify(v).slice(1, -1));
        for (const f of base64Forms(Buffer.from(v))) add(f);
        for (const body of pemBodies(v)) add(body);
    }
    // client-key-data and the like: base64 of a PEM, whose key is what a decoding hook would print
    if (/^[A-Za-z0-9+/=\s]+$/.test(value))
        for (const body of pemBodies(Buffer.from(value, "base64").toString())) add(body);
    if (forms.size !== before) sorted = undefined;
}

/**
 * `text` with every remembered secret, and every credential-shaped string, replaced by "[secret]".
 * A secret is found however the text breaks it: the text is searched with its whitespace and its
 * escaped line breaks (`\n` in JSON) left out, and each match replaced in the text as written.
 */
export function redact(text: string): string {
    if (!text) return text;
    sorted ??= [...forms].sort((a, b) => b.length - a.length);
    const { flat, at } = flatten(text);
    const spans: [number, number][] = [];
    for (const form of sorted) {
        for (let i = flat.indexOf(form); i !== -1; i = flat.indexOf(form, i + form.length))
            spans.push([at[i], at[i + form.length - 1] + 1]);
    }
    let out = text;
    if (spans.length) {
        spans.sort((a, b) => a[0] - b[0]);
        const parts: string[] = [];
        let done = 0;
        for (const [from, to] of spans) {
            if (to <= done) continue;
            parts.push(text.slice(done, Math.max(from, done)), SECRET_MARK);
            done = to;
        }
        out = parts.join("") + text.slice(done);
    }
    return out.replace(SHAPE, SECRET_MARK);
}

/** `text` without whitespace and escaped line breaks, and where each of its characters is in `text`. */
function flatten(text: string): { flat: string; at: Uint32Array } {
    const chars: string[] = [];
    const at = new Uint32Array(text.length);
    let n = 0;
    for (let i = 0; i < text.length; i++) {
        const c = text[i];
        if (c === " " || c === "\n" || c === "\r" || c === "\t") continue;
        if (c === "\\" && (text[i + 1] === "n" || text[i + 1] === "r")) {
            i++;
            continue;
        }
        chars.push(c);
        at[n++] = i;
    }
    return { flat: chars.join(""), at };
}

/** Forgets every remembered secret (tests). */
export function forgetSecrets(): void {
    forms.clear();
    sorted = undefined;
}

function add(form: string): void {
    const f = form.replace(/[ \n\r\t]+/g, "");
    if (f.length >= MIN_LENGTH) forms.add(f);
}

/**
 * base64 of `bytes` as a whole, then the part of it that is the same wherever `bytes` sits in a
 * longer text that was base64-encoded (a hook printing `base64 $KUBECONFIG`): for each of the three
 * offsets, the 4-character groups made of `bytes` alone.
 */
function base64Forms(bytes: Buffer): string[] {
    const out = [bytes.toString("base64"), bytes.toString("base64url")];
    for (let offset = 0; offset < 3; offset++) {
        const padded = Buffer.concat([Buffer.alloc(offset), bytes]);
        const first = offset === 0 ? 0 : 1;
        const last = Math.floor(padded.length / 3);
        if (last <= first) continue;
        const core = padded.subarray(first * 3, last * 3);
        out.push(core.toString("base64"), core.toString("base64url"));
    }
    return out;
}

/** The base64 bodies of the PEM blocks in `text` (the key material, without its BEGIN/END lines). */
function pemBodies(text: string): string[] {
    const out: string[] = [];
    for (const m of text.matchAll(/-----BEGIN [A-Z0-9 ]+-----([\s\S]*?)-----END [A-Z0-9 ]+-----/g)) {
        // a PEM may carry headers (Proc-Type: ...) before its body
        const body = m[1]
            .split(/\r?\n/)
            .filter((l) => !l.includes(":"))
            .join("");
        out.push(body);
    }
    return out;
}
