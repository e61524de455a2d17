// The private kubeconfig file a verify hook reads (KUBECONFIG): written for the hook's run and
// removed after it. A run killed outright (SIGKILL, the machine's OOM killer) cannot remove it, so
// its directory's name carries the moment after which no hook can still be reading it (the hook's
// timeout plus a minute), and the next run that writes one removes every such directory past that
// moment. No user value is in the name; the directory is 0700 and the file 0600. The hook's output,
// which reaches the step's log and its error, is given back without the kubeconfig's credentials.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as YAML from "../libraries/yaml.js";

const PREFIX = "kpm-hook-";
const NAME = /^kpm-hook-(\d{13})-/;
/** How long past its hook's timeout a directory is kept: the hook is ended at its timeout, then the file removed. */
export const HOOK_KUBECONFIG_GRACE_MS = 60_000;

/** The directories swept by this process: once each, on the first file written there. */
const swept = new Set<string>();

/**
 * Runs `fn` with the path of a private file holding `content` (undefined without content: the
 * hook then reads the run's own KUBECONFIG), removed when `fn` settles. `timeoutSeconds` is how
 * long the hook may run.
 */
export async function withHookKubeconfig<T>(
    content: string | undefined,
    timeoutSeconds: number,
    fn: (path: string | undefined) => Promise<T>,
    opts: { dir?: string; now?: () => number } = {},
): Promise<T> {
    if (!content) return fn(process.env.KUBECONFIG);
    const base = opts.dir ?? tmpdir();
    const now = opts.now ?? Date.now;
    if (!swept.has(base)) {
        swept.add(base);
        removeExpiredHookKubeconfigs(base, now());
    }
    const expires = now() + timeoutSeconds * 1000 + HOOK_KUBECONFIG_GRACE_MS;
    const dir = mkdtempSync(join(base, `${PREFIX}${String(expires).padStart(13, "0")}-`));
    try {
        const path = join(dir, "kubeconfig");
        writeFileSync(path, content, { mode: 0o600 });
        return await fn(path);
    } finally {
        rmSync(dir, { recursive: true, force: true });
    }
}

/** Removes the hook kubeconfig directories in `base` whose hook can no longer be running at `now`; returns their names. */
export function removeExpiredHookKubeconfigs(base: string, now: number): string[] {
    let names: string[];
    try {
        names = readdirSync(base);
    } catch {
        return [];
    }
    const removed: string[] = [];
    for (const name of names) {
        const m = NAME.exec(name);
        if (!m || Number(m[1]) >= now) continue;
        try {
            rmSync(join(base, name), { recursive: true, force: true });
            removed.push(name);
        } catch {
            // another user's, or gone already: not ours to insist on
        }
    }
    return removed;
}

/** The last kubeconfig asked about and its credentials: a run has one kubeconfig, and hooks run on every node. */
let lastSecrets: { content: string; secrets: readonly string[] } | undefined;

/** The kubeconfig's credentials that a hook's output must never carry: tokens, passwords, client keys. */
export function kubeconfigSecrets(content: string | undefined): readonly string[] {
    if (!content) return [];
    if (lastSecrets?.content !== content) lastSecrets = { content, secrets: readSecrets(content) };
    return lastSecrets.secrets;
}

function readSecrets(content: string): string[] {
    let doc: unknown;
    try {
        doc = YAML.parse(content);
    } catch {
        return [];
    }
    const found = new Set<string>();
    const take = (v: unknown) => {
        // short values would blank out ordinary words of the output; no credential is that short
        if (typeof v === "string" && v.length >= 8) found.add(v);
    };
    const users: unknown = (doc as { users?: unknown } | null)?.users;
    for (const entry of Array.isArray(users) ? users : []) {
        const user = (entry as { user?: unknown } | null)?.user as Record<string, unknown> | undefined;
        if (!user || typeof user !== "object") continue;
        for (const key of ["token", "password", "client-key-data"]) take(user[key]);
        const provider = user["auth-provider"] as { config?: Record<string, unknown> } | undefined;
        for (const v of Object.values(provider?.config ?? {})) take(v);
    }
    return [...found].sort((a, b) => b.length - a.length);
}

/** `text` with every credential of `secrets` replaced by "[secret]". */
export function withoutSecrets(text: string, secrets: readonly string[]): string {
    let out = text;
    for (const s of secrets) out = out.split(s).join("[secret]");
    return out;
}
