// What every command that acts on a cluster shares: which cluster (--kubeconfig, --context), its
// output flags, and the connection that checks the cluster is the one a preview reviewed.
import { namesFor, type Flavor } from "../../core/facts.js";
import { clusterIdentity, normalizeServer } from "../../cluster/client.js";
import { hookKubeconfig } from "../../cluster/credentials.js";
import { KubeProxyCluster } from "../../cluster/kubeProxy.js";
import { requestTimeoutFromEnvironment } from "../../cluster/timeouts.js";
import { verifySchema, type RolloutSpec, type VerifySpec } from "../../rollout/spec.js";
import { flag, flavorValue, nonEmptyValue, serviceValue, type Flags } from "../args.js";
import { type Io } from "../io.js";
import { kubeconfigFromFlags, reachCluster } from "../kubeconfig.js";
import { CliError, EXIT } from "../output.js";

/** The flags of every command that acts on a cluster: which cluster, and JSON output. */
export const ACCESS_FLAGS = {
    kubeconfig: flag.value(),
    context: flag.value(),
    json: flag.switch(),
    output: flag.output(),
};

export const ACCESS_HELP = `  --kubeconfig PATH, --context NAME   which cluster (default: $KUBECONFIG or ~/.kube/config;
                                      KPM_KUBECONFIG may hold a kubeconfig's content instead,
                                      KPM_CONTEXT the context)
  --json                              one JSON object on stdout
  -o, --output json|yaml              -o json is --json; -o yaml the same object as YAML

Every request to the API server is abandoned after KPM_API_TIMEOUT_SECONDS (default 15 s; for a
rollout at most a third of its lease): a server that does not answer fails the command, exit 1,
naming the server and the timeout.`;

export function connect(
    flags: Flags<typeof ACCESS_FLAGS>,
    flavor: Flavor,
    names?: RolloutSpec["names"],
    reviewed?: RolloutSpec["cluster"],
): { cluster: KubeProxyCluster; kubeconfig?: string } {
    const kc = kubeconfigFromFlags(flags);
    try {
        requestTimeoutFromEnvironment();
    } catch (e) {
        throw new CliError((e as Error).message, EXIT.invalid);
    }
    const here = clusterIdentity(kc);
    if (reviewed && here.server !== normalizeServer(reviewed.server)) {
        throw new CliError(
            `refusing to act: the kubeconfig points at the API server ${here.server} (context ${here.context}), not ${reviewed.server}${reviewed.context ? ` (context ${reviewed.context})` : ""}, the cluster the preview reviewed; ` +
                `pass the kubeconfig and context of that cluster, or preview again against this one`,
            EXIT.invalid,
        );
    }
    // hooks get this very cluster and identity (the context applied), in a private file while they run
    return { cluster: new KubeProxyCluster(kc, namesFor(flavor, names ?? {})), kubeconfig: hookKubeconfig(kc) };
}

export function stamp(): string {
    return new Date().toISOString().slice(11, 19);
}

/**
 * The flags of the commands that run a privileged pod on nodes (status, verify, cleanup): its
 * image and where the installer keeps kube-proxy, besides which cluster.
 */
export const NODE_POD_FLAGS = {
    flavor: flag.value(flavorValue),
    image: flag.value(nonEmptyValue),
    ...ACCESS_FLAGS,
};

/** The Service a probe pod connects to (status --probe, verify). */
export const SERVICE_FLAGS = { service: flag.value(serviceValue) };

/** The probe pod's image and Service: the flags given, else the rollout's verify defaults. */
export function probeSettings(flags: { image?: string; service?: string }): VerifySpec {
    return verifySchema.parse({
        ...(flags.service ? { service: flags.service } : {}),
        ...(flags.image ? { image: flags.image } : {}),
    });
}

/** The cluster of a node command's flags (--flavor, default kubeadm), once it answered. */
export async function reachNodes(flags: Flags<typeof NODE_POD_FLAGS>, io: Io): Promise<KubeProxyCluster> {
    const { cluster } = connect(flags, flags.flavor ?? "kubeadm");
    await reachCluster(cluster, io);
    return cluster;
}
