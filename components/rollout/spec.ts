// What a rollout is told to do: everything the Pulumi component (or a user of the CLI) decided.
// These schemas are the one place the inputs are validated: the component parses them at preview
// (so a bad value fails before anything moves) and the CLI parses the spec it is given.
//
// Each shape comes twice from one definition: `...InputSchema` is what the user writes and what
// the step's spec stores (durations as text, "5m", exactly as the previous versions stored them),
// and `...Schema` is its parse, where durations become seconds (`podTimeoutSeconds`, ...). Code
// past the parse reads only the seconds: no duration is parsed anywhere else.
import { z } from "../libraries/zod.js";
import { poolInputSchema, poolSchema, poolsSchema } from "../core/pools.js";
import { configMapKeyProblem, nameProblem } from "../core/names.js";
import { durationSchema, secondsOf, uniqueNames } from "../core/schema.js";
import { parseSelector } from "../core/selector.js";
import { FIRST_SYNC_DEFAULTS } from "../core/firstSync.js";
import { PROXY_MODES } from "../core/types.js";

export { describeIssues, durationSchema } from "../core/schema.js";
export { poolInputSchema, poolSchema, poolsSchema };

const nonEmpty = (what: string, example: string) =>
    z.string().min(1, `${what} must not be empty; e.g. ${example}, or leave it out for the default`);

/**
 * busybox 1.36 from Docker Hub, pinned by its digest so the privileged probe pod cannot change
 * under a re-pushed tag (the digest as several public projects pin busybox:1.36; override with verify.image).
 */
export const DEFAULT_PROBE_IMAGE =
    "busybox:1.36@sha256:73aaf090f3d85aa34ee199857f03fa3a95c8ede2ffd4cc2cdb5b94e566b11662";

/**
 * A non-empty text that `problem` accepts (undefined) or explains: names go into API paths,
 * queries and objects, so each is checked as the API server would check it, at preview.
 */
const checked = (what: string, example: string, problem: (v: string) => string | undefined) =>
    nonEmpty(what, example).superRefine((v, ctx) => {
        const why = v === "" ? undefined : problem(v);
        if (why) ctx.addIssue({ code: "custom", message: `${why}; e.g. ${example}` });
    });

const selectorProblem = (text: string) => {
    try {
        parseSelector(text, "target.podSelector");
        return undefined;
    } catch (e) {
        return (e as Error).message.replace(/^target\.podSelector: /, "");
    }
};

const NUL = "holds a NUL character, which no process can receive; remove it";

/** How long a hook may run when it says nothing: 5 minutes. */
export const HOOK_TIMEOUT_SECONDS = 300;

/** A hook as written: `timeout` is text. */
export const hookInputSchema = z
    .object({
        name: z
            .string()
            .min(1, "hook name is required")
            .describe("Names the hook in logs and errors; unique among verify.hooks."),
        command: z
            .array(z.string().refine((arg) => !arg.includes("\0"), NUL))
            .min(1, 'hook command is an argv list, e.g. ["./check-nodeport.sh"]')
            .refine((argv) => argv[0] !== "", {
                path: [0],
                message: 'the program is empty: the first item names the program to run, e.g. ["./check-nodeport.sh"]',
            })
            .describe(
                "argv of the hook, run without a shell; NODE, POOL, MODE and KUBECONFIG (the rollout's own cluster) are in its environment.",
            ),
        timeout: durationSchema({ positive: true, waited: true })
            .optional()
            .describe(
                `How long the hook may run, a duration such as "30s"; a hook that outlives it fails the node. Default: ${HOOK_TIMEOUT_SECONDS}s.`,
            ),
        env: z
            .record(
                z.string(),
                z.string().refine((v) => !v.includes("\0"), NUL),
            )
            .optional()
            .describe("Extra environment of the hook. Default: none."),
    })
    .strict();
/** A hook as written, defaults applied: `timeout` is text. */
export type HookAsWritten = z.output<typeof hookInputSchema>;

function hookSeconds({ timeout, ...hook }: HookAsWritten) {
    return { ...hook, timeoutSeconds: secondsOf(timeout, HOOK_TIMEOUT_SECONDS) };
}

