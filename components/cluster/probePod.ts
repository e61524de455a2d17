// The probe pod: a short-lived privileged pod pinned to one node that reads its kernel's tables
// (core/probe.ts PROBE_SCRIPT). Its privileges live in probePodSpec alone, to be reviewed in one place.
import * as k8s from "../libraries/kubernetesClient.js";
import { MARKS } from "../core/plan.js";
import { PROBE_SCRIPT } from "../core/probe.js";
import { probePodLifetime, probePodsToSweep } from "../core/probePods.js";
import type { ProbeRun } from "../rollout/cluster.js";
import { changesOfPodsOn } from "./changes.js";
import { FIELD_MANAGER, isNotFound, type KubeProxyClient } from "./kubeProxyClient.js";

export class ProbePods {
    constructor(private readonly client: KubeProxyClient) {}

    /**
     * The tolerations the probe pod gets: those of the installer's kube-proxy DaemonSet (its
     * saved spec during a rollout), so the probe lands where kube-proxy runs and nowhere else.
     */
    async tolerations(): Promise<k8s.V1Toleration[]> {
        const ds = await this.client.apps.readNamespacedDaemonSet({
            name: this.client.names.daemonSet,
            namespace: this.client.names.namespace,
        });
        const saved = ds.metadata?.annotations?.[MARKS.originalSpecAnnotation];
        const spec = saved ? (JSON.parse(saved) as k8s.V1DaemonSetSpec) : ds.spec;
        return spec?.template?.spec?.tolerations ?? [];
    }

    /**
     * Runs the probe (or the cleanup) in a short-lived pod pinned to the node; returns its output
     * and whether it succeeded. The pod is privileged with the host network and the node's root
     * at /host (the probe reads the host's tables through chroot /host and the host network's
     * /proc/net); it does not share the host's PID namespace, tolerates only what the kube-proxy
     * DaemonSet tolerates, and runs at the default priority unless priorityClassName is given.
     */
    async run(node: string, opts: ProbeRun): Promise<{ output: string; succeeded: boolean }> {
        const namespace = this.client.names.namespace;
        const name = `kpm-${opts.action}-${node.replace(/[^a-z0-9-]/g, "-").slice(0, 30)}-${Math.random().toString(36).slice(2, 8)}`;
        const tolerations = await this.tolerations();
        // a run that dies leaves the pod: its deadline stops it, its labels let the next run sweep it
        const { activeDeadlineSeconds, staleAfter } = probePodLifetime(opts.timeoutSeconds, Date.now());
        await this.client.core.createNamespacedPod({
            namespace,
            fieldManager: FIELD_MANAGER,
            body: {
                metadata: {
                    name,
                    namespace,
                    labels: {
                        [MARKS.managedByLabel]: MARKS.managedByValue,
                        [MARKS.probeLabel]: opts.action,
                        [MARKS.staleAfterLabel]: String(staleAfter),
                    },
                    ...(opts.run ? { annotations: { [MARKS.runAnnotation]: opts.run } } : {}),
                },
                spec: probePodSpec(node, { ...opts, tolerations, activeDeadlineSeconds }),
            },
        });
        const changes = changesOfPodsOn(this.client, node, namespace);
        try {
            // inside the try: a refused watch still deletes the pod
            await changes.start();
            const deadline = Date.now() + opts.timeoutSeconds * 1000;
            let read = 0;
            for (;;) {
                const p = await this.client.core.readNamespacedPod({ name, namespace });
                const phase = p.status?.phase;
                if (phase === "Succeeded" || phase === "Failed") {
                    const output = await this.client.core.readNamespacedPodLog({ name, namespace });
                    return { output, succeeded: phase === "Succeeded" };
                }
                if (phase === "Running" && opts.onLine) {
                    // the whole log each time: a sampler writes a short line every few seconds
                    const output = await this.client.core.readNamespacedPodLog({ name, namespace });
                    const lines = output.split("\n");
                    const complete = lines.slice(read, -1);
                    read += complete.length;
                    if (complete.some((l) => opts.onLine!(l))) return { output, succeeded: true };
                }
                if (Date.now() > deadline) {
                    throw new Error(
                        `the ${opts.action} pod ${name} on ${node} did not finish within ${opts.timeoutSeconds}s (phase ${phase ?? "unknown"}); the node may not run pods from image ${opts.image}`,
                    );
                }
                await changes.next(2000);
            }
        } finally {
            changes.stop();
            await this.client.core
                .deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 })
                .catch(() => undefined);
        }
    }

    /**
     * Deletes the probe pods a dead run left in kube-proxy's namespace (only the tool's: its
     * managed-by and probe labels), as core/probePods.ts probePodsToSweep decides for the run that
     * holds the lease as `holder`; each deletion is logged with why.
     */
    async sweep(holder: string, log: (line: string) => void): Promise<void> {
        const namespace = this.client.names.namespace;
        const pods = (
            await this.client.core.listNamespacedPod({
                namespace,
                labelSelector: `${MARKS.managedByLabel}=${MARKS.managedByValue},${MARKS.probeLabel}`,
            })
        ).items;
        const seen = pods.map((p) => ({
            name: p.metadata?.name ?? "",
            uid: p.metadata?.uid,
            staleAfter: p.metadata?.labels?.[MARKS.staleAfterLabel],
            run: p.metadata?.annotations?.[MARKS.runAnnotation],
            createdAt: p.metadata?.creationTimestamp ? new Date(p.metadata.creationTimestamp).toISOString() : undefined,
        }));
        for (const { name, why } of probePodsToSweep(seen, { holder, nowMs: Date.now() })) {
            const uid = seen.find((p) => p.name === name)?.uid;
            try {
                // the uid precondition: only the pod judged, never one made since under its name
                await this.client.core.deleteNamespacedPod({
                    name,
                    namespace,
                    gracePeriodSeconds: 0,
                    body: { preconditions: { uid } },
                });
                log(`probe pod ${namespace}/${name}: deleted (${why})`);
            } catch (e) {
                if (!isNotFound(e)) throw e;
            }
        }
    }
}

/** The probe pod's spec (pure, so its privileges are reviewed and tested in one place). */
export function probePodSpec(
    node: string,
    opts: {
        image: string;
        action: ProbeRun["action"];
        env: Record<string, string>;
        tolerations: k8s.V1Toleration[];
        priorityClassName?: string;
        /** the kubelet stops the pod this long after it started it, should its run die (core/probePods.ts probePodLifetime) */
        activeDeadlineSeconds: number;
    },
): k8s.V1PodSpec {
    return {
        nodeName: node,
        hostNetwork: true,
        restartPolicy: "Never",
        activeDeadlineSeconds: opts.activeDeadlineSeconds,
        ...(opts.priorityClassName ? { priorityClassName: opts.priorityClassName } : {}),
        tolerations: opts.tolerations,
        automountServiceAccountToken: false,
        containers: [
            {
                name: "probe",
                image: opts.image,
                command: ["sh", "-c", PROBE_SCRIPT],
                env: Object.entries({ KPM_ACTION: opts.action, ...opts.env }).map(([n, value]) => ({ name: n, value })),
                securityContext: { privileged: true },
                volumeMounts: [{ name: "host", mountPath: "/host" }],
            },
        ],
        volumes: [{ name: "host", hostPath: { path: "/" } }],
    };
}
