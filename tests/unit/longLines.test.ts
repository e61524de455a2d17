// No line the rollout writes comes near the real command plugin's 64 KiB line limit (its
// bufio.Scanner stops at a longer logged line and the step hangs for good; scripts/commandStandin.ts):
// long node lists and a hook's long output are summarized, every line is capped, and the whole
// text stays readable where the message says. On the SIMULATED in-memory cluster (fakeCluster.ts).
import assert from "node:assert/strict";
import { configHash } from "../../components/core/plan.js";
import { failureDocument } from "../../components/cli/commands/cluster.js";
import { main } from "../../components/cli/main.js";
import { capLine, capStrings, LINE_LIMIT, nameList, pieces, utf8Bytes } from "../../components/core/text.js";
import { finish, RolloutFailure, runPools, type Context } from "../../components/rollout/runner.js";
import { rolloutSpecSchema, type RolloutSpec } from "../../components/rollout/spec.js";
import { commandProvider, releaseStalledCommands } from "../../scripts/commandStandin.js";
import { CLI } from "../helpers.js";
import { FakeClock, FakeCluster, kubeProxyConfig } from "./fakeCluster.js";

const TARGET = kubeProxyConfig("nftables");
const HASH = configHash(TARGET);
/** Far below the plugin's 64 KiB: the most a line may take, in UTF-8 bytes. */
const CAP = 4096;
assert.equal(LINE_LIMIT, CAP);
const bytes = (l: string) => Buffer.byteLength(l, "utf8");

function specOf(extra: Partial<Record<string, unknown>> = {}): RolloutSpec {
    return rolloutSpecSchema.parse({
        target: { hash: HASH, mode: "nftables", config: TARGET },
        pools: [
            { name: "canary", nodeSelector: "pool=canary" },
            { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 250 },
        ],
        verify: { hooks: [] },
        ...extra,
    });
}

function setup(spec: RolloutSpec = specOf()) {
    const clock = new FakeClock();
    const cluster = new FakeCluster(clock, { installerMode: "ipvs", pools: { canary: 1, workers: 2 } });
    const lines: string[] = [];
    const ctx: Context = { cluster, spec, log: (l) => lines.push(l), holder: "run-1", clock, soakCheckSeconds: 30 };
    return { cluster, lines, ctx };
}

/** Every line of every text is at most CAP bytes; names the first that is not. */
function assertShort(texts: string[], what: string): void {
    for (const l of texts.flatMap((t) => t.split("\n")))
        assert.ok(bytes(l) <= CAP, `${what}: a line of ${bytes(l)} bytes: ${l.slice(0, 200)}...`);
}

