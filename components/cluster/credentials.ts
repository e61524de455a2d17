// A kubeconfig's credentials, settled when it is loaded: tokens trimmed (a `token: |` block or a
// token file written by `echo` ends in a newline, which no HTTP header may carry) and checked, an
// unusable one refused naming its user and field, never its value; every credential remembered by
// the one redactor (redact.ts) in all its forms, so nothing the process prints can carry it.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import type * as k8s from "../libraries/kubernetesClient.js";
import * as YAML from "../libraries/yaml.js";
import { rememberSecret } from "../core/redact.js";

/** A user entry of a kubeconfig as written (kubectl's field names). */
export type RawUser = Record<string, unknown>;

/** Where a kubeconfig's text came from: relative file names in it are relative to `dir`. */
export interface KubeconfigSource {
    text: string;
    dir: string;
}

/** How often a tokenFile is read again (client-go's figure): a projected token is rotated in place. */
const TOKEN_FILE_REFRESH_MS = 60_000;

/** The kubeconfig texts client-node reads by default: each file of $KUBECONFIG, else ~/.kube/config. */
export function defaultKubeconfigSources(env: NodeJS.ProcessEnv = process.env): KubeconfigSource[] {
    const files = env.KUBECONFIG
        ? env.KUBECONFIG.split(delimiter).filter(Boolean)
        : [join(env.HOME ?? homedir(), ".kube", "config")];
    const out: KubeconfigSource[] = [];
    for (const file of files) {
        try {
            out.push({ text: readFileSync(file, "utf8"), dir: dirname(resolve(file)) });
        } catch {
            // client-node skips a file it cannot read too
        }
    }
    return out;
}

/** The user entries of kubeconfig texts by name, the first of a name winning (as kubectl merges them). */
export function rawUsers(sources: KubeconfigSource[]): Map<string, { user: RawUser; dir: string }> {
    const out = new Map<string, { user: RawUser; dir: string }>();
    for (const { text, dir } of sources) {
        let doc: unknown;
        try {
            doc = YAML.parse(text);
        } catch {
            continue;
        }
        const users: unknown = (doc as { users?: unknown } | null)?.users;
        for (const entry of Array.isArray(users) ? users : []) {
            const { name, user } = (entry ?? {}) as { name?: unknown; user?: unknown };
            if (typeof name === "string" && user && typeof user === "object" && !out.has(name))
                out.set(name, { user: user as RawUser, dir });
        }
    }
    return out;
}

/**
 * Settles the users of `kc` (loaded by client-node from `sources`): trims their tokens, reads a
 * `tokenFile` (kubectl's spelling, which client-node ignores) and remembers every credential. The
 * current context's user must be usable: an error names it and the field.
 */
export function settleCredentials(kc: k8s.KubeConfig, sources: KubeconfigSource[]): void {
    const raw = rawUsers(sources);
    const current = kc.getCurrentUser()?.name;
    const users = kc.getUsers().map((user) => {
        const entry = raw.get(user.name);
        if (entry) rememberCredentials(entry.user, entry.dir);
        else rememberCredentials(exportedUser(user), process.cwd());
        try {
            return settleUser(user, entry);
        } catch (e) {
            if (user.name === current) throw e;
            return user; // never used: the current context names another user
        }
    });
    kc.loadFromOptions({
        clusters: kc.getClusters(),
        contexts: kc.getContexts(),
        users,
        currentContext: kc.getCurrentContext(),
    });
}

/** The users whose token is read from a file, and that file: a hook's kubeconfig names the file, not a copy of the token. */
const tokenFiles = new WeakMap<k8s.User, string>();

function settleUser(user: k8s.User, entry: { user: RawUser; dir: string } | undefined): k8s.User {
    const where = `the kubeconfig user ${JSON.stringify(user.name)}`;
    const out: Record<string, unknown> = { ...user };
    const rawToken = entry?.user.token;
    const file = entry?.user.tokenFile ?? entry?.user["token-file"];
    if (typeof rawToken === "string" && rawToken !== "") {
        out.token = checkedToken(rawToken, `${where}: its token`);
    } else if (typeof file === "string" && file !== "") {
        const path = isAbsolute(file) ? file : join(entry!.dir, file);
        const field = entry?.user.tokenFile !== undefined ? "tokenFile" : "token-file";
        let token = readTokenFile(path, `${where}: its ${field} ${path}`);
        let readAt = Date.now();
        delete out.token;
        Object.defineProperty(out, "token", {
            enumerable: true,
            get() {
                // read again as client-go does; a failed or unusable read keeps the last good token
                if (Date.now() - readAt > TOKEN_FILE_REFRESH_MS) {
                    readAt = Date.now();
                    try {
                        token = readTokenFile(path, "");
                    } catch {
                        /* keep the last good token */
                    }
                }
                return token;
            },
        });
        tokenFiles.set(out as unknown as k8s.User, path);
    } else if (typeof user.token === "string") {
        out.token = checkedToken(user.token, `${where}: its token`);
    }
    const provider = user.authProvider as { name?: unknown; config?: Record<string, unknown> } | undefined;
    if (provider?.config && typeof provider.config === "object") {
        const config = { ...provider.config };
        for (const key of ["id-token", "access-token"]) {
            if (typeof config[key] === "string" && config[key] !== "")
                config[key] = checkedToken(config[key], `${where}: its auth-provider ${key}`);
        }
        out.authProvider = { ...provider, config };
    }
    return out as unknown as k8s.User;
}

