// The SIMULATED pulumi-resource-command (scripts/commandStandin.ts), called as the engine calls a
// provider: the documented contract of command:local:Command that the rollout steps rely on.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkInputs, commandProvider, diffInputs, type Log } from "../../scripts/commandStandin.js";

const URN = "urn:pulumi:s::p::kube-proxy-mode:index:KubeProxyMode$command:local:Command::step";
const SECRET_KEY = "4dabf18193072939515e22adb298388d";
const secret = (value: unknown) => ({ [SECRET_KEY]: "1b47061264138c4ac30d75fd1eb44270", value });

function recorder(): { lines: string[]; log: Log } {
    const lines: string[] = [];
    return {
        lines,
        log: Object.assign((_urn: string, l: string) => void lines.push(l), { flush: async () => undefined }),
    };
}

const base = { create: "echo created", triggers: ["hash1", "digest"], environment: { A: "1" } };

describe("SIMULATED command provider stand-in: diff", () => {
    it("a change of triggers replaces; a change of any other input updates; the outputs are not compared", () => {
        const olds = { ...base, stdout: "created", stderr: "" };
        assert.deepEqual(diffInputs(olds, { ...base, triggers: ["hash2", "digest"] }), {
            changes: true,
            replaces: ["triggers"],
        });
        assert.deepEqual(diffInputs(olds, { ...base, environment: { A: "2" } }), { changes: true, replaces: [] });
        assert.deepEqual(diffInputs(olds, { ...base, create: "echo other" }), { changes: true, replaces: [] });
        assert.deepEqual(diffInputs(olds, { ...base }), { changes: false, replaces: [] });
    });

    it("a secret input compares by its value (the same secret is no change)", () => {
        const olds = { ...base, environment: secret({ A: "1" }), stdout: secret("x") };
        assert.deepEqual(diffInputs(olds, { ...base, environment: secret({ A: "1" }) }), {
            changes: false,
            replaces: [],
        });
        assert.deepEqual(diffInputs(olds, { ...base, environment: secret({ A: "2" }) }), {
            changes: true,
            replaces: [],
        });
    });

    it("check names a wrong field (logging must be one of the enum's values)", () => {
        assert.deepEqual(checkInputs({ ...base, logging: "everything" }), [
            { property: "logging", reason: "logging must be one of stdout, stderr, stdoutAndStderr, none" },
        ]);
        assert.deepEqual(checkInputs({ ...base, logging: "stderr", interpreter: ["node", "-e", "x"] }), []);
    });
});

describe("SIMULATED command provider stand-in: create, update, delete", () => {
    let dir: string;
    beforeEach(() => (dir = mkdtempSync(join(tmpdir(), "kpm-standin-"))));
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it("create runs `create` through the interpreter as argv with `environment`, in `dir`; stdout/stderr are the outputs; the logged stream's lines go to the engine", async () => {
        const { lines, log } = recorder();
        const p = commandProvider(log);
        const inputs = {
            // the command reaches the program as one argument: no shell parses it
            interpreter: [
                process.execPath,
                "-e",
                "console.log(JSON.stringify({arg: process.argv[1], env: process.env.STEP_ENV, cwd: process.cwd()})); console.error('progress 1'); console.error('progress 2')",
            ],
            create: "a b; $(touch pwned)",
            environment: { STEP_ENV: "from environment" },
            dir,
            logging: "stderr",
        };
        const r = await p.create!(URN, inputs);
        const out = JSON.parse(r.outs.stdout);
        assert.deepEqual(out, { arg: "a b; $(touch pwned)", env: "from environment", cwd: dir });
        assert.equal(r.outs.stderr, "progress 1\nprogress 2");
        assert.deepEqual(lines, ["progress 1", "progress 2"], "only stderr (logging: stderr) was logged");
        assert.throws(() => readFileSync(join(dir, "pwned")), "nothing ran the command through a shell");
    });

    it("a secret input keeps the outputs secret; a non-zero exit fails with the command's output", async () => {
        const p = commandProvider(recorder().log);
        const r = await p.create!(URN, { create: "echo out", environment: secret({ T: "token" }) });
        assert.deepEqual(r.outs.environment, secret({ T: "token" }));
        assert.deepEqual(r.outs.stdout, secret("out"));
        await assert.rejects(
            p.create!(URN, { create: "echo why; exit 3" }),
            /exit status 3: running "echo why; exit 3":\nwhy/,
        );
    });

    it("update runs `update` if set, else `create`, with the previous outputs in its environment unless addPreviousOutputInEnv is false", async () => {
        const p = commandProvider(recorder().log);
        const olds = { create: "echo first", stdout: "first", stderr: "" };
        const viaCreate = await p.update!("id", URN, olds, { create: 'echo "again after $PULUMI_COMMAND_STDOUT"' });
        assert.equal(viaCreate.outs.stdout, "again after first");
        const viaUpdate = await p.update!("id", URN, olds, { create: "echo create", update: "echo update" });
        assert.equal(viaUpdate.outs.stdout, "update");
        const without = await p.update!("id", URN, olds, {
            create: 'echo "[${PULUMI_COMMAND_STDOUT:-}]"',
            addPreviousOutputInEnv: false,
        });
        assert.equal(without.outs.stdout, "[]");
    });

    it("delete runs nothing without `delete`, and `delete` when set", async () => {
        const p = commandProvider(recorder().log);
        const marker = join(dir, "deleted");
        await p.delete!("id", URN, { create: `touch ${marker}`, stdout: "" });
        assert.throws(() => readFileSync(marker), "no delete command: nothing ran");
        await p.delete!("id", URN, { create: "true", delete: `echo gone > ${marker}`, stdout: "" });
        assert.equal(readFileSync(marker, "utf8"), "gone\n");
    });

    it("cancel kills the running command (SIGKILL, as the real provider's context does): the step fails", async function () {
        this.timeout(20_000);
        const p = commandProvider(recorder().log);
        const created = p.create!(URN, {
            interpreter: [process.execPath, "-e"],
            create: "process.on('SIGTERM', () => {}); console.log('started'); setInterval(() => {}, 1000)",
            logging: "none",
        });
        await new Promise((r) => setTimeout(r, 500));
        await p.cancel!();
        await assert.rejects(created, /^Error: signal: killed: running/);
    });

    it("a 300 KB line written in small pieces is logged and kept whole (no line limit)", async function () {
        this.timeout(30_000);
        const { lines, log } = recorder();
        const p = commandProvider(log);
        const script =
            "const l='x'.repeat(300000); let i=0; const next=()=>{ if(i>=l.length){process.stderr.write('\\nend\\n');return;} process.stderr.write(l.slice(i,i+1000)); i+=1000; setTimeout(next,0); }; next();";
        const r = await p.create!(URN, {
            interpreter: [process.execPath, "-e"],
            create: script,
            logging: "stdoutAndStderr",
        });
        assert.equal(lines[0].length, 300000);
        assert.equal(lines[1], "end");
        assert.equal(r.outs.stderr.split("\n")[0].length, 300000);
    });
});
