// Shared by the tests: where the repository is, fixtures, and running the built CLI.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
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

export function runCli(args: string[], opts: { input?: string; env?: Record<string, string> } = {}): CliRun {
    const r = spawnSync(process.execPath, [CLI, ...args], {
        input: opts.input,
        encoding: "utf8",
        env: { ...process.env, ...opts.env },
        timeout: 60_000,
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
