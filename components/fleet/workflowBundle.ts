// Where the build put the fleet's prebundled workflow code (scripts/bundleWorkflow.ts), for a
// worker's Worker.create({ workflowBundle: { codePath: workflowBundlePath() } }).
import { existsSync } from "node:fs";
import { join } from "node:path";

/** The bundle's file name, beside workflow.js in dist/components/fleet. */
export const WORKFLOW_BUNDLE_FILE = "workflow-bundle.js";

/** The prebundled workflow's path; throws, saying how to make it, when the build did not. */
export function workflowBundlePath(): string {
    const path = join(__dirname, WORKFLOW_BUNDLE_FILE);
    if (!existsSync(path)) {
        throw new Error(
            `the fleet's workflow bundle is missing (${path}): run npm run build, whose last step (scripts/bundleWorkflow.ts) writes it`,
        );
    }
    return path;
}