/** A hook parsed: `timeoutSeconds`. */
export const hookSchema = hookInputSchema.transform(hookSeconds);
export type Hook = z.output<typeof hookSchema>;

/** How nodes are verified, as written: `maxSyncAge` and `podTimeout` are text. */
export const verifyInputSchema = z
    .object({
        nodeChecks: z
            .boolean()
            .default(true)
            .describe(
                "Run the built-in node checks: a probe pod per node checks the mode kube-proxy chose, leftovers, rule sync and a Service connection (needs nodes that run pods).",
            ),
        image: nonEmpty("verify.image", "busybox:1.36")
            .default(DEFAULT_PROBE_IMAGE)
            .describe(
                "Probe image: any image with sh (the host's tools run via chroot /host); the default is busybox 1.36 pinned by digest.",
            ),
        priorityClassName: z
            .string()
            .superRefine((v, ctx) => {
                const why = v === "" ? undefined : nameProblem(v, "PriorityClass", "subdomain");
                if (why) ctx.addIssue({ code: "custom", message: `${why}; e.g. system-node-critical` });
            })
            .optional()
            .describe("Priority class of the probe pods. Default: none (the cluster's default priority)."),
        service: z
            .string()
            .superRefine((text, ctx) => {
                const [namespace, name, ...rest] = text.split("/");
                const why =
                    name === undefined || rest.length > 0
                        ? `${JSON.stringify(text)} is not namespace/name`
                        : (nameProblem(namespace, "namespace", "label") ?? nameProblem(name, "Service", "service"));
                if (why) ctx.addIssue({ code: "custom", message: `${why}; e.g. default/kubernetes` });
            })
            .default("default/kubernetes")
            .describe('Service ("namespace/name") each node must reach through its ClusterIP.'),
        maxSyncAge: durationSchema({ positive: true })
            .default("5m")
            .describe("A last rule sync older than this fails the node; a duration longer than 0."),
        podTimeout: durationSchema({ positive: true, waited: true })
            .default("3m")
            .describe("How long a new kube-proxy may take to run and settle on a node; a duration longer than 0."),
        // the first-sync fields have no zod default, so specs stored before them keep their shape
        firstSyncFactor: z
            .number({ message: "firstSyncFactor must be a number of at least 1, e.g. 20" })
            .min(1, "firstSyncFactor must be a number of at least 1, e.g. 20")
            .optional()
            .describe(
                `A node's first sync in its new mode may take this many times its old mode's mean full sync (read from its kube-proxy before the move); a pool's firstSyncTimeout wins; at least 1. Default: ${FIRST_SYNC_DEFAULTS.factor}.`,
            ),
        firstSyncMin: durationSchema({ positive: true, waited: true })
            .optional()
            .describe(
                `The first sync's deadline is never shorter than this; a duration longer than 0. Default: ${FIRST_SYNC_DEFAULTS.minSeconds}s.`,
            ),
        firstSyncStall: durationSchema({ positive: true, waited: true })
            .optional()
            .describe(
                `kube-proxy using no CPU this long before its first sync fails the node; a duration longer than 0. Default: ${FIRST_SYNC_DEFAULTS.stallSeconds}s.`,
            ),
        hooks: z
            .array(hookInputSchema)
            .default([])
            .superRefine(
                uniqueNames((name) => `hook name ${JSON.stringify(name)} is used twice; give each hook its own name`),
            )
            .describe("Commands run per node after the built-in checks; a non-zero exit fails the node."),
    })
    .strict();
/** How nodes are verified, as written, defaults applied: the durations are text. */
export type VerifyAsWritten = z.output<typeof verifyInputSchema>;

function verifySeconds({
    maxSyncAge,
    podTimeout,
    firstSyncFactor,
    firstSyncMin,
    firstSyncStall,
    hooks,
    ...verify
}: VerifyAsWritten) {
    return {
        ...verify,
        firstSyncFactor: firstSyncFactor ?? FIRST_SYNC_DEFAULTS.factor,
        maxSyncAgeSeconds: secondsOf(maxSyncAge),
        podTimeoutSeconds: secondsOf(podTimeout),
        firstSyncMinSeconds: secondsOf(firstSyncMin, FIRST_SYNC_DEFAULTS.minSeconds),
        firstSyncStallSeconds: secondsOf(firstSyncStall, FIRST_SYNC_DEFAULTS.stallSeconds),
        hooks: hooks.map(hookSeconds),
    };
}

