// A step of `npm run build`, after tsc: bundles the fleet's Temporal workflow (components/fleet/
// workflow.ts, as tsc wrote it) with the SDK's webpack bundler into
// dist/components/fleet/workflow-bundle.js, so a fleet worker loads that file
// (Worker.create({ workflowBundle: { codePath: workflowBundlePath() } })) instead of running
// webpack each time it starts.
import { bundleWorkflowCode, DefaultLogger } from "@temporalio/worker";
import { writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { WORKFLOW_BUNDLE_FILE } from "../components/fleet/workflowBundle.js";

const root = join(__dirname, "..", "..");
const fleetDir = join(__dirname, "..", "components", "fleet");

async function main() {
    const started = Date.now();
    const { code } = await bundleWorkflowCode({
        workflowsPath: join(fleetDir, "workflow.js"),
        // webpack's own progress lines are noise in a build; its warnings and errors are not
        logger: new DefaultLogger("WARN"),
    });
    const out = join(fleetDir, WORKFLOW_BUNDLE_FILE);
    writeFileSync(out, code);
    const kB = (Buffer.byteLength(code) / 1e3).toFixed(0);
    console.log(`bundled the fleet workflow: ${relative(root, out)}, ${kB} kB, in ${Date.now() - started} ms`);
}

main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
});
