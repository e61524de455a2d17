// What a rollout is told to do: everything the Pulumi component (or a user of the CLI) decided.
// These schemas are the one place the inputs are validated: the component parses them at preview
// (so a bad value fails before anything moves) and the CLI parses the spec it is given. Durations
// stay strings here (the runner parses them); the schema only admits ones that parse.
import { z } from "zod";
import { poolSchema } from "../core/pools.js";
import { durationSchema } from "../core/schema.js";
import { PROXY_MODES } from "../core/types.js";

export { describeIssues, durationSchema } from "../core/schema.js";
export { poolSchema };

const nonEmpty = (what: string, example: string) =>
    z.string().min(1, `${what} must not be empty; e.g. ${example}, or leave it out for the default`);

/**
 * busybox 1.36 from Docker Hub, pinned by its digest so the privileged probe pod cannot change
 * under a re-pushed tag (the digest as several public projects pin busybox:1.36; override with verify.image).
 */
export const DEFAULT_PROBE_IMAGE =
    "busybox:1.36@sha256:73aaf090f3d85aa34ee199857f03fa3a95c8ede2ffd4cc2cdb5b94e566b11662";

export const hookSchema = z
    .object({
        /** names the hook in logs and errors; unique among the hooks */
        name: z.string().min(1, "hook name is required"),
        /** argv of the hook, run without a shell; NODE, POOL, MODE and KUBECONFIG are in its environment */
        command: z.array(z.string()).min(1, 'hook command is an argv list, e.g. ["./check-nodeport.sh"]'),
        /** how long the hook may run; default 5m */
        timeout: durationSchema({ positive: true }).optional(),
        /** extra environment of the hook */
        env: z.record(z.string(), z.string()).optional(),
    })
    .strict();
export type Hook = z.infer<typeof hookSchema>;

export const verifySchema = z
    .object({
        /** run the built-in node checks in a probe pod on each node (needs nodes that run pods) */
        nodeChecks: z.boolean().default(true),
        /** image of the probe pod: busybox with the host's tools via chroot, or any image with sh; pinned by digest */
        image: nonEmpty("verify.image", "busybox:1.36").default(DEFAULT_PROBE_IMAGE),
        /** priority class of the probe pod; default: none (the cluster's default priority) */
        priorityClassName: z.string().optional(),
        /** "namespace/name" of a Service to connect to from each node */
        service: z
            .string()
            .regex(/^[a-z0-9-]+\/[a-z0-9-.]+$/, "verify.service is namespace/name")
            .default("default/kubernetes"),
        /** a last rule sync older than this fails the node */
        maxSyncAge: durationSchema({ positive: true }).default("5m"),
        /** how long a new kube-proxy may take to become Ready */
        podTimeout: durationSchema({ positive: true }).default("3m"),
        hooks: z
            .array(hookSchema)
            .default([])
            .superRefine((hooks, ctx) => {
                const seen = new Set<string>();
                hooks.forEach((h, i) => {
                    if (seen.has(h.name))
                        ctx.addIssue({
                            code: "custom",
                            path: [i, "name"],
                            message: `hook name ${JSON.stringify(h.name)} is used twice; give each hook its own name`,
                        });
                    seen.add(h.name);
                });
            }),
    })
    .strict();
export type VerifySpec = z.infer<typeof verifySchema>;

/** Where kube-proxy's configuration and DaemonSet are; every field overrides the flavor's default. */
export const targetSchema = z
    .object({
        /** kubeadm (kube-system/kube-proxy, key config.conf) or eks (kube-system/kube-proxy-config, key config); default kubeadm */
        flavor: z.enum(["kubeadm", "eks"], { message: 'target.flavor must be "kubeadm" or "eks"' }).optional(),
        /** namespace of kube-proxy; default kube-system */
        namespace: nonEmpty("target.namespace", "kube-system").optional(),
        /** the installer's ConfigMap; default kube-proxy (kubeadm) or kube-proxy-config (eks) */
        configMap: nonEmpty("target.configMap", "kube-proxy").optional(),
        /** the ConfigMap's key holding the configuration; default config.conf (kubeadm) or config (eks) */
        key: nonEmpty("target.key", "config.conf").optional(),
        /** the installer's DaemonSet; default kube-proxy */
        daemonSet: nonEmpty("target.daemonSet", "kube-proxy").optional(),
        /** label selector of kube-proxy's pods; default k8s-app=kube-proxy */
        podSelector: nonEmpty("target.podSelector", "k8s-app=kube-proxy").optional(),
    })
    .strict();
export type TargetSpec = z.infer<typeof targetSchema>;

/** The cluster the preview reviewed: what the step refuses to act anywhere else than. Never a credential. */
export const clusterIdentitySchema = z.object({ server: z.string().min(1), context: z.string().optional() }).strict();
export type ClusterIdentity = z.infer<typeof clusterIdentitySchema>;

export const rolloutSpecSchema = z
    .object({
        flavor: z.enum(["kubeadm", "eks"]).default("kubeadm"),
        names: targetSchema.omit({ flavor: true }).optional(),
        target: z.object({ hash: z.string(), mode: z.enum(PROXY_MODES), config: z.string() }),
        pools: z.array(poolSchema).min(1),
        verify: verifySchema.default(verifySchema.parse({})),
        onFailure: z.enum(["rollback-node", "stop"]).default("rollback-node"),
        tcpBeLiberal: z.boolean().optional(),
        /** the API server the preview reviewed; the CLI refuses a kubeconfig pointing elsewhere */
        cluster: clusterIdentitySchema.optional(),
    })
    .strict();
export type RolloutSpec = z.infer<typeof rolloutSpecSchema>;
