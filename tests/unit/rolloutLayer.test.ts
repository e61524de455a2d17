// The rollout's logic does no I/O of its own: everything it reads or writes, and the verify hooks
// it runs, go through the seam (components/rollout/cluster.ts, RolloutCluster and its HookRunner).
// Read from the sources: a module that reaches a process, a file or a socket there shows here.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../helpers.js";

const ROLLOUT = join(ROOT, "components", "rollout");
const IO = /^node:(child_process|fs|fs\/promises|net|http|https|http2|tls|dgram|dns)$/;

describe("the rollout layer (components/rollout)", () => {
    it("imports no module that reaches a process, a file or the network: those are behind the seam", () => {
        const found: string[] = [];
        for (const file of readdirSync(ROLLOUT).filter((f) => f.endsWith(".ts"))) {
            const source = readFileSync(join(ROLLOUT, file), "utf8");
            for (const m of source.matchAll(/(?:from\s+|import\(\s*|require\(\s*)"([^"]+)"/g))
                if (IO.test(m[1])) found.push(`${file}: ${m[1]}`);
        }
        assert.deepEqual(found, []);
    });
});
