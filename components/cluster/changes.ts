// The watch helper of KubeProxyCluster's parts: a waiter wakes when what it waits on changes,
// instead of polling (drains, probe pods, the installer DaemonSet's waits).
import type { KubeProxyClient } from "./kubeProxyClient.js";
import { watchRefused } from "./client.js";
import type { ServerRecovery } from "./retry.js";
import { isApiTimeout, type Watcher } from "./timeouts.js";

/**
 * Wakes a waiter when the objects a watch selects change (pods on a node, by spec.nodeName; one
 * DaemonSet, by metadata.name), so drains, probe waits and the restore's waits react at once
 * instead of polling. A watch that cannot start (the server away) or ends only makes next() fall
 * back to its timeout; a watch the server refuses (401/403, not a restart's warm-up) is a missing
 * permission, and start() fails naming it instead of waiting out every timeout. The server ends
 * each watch after its window, and one gone silent is given up (timeouts.ts): either is started
 * again a second later, and the waiters woken to read what they may have missed.
 */
export class Changes {
    private waiters: (() => void)[] = [];
    private request: { abort(): void } | undefined;
    private dirty = false;
    private stopped = false;
    private restart?: NodeJS.Timeout;

    constructor(
        private readonly watcher: Watcher,
        private readonly path: string,
        private readonly fieldSelector: string,
        private readonly server: ServerRecovery,
    ) {}

    async start(): Promise<void> {
        let ended = false;
        let failure: unknown;
        let request: { abort(): void } | undefined;
        try {
            request = await this.watcher.watch(
                this.path,
                { fieldSelector: this.fieldSelector },
                () => this.wake(),
                (err) => {
                    ended = true;
                    failure = err;
                    this.request = undefined;
                    if (err === null || (isApiTimeout(err) && err.kind === "watch")) this.startAgain();
                },
            );
        } catch (e) {
            ended = true;
            failure = e;
        }
        if (this.stopped) return void request?.abort();
        if (!ended) return void (this.request = request);
        this.server.saw(failure);
        if (this.server.refuses(failure)) throw watchRefused(this.path, failure);
    }

    private startAgain(): void {
        if (this.stopped || this.restart) return;
        this.wake();
        this.restart = setTimeout(() => {
            this.restart = undefined;
            if (!this.stopped) this.start().catch(() => undefined);
        }, 1000);
    }

    private wake(): void {
        this.dirty = true;
        for (const w of this.waiters.splice(0)) w();
    }

    /** Resolves at the next change (or at once if one came since the last call), or after ms. */
    next(ms: number): Promise<void> {
        if (this.dirty) {
            this.dirty = false;
            return Promise.resolve();
        }
        return new Promise((resolve) => {
            const done = () => {
                clearTimeout(t);
                this.dirty = false;
                resolve();
            };
            const t = setTimeout(done, ms);
            this.waiters.push(done);
        });
    }

    stop(): void {
        this.stopped = true;
        clearTimeout(this.restart);
        this.request?.abort();
        this.request = undefined;
        this.wake();
    }
}

/** Changes of the pods on one node, in one namespace or in all. */
export function changesOfPodsOn(client: KubeProxyClient, node: string, namespace?: string): Changes {
    return new Changes(
        client.watcher(),
        namespace ? `/api/v1/namespaces/${namespace}/pods` : "/api/v1/pods",
        `spec.nodeName=${node}`,
        client.server,
    );
}
