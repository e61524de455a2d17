// PLACEHOLDER (i42-cli): replaced at merge by the workflow helper's workflowBundle.ts.
// Where the prebundled fleet workflow is: dist/components/fleet/workflow-bundle.js.
import { join } from "node:path";

export function workflowBundlePath(): string {
    return join(__dirname, "workflow-bundle.js");
}
