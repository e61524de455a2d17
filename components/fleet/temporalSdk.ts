// The Temporal SDK of `kube-proxy-mode fleet` (issue #42): an optional peer dependency, loaded
// when a fleet command needs it; its absence is said with the npm command that installs it.
import { FleetSetupError } from "./errors.js";

/** What installs the Temporal SDK (optional peer dependencies of kube-proxy-mode). */
export const TEMPORAL_INSTALL =
    "npm install @temporalio/client@^1.24.0 @temporalio/worker@^1.24.0 @temporalio/workflow@^1.24.0 @temporalio/activity@^1.24.0 @temporalio/common@^1.24.0";

/** A require that failed because a package of the Temporal SDK is not installed: exit 2 naming the install; else undefined. */
export function sdkMissing(e: unknown): FleetSetupError | undefined {
    const name = /Cannot find module '(@temporalio\/[a-z-]+)/.exec(String((e as Error)?.message ?? ""))?.[1];
    if ((e as NodeJS.ErrnoException)?.code !== "MODULE_NOT_FOUND" || !name) return undefined;
    return new FleetSetupError(
        `fleet needs the Temporal SDK (${name} is not installed); install it beside kube-proxy-mode: ${TEMPORAL_INSTALL}`,
        2,
    );
}

/** One of the SDK's packages, or a FleetSetupError (exit 2) naming the install command. */
function sdk<T>(load: () => T): T {
    try {
        return load();
    } catch (e) {
        throw sdkMissing(e) ?? e;
    }
}

/* eslint-disable @typescript-eslint/no-require-imports -- optional peer dependencies, loaded when a fleet command runs */
export const temporalClient = () => sdk(() => require("@temporalio/client") as typeof import("@temporalio/client"));
export const temporalWorker = () => sdk(() => require("@temporalio/worker") as typeof import("@temporalio/worker"));
/* eslint-enable @typescript-eslint/no-require-imports */
