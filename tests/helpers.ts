// Shared by the tests: where the repository is, fixtures, and running the built CLI.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The repository root (tests run from dist/tests/...). */
export const ROOT = join(__dirname, "..", "..");
export const FIXTURES = join(ROOT, "tests", "fixtures");
export const CLI = join(ROOT, "bin", "kube-proxy-mode");

export function fixture(path: string): string {
    return readFileSync(join(FIXTURES, path), "utf8");
}

export interface CliRun {
    code: number | null;
    stdout: string;
    stderr: string;
}

/** Runs a program to its end without blocking the test process (long commands: pulumi, promote); no shell. */
export function runAsync(
    cmd: string,
    args: string[],
    opts: { cwd?: string; env?: Record<string, string> } = {},
): Promise<CliRun> {
    return new Promise((resolve, reject) => {
        const child = spawn(cmd, args, {
            cwd: opts.cwd,
            env: { ...process.env, ...opts.env },
            stdio: ["ignore", "pipe", "pipe"],
        });
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (d) => (stdout += d));
        child.stderr.on("data", (d) => (stderr += d));
        child.on("error", reject);
        child.on("close", (code) => resolve({ code, stdout, stderr }));
    });
}

export function runCli(args: string[], opts: { input?: string; env?: Record<string, string> } = {}): CliRun {
    const r = spawnSync(process.execPath, [CLI, ...args], {
        input: opts.input,
        encoding: "utf8",
        env: { ...process.env, ...opts.env },
        timeout: 60_000,
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Sets `vars` in process.env (undefined: unset); returns what puts the environment back as it was. */
function setEnvironment(vars: Record<string, string | undefined>): () => void {
    const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
    const apply = (values: Record<string, string | undefined>) => {
        for (const [k, v] of Object.entries(values)) {
            if (v === undefined) delete process.env[k];
            else process.env[k] = v;
        }
    };
    apply(vars);
    return () => apply(saved);
}

/** Runs `fn` with `vars` in process.env (undefined: unset), then puts the environment back. */
export async function withEnvironment<T>(
    vars: Record<string, string | undefined>,
    fn: () => T | Promise<T>,
): Promise<T> {
    const restore = setEnvironment(vars);
    try {
        return await fn();
    } finally {
        restore();
    }
}

/** For a mocha describe: `vars` in process.env before its tests, the environment put back after. */
export function environmentFor(vars: Record<string, string | undefined>): void {
    let restore = () => {};
    before(() => void (restore = setEnvironment(vars)));
    after(() => restore());
}

/**
 * For a mocha describe whose KubeProxyMode is given no kubeconfig and reads the cluster through a
 * stand-in snapshot reader: an ambient kubeconfig (KUBECONFIG, a file of its own) for its tests,
 * as a machine with kubectl set up has; without one the component refuses, naming `kubeconfig`.
 */
export function ambientKubeconfigFor(): void {
    let dir = "";
    let restore = () => {};
    before(() => {
        dir = mkdtempSync(join(tmpdir(), "kpm-ambient-"));
        const file = join(dir, "config");
        writeFileSync(
            file,
            [
                "apiVersion: v1",
                "kind: Config",
                "clusters: [{ name: ambient, cluster: { server: 'https://ambient.example:6443' } }]",
                "users: [{ name: ambient, user: {} }]",
                "contexts: [{ name: ambient, context: { cluster: ambient, user: ambient } }]",
                "current-context: ambient",
                "",
            ].join("\n"),
        );
        restore = setEnvironment({ KUBECONFIG: file });
    });
    after(() => {
        restore();
        rmSync(dir, { recursive: true, force: true });
    });
}