function readTokenFile(path: string, what: string): string {
    let text: string;
    try {
        text = readFileSync(path, "utf8");
    } catch (e) {
        throw new Error(`${what} cannot be read (${(e as NodeJS.ErrnoException).code ?? "unreadable"})`);
    }
    rememberSecret(text);
    return checkedToken(text, what);
}

/**
 * A token as an Authorization header carries it: without the line break and blanks around it
 * (kubectl trims a token file the same way), one word of visible ASCII, not empty.
 */
export function checkedToken(value: string, what: string): string {
    rememberSecret(value);
    const token = value.trim();
    if (token === "") throw new Error(`${what} is empty`);
    if (!/^[\x21-\x7e]+$/.test(token))
        throw new Error(
            `${what} has a line break, a space or a character outside printable ASCII inside it; a token is one word (only the blanks around it are removed)`,
        );
    return token;
}

/** auth-provider settings that locate or name things, not credentials (kept readable in messages). */
const NOT_SECRET = new Set([
    "idp-issuer-url",
    "client-id",
    "cmd-path",
    "cmd-args",
    "expiry",
    "expiry-key",
    "token-key",
    "tokenFile",
    "apiserver-id",
    "tenant-id",
    "environment",
]);

/**
 * Remembers every credential of a kubeconfig user entry (kubectl's field names) for the redactor:
 * tokens (inline, and the contents of a tokenFile), the password, the client key (inline, and the
 * contents of a client-key file), every value of an auth-provider's config and of an exec plugin's
 * env. Files that cannot be read are skipped: whoever reads them next reports that.
 */
export function rememberCredentials(user: RawUser, dir: string): void {
    const file = (name: unknown) => {
        if (typeof name !== "string" || name === "") return;
        try {
            rememberSecret(readFileSync(isAbsolute(name) ? name : join(dir, name), "utf8"));
        } catch {
            /* unreadable: nothing of it can be printed either */
        }
    };
    for (const key of ["token", "password", "client-key-data"]) rememberSecret(user[key]);
    file(user.tokenFile);
    file(user["token-file"]);
    file(user["client-key"]);
    const provider = user["auth-provider"] as { config?: unknown } | undefined;
    const config = provider?.config as Record<string, unknown> | undefined;
    if (config && typeof config === "object") {
        for (const [key, v] of Object.entries(config)) if (!NOT_SECRET.has(key)) rememberSecret(v);
        file(config.tokenFile);
    }
    const exec = user.exec as { env?: unknown } | undefined;
    for (const e of Array.isArray(exec?.env) ? exec.env : []) rememberSecret((e as { value?: unknown } | null)?.value);
}

let lastRemembered: string | undefined;

/** Remembers the credentials of every user of a kubeconfig's text (what a hook's output is cleaned of). */
export function rememberKubeconfigCredentials(text: string | undefined): void {
    // a run has one kubeconfig, and hooks run on every node: read it once
    if (!text || text === lastRemembered) return;
    lastRemembered = text;
    for (const { user, dir } of rawUsers([{ text, dir: process.cwd() }]).values()) rememberCredentials(user, dir);
}

/** Whether the kubeconfig's current user gets its credential from an exec plugin (EKS's `aws eks get-token`). */
export function usesExecPlugin(text: string | undefined): boolean {
    if (!text) return false;
    let doc: { "current-context"?: unknown; contexts?: unknown } | null;
    try {
        doc = YAML.parse(text) as typeof doc;
    } catch {
        return false;
    }
    const contexts = Array.isArray(doc?.contexts)
        ? (doc.contexts as { name?: unknown; context?: { user?: unknown } }[])
        : [];
    const userName = contexts.find((c) => c?.name === doc?.["current-context"])?.context?.user;
    const user = typeof userName === "string" ? rawUsers([{ text, dir: "." }]).get(userName)?.user : undefined;
    const provider = user?.["auth-provider"] as { name?: unknown; config?: { exec?: unknown } } | undefined;
    return Boolean(user?.exec) || provider?.name === "exec" || Boolean(provider?.config?.exec);
}

/** client-node's User in kubectl's field names (a user that came from no file: in-cluster, or loaded from options). */
function exportedUser(user: k8s.User): RawUser {
    return {
        token: user.token,
        password: user.password,
        "client-key-data": user.keyData,
        "client-key": user.keyFile,
        "auth-provider": user.authProvider,
        exec: user.exec,
    };
}

/**
 * The kubeconfig a verify hook reads: the run's cluster, context and user alone (not every
 * context of the user's kubeconfig), an exec plugin kept as it is so kubectl runs it, and a token
 * read from a file named by that file (kubectl reads it again as it is rotated).
 */
export function hookKubeconfig(kc: k8s.KubeConfig): string {
    const context = kc.getContextObject(kc.getCurrentContext());
    const exported = JSON.parse(kc.exportConfig()) as {
        clusters: { name: string }[];
        users: { name: string; user: Record<string, unknown> }[];
        contexts: { name: string }[];
    };
    const user = kc.getCurrentUser();
    const users = exported.users.filter((u) => u.name === context?.user);
    const file = user ? tokenFiles.get(user) : undefined;
    for (const u of users) {
        if (file) {
            delete u.user.token;
            u.user.tokenFile = file;
        }
    }
    return JSON.stringify({
        ...exported,
        clusters: exported.clusters.filter((c) => c.name === context?.cluster),
        users,
        contexts: exported.contexts.filter((c) => c.name === context?.name),
    });
}
