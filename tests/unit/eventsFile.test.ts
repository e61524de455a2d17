// rollout --events FILE (components/cli/events.ts): the runner's node events as JSON lines, appended
// by each step, read back as the events they were (parseEvents), and the flag as the CLI takes it.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { configHash } from "../../components/core/plan.js";
import { eventsFileOf, openEventsFile } from "../../components/cli/events.js";
import { parseEvents, type NodeEvent } from "../../components/rollout/events.js";
import { finish, runPools, type Context } from "../../components/rollout/runner.js";
import { rolloutSpecSchema } from "../../components/rollout/spec.js";
import { runCli } from "../helpers.js";
import { FakeClock, FakeCluster, kubeProxyConfig } from "./fakeCluster.js";

const TARGET = kubeProxyConfig("nftables");
/** the spec as the CLI reads it */
const RAW_SPEC = {
    target: { hash: configHash(TARGET), mode: "nftables", config: TARGET },
    pools: [
        { name: "canary", nodeSelector: "pool=canary" },
        { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2 },
    ],
    verify: { hooks: [] },
};
const SPEC = rolloutSpecSchema.parse(RAW_SPEC);

describe("rollout --events FILE: the node events as JSON lines", () => {
    let dir: string;
    beforeEach(() => (dir = mkdtempSync(join(tmpdir(), "kpm-events-"))));
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it("each step appends its events to the one file; read back, they are the events the runner told", async () => {
        const path = join(dir, "events.jsonl");
        const clock = new FakeClock();
        const cluster = new FakeCluster(clock, { installerMode: "ipvs", pools: { canary: 1, workers: 3 } });
        const told: NodeEvent[] = [];
        // as `pulumi up` runs them: one CLI run (one opening of the file) per step
        for (const step of [
            (c: Context) => runPools(c, ["canary"]),
            (c: Context) => runPools(c, ["workers"]),
            finish,
        ]) {
            const file = openEventsFile(path);
            const ctx: Context = {
                cluster,
                spec: SPEC,
                log: () => undefined,
                onEvent: (e) => (told.push(e), file.write(e)),
                holder: "run-1",
                clock,
            };
            try {
                await step(ctx);
            } finally {
                file.close();
            }
        }
        assert.ok(
            told.some((e) => e.type === "released" && e.step === "hand-back"),
            "the finish's too",
        );
        const text = readFileSync(path, "utf8");
        assert.equal(text.split("\n").length, told.length + 1, "one line each");
        assert.deepEqual(parseEvents(text), told);
    });

    it("a line cut short (a run killed mid-write) is skipped, the rest read", () => {
        const e: NodeEvent = { type: "cordoned", pool: "p", node: "n", step: "move", ours: true, at: 1 };
        assert.deepEqual(parseEvents(`${JSON.stringify(e)}\n{"type":"relea`), [e]);
    });

    it("--events wins over KPM_EVENTS_FILE; neither: no file", () => {
        const [flag, env] = [join(dir, "flag.jsonl"), join(dir, "env.jsonl")];
        const e: NodeEvent = { type: "cordoned", pool: "p", node: "n", step: "move", ours: true, at: 1 };
        for (const [given, wanted] of [
            [flag, flag],
            [undefined, env],
        ] as const) {
            const file = eventsFileOf(given, { KPM_EVENTS_FILE: env })!;
            file.write(e);
            file.close();
            assert.deepEqual(parseEvents(readFileSync(wanted, "utf8")), [e]);
            rmSync(wanted);
        }
        assert.equal(eventsFileOf(undefined, {}), undefined);
    });

    it("the CLI refuses a file it cannot write before it reaches any cluster, naming it", () => {
        const path = join(dir, "no-such-dir", "events.jsonl");
        writeFileSync(join(dir, "spec.json"), JSON.stringify(RAW_SPEC));
        const r = runCli(["rollout", "--spec", join(dir, "spec.json"), "--events", path], {
            env: { KUBECONFIG: join(dir, "no-kubeconfig") },
        });
        assert.equal(r.code, 2, r.stderr);
        assert.match(r.stderr, new RegExp(`--events ${path}: cannot write there: ENOENT`));
        const byEnv = runCli(["rollout", "--spec", join(dir, "spec.json")], {
            env: { KUBECONFIG: join(dir, "no-kubeconfig"), KPM_EVENTS_FILE: path },
        });
        assert.match(byEnv.stderr, new RegExp(`--events ${path}: cannot write there`));
    });

    it("rollout --help names --events and KPM_EVENTS_FILE", () => {
        const r = runCli(["rollout", "--help"]);
        assert.match(r.stdout, /--events FILE .*\n.*\n.*\$KPM_EVENTS_FILE/);
    });
});
