// The rollout's Lease: one run at a time changes a cluster. Taken, renewed and released with
// compare-and-swaps on its resourceVersion, so two runs never both believe they hold it.
import * as k8s from "../libraries/kubernetesClient.js";
import { LEASE_NAME, MARKS } from "../core/plan.js";
import type { LeaseClaim, LeaseHolder } from "../rollout/cluster.js";
import { setTimeout as sleepFor } from "node:timers/promises";
import { apiStatus } from "./client.js";
import { createUnlessExists, FIELD_MANAGER, isNotFound, type KubeProxyClient } from "./kubeProxyClient.js";

/**
 * A Lease's times are MicroTime (RFC 3339 with microseconds), which the API server insists on;
 * client-node would send a Date with milliseconds, so they travel as text.
 */
function microTime(d: Date): Date {
    return d.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z") as unknown as Date;
}

/** Whether the Lease's last renewal, as its holder's clock wrote it, is older than its duration by this machine's clock. */
function leaseLooksExpired(lease: k8s.V1Lease, now: Date): boolean {
    const s = lease.spec ?? {};
    const renewed = s.renewTime ? new Date(s.renewTime).getTime() : 0;
    return renewed + (s.leaseDurationSeconds ?? 0) * 1000 < now.getTime();
}

/** Who holds the Lease, as a refusal names it. */
function leaseHolder(lease: k8s.V1Lease | undefined): LeaseHolder {
    const s = lease?.spec ?? {};
    return {
        holder: s.holderIdentity ?? "unknown",
        renewedAt: s.renewTime ? new Date(s.renewTime).toISOString() : "never",
        durationSeconds: s.leaseDurationSeconds ?? 0,
    };
}

/** The rollout's Lease in kube-proxy's namespace (core/plan.ts LEASE_NAME). */
export class RolloutLease {
    constructor(private readonly client: KubeProxyClient) {}

    private coordinationApi?: k8s.CoordinationV1Api;
    private get coordination(): k8s.CoordinationV1Api {
        return (this.coordinationApi ??= this.client.api(k8s.CoordinationV1Api));
    }

    private async read(): Promise<k8s.V1Lease | undefined> {
        try {
            return await this.coordination.readNamespacedLease({
                name: LEASE_NAME,
                namespace: this.client.names.namespace,
            });
        } catch (e) {
            if (isNotFound(e)) return undefined;
            throw e;
        }
    }

    /**
     * Takes the rollout's Lease for `holder`, unless another holder renewed it within its duration.
     * A Lease's renewTime is written by its holder's clock, which may run behind this machine's: one
     * that looks expired here is watched for its whole duration on this machine's own clock, and
     * taken over (compare-and-swap on the version watched) only if it did not change meanwhile; one
     * that changed is alive, and the run refuses, naming its holder.
     */
    async acquire(
        holder: string,
        durationSeconds: number,
        log: (line: string) => void = () => undefined,
        signal?: AbortSignal,
    ): Promise<LeaseClaim> {
        let writtenAt = 0;
        const spec = (): k8s.V1LeaseSpec => {
            writtenAt = performance.now();
            const now = new Date();
            return {
                holderIdentity: holder,
                leaseDurationSeconds: durationSeconds,
                acquireTime: microTime(now),
                renewTime: microTime(now),
            };
        };
        for (let attempt = 0; attempt < 3; attempt++) {
            const lease = await this.read();
            if (!lease) {
                if (await this.create(spec())) return { acquired: true, writtenAt };
                continue;
            }
            const held = lease.spec?.holderIdentity;
            if (held && held !== holder) {
                if (!leaseLooksExpired(lease, new Date())) return { acquired: false, current: leaseHolder(lease) };
                const seconds = lease.spec?.leaseDurationSeconds ?? 0;
                const current = leaseHolder(lease);
                log(
                    `the rollout lease of ${current.holder} (renewed ${current.renewedAt}, lasts ${seconds}s) has expired by this machine's clock; ` +
                        `watching it for ${seconds}s on this machine's own clock before taking it over, in case its holder's clock runs behind`,
                );
                // an abort ends the watch early; it is not an error
                await sleepFor(seconds * 1000, undefined, { signal }).catch(() => undefined);
                // told to stop while watching: the Lease is left as it is
                if (signal?.aborted) return { acquired: false, current };
                const again = await this.read();
                if (again?.metadata?.resourceVersion !== lease.metadata?.resourceVersion) {
                    if (again?.spec?.holderIdentity && again.spec.holderIdentity !== holder)
                        return { acquired: false, current: leaseHolder(again) };
                    continue; // released or gone meanwhile: decide again
                }
            }
            if (await this.takeOver(lease, spec())) return { acquired: true, writtenAt };
        }
        return { acquired: false, current: leaseHolder(await this.read()) };
    }