/** How nodes are verified, parsed: `maxSyncAgeSeconds`, `podTimeoutSeconds`, `firstSyncMinSeconds`, `firstSyncStallSeconds`, each hook's `timeoutSeconds`. */
export const verifySchema = verifyInputSchema.transform(verifySeconds);
export type VerifySpec = z.output<typeof verifySchema>;

/** Where kube-proxy's configuration and DaemonSet are; every field overrides the flavor's default. */
export const targetSchema = z
    .object({
        flavor: z
            .enum(["kubeadm", "eks"], { message: 'target.flavor must be "kubeadm" or "eks"' })
            .optional()
            .describe(
                'How the cluster installs kube-proxy: "kubeadm" (kube-system/kube-proxy, key config.conf) or "eks" (kube-system/kube-proxy-config, key config). Default: "kubeadm".',
            ),
        namespace: checked("target.namespace", "kube-system", (v) => nameProblem(v, "namespace", "label"))
            .optional()
            .describe('Namespace of kube-proxy. Default: "kube-system".'),
        configMap: checked("target.configMap", "kube-proxy", (v) => nameProblem(v, "ConfigMap", "subdomain"))
            .optional()
            .describe('The installer\'s ConfigMap. Default: "kube-proxy" (kubeadm), "kube-proxy-config" (eks).'),
        key: checked("target.key", "config.conf", configMapKeyProblem)
            .optional()
            .describe('The ConfigMap key holding the configuration. Default: "config.conf" (kubeadm), "config" (eks).'),
        daemonSet: checked("target.daemonSet", "kube-proxy", (v) => nameProblem(v, "DaemonSet", "subdomain"))
            .optional()
            .describe('The installer\'s DaemonSet. Default: "kube-proxy".'),
        podSelector: checked("target.podSelector", "k8s-app=kube-proxy", selectorProblem)
            .optional()
            .describe('Label selector of kube-proxy\'s pods, as the API parses one. Default: "k8s-app=kube-proxy".'),
    })
    .strict();
export type TargetSpec = z.infer<typeof targetSchema>;

/** The cluster the preview reviewed: what the step refuses to act anywhere else than. Never a credential. */
export const clusterIdentitySchema = z.object({ server: z.string().min(1), context: z.string().optional() }).strict();
export type ClusterIdentity = z.infer<typeof clusterIdentitySchema>;

/**
 * The step's spec as the component writes it (KPM_ROLLOUT_SPEC, and each pool's entry in its
 * step's triggers): durations as text, defaults filled. A spec written by an earlier version
 * has this same shape, so a run resumed from it reads it unchanged.
 */
export const rolloutSpecInputSchema = z
    .object({
        flavor: z.enum(["kubeadm", "eks"]).default("kubeadm"),
        names: targetSchema.omit({ flavor: true }).optional(),
        target: z.object({ hash: z.string(), mode: z.enum(PROXY_MODES), config: z.string() }),
        pools: z.array(poolInputSchema).min(1),
        verify: verifyInputSchema.default(verifyInputSchema.parse({})),
        onFailure: z.enum(["rollback-node", "stop"]).default("rollback-node"),
        tcpBeLiberal: z.boolean().optional(),
        /** the API server the preview reviewed; the CLI refuses a kubeconfig pointing elsewhere */
        cluster: clusterIdentitySchema.optional(),
    })
    .strict();
export type RolloutSpecInput = z.output<typeof rolloutSpecInputSchema>;

/**
 * The step's spec parsed, as the runner reads it: durations in seconds, pool names checked
 * unique. The CLI parses KPM_ROLLOUT_SPEC (or --spec) with it, once.
 */
export const rolloutSpecSchema = rolloutSpecInputSchema
    .extend({ pools: poolsSchema, verify: verifySchema.default(verifySchema.parse({})) })
    .strict();
export type RolloutSpec = z.output<typeof rolloutSpecSchema>;
