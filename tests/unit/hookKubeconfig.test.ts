// A verify hook's private kubeconfig file (components/cluster/hookKubeconfig.ts): there while the
// hook runs, gone after it, and, when the run is killed outright while a hook runs, removed by the
// next run once that hook can no longer be reading it.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
    HOOK_KUBECONFIG_GRACE_MS,
    hookEnvironment,
    removeExpiredHookKubeconfigs,
    withHookKubeconfig,
} from "../../components/cluster/hookKubeconfig.js";

const MODULE = join(__dirname, "..", "..", "components", "cluster", "hookKubeconfig.js");
const SECRET = "apiVersion: v1\nkind: Config\nusers: [{name: u, user: {token: not-a-real-token}}]\n";

describe("a verify hook's private kubeconfig file", function () {
    this.timeout(30_000);
    let base: string;
    beforeEach(() => (base = mkdtempSync(join(tmpdir(), "kpm-hook-test-"))));
    afterEach(() => rmSync(base, { recursive: true, force: true }));

    it("holds the kubeconfig, readable by this user only, while the hook runs, and is gone after it, also when it fails", async () => {
        let seen = "";
        await withHookKubeconfig(
            SECRET,
            300,
            async (path) => {
                seen = path!;
                assert.equal(readFileSync(path!, "utf8"), SECRET);
                assert.equal(statSync(path!).mode & 0o777, 0o600);
                assert.equal(statSync(join(path!, "..")).mode & 0o777, 0o700);
            },
            { dir: base },
        );
        assert.ok(seen.startsWith(base), seen);
        assert.equal(existsSync(seen), false);
        await assert.rejects(
            withHookKubeconfig(SECRET, 300, () => Promise.reject(new Error("hook failed")), { dir: base }),
            /hook failed/,
        );
        assert.deepEqual(readdirSync(base), []);
    });

    it("its directory's name carries, zero-padded, the moment its hook can no longer run: now, the hook's timeout, and a minute", async () => {
        let dir = "";
        await withHookKubeconfig(SECRET, 300, async (path) => void (dir = join(path!, "..")), {
            dir: base,
            now: () => 1_000,
        });
        const expires = String(1_000 + 300_000 + HOOK_KUBECONFIG_GRACE_MS).padStart(13, "0");
        assert.match(dir, new RegExp(`/kpm-hook-${expires}-[^/]+$`));
        // a directory whose moment is past is removed, and named; one whose moment is now is kept
        mkdirSync(join(base, `kpm-hook-${expires}-past`));
        mkdirSync(join(base, `kpm-hook-${String(Number(expires) + 1).padStart(13, "0")}-now`));
        assert.deepEqual(removeExpiredHookKubeconfigs(base, Number(expires) + 1), [`kpm-hook-${expires}-past`]);
        assert.equal(readdirSync(base).length, 1);
    });

    it("a directory that cannot be listed is no directory of expired files", () => {
        assert.deepEqual(removeExpiredHookKubeconfigs(join(base, "missing"), Date.now()), []);
    });

    it("a hook's environment keeps only names it needs, and no name without a value", () => {
        assert.deepEqual(hookEnvironment({ PATH: "/usr/bin", HOME: undefined, KPM_KUBECONFIG: "secret" }, undefined), {
            PATH: "/usr/bin",
        });
    });

    it("left by a run killed (SIGKILL) while its hook ran, is removed by the next run's first hook once that hook's timeout and a minute have passed, and not before", async () => {
        // the killed run: a real process that writes the file for a hook of 5 s and is killed while the hook "runs"
        const script =
            `const { withHookKubeconfig } = require(${JSON.stringify(MODULE)});` +
            `withHookKubeconfig(${JSON.stringify(SECRET)}, 5, () => { console.log("hook running"); return new Promise(() => {}); }, { dir: ${JSON.stringify(base)} });`;
        const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
        await new Promise<void>((resolve) => child.stdout.once("data", () => resolve()));
        const killedAt = Date.now();
        child.kill("SIGKILL");
        await new Promise((resolve) => child.once("exit", resolve));
        const left = readdirSync(base);
        assert.equal(left.length, 1, "SIGKILL leaves the file behind");
        assert.equal(readFileSync(join(base, left[0], "kubeconfig"), "utf8"), SECRET);
        // an unrelated directory, and one of a hook that may still run, are never touched
        mkdirSync(join(base, "kpm-hook-other"));

        const during = killedAt + 5_000 + HOOK_KUBECONFIG_GRACE_MS - 2_000;
        assert.deepEqual(removeExpiredHookKubeconfigs(base, during), [], "the killed hook's time is not over");

        // the next run's first hook (this process has not written in `base` yet: its one sweep of it)
        const after = killedAt + 5_000 + HOOK_KUBECONFIG_GRACE_MS + 2_000;
        await withHookKubeconfig(SECRET, 300, async () => undefined, { dir: base, now: () => after });
        assert.deepEqual(
            readdirSync(base),
            ["kpm-hook-other"],
            "the killed hook's file is removed once its time is over",
        );
    });
});
