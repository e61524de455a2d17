// kube-proxy-mode status: one row per node, what it runs and whether it was verified.
import { effectiveMode } from "../../core/config.js";
import { configHash, MARKS } from "../../core/plan.js";
import { parseProbeOutput } from "../../core/probe.js";
import type { ProxyMode } from "../../core/types.js";
import { apiErrorMessage } from "../../cluster/client.js";
import { KubeProxyCluster, NotFound } from "../../cluster/kubeProxy.js";
import { configurationMode, serviceProbeEnv } from "../../rollout/runner.js";
import { commandFlags, flag } from "../args.js";
import { CliError, EXIT, table } from "../output.js";
import type { Io } from "../io.js";
import { ACCESS_HELP, NODE_POD_FLAGS, probeSettings, reachNodes, SERVICE_FLAGS } from "./access.js";

export const STATUS_HELP = `kube-proxy-mode status [--flavor kubeadm|eks] [--probe]

One row per node: pool label, the configuration it runs (hash, or canonical), the mode of that
configuration, the mode the process reports (with --probe, which runs a probe pod per node),
kernel, and whether and how it was verified.

With --probe it creates a privileged pod on every node (kube-system, host network, the node's
root filesystem mounted at /host); each is deleted afterwards.

  --flavor kubeadm|eks    where the installer keeps kube-proxy (default kubeadm)
  --probe                 run a probe pod per node: the mode its kube-proxy reports and whether a
                          connection to a Service's ClusterIP flows (needs nodes that run pods)
  --service NS/NAME       the Service --probe connects to (default default/kubernetes)
  --image IMAGE           probe image (default: busybox 1.36 pinned by digest)
${ACCESS_HELP}`;

/** What a probe pod on the node reports: the mode its kube-proxy chose, and whether a connection to the Service flowed. */
async function probeStatus(
    cluster: KubeProxyCluster,
    node: string,
    image: string,
    service: string,
    env: Record<string, string>,
): Promise<{ reported: string; traffic: string }> {
    try {
        const { output } = await cluster.runProbe(node, { image, action: "probe", env, timeoutSeconds: 60 });
        const report = parseProbeOutput(output);
        const reported = report.proxyMode ?? `(no answer: ${report.proxyModeError?.slice(0, 40)})`;
        const traffic = !report.connect.attempted
            ? `not tried (no Service ${service})`
            : report.connect.ok
              ? `flowed to ${service}`
              : `FAILED to ${service}`;
        return { reported, traffic };
    } catch (e) {
        return { reported: `(probe failed: ${(e as Error).message.slice(0, 60)})`, traffic: "unknown" };
    }
}

/** One row of `status`: a node, where it runs, and what it reports. */
interface StatusRow {
    node: string;
    pool: string;
    config: string;
    mode: ProxyMode | "none";
    reported: string | null;
    traffic: string | null;
    kernel: string;
    cordoned: boolean;
    verified: string;
}

/** The mode each placement runs (its hashed ConfigMap's, configurationMode); "none" for a held node. */
function placementModes(
    cluster: KubeProxyCluster,
    canonicalMode: ProxyMode,
): (placement: string | null) => Promise<ProxyMode | "none"> {
    return async (placement) => {
        if (placement === MARKS.holdValue) return "none";
        if (!placement) return canonicalMode;
        return configurationMode(cluster, placement).catch(() => canonicalMode);
    };
}

/** The status table on stdout, the canonical ConfigMap's line on stderr. */
function printStatus(
    io: Io,
    rows: StatusRow[],
    canonical: { hash: string; mode: ProxyMode },
    inRollout: boolean,
    probe: boolean,
): void {
    const header = [
        "NODE",
        "POOL",
        "CONFIG",
        "MODE",
        ...(probe ? ["REPORTED", "TRAFFIC"] : []),
        "KERNEL",
        "CORDONED",
        "VERIFIED",
    ];
    const cells = rows.map((r) => [
        r.node,
        r.pool,
        r.config,
        r.mode,
        ...(probe ? [r.reported ?? "", r.traffic ?? ""] : []),
        r.kernel,
        r.cordoned ? "yes" : "no",
        r.verified,
    ]);
    io.out(table(header, cells));
    const rollout = inRollout ? "; a rollout is in progress (the installer's DaemonSet is in rollout shape)" : "";
    io.err(`canonical ConfigMap: ${canonical.mode} (${canonical.hash})${rollout}`);
}

/** status's flags. */
export const STATUS_FLAGS = {
    probe: flag.switch(),
    ...SERVICE_FLAGS,
    ...NODE_POD_FLAGS,
};

export async function statusCommand(argv: string[], given: Io): Promise<number> {
    const command = commandFlags("status", argv, given, STATUS_FLAGS, STATUS_HELP);
    if (!command) return EXIT.ok;
    const { flags, io } = command;
    const cluster = await reachNodes(flags, io);
    if (flags.probe)
        io.err(
            "status --probe: creating a privileged probe pod (host network, the node's root at /host) in kube-system on each node",
        );
    try {
        const inst = await cluster.installation();
        const canonicalHash = configHash(inst.current.text);
        const canonicalMode = effectiveMode(inst.current.config);
        const modeOf = placementModes(cluster, canonicalMode);
        const { service, image } = probeSettings(flags);
        const probeEnv = flags.probe ? (await serviceProbeEnv(cluster, service)).env : {};
        const rows: StatusRow[] = [];
        for (const n of await cluster.nodeStates()) {
            const placement = n.placement;
            const probed = flags.probe ? await probeStatus(cluster, n.name, image, service, probeEnv) : undefined;
            const verified = n.verified
                ? n.verified === (placement ?? canonicalHash)
                    ? `yes (${n.verified})`
                    : `on ${n.verified}, not this config`
                : "no";
            rows.push({
                node: n.name,
                pool: n.labels["pool"] ?? "",
                config: placement ?? `canonical (${canonicalHash})`,
                mode: await modeOf(placement),
                reported: probed?.reported ?? null,
                traffic: probed?.traffic ?? null,
                kernel: n.kernelVersion ?? "",
                cordoned: n.unschedulable === true,
                verified,
            });
        }
        const canonical = { hash: canonicalHash, mode: canonicalMode };
        if (flags.json) io.json({ canonical, rolloutInProgress: inst.inRollout, nodes: rows });
        else printStatus(io, rows, canonical, inst.inRollout, flags.probe === true);
        return EXIT.ok;
    } catch (e) {
        throw new CliError(`status: ${e instanceof NotFound ? e.message : apiErrorMessage(e)}`, EXIT.failed);
    }
}
