// A node pool: the one schema of its shape (the component, the rollout spec and the planner all
// read it), as the user declares it (durations as text) and as parsed (durations in seconds), and
// the findings for a list of pools. Pure.
import { z } from "../libraries/zod.js";
import { durationSchema, issueMessage, secondsOf, uniqueNames } from "./schema.js";
import { parseSelector } from "./selector.js";
import type { Finding, FindingCode } from "./types.js";

const WHOLE = "maxUnavailable must be a whole number of at least 1";

/** The pool's defaults: no soak; a drain gives up after 5 minutes. */
export const POOL_DEFAULTS = { soakSeconds: 0, drainTimeoutSeconds: 300 } as const;

/** A pool as the user declares it and the step's spec stores it: durations are text ("10m"). */
export const poolInputSchema = z
    .object({
        name: z
            .string({ message: "a pool needs a name, e.g. canary" })
            .regex(
                /^[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?$/,
                "pool name must be lower-case letters, digits and '-' (at most 42), e.g. canary",
            )
            .describe(
                "The pool's name: lower-case letters, digits and '-' (at most 42); a plain string, not an Output (it names the pool's step).",
            ),
        nodeSelector: z
            .string({ message: "nodeSelector is required (a label selector such as pool=canary)" })
            .trim()
            .min(1, "nodeSelector is required (a label selector such as pool=canary)")
            .superRefine((selector, ctx) => {
                try {
                    parseSelector(selector, "nodeSelector");
                } catch (e) {
                    ctx.addIssue({ code: "custom", message: (e as Error).message });
                }
            })
            .describe('Label selector of the pool\'s nodes, e.g. "pool=canary".'),
        maxUnavailable: z
            .number({ message: WHOLE })
            .int(WHOLE)
            .min(1, WHOLE)
            .optional()
            .describe("Nodes of this pool moved at once. Default: 1."),
        soak: durationSchema({ positive: false, waited: true })
            .optional()
            .describe(
                `Wait after the pool before the next one, a duration such as "10m". Default: ${POOL_DEFAULTS.soakSeconds}s.`,
            ),
        drain: z
            .union(
                [
                    z.boolean(),
                    z
                        .object({
                            force: z
                                .boolean()
                                .optional()
                                .describe(
                                    "Also evict pods without a controller (kubectl drain --force). Default: false.",
                                ),
                            deleteEmptyDirData: z
                                .boolean()
                                .optional()
                                .describe(
                                    "Also evict pods with emptyDir volumes, whose data is lost (kubectl drain --delete-emptydir-data). Default: false.",
                                ),
                        })
                        .strict(),
                ],
                {
                    message: "drain must be true, false or { force: true|false, deleteEmptyDirData: true|false }",
                },
            )
            .optional()
            .describe(
                "Evict the node's pods (respecting PodDisruptionBudgets) before moving it: true, or { force, deleteEmptyDirData } as kubectl drain's flags (pods without a controller, and pods with emptyDir volumes, are refused without them). Default: false.",
            ),
        drainTimeout: durationSchema({ positive: false, waited: true })
            .optional()
            .describe(
                `Give up draining a node after this long; "0" waits for ever (as kubectl). Default: ${POOL_DEFAULTS.drainTimeoutSeconds}s.`,
            ),
        firstSyncTimeout: durationSchema({ positive: true, waited: true })
            .optional()
            .describe(
                "How long a node's first sync in the new mode may take, a duration such as \"15m\". Default: from the node's old-mode sync (verify.firstSyncFactor, at least verify.firstSyncMin).",
            ),
        allowUnroutedNode: z
            .boolean({ message: "allowUnroutedNode must be true or false" })
            .optional()
            .describe(
                "ipvs -> iptables without drain leaves each node without Service routing for a while: true accepts that gap. Default: false.",
            ),
    })
    .strict();

/** A declared pool with its durations in seconds (defaults filled): what the planner and the runner read. */
function poolSeconds({ soak, drainTimeout, firstSyncTimeout, ...pool }: PoolSpec) {
    return {
        ...pool,
        soakSeconds: secondsOf(soak, POOL_DEFAULTS.soakSeconds),
        drainTimeoutSeconds: secondsOf(drainTimeout, POOL_DEFAULTS.drainTimeoutSeconds),
        ...(firstSyncTimeout !== undefined ? { firstSyncTimeoutSeconds: secondsOf(firstSyncTimeout) } : {}),
    };
}

/** A pool parsed: `soakSeconds`, `drainTimeoutSeconds` (a drain timeout of 0 waits for ever, as kubectl), `firstSyncTimeoutSeconds` when set. */
export const poolSchema = poolInputSchema.transform(poolSeconds);

/** A pool as declared (the component's `pools[]`, the step's spec). */
export type PoolSpec = z.output<typeof poolInputSchema>;
/** A pool as parsed: durations in seconds. */
export type Pool = z.output<typeof poolSchema>;

/** A pool name used twice: the finding code its issue carries. */
const DUPLICATE = "pools.duplicate" satisfies FindingCode;

/** The pools of a rollout, in order: at least one, each name once. */
export const poolsSchema = z
    .array(poolSchema)
    .min(1, "pools must list at least one node pool")
    .superRefine(uniqueNames((name) => `pool name ${name} is used twice`, { finding: DUPLICATE }));

/** The finding code for a problem in a pool's field. */
const FIELD_CODES: Record<string, FindingCode> = {
    name: "pools.name",
    nodeSelector: "pools.selector",
    maxUnavailable: "pools.maxUnavailable",
    soak: "pools.soak",
    drain: "pools.drain",
    drainTimeout: "pools.drainTimeout",
    firstSyncTimeout: "pools.firstSyncTimeout",
    allowUnroutedNode: "pools.allowUnroutedNode",
};

/** One zod issue of a list of pools as a finding naming the pool's field. */
function poolFinding(issue: z.core.$ZodIssue): Finding {
    const [i, key] = issue.path;
    const flagged = issue.code === "custom" ? (issue.params?.finding as FindingCode | undefined) : undefined;
    return {
        severity: "error",
        code: flagged ?? FIELD_CODES[String(key)] ?? "pools.field",
        field: key !== undefined ? `pools[${String(i)}].${String(key)}` : `pools[${String(i)}]`,
        message: issueMessage(issue),
    };
}

/**
 * Parses a list of pools as declared: the pools with their durations in seconds, or (pools
 * undefined) every problem as a finding naming the field: each pool's shape, names used twice.
 */
export function parsePools(input: unknown): { pools?: Pool[]; findings: Finding[] } {
    if (!Array.isArray(input) || input.length === 0) {
        return {
            findings: [
                {
                    severity: "error",
                    code: "pools.empty",
                    field: "pools",
                    message: "pools must list at least one node pool",
                    fix: 'add { name: "all", nodeSelector: "kubernetes.io/os=linux" }',
                },
            ],
        };
    }
    const parsed = poolsSchema.safeParse(input);
    return parsed.success ? { pools: parsed.data, findings: [] } : { findings: parsed.error.issues.map(poolFinding) };
}