describe("long lines: no line the rollout writes comes near the command plugin's 64 KiB limit", () => {
    it("a finish with 2,000 late nodes: every line it logs is short; the late list names the first and counts the rest; each late node is logged as it moves", async function () {
        this.timeout(60_000);
        const { cluster, ctx, lines } = setup();
        await runPools(ctx, ["canary", "workers"]);
        for (let i = 1; i <= 2000; i++) cluster.addNode(`workers-late-${String(i).padStart(4, "0")}`, "workers");
        await finish(ctx);
        assertShort(lines, "the finish's log");
        const late = lines.find((l) => l.startsWith("finish: 2000 node(s) are not verified"));
        assert.ok(late, "the late list is logged");
        assert.match(late, /workers-late-0001 \(pool workers\), workers-late-0002 \(pool workers\)/);
        assert.match(late, /\.\.\. and 19\d\d more/);
        for (const name of ["workers-late-0001", "workers-late-1234", "workers-late-2000"])
            assert.ok(
                lines.some((l) => l.startsWith(`pool workers node ${name}: `)),
                `${name} is logged as it moves`,
            );
    });

    it("a finish that cannot finish 2,000 nodes (they joined while it ran): the refusal's lines are short and name the first nodes, the count and where the whole list is", async function () {
        this.timeout(60_000);
        const { cluster, ctx, lines } = setup();
        await runPools(ctx, ["canary", "workers"]);
        cluster.addNode("workers-late", "workers");
        // 2,000 nodes join once the finish has read its plan: its second reading finds them not verified
        const log = (l: string) => {
            lines.push(l);
            if (l.startsWith("finish: 1 node(s) are not verified"))
                for (let i = 1; i <= 2000; i++) cluster.addNode(`workers-new-${String(i).padStart(4, "0")}`, "workers");
        };
        const err = await finish({ ...ctx, log }).catch((e: Error) => e);
        assert.ok(err instanceof Error);
        assert.match(err.message, /^cannot finish: 2000 node\(s\) are not verified/);
        assert.match(err.message, /workers-new-0001, workers-new-0002/);
        assert.match(err.message, /\.\.\. and 19\d\d more/);
        assert.match(err.message, /kube-proxy-mode status/, "the message says where every node's state is listed");
        assertShort([err.message, ...lines], "the refusal and the log");
        assert.equal(cluster.installerConfig, kubeProxyConfig("ipvs"), "the installer's ConfigMap is unchanged");
    });

    it("a hook that fails printing a 100 KiB line: the failure's and the log's lines are short, its start and end kept; the --json result has it whole", async function () {
        this.timeout(60_000);
        const print = "process.stdout.write('ERR-START ' + 'z'.repeat(100 * 1024) + ' ERR-END\\n'); process.exit(4)";
        const hooks = [{ name: "loud", command: [process.execPath, "-e", print] }];
        const { ctx, lines } = setup(specOf({ verify: { hooks } }));
        const err = await runPools(ctx, ["canary"]).catch((e: Error) => e);
        assert.ok(err instanceof RolloutFailure, err instanceof Error ? err.message : "no failure");
        assert.equal(err.check, "hook loud");
        assertShort([err.message, err.detail, ...lines], "the failure and the log");
        assert.match(err.detail, /exit code 4; output:\nERR-START z+.*z+ ERR-END/s);
        assert.match(err.detail, /characters cut/);
        assert.match(
            err.detail,
            /--json result has them whole, in `output`/,
            "the message says where the whole line is",
        );
        // the --json result: every line short, the hook's output whole in its pieces
        const doc = failureDocument(err);
        assertShort([JSON.stringify(doc, null, 2)], "the --json result");
        const whole = (JSON.parse(JSON.stringify(doc)) as { output: string[] }).output.join("");
        assert.equal(whole, `ERR-START ${"z".repeat(100 * 1024)} ERR-END`);
    });

    it("every line the CLI writes is capped, whatever a message carries (an unknown command of 100 KiB)", async () => {
        const out: string[] = [];
        const err: string[] = [];
        const code = await main(["x".repeat(100 * 1024)], { out: (l) => out.push(l), err: (l) => err.push(l) });
        assert.equal(code, 2);
        assertShort([...out, ...err], "the CLI's output");
        assert.match(err.join("\n"), /^kube-proxy-mode: unknown command "xxx/);
    });
});

describe("long lines: the CLI run by the SIMULATED command plugin (its 64 KiB limit and stall)", () => {
    it("a message carrying a 100 KiB value is capped, so the step ends (exit 2) instead of hanging", async function () {
        this.timeout(30_000);
        const lines: string[] = [];
        const log = Object.assign((_urn: string, l: string) => void lines.push(l), { flush: async () => undefined });
        const step = commandProvider(log).create!(
            "urn:pulumi:s::p::kube-proxy-mode:index:KubeProxyMode$command:local:Command::step",
            { interpreter: [process.execPath, CLI], create: "x".repeat(100 * 1024), logging: "stderr" },
        );
        const ended = await Promise.race([
            step.then(
                () => "finished",
                (e: Error) => e.message.split("\n")[0],
            ),
            new Promise<string>((r) => setTimeout(() => r("still running"), 15_000)),
        ]);
        releaseStalledCommands();
        assert.match(ended, /^exit status 2: running/);
        assert.equal(lines.length, 1);
        assert.match(lines[0], /^kube-proxy-mode: unknown command "x+ \[\.\.\. \d+ characters cut \.\.\.\] x+"/);
    });
});

describe("long lines: the one cap (core/text.ts)", () => {
    it("capLine keeps a short line, and cuts a long one to the limit in UTF-8 bytes, keeping its start and end and saying how much was cut", () => {
        assert.equal(capLine("short"), "short");
        const ascii = capLine(`START${"a".repeat(100_000)}END`);
        assert.ok(utf8Bytes(ascii) <= CAP && utf8Bytes(ascii) > CAP - 200, `${utf8Bytes(ascii)} bytes`);
        assert.match(ascii, /^STARTa+ \[\.\.\. \d+ characters cut \.\.\.\] a+END$/);
        const euro = capLine("\u20ac".repeat(30_000));
        assert.ok(utf8Bytes(euro) <= CAP, `${utf8Bytes(euro)} bytes`);
        assert.equal(utf8Bytes("\u20ac"), 3);
        // a surrogate pair (4 bytes) is never split
        const emoji = capLine("\u{1F600}".repeat(20_000));
        assert.ok(utf8Bytes(emoji) <= CAP);
        assert.doesNotMatch(emoji, /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
    });

    it("nameList shows the first 20 names (fewer when they are long) and counts the rest", () => {
        const names = Array.from({ length: 2000 }, (_, i) => `node-${i + 1}`);
        assert.equal(nameList(names.slice(0, 3)), "node-1, node-2, node-3");
        assert.match(nameList(names), /^node-1, node-2, .*node-20 \.\.\. and 1980 more$/);
        const long = Array.from({ length: 50 }, (_, i) => `${"n".repeat(250)}-${i}`);
        const shown = nameList(long);
        assert.ok(utf8Bytes(shown) <= CAP / 2 + 40, `${utf8Bytes(shown)} bytes`);
        assert.match(shown, / \.\.\. and \d+ more$/);
    });

    it("pieces gives the whole text back joined, each piece one short JSON line; capStrings keeps a document valid with short lines", () => {
        const text = `line one\n${"\u0001".repeat(3000)}\n${"\u{1F600}".repeat(1000)}`;
        const ps = pieces(text);
        assert.equal(ps.join(""), text);
        assertShort([JSON.stringify({ output: ps }, null, 2)], "pieces");
        const doc = capStrings({ a: "x".repeat(50_000), b: ["\n".repeat(10_000)], n: 3 });
        const printed = JSON.stringify(doc, null, 2);
        assertShort([printed], "capStrings");
        assert.equal((JSON.parse(printed) as { n: number }).n, 3);
    });
});
