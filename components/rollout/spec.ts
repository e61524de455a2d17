// What a rollout is told to do: everything the Pulumi component (or a user of the CLI) decided.
// These schemas are the one place the inputs are validated: the component parses them at preview
// (so a bad value fails before anything moves) and the CLI parses the spec it is given. Durations
// stay strings here (the runner parses them); the schema only admits ones that parse.
import { z } from "zod";
import { parseDuration } from "../core/duration.js";
import { PROXY_MODES } from "../core/types.js";

/**
 * A Go-style duration ("30s", "10m", "1h30m"), checked with the project's own parser. `positive`:
 * zero is refused too (a timeout of 0 could never pass).
 */
export function durationSchema(opts: { positive: boolean }) {
    return z.string().superRefine((text, ctx) => {
        let seconds: number;
        try {
            seconds = parseDuration(text, "duration");
        } catch {
            ctx.addIssue({ code: "custom", message: `${JSON.stringify(text)} is not a duration; write it like 30s, 10m or 1h30m` });
            return;
        }
        if (opts.positive && seconds <= 0) ctx.addIssue({ code: "custom", message: `${JSON.stringify(text)} must be longer than 0; write it like 30s, 10m or 1h30m` });
    });
}

const nonEmpty = (what: string, example: string) => z.string().min(1, `${what} must not be empty; e.g. ${example}, or leave it out for the default`);

/**
 * busybox 1.36 from Docker Hub, pinned by its digest so the privileged probe pod cannot change
 * under a re-pushed tag (the digest as several public projects pin busybox:1.36; override with verify.image).
 */
export const DEFAULT_PROBE_IMAGE = "busybox:1.36@sha256:73aaf090f3d85aa34ee199857f03fa3a95c8ede2ffd4cc2cdb5b94e566b11662";

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
        service: z.string().regex(/^[a-z0-9-]+\/[a-z0-9-.]+$/, "verify.service is namespace/name").default("default/kubernetes"),
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
                    if (seen.has(h.name)) ctx.addIssue({ code: "custom", path: [i, "name"], message: `hook name ${JSON.stringify(h.name)} is used twice; give each hook its own name` });
                    seen.add(h.name);
                });
            }),
    })
    .strict();
export type VerifySpec = z.infer<typeof verifySchema>;

export const poolSchema = z
    .object({
        /** names the pool's rollout step; lower-case letters, digits and '-' */
        name: z.string().regex(/^[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?$/, "pool name must be lower-case letters, digits and '-' (at most 42), e.g. canary"),
        /** label selector of the pool's nodes, e.g. pool=canary */
        nodeSelector: z.string().min(1, "nodeSelector is required (a label selector such as pool=canary)"),
        /** nodes of this pool in flight at once; default 1 */
        maxUnavailable: z.number().int().min(1).optional(),
        /** wait after the pool before the next one; default 0s */
        soak: durationSchema({ positive: false }).optional(),
        /** evict pods (respecting PodDisruptionBudgets) before moving a node; { force, deleteEmptyDirData } as kubectl drain's flags; default false */
        drain: z.union([z.boolean(), z.object({ force: z.boolean().optional(), deleteEmptyDirData: z.boolean().optional() }).strict()]).optional(),
        /** give up draining a node after this long ("0": no limit, as kubectl); default 5m */
        drainTimeout: durationSchema({ positive: false }).optional(),
        /** an ipvs -> iptables move without drain leaves the node without Service routing for a while: say yes to that */
        allowUnroutedNode: z.boolean().optional(),
    })
    .strict();

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

/** A zod error as one line per field: "<field>: <what is wrong and the fix>". */
export function describeIssues(issues: z.core.$ZodIssue[], prefix: string): string[] {
    return issues.map((i) => {
        const path = i.path.reduce<string>((acc, p) => (typeof p === "number" ? `${acc}[${p}]` : `${acc}${acc ? "." : ""}${String(p)}`), prefix);
        const msg = i.code === "unrecognized_keys" ? `unknown field(s) ${(i as any).keys.map((k: string) => JSON.stringify(k)).join(", ")}: check the spelling` : i.message;
        return `${path || "spec"}: ${msg}`;
    });
}
