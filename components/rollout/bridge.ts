// The bridge on the cluster: the probe pod copies the node's nftables tables as core/bridge.ts
// says just before a move to iptables mode restarts kube-proxy, and deletes the copy after the
// new mode's first sync or on any path that ends the move.
import { judgeBridgeCopy, judgeBridgeRemoval, parseBridgeOutput, type BridgeVerdict } from "../core/bridge.js";
import type { ProxyMode } from "../core/types.js";
import type { ProbeRunSettings } from "./context.js";

/**
 * Whether a move bridges: only nftables -> iptables, whose start-up deletes the old tables before
 * its first sync. ipvs state cannot be copied under another name, and copying iptables mode's
 * chains costs as much as the window it would bridge.
 */
export function movesBridged(from: ProxyMode, to: ProxyMode): boolean {
    return from === "nftables" && to === "iptables";
}

async function runBridgeProbe(run: ProbeRunSettings, node: string, action: "bridge" | "unbridge"): Promise<string> {
    const { output } = await run.cluster.runProbe(node, {
        image: run.verify.image,
        action,
        env: {},
        // the copy lists and loads every Service's rules: seconds per thousand Services
        timeoutSeconds: 600,
        priorityClassName: run.verify.priorityClassName,
        run: run.holder,
    });
    return output;
}

/** Copies kube-proxy's nftables tables on the node as the bridge, and checks the copy. */
export async function copyBridge(run: ProbeRunSettings, node: string): Promise<BridgeVerdict> {
    return judgeBridgeCopy(parseBridgeOutput(await runBridgeProbe(run, node, "bridge")));
}

/** Deletes the bridge from the node, and checks that none is left. */
export async function removeBridge(run: ProbeRunSettings, node: string): Promise<BridgeVerdict> {
    return judgeBridgeRemoval(parseBridgeOutput(await runBridgeProbe(run, node, "unbridge")));
}
