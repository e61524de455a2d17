// The commands on one node: verify (the built-in checks) and cleanup (another mode's leftovers).
import { effectiveMode } from "../../core/config.js";
import { MARKS } from "../../core/plan.js";
import type { ProxyMode } from "../../core/types.js";
import { apiErrorMessage } from "../../cluster/client.js";
import { KubeProxyCluster, NotFound } from "../../cluster/kubeProxy.js";
import { configurationMode, verifyNode } from "../../rollout/runner.js";
import type { RolloutSpec } from "../../rollout/spec.js";
import { commandFlags, flag, modeValue, nodeNameValue, requireName } from "../args.js";
import { CliError, EXIT, table } from "../output.js";
import type { Io } from "../io.js";
import { ACCESS_HELP, NODE_POD_FLAGS, probeSettings, reachNodes, SERVICE_FLAGS, stamp } from "./access.js";

export const VERIFY_HELP = `kube-proxy-mode verify --node NAME [--mode MODE]

Runs the built-in checks on one node: the mode the process chose (/proxyMode and its start-up
log line), leftovers of other modes, rule sync health, and a connection to a Service's ClusterIP.
Creates a privileged pod on the node (kube-system, host network, the node's root filesystem
mounted at /host) to run the checks; it is deleted afterwards.

  --node NAME             required
  --mode MODE             the mode expected (default: the mode of the configuration the node runs)
  --service NS/NAME       Service to connect to (default default/kubernetes)
  --image IMAGE           probe image (default: busybox 1.36 pinned by digest)
  --flavor kubeadm|eks
${ACCESS_HELP}

Exit codes: 0 every check passed, 1 a check failed.`;

async function nodeMode(cluster: KubeProxyCluster, node: string): Promise<ProxyMode> {
    const inst = await cluster.installation();
    const n = await cluster.node(node);
    const placement = n.metadata?.labels?.[MARKS.configLabel];
    if (!placement || placement === MARKS.holdValue) return effectiveMode(inst.current.config);
    return configurationMode(cluster, placement);
}

/** verify's flags. */
export const VERIFY_FLAGS = {
    node: flag.value(nodeNameValue),
    mode: flag.value(modeValue),
    ...SERVICE_FLAGS,
    ...NODE_POD_FLAGS,
};

export async function verifyCommand(argv: string[], given: Io): Promise<number> {
    const command = commandFlags("verify", argv, given, VERIFY_FLAGS, VERIFY_HELP);
    if (!command) return EXIT.ok;
    const { flags, io } = command;
    const node = requireName(flags.node, "--node");
    const flavor = flags.flavor ?? "kubeadm";
    const mode = flags.mode;
    const verify = probeSettings(flags);
    const cluster = await reachNodes(flags, io);
    const log = (l: string) => io.err(`[${stamp()}] ${l}`);
    io.err(
        `verify: creating a privileged probe pod (host network, the node's root at /host) in kube-system on ${node}`,
    );
    try {
        const expected = mode ?? (await nodeMode(cluster, node));
        const spec = {
            verify,
            flavor,
            pools: [],
            target: { hash: "", mode: expected, config: "" },
            onFailure: "stop",
        } as unknown as RolloutSpec;
        const checks = await verifyNode({ cluster, spec, log }, node, expected, { cleanLeftovers: false, log });
        const ok = checks.every((c) => c.ok);
        if (flags.json) io.json({ node: node, mode: expected, ok, checks });
        else
            io.out(
                table(
                    ["CHECK", "RESULT", "DETAIL"],
                    checks.map((c) => [c.check, c.ok ? "ok" : "FAILED", c.detail]),
                ),
            );
        return ok ? EXIT.ok : EXIT.failed;
    } catch (e) {
        throw new CliError(
            `verify ${node}: ${e instanceof NotFound ? e.message : ((e as Error).message ?? apiErrorMessage(e))}`,
            EXIT.failed,
        );
    }
}

export const CLEANUP_HELP = `kube-proxy-mode cleanup --node NAME [--image IMAGE]

Removes kube-proxy's leftovers from one node (kube-ipvs0 and the IPVS virtual servers on it,
kube-proxy's ipsets, iptables chains and nftables tables; those of the mode its kube-proxy runs
now stay), and nothing of other agents: their KUBE-* chains, ipsets, virtual servers and tables
are listed as "not ours, left alone". Refuses while the node's kube-proxy runs in ipvs mode.
Creates a privileged pod on the node (kube-system, host network, the node's root filesystem
mounted at /host) to do it; it is deleted afterwards.

  --node NAME       required
  --image IMAGE     probe image (default: busybox 1.36 pinned by digest)
  --flavor kubeadm|eks
${ACCESS_HELP}`;

/** cleanup's flags. */
export const CLEANUP_FLAGS = {
    node: flag.value(nodeNameValue),
    ...NODE_POD_FLAGS,
};

export async function cleanupCommand(argv: string[], given: Io): Promise<number> {
    const command = commandFlags("cleanup", argv, given, CLEANUP_FLAGS, CLEANUP_HELP);
    if (!command) return EXIT.ok;
    const { flags, io } = command;
    const node = requireName(flags.node, "--node");
    const cluster = await reachNodes(flags, io);
    try {
        const running = (await cluster.kubeProxyPods(node)).filter((p) => !p.deleting);
        const mode = running.length ? await nodeMode(cluster, node) : undefined;
        if (mode === "ipvs") {
            throw new CliError(
                `cleanup ${node}: its kube-proxy runs in ipvs mode; move the node first (rollout), or stop kube-proxy there`,
                EXIT.invalid,
            );
        }
        const { image } = probeSettings(flags);
        io.err(`cleanup: creating a privileged pod (host network, the node's root at /host) in kube-system on ${node}`);
        const { output, succeeded } = await cluster.runProbe(node, {
            image,
            action: "cleanup",
            env: mode ? { KPM_MODE: mode } : {},
            timeoutSeconds: 120,
        });
        const lines = output.split("\n").filter((l) => l && !l.startsWith("###"));
        if (flags.json) io.json({ node: node, ok: succeeded, removed: lines });
        else io.out(lines.length ? lines.join("\n") : "nothing to remove");
        return succeeded ? EXIT.ok : EXIT.failed;
    } catch (e) {
        if (e instanceof CliError) throw e;
        throw new CliError(`cleanup ${node}: ${(e as Error).message ?? apiErrorMessage(e)}`, EXIT.failed);
    }
}
