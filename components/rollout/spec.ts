// What a rollout is told to do: everything the Pulumi component (or a user of the CLI) decided.
import { z } from "zod";
import { PROXY_MODES } from "../core/types.js";

/**
 * busybox 1.36 from Docker Hub, pinned by its digest so the privileged probe pod cannot change
 * under a re-pushed tag (the digest as several public projects pin busybox:1.36; override with verify.image).
 */
export const DEFAULT_PROBE_IMAGE = "busybox:1.36@sha256:73aaf090f3d85aa34ee199857f03fa3a95c8ede2ffd4cc2cdb5b94e566b11662";

export const hookSchema = z
    .object({
        name: z.string().min(1, "hook name is required"),
        command: z.array(z.string()).min(1, "hook command is an argv list, e.g. [\"./check-nodeport.sh\"]"),
        timeout: z.string().optional(),
        env: z.record(z.string(), z.string()).optional(),
    })
    .strict();
export type Hook = z.infer<typeof hookSchema>;

export const verifySchema = z
    .object({
        /** run the built-in node checks in a probe pod on each node (needs nodes that run pods) */
        nodeChecks: z.boolean().default(true),
        /** image of the probe pod: busybox with the host's tools via chroot, or any image with sh; pinned by digest */
        image: z.string().default(DEFAULT_PROBE_IMAGE),
        /** priority class of the probe pod; default: none (the cluster's default priority) */
        priorityClassName: z.string().optional(),
        /** "namespace/name" of a Service to connect to from each node */
        service: z.string().regex(/^[a-z0-9-]+\/[a-z0-9-.]+$/, "verify.service is namespace/name").default("default/kubernetes"),
        /** a last rule sync older than this fails the node */
        maxSyncAge: z.string().default("5m"),
        /** how long a new kube-proxy may take to become Ready */
        podTimeout: z.string().default("3m"),
        hooks: z.array(hookSchema).default([]),
    })
    .strict();
export type VerifySpec = z.infer<typeof verifySchema>;

export const poolSchema = z
    .object({
        name: z.string(),
        nodeSelector: z.string(),
        maxUnavailable: z.number().int().min(1).optional(),
        soak: z.string().optional(),
        drain: z.union([z.boolean(), z.object({ force: z.boolean().optional(), deleteEmptyDirData: z.boolean().optional() }).strict()]).optional(),
        drainTimeout: z.string().optional(),
        allowUnroutedNode: z.boolean().optional(),
    })
    .strict();

export const rolloutSpecSchema = z
    .object({
        flavor: z.enum(["kubeadm", "eks"]).default("kubeadm"),
        names: z.object({ namespace: z.string(), configMap: z.string(), key: z.string(), daemonSet: z.string(), podSelector: z.string() }).partial().optional(),
        target: z.object({ hash: z.string(), mode: z.enum(PROXY_MODES), config: z.string() }),
        pools: z.array(poolSchema).min(1),
        verify: verifySchema.default(verifySchema.parse({})),
        onFailure: z.enum(["rollback-node", "stop"]).default("rollback-node"),
        tcpBeLiberal: z.boolean().optional(),
    })
    .strict();
export type RolloutSpec = z.infer<typeof rolloutSpecSchema>;
