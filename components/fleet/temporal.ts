// The Temporal side of `kube-proxy-mode fleet` (issue #42): the temporal binary, a client on the
// embedded dev server or on --temporal-address, and the fleet's worker. The CLI loads this module
// when a fleet command needs Temporal; it also hands on the SDK's loaders, the state dir and the
// embedded server from the modules that define them.
import { accessSync, constants, existsSync, statSync } from "node:fs";
import { delimiter, join, resolve } from "node:path";
import type { Client } from "@temporalio/client";
import type { NativeConnection, Worker } from "@temporalio/worker";
import { FleetSetupError } from "./errors.js";
import { FLEET_TASK_QUEUE, type StackActivities } from "./contract.js";
import { stackActivities } from "./activities.js";
import { workflowBundlePath } from "./workflowBundle.js";
import { temporalClient, temporalWorker } from "./temporalSdk.js";

export { temporalClient, temporalWorker } from "./temporalSdk.js";
export { defaultStateDir } from "./serverState.js";
export { embeddedServer } from "./embeddedServer.js";

function executable(path: string): boolean {
    try {
        accessSync(path, constants.X_OK);
        return statSync(path).isFile();
    } catch {
        return false;
    }
}

/**
 * The temporal binary: --temporal-bin, else KPM_TEMPORAL_BIN, else `temporal` on PATH. Missing or
 * not executable: exit 2 with where it looked and the fix.
 */
export function findTemporalBin(given: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
    const fix =
        "install the Temporal CLI (bash scripts/toolchain.sh builds it into the toolchain's bin dir; or https://github.com/temporalio/cli v1.9.1), then pass --temporal-bin PATH, set KPM_TEMPORAL_BIN, or put temporal on PATH; or pass --temporal-address HOST:PORT to use a Temporal cluster";
    for (const [value, what] of [
        [given, "--temporal-bin"],
        [env.KPM_TEMPORAL_BIN, "KPM_TEMPORAL_BIN"],
    ] as const) {
        if (value === undefined || value === "") continue;
        const path = resolve(value);
        if (!executable(path)) throw new FleetSetupError(`${what} ${value}: no executable file there; ${fix}`, 2);
        return path;
    }
    for (const dir of (env.PATH ?? "").split(delimiter).filter((d) => d !== "")) {
        const path = join(dir, "temporal");
        if (executable(path)) return path;
    }
    throw new FleetSetupError(
        `no temporal binary: --temporal-bin is not given, KPM_TEMPORAL_BIN is not set and PATH has no temporal; ${fix}`,
        2,
    );
}

/** A client on `address` (HOST:PORT), in `namespace` (the embedded server's or --temporal-address). A server that cannot be reached is exit 1, naming it. */
export async function connectClient(address: string, namespace = "default"): Promise<Client> {
    const { Client, Connection } = temporalClient();
    try {
        const connection = await Connection.connect({ address, connectTimeout: 10_000 });
        return new Client({ connection, namespace });
    } catch (e) {
        throw new FleetSetupError(
            `cannot reach the Temporal server at ${address}: ${((e as Error).message ?? String(e)).split("\n")[0]}`,
        );
    }
}

export interface WorkerOptions {
    connection: NativeConnection;
    namespace?: string;
    activities: StackActivities;
    /** the prebundled workflow code (dist/components/fleet/workflow-bundle.js) */
    workflowBundle: string;
}

/** A fleet worker on FLEET_TASK_QUEUE (not yet running: call run(), stop with shutdown()). */
export async function runWorker(options: WorkerOptions): Promise<Worker> {
    const { Worker } = temporalWorker();
    if (!existsSync(options.workflowBundle))
        throw new FleetSetupError(
            `the fleet's workflow bundle is missing at ${options.workflowBundle}; rebuild kube-proxy-mode (npm run build)`,
            1,
        );
    return Worker.create({
        connection: options.connection,
        namespace: options.namespace ?? "default",
        taskQueue: FLEET_TASK_QUEUE,
        workflowBundle: { codePath: options.workflowBundle },
        activities: options.activities,
    });
}

/** The fleet's worker on `address`: the product's stack activities and workflow bundle. */
export async function fleetWorker(
    address: string,
    namespace = "default",
): Promise<{ worker: Worker; connection: NativeConnection }> {
    const { NativeConnection, Runtime, DefaultLogger } = temporalWorker();
    try {
        // the SDK's own lines (worker state changes, each failed activity attempt with its stack)
        // are not the fleet's progress: the fleet's events say what failed
        Runtime.install({ logger: new DefaultLogger("ERROR") });
    } catch {
        /* installed already (a second worker in this process) */
    }
    let connection: NativeConnection;
    try {
        connection = await NativeConnection.connect({ address });
    } catch (e) {
        throw new FleetSetupError(
            `cannot reach the Temporal server at ${address}: ${((e as Error).message ?? String(e)).split("\n")[0]}`,
        );
    }
    try {
        const worker = await runWorker({
            connection,
            namespace,
            activities: stackActivities(),
            workflowBundle: workflowBundlePath(),
        });
        return { worker, connection };
    } catch (e) {
        await connection.close().catch(() => undefined);
        throw e;
    }
}
