// The rollout step's provider: a step changes only when what it moves changes, an update with no
// real change keeps the run it made, and a result line of any size survives however it is chunked.
import assert from "node:assert/strict";
import { runCommand, stepProvider, type StepState } from "../../components/pulumi/rolloutStep.js";
import { STEP_RESULT_PREFIX } from "../../components/core/promotion.js";

const base: StepState = {
    command: ["rollout", "--pool=canary"],
    environment: { KPM_KUBECONFIG: "token: old", KPM_ROLLOUT_SPEC: "{}" },
    triggers: ["hash1", '{"name":"canary"}', "digest", "https://a:6443"],
    description: "rollout of pool canary",
    output: "done",
    result: { nodesVerified: 1 },
    finishedAt: "2026-12-01T00:00:00.000Z",
};

describe("RolloutStep provider", () => {
    it("a rotated credential or a changed spec environment is no change", async () => {
        const d = await stepProvider.diff!("id", base, { ...base, environment: { KPM_KUBECONFIG: "token: new", KPM_ROLLOUT_SPEC: '{"x":1}' } });
        assert.equal(d.changes, false);
        assert.deepEqual(d.replaces, []);
    });

    it("state written with argv (node and the CLI's path of another machine) is no change against the same command", async () => {
        const old = { ...base, command: undefined as any, argv: ["/usr/local/bin/node", "/home/ci/checkout/bin/kube-proxy-mode", "rollout", "--pool=canary"] };
        const d = await stepProvider.diff!("id", old, base);
        assert.equal(d.changes, false);
    });

    it("a change of the triggers (configuration, pool settings, node set, API server) replaces the step", async () => {
        for (let i = 0; i < base.triggers.length; i++) {
            const triggers = [...base.triggers];
            triggers[i] = "changed";
            const d = await stepProvider.diff!("id", base, { ...base, triggers });
            assert.equal(d.changes, true);
            assert.deepEqual(d.replaces, ["triggers"]);
        }
    });

    it("an update with no real change keeps finishedAt, result and output and runs nothing", async () => {
        const news = { ...base, environment: { KPM_KUBECONFIG: "token: new" }, output: undefined as any, result: undefined, finishedAt: undefined as any };
        // were the CLI run, it would fail: no spec in its environment
        const r = await stepProvider.update!("id", base, news);
        assert.equal(r.outs.finishedAt, base.finishedAt);
        assert.deepEqual(r.outs.result, base.result);
        assert.equal(r.outs.output, "done");
        assert.equal(r.outs.environment.KPM_KUBECONFIG, "token: new");
    });
});

describe("RolloutStep result lines", () => {
    it("a 200 KB result line written in many small writes is kept whole", async function () {
        this.timeout(30_000);
        const record = { configHash: "abc", unverified: Array.from({ length: 8000 }, (_, i) => `node-${String(i).padStart(5, "0")}`) };
        const line = `${STEP_RESULT_PREFIX}${JSON.stringify(record)}\n`;
        assert.ok(line.length > 100_000);
        // the child writes the line in 1 KB pieces, waiting between writes so they arrive as separate chunks
        const script = `
            const line = ${JSON.stringify(line)};
            let i = 0;
            process.stdout.write("progress before\\n");
            const next = () => {
                if (i >= line.length) { process.stdout.write("progress after\\n"); return; }
                process.stdout.write(line.slice(i, i + 1024));
                i += 1024;
                setTimeout(next, i % 16384 === 0 ? 5 : 0);
            };
            next();`;
        const written: string[] = [];
        const stderrWrite = process.stderr.write;
        (process.stderr as any).write = (s: string) => (written.push(String(s)), true);
        let r;
        try {
            r = await runCommand([process.execPath, "-e", script], {}, "test step");
        } finally {
            (process.stderr as any).write = stderrWrite;
        }
        assert.deepEqual(r.result, record);
        assert.match(r.output, /^progress before$/m);
        assert.match(r.output, /^progress after$/m);
    });
});
