// `npm run mutation`: StrykerJS over the safety core, configured by stryker.config.json (how to run
// it and what it measured: docs/testing.md). Stryker 10's CLI refuses Node.js below 22, which this
// package still supports, and Stryker 9's mocha runner refuses mocha 12; the Stryker class itself
// runs on Node.js 20, so this starts it without the CLI. Flags: --mutate <pattern[,pattern]>
// (a subset, e.g. components/rollout/runner.ts or components/cluster/kubeProxy.ts:1047-1204),
// --concurrency <n>, --force (every mutant again, ignoring the incremental file).
/* global process, console */
import { createRequire } from "node:module";
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
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
    const flag = args[i];
    if (flag === "--force") options.force = true;
    else if (flag === "--mutate" && args[i + 1]) (options.mutate ??= []).push(...args[++i].split(","));
    else if (flag === "--concurrency" && args[i + 1]) options.concurrency = Number(args[++i]);
    else {
        console.error(`unknown flag ${flag}: use --mutate <pattern[,pattern]>, --concurrency <n> or --force`);
        process.exit(2);
    }
}
await new Stryker(options).runMutationTest();
