// What a rollout is told to do: everything the Pulumi component (or a user of the CLI) decided.
import { z } from "zod";
import { PROXY_MODES } from "../core/types.js";

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
        /** image of the probe pod: busybox with the host's tools via chroot, or any image with sh */
        image: z.string().default("busybox:1.36"),
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
        drain: z.boolean().optional(),
        drainTimeout: z.string().optional(),
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
