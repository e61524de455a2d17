// A verify hook: the user's command run with the node's facts in its environment, never a shell
// (the rollout's HookRunner, components/rollout/cluster.ts).
import { execFile } from "node:child_process";
import { capText } from "../core/text.js";
import { rememberKubeconfigCredentials } from "./credentials.js";
import { redact } from "../core/redact.js";
import { hookEnvironment, withHookKubeconfig } from "./hookKubeconfig.js";
import type { HookCommand, HookResult } from "../rollout/cluster.js";

/** HookRunner.runHook: the hook run with a private copy of `kubeconfig` (KUBECONFIG) while it runs. */
export function runHook(
    hook: HookCommand,
    env: Record<string, string>,
    kubeconfig: string | undefined,
    signal?: AbortSignal,
): Promise<HookResult> {
    return withHookKubeconfig(kubeconfig, hook.timeoutSeconds, (path) =>
        runHookProcess(hook, { ...env, ...(path ? { KUBECONFIG: path } : {}) }, kubeconfig, signal),
    );
}

function runHookProcess(
    hook: HookCommand,
    env: Record<string, string>,
    kubeconfig: string | undefined,
    signal?: AbortSignal,
): Promise<HookResult> {
    const timeout = hook.timeoutSeconds * 1000;
    rememberKubeconfigCredentials(kubeconfig);
    return new Promise((resolve) => {
        execFile(
            hook.command[0],
            hook.command.slice(1),
            {
                env: { ...hookEnvironment(process.env, kubeconfig), ...hook.env, ...env },
                timeout,
                maxBuffer: 4 << 20,
                signal,
            },
            (err, stdout, stderr) => {
                // the hook's output reaches the step's log and its error: never a credential
                const whole = redact(`${stdout}${stderr}`.trim()).split("\n").slice(-20).join("\n");
                // a line of any length would stall the step's log (core/text.ts): the message's are capped
                const output = capText(whole);
                const cut =
                    output === whole
                        ? ""
                        : "\n(long lines cut here; the rollout's --json result has them whole, in `output`)";
                if (!err) return resolve({ ok: true, output });
                if (err.name === "AbortError")
                    return resolve({
                        ok: false,
                        output: `the run was stopped (${String(signal?.reason ?? "signal")}) while the hook ran; the hook was ended`,
                        interrupted: true,
                    });
                const e = err as NodeJS.ErrnoException & { killed?: boolean };
                const why = e.killed
                    ? `timed out after ${timeout / 1000}s`
                    : e.code === "ENOENT"
                      ? `${hook.command[0]} not found`
                      : `exit code ${e.code}`;
                resolve({ ok: false, output: `${why}${output ? `; output:\n${output}${cut}` : ""}`, whole });
            },
        );
    });
}
