// Which cluster the CLI's commands act on: --kubeconfig/--context, else KPM_KUBECONFIG/KPM_CONTEXT,
// else the ambient kubeconfig. One loader, so every command refuses an unloadable kubeconfig alike.
import { loadKubeConfig } from "../cluster/client.js";
import { CliError, EXIT } from "./output.js";

/**
 * The kubeconfig a command was given, loaded; a kubeconfig that cannot be loaded is invalid input
 * (exit 2), whichever of the flag, the environment or the default named it.
 */
export function kubeconfigFromFlags(flags: {
    kubeconfig?: string;
    context?: string;
}): ReturnType<typeof loadKubeConfig> {
    const content = process.env.KPM_KUBECONFIG;
    const context = flags.context ?? (process.env.KPM_CONTEXT || undefined);
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
