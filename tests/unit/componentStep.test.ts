// A rollout step as a command.local.Command: a constant `create`, the CLI run as argv by a
// constant launcher, a secret environment the diff ignores, triggers that replace, nothing run on
// delete, and the finish's verification record read from its stdout however large.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import {
    STEP_CREATE,
    STEP_IGNORE_CHANGES,
    STEP_LAUNCHER,
    stepCommand,
    stepReport,
    stepResult,
} from "../../components/pulumi/commandStep.js";
import { ROOT } from "../helpers.js";

const resolved = <T>(o: pulumi.Input<T> | undefined): Promise<T> =>
    new Promise((r) => pulumi.output(o as pulumi.Input<T>).apply((v) => (r(v as T), v)));
const isSecret = (o: unknown): Promise<boolean> => (o as any).isSecret;

function canary() {
    return stepCommand(
        {
            args: ["--pool=canary; rm -rf /"],
            environment: { KPM_KUBECONFIG: "token: marker", KPM_ROLLOUT_SPEC: "{}" },
            triggers: ["hash1", '{"name":"canary"}', "digest", "https://a:6443"],
        },
        { ignoreChanges: ["dependsOnSomething"] },
    );
}

describe("rollout step as a Command: inputs", () => {
    it("create is a constant and the interpreter holds no path: the pool's name is only in the environment", async () => {
        const { args } = canary();
        assert.equal(args.create, STEP_CREATE);
        assert.deepEqual(args.interpreter, ["node", "-e", STEP_LAUNCHER]);
        assert.ok(
            !STEP_LAUNCHER.includes(ROOT) && !STEP_LAUNCHER.includes(process.execPath),
            "the launcher holds no path of this machine",
        );
        assert.ok(!JSON.stringify([args.create, args.interpreter]).includes("canary"), "no user value in the command");
        const env = await resolved(args.environment);
        assert.deepEqual(JSON.parse(env!.KPM_STEP_ARGS as string), ["--json", "--pool=canary; rm -rf /"]);
    });

    it("the environment (it carries the kubeconfig) is secret", async () => {
        assert.equal(await isSecret(pulumi.output(canary().args.environment)), true);
    });

    it("triggers are what the step moves; no delete command; the progress (stderr) is logged, stdout is not", async () => {
        const { args } = canary();
        assert.deepEqual(await resolved(args.triggers), ["hash1", '{"name":"canary"}', "digest", "https://a:6443"]);
        assert.equal(args.delete, undefined);
        assert.equal(args.update, undefined);
        assert.equal(args.logging, "stderr");
        assert.equal(args.addPreviousOutputInEnv, false);
    });

    it("ignoreChanges holds exactly the environment and the interpreter, added to the caller's", () => {
        assert.deepEqual(STEP_IGNORE_CHANGES, ["environment", "interpreter"]);
        assert.deepEqual(canary().opts.ignoreChanges, ["dependsOnSomething", "environment", "interpreter"]);
    });
});