    /** Creates the Lease; false when another run created it first. */
    private async create(spec: k8s.V1LeaseSpec): Promise<boolean> {
        const namespace = this.client.names.namespace;
        return createUnlessExists(() =>
            this.coordination.createNamespacedLease({
                namespace,
                fieldManager: FIELD_MANAGER,
                body: {
                    metadata: {
                        name: LEASE_NAME,
                        namespace,
                        labels: { [MARKS.managedByLabel]: MARKS.managedByValue },
                    },
                    spec,
                },
            }),
        );
    }

    /** Replaces a free Lease with ours; false when another run took it over first (409). */
    private takeOver(lease: k8s.V1Lease, spec: k8s.V1LeaseSpec): Promise<boolean> {
        // two runs taking over at once: the compare-and-swap lets one win
        return this.replaceUnlessChanged({
            ...lease,
            spec: { ...spec, leaseTransitions: (lease.spec?.leaseTransitions ?? 0) + 1 },
        });
    }

    /**
     * Renews the Lease if `holder` still holds it; false when it does not. A 409 means another
     * write landed between the read and the replace (a takeover, or this run's own release): read
     * again and decide on what is there now.
     */
    async renew(holder: string): Promise<boolean> {
        for (let attempt = 0; attempt < LEASE_WRITE_ATTEMPTS; attempt++) {
            const lease = await this.read();
            if (!lease || lease.spec?.holderIdentity !== holder) return false;
            const renewed = await this.replaceUnlessChanged({
                ...lease,
                spec: { ...lease.spec, renewTime: microTime(new Date()) },
            });
            if (renewed) return true;
        }
        throw leaseContended("renew");
    }

    /**
     * Frees the Lease if `holder` still holds it. A 409 means a write landed between the read and
     * the replace (most often this run's own renewal, still in flight when the run ended): read
     * again and release what is there, rather than leave the next run waiting out the lease.
     */
    async release(holder: string): Promise<void> {
        for (let attempt = 0; attempt < LEASE_WRITE_ATTEMPTS; attempt++) {
            const lease = await this.read();
            if (!lease || lease.spec?.holderIdentity !== holder) return;
            // no holder, no renewal: how often it changed hands is kept, as client-go's release keeps it
            const { leaseDurationSeconds, leaseTransitions } = lease.spec;
            const released = await this.replaceUnlessChanged({
                ...lease,
                spec: { leaseDurationSeconds, leaseTransitions },
            });
            if (released) return;
        }
        throw leaseContended("release");
    }

    /** Replaces the Lease read as `lease` (its resourceVersion makes it a compare-and-swap); false on a 409. */
    private async replaceUnlessChanged(lease: k8s.V1Lease): Promise<boolean> {
        try {
            await this.coordination.replaceNamespacedLease({
                name: LEASE_NAME,
                namespace: this.client.names.namespace,
                fieldManager: FIELD_MANAGER,
                body: lease,
            });
            return true;
        } catch (e) {
            if (apiStatus(e) !== 409) throw e;
            return false;
        }
    }
}

/** How often a renewal or a release re-reads the Lease after a 409 before it gives up. */
const LEASE_WRITE_ATTEMPTS = 5;

function leaseContended(what: "renew" | "release"): Error {
    return new Error(
        `could not ${what} the rollout Lease: it changed under every one of ${LEASE_WRITE_ATTEMPTS} attempts (409 Conflict each time)`,
    );
}
