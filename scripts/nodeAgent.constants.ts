// Shared with tests: the node labels of the reference cluster's real nodes that change what a
// node's pods find on their PATH.
import { join } from "node:path";

/** node label: tools left out of that node's PATH, dot-separated (e.g. "nft"), to make a node that cannot run a mode */
export const WITHOUT_TOOLS_LABEL = "reference.kube-proxy-mode.io/without-tools";

/**
 * TEST HOOK (reference cluster only, never in the product): node label naming host tools,
 * dot-separated (e.g. "iptables-nft-restore"), that pause before they run on that node. Each
 * call of such a tool from a pod on the node (the probe's cleanup runs host tools through the
 * node's PATH) creates `paused-<tool>` in the node's pause directory and waits there until a
 * test creates `resume-<tool>` (at most 60 s), then runs the real tool. A test writes to the
 * node inside that window: a deterministic "another process writes during the cleanup".
 */
export const PAUSE_TOOLS_LABEL = "reference.kube-proxy-mode.io/test-hook-pause-tools";

/** The directory where a node's paused tools signal and wait (see PAUSE_TOOLS_LABEL). */
export function pauseDir(clusterDir: string, node: string): string {
    return join(clusterDir, "agent", "nodes", node, "pause");
}