describe("rollout step as a Command: the launcher", () => {
    let dir: string;
    beforeEach(() => (dir = mkdtempSync(join(tmpdir(), "kpm-launcher-"))));
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it("runs the CLI found by KPM_CLI with `create` then KPM_STEP_ARGS as argv (no shell)", () => {
        const cli = join(dir, "main.js");
        writeFileSync(cli, "exports.runCli = () => console.log(JSON.stringify(process.argv.slice(2)));");
        const r = spawnSync(process.execPath, ["-e", STEP_LAUNCHER, STEP_CREATE], {
            env: { ...process.env, KPM_CLI: cli, KPM_STEP_ARGS: JSON.stringify(["--json", "--pool=a b; $(touch x)"]) },
            encoding: "utf8",
            cwd: dir,
        });
        assert.equal(r.status, 0, r.stderr);
        assert.deepEqual(JSON.parse(r.stdout), ["rollout", "--json", "--pool=a b; $(touch x)"]);
    });

    it("the CLI runs with the launcher's environment (the engine's: KPM_EVENTS_FILE of `pulumi up` reaches it), not through the step's inputs", async () => {
        const cli = join(dir, "main.js");
        writeFileSync(cli, "exports.runCli = () => console.log(process.env.KPM_EVENTS_FILE ?? 'unset');");
        const events = join(dir, "events.jsonl");
        const r = spawnSync(process.execPath, ["-e", STEP_LAUNCHER, STEP_CREATE], {
            env: { ...process.env, KPM_CLI: cli, KPM_STEP_ARGS: "[]", KPM_EVENTS_FILE: events },
            encoding: "utf8",
            cwd: dir,
        });
        assert.equal(r.status, 0, r.stderr);
        assert.equal(r.stdout.trim(), events);
        // a path of the machine is no input of the step (a diff, a saved plan): it stays the engine's
        const env = await resolved(canary().args.environment);
        assert.equal(Object.keys(env).includes("KPM_EVENTS_FILE"), false);
    });

    it("the CLI stops as on SIGINT when the launcher is killed (the command provider's SIGKILL on a cancel), its output still reaching the step", async function () {
        this.timeout(20_000);
        const cli = join(dir, "main.js");
        const marker = join(dir, "stopped");
        writeFileSync(
            cli,
            `exports.runCli = () => { console.log("moving node-1"); process.on("SIGINT", () => { console.log("SIGINT: finishing node-1, releasing the lease"); require("fs").writeFileSync(${JSON.stringify(marker)}, "stopped"); process.exit(1); }); setInterval(() => {}, 1000); };`,
        );
        const launcher = spawn(process.execPath, ["-e", STEP_LAUNCHER, STEP_CREATE], {
            env: { ...process.env, KPM_CLI: cli, KPM_STEP_ARGS: "[]" },
            stdio: ["ignore", "pipe", "pipe"],
        });
        let out = "";
        launcher.stdout.on("data", (d) => (out += d));
        const closed = new Promise<void>((r) => launcher.stdout.on("close", () => r()));
        while (!out.includes("moving node-1")) await new Promise((r) => setTimeout(r, 50));
        launcher.kill("SIGKILL");
        await closed;
        assert.equal(readFileSync(marker, "utf8"), "stopped");
        assert.match(
            out,
            /SIGINT: finishing node-1, releasing the lease/,
            "the CLI's last lines reached the step's stdout",
        );
    });

    it("finds the CLI from the project's directory, and says how to fix it when it cannot", () => {
        const env = { ...process.env, KPM_CLI: "", KPM_STEP_ARGS: JSON.stringify(["--help"]) };
        const found = spawnSync(process.execPath, ["-e", STEP_LAUNCHER, STEP_CREATE], {
            env,
            encoding: "utf8",
            cwd: join(ROOT, "examples"),
        });
        assert.equal(found.status, 0, found.stderr);
        assert.match(found.stdout, /kube-proxy-mode rollout/);
        const lost = spawnSync(process.execPath, ["-e", STEP_LAUNCHER, STEP_CREATE], {
            env,
            encoding: "utf8",
            cwd: dir,
        });
        assert.equal(lost.status, 2);
        assert.match(
            lost.stderr,
            /cannot find the kube-proxy-mode CLI from .*: install the kube-proxy-mode package in the Pulumi project from its packed tarball \(npm install \/path\/to\/kube-proxy-mode-<version>\.tgz; .*not on the npm registry\), or set KPM_CLI/,
        );
    });
});

describe("rollout step as a Command: its output", () => {
    it("the verification record of a 300 KB --json document is read whole", () => {
        const verification = {
            configHash: "abc",
            finishedAt: "2026-12-01T00:00:00.000Z",
            unverified: Array.from({ length: 12000 }, (_, i) => `node-${String(i).padStart(5, "0")}`),
        };
        const stdout = JSON.stringify({ ok: true, target: "abc", mode: "nftables", nodes: [], verification }, null, 2);
        assert.ok(stdout.length > 200_000);
        assert.deepEqual(stepResult(stdout), verification);
    });

    it("no record from a step that printed none, or printed something else", () => {
        for (const s of [
            undefined,
            "",
            "not json",
            JSON.stringify({ ok: true, nodes: [] }),
            JSON.stringify({ verification: [1] }),
        ])
            assert.equal(stepResult(s), null);
    });

    it("the status is the last lines of the step's progress", () => {
        const stderr = Array.from({ length: 100 }, (_, i) => `line ${i}`).join("\n");
        assert.equal(stepReport(stderr, 2), "line 98\nline 99");
    });
});
