// The SIMULATED pulumi-resource-command (scripts/commandStandin.ts), called as the engine calls a
// provider: the documented contract of command:local:Command that the rollout steps rely on.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
    checkInputs,
    commandProvider,
    diffInputs,
    releaseStalledCommands,
    type Log,
} from "../../scripts/commandStandin.js";

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
});

// The real plugin's reader of the logged streams: pulumi/pulumi-command v1.2.1,
// provider/pkg/provider/util/util.go, LogOutput (a bufio.Scanner with its default 64 KiB buffer).
describe("SIMULATED command provider stand-in: the real plugin's 64 KiB line limit", () => {
    let dir: string;
    beforeEach(() => (dir = mkdtempSync(join(tmpdir(), "kpm-standin-"))));
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    /** A node program that writes `first`, then `line` to `stream`, then 256 KiB of lines, then (once all is written) a marker file. */
    const writer = (marker: string, line: string, stream = "stderr") =>
        `const s = process.${stream}; s.write("first\\n"); s.write(${line} + "\\n");` +
        `for (let i = 0; i < 4096; i++) s.write("after " + "y".repeat(56) + "\\n");` +
        `s.write("", () => require("fs").writeFileSync(${JSON.stringify(marker)}, "done"))`;

    /** Resolves true once `cond` holds, false after `ms`. */
    async function until(cond: () => boolean, ms: number): Promise<boolean> {
        for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 50)))
            if (cond()) return true;
        return cond();
    }

    for (const [what, line] of [
        ["a 70 KiB line", '"x".repeat(70 * 1024)'],
        ["a line of 65,536 bytes (the scanner's whole buffer, no room for its newline)", '"x".repeat(65536)'],
        ["a line of 22,000 three-byte characters (66,000 bytes: the limit is in bytes)", '"\\u20ac".repeat(22000)'],
    ] as const) {
        it(`${what} on a logged stream stops the reading: the command blocks on its next writes and the step never finishes`, async function () {
            this.timeout(30_000);
            const { lines, log } = recorder();
            const p = commandProvider(log);
            const marker = join(dir, "finished");
            let settled = false;
            const created = p.create!(URN, {
                interpreter: [process.execPath, "-e"],
                create: writer(marker, line),
                logging: "stderr",
            });
            created.then(
                () => (settled = true),
                () => (settled = true),
            );
            assert.ok(
                await until(() => lines.includes("first"), 15_000),
                "the command started and its first line was logged",
            );
            // the same program with a short line writes it all and its marker well within this (next test)
            const finished = await until(() => settled || existsSync(marker), 4_000);
            assert.equal(existsSync(marker), false, "the command never got past its writes after the long line");
            assert.equal(finished, false, "the step never finished");
            assert.deepEqual(lines, ["first"], "nothing after the long line was logged");
            releaseStalledCommands();
        });
    }

    it("a 100 KiB line as the command's last output, then exit: the step still never finishes (the plugin never reads the rest of the line)", async function () {
        this.timeout(30_000);
        const { lines, log } = recorder();
        const p = commandProvider(log);
        let settled = false;
        const created = p.create!(URN, {
            interpreter: [process.execPath, "-e"],
            create: "process.stderr.write('first\\n' + 'x'.repeat(100 * 1024) + '\\n'); process.exitCode = 2",
            logging: "stderr",
        });
        created.then(
            () => (settled = true),
            () => (settled = true),
        );
        assert.equal(await until(() => settled, 6_000), false, "the step never finished");
        assert.deepEqual(lines, ["first"]);
        releaseStalledCommands();
    });

    it("a line of 65,535 bytes (its newline the buffer's last byte), written in small pieces, is logged whole; the step finishes", async function () {
        this.timeout(30_000);
        const { lines, log } = recorder();
        const p = commandProvider(log);
        const script =
            "const l='x'.repeat(65535); let i=0; const next=()=>{ if(i>=l.length){process.stderr.write('\\nend\\n');return;} process.stderr.write(l.slice(i,i+1000)); i+=1000; setTimeout(next,0); }; next();";
        const r = await p.create!(URN, { interpreter: [process.execPath, "-e"], create: script, logging: "stderr" });
        assert.equal(lines.length, 2);
        assert.equal(lines[0].length, 65535);
        assert.equal(lines[1], "end");
        assert.equal(r.outs.stderr.split("\n")[0].length, 65535);
    });

    it("the writer with a short line writes everything and the step finishes (the stall above is the long line's)", async function () {
        this.timeout(30_000);
        const { lines, log } = recorder();
        const p = commandProvider(log);
        const marker = join(dir, "finished");
        await p.create!(URN, {
            interpreter: [process.execPath, "-e"],
            create: writer(marker, '"x".repeat(1000)'),
            logging: "stderr",
        });
        assert.ok(existsSync(marker));
        assert.equal(lines.length, 2 + 4096);
    });

    it("a 65,536-byte last line with nothing after it: the scanner stops, but nothing is left to write, so the step finishes without it", async function () {
        this.timeout(30_000);
        const { lines, log } = recorder();
        const p = commandProvider(log);
        const r = await p.create!(URN, {
            interpreter: [process.execPath, "-e"],
            create: "process.stderr.write('first\\n' + 'x'.repeat(65536))",
            logging: "stderr",
        });
        assert.equal(lines.length, 1, "the long last line was not logged");
        assert.equal(lines[0], "first");
        assert.equal(r.outs.stderr.length, 6 + 65536);
    });

    it("a stream that is not logged has no line limit: a 300 KB line on stderr with logging: stdout is kept whole", async function () {
        this.timeout(30_000);
        const { lines, log } = recorder();
        const p = commandProvider(log);
        const marker = join(dir, "finished");
        const r = await p.create!(URN, {
            interpreter: [process.execPath, "-e"],
            create: writer(marker, '"x".repeat(300000)'),
            logging: "stdout",
        });
        assert.ok(existsSync(marker));
        assert.deepEqual(lines, []);
        assert.equal(r.outs.stderr.split("\n")[1].length, 300000);
    });
});
