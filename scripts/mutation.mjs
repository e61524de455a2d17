// `npm run mutation`: StrykerJS over the safety core, configured by stryker.config.json (how to run
// it and what it measured: docs/testing.md). It starts the Stryker class without the CLI (written
// for Stryker 10, whose CLI refuses Node.js below 22; the dev dependency is Stryker 9 now, which
// declares Node.js 20, and this stays for its flags). Flags: --mutate <pattern[,pattern]>
// (a subset, e.g. components/rollout/runner.ts or components/cluster/drain.ts:17-23),
// --spec <dist/tests/unit/x.test.js[,...]> (only those tests: a quick loop on one area, kept out of
// the incremental file), --concurrency <n>, --force (every mutant again, ignoring that file).
/* global process, console */
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

const require = createRequire(import.meta.url);
const core = dirname(require.resolve("@stryker-mutator/core/package.json"));
// in this process, which loads the plugins to check the options, and in the test runners it starts
const preload = join(import.meta.dirname, "mutationPreload.cjs");
require(preload);
process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ""} --require ${JSON.stringify(preload)}`.trim();
const { Stryker } = await import(pathToFileURL(join(core, "dist", "src", "stryker.js")).href);

const options = {};
const spec = [];
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
    const flag = args[i];
    if (flag === "--force") options.force = true;
    else if (flag === "--mutate" && args[i + 1]) (options.mutate ??= []).push(...args[++i].split(","));
    else if (flag === "--concurrency" && args[i + 1]) options.concurrency = Number(args[++i]);
    else if (flag === "--spec" && args[i + 1]) spec.push(...args[++i].split(","));
    else {
        console.error(
            `unknown flag ${flag}: use --mutate <pattern[,pattern]>, --spec <test file[,file]>, --concurrency <n> or --force`,
        );
        process.exit(2);
    }
}
if (spec.length) {
    // a mutant these tests miss is reported as surviving, so the run must not enter the incremental file
    const config = JSON.parse(readFileSync(join(import.meta.dirname, "..", "stryker.config.json"), "utf8"));
    options.mochaOptions = { ...config.mochaOptions, spec };
    options.incremental = false;
}
await new Stryker(options).runMutationTest();
