// The private kubeconfig file a verify hook reads (KUBECONFIG): written for the hook's run and
// removed after it. A run killed outright (SIGKILL, the machine's OOM killer) cannot remove it, so
// its directory's name carries the moment after which no hook can still be reading it (the hook's
// timeout plus a minute), and the next run that writes one removes every such directory past that
// moment. No user value is in the name; the directory is 0700 and the file 0600. What else of the
// process's environment a hook gets is decided here too (hookEnvironment).
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { usesExecPlugin } from "./credentials.js";

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

/**
 * Names a hook gets from the process's environment: what any program needs to run (PATH, HOME,
 * locale, time zone, temporary directory, terminal) and to reach a server (proxies, CA bundles).
 * Everything else stays out: the tool's own secrets (KPM_KUBECONFIG, PULUMI_CONFIG_PASSPHRASE,
 * PULUMI_ACCESS_TOKEN, the run's own KUBECONFIG) and whatever else the CI or the engine holds.
 */
const HOOK_ENV =
    /^(PATH|HOME|USER|LOGNAME|SHELL|LANG|LANGUAGE|LC_[A-Z]+|TZ|TMPDIR|TMP|TEMP|TERM|(HTTPS?|NO|ALL)_PROXY|(https?|no|all)_proxy|SSL_CERT_FILE|SSL_CERT_DIR|NODE_EXTRA_CA_CERTS)$/;

/**
 * With an exec credential plugin in the kubeconfig, also what the cloud CLIs that serve as plugins
 * read for their identity (aws eks get-token and aws-iam-authenticator: AWS_*; gke-gcloud-auth-plugin:
 * CLOUDSDK_*, GOOGLE_*; kubelogin: AZURE_*, AAD_*), so kubectl in the hook gets a token as the run does.
 */
const EXEC_PLUGIN_ENV = /^(AWS_|CLOUDSDK_|GOOGLE_|AZURE_|AAD_)[A-Z0-9_]*$/;

/** What a hook's environment starts from (its own `env`, NODE, POOL, MODE and KUBECONFIG go on top). */
export function hookEnvironment(env: NodeJS.ProcessEnv, kubeconfig: string | undefined): Record<string, string> {
    const plugin = usesExecPlugin(kubeconfig);
    const out: Record<string, string> = {};
    for (const [name, value] of Object.entries(env))
        if (value !== undefined && (HOOK_ENV.test(name) || (plugin && EXEC_PLUGIN_ENV.test(name)))) out[name] = value;
    return out;
}
