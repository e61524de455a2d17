// Which cluster the CLI's commands act on: --kubeconfig/--context, else KPM_KUBECONFIG/KPM_CONTEXT,
// else the ambient kubeconfig. One loader, so every command refuses an unloadable kubeconfig alike.
import { loadKubeConfig, noKubeconfig, type Cluster } from "../cluster/client.js";
import { isApiTimeout } from "../cluster/timeouts.js";
import type { Io } from "./io.js";
import { CliError, EXIT } from "./output.js";

/**
 * The kubeconfig a command was given, loaded; a kubeconfig that cannot be loaded is invalid input
 * (exit 2), whichever of the flag, the environment or the default named it.
 */
export function kubeconfigFromFlags(flags: {
    kubeconfig?: string;
    context?: string;
}): ReturnType<typeof loadKubeConfig> {
    // empty is unset, as for KPM_CONTEXT (an exported but empty variable)
    const content = process.env.KPM_KUBECONFIG || undefined;
    const context = flags.context ?? (process.env.KPM_CONTEXT || undefined);
    const missing = flags.kubeconfig || content ? undefined : noKubeconfig();
    if (missing)
        throw new CliError(
            `no kubeconfig found: ${missing}; pass --kubeconfig PATH, set KUBECONFIG to the kubeconfig's path, or put its content in KPM_KUBECONFIG`,
            EXIT.invalid,
        );
    try {
        return loadKubeConfig({
            kubeconfig: flags.kubeconfig,
            kubeconfigContent: flags.kubeconfig ? undefined : content,
            context,
        });
    } catch (e) {
        // the message of a kubeconfig parse error can quote the file: say only what failed
        throw new CliError(
            `cannot load the kubeconfig${flags.kubeconfig ? ` ${flags.kubeconfig}` : ""}: ${(e as Error).name === "Error" ? (e as Error).message.split("\n")[0].slice(0, 200) : "unreadable"}`,
            EXIT.invalid,
        );
    }
}

/**
 * A command's first contact with its cluster, before anything else is asked of it: a line on
 * stderr every few seconds while the server does not answer; a server out of reach fails the
 * command (exit 1) at once, one that does not answer after the request timeout, each naming it.
 */
export async function reachCluster(cluster: Cluster, io: Io): Promise<void> {
    try {
        await cluster.reach((line) => io.err(line));
    } catch (e) {
        if (isApiTimeout(e))
            throw new CliError(`${e.message}; set KPM_API_TIMEOUT_SECONDS to wait longer`, EXIT.failed);
        throw new CliError(
            `${(e as Error).message}: check that the cluster is up and that the kubeconfig's context points at it (--kubeconfig, --context)`,
            EXIT.failed,
        );
    }
}
