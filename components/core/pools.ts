// A node pool as the user declares it: the one schema of its shape (the component, the rollout
// spec and the planner all read it), and the findings for a list of pools. Pure.
import { z } from "zod";
import { durationSchema, issueMessage } from "./schema.js";
import { parseSelector } from "./selector.js";
import type { PoolSpec } from "./plan.js";
import type { Finding, FindingCode } from "./types.js";

const WHOLE = "maxUnavailable must be a whole number of at least 1";

export const poolSchema = z
    .object({
        /** names the pool's rollout step; lower-case letters, digits and '-' */
        name: z
            .string({ message: "a pool needs a name, e.g. canary" })
            .regex(
                /^[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?$/,
                "pool name must be lower-case letters, digits and '-' (at most 42), e.g. canary",
            ),
        /** label selector of the pool's nodes, e.g. pool=canary */
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
            }),
        /** nodes of this pool in flight at once; default 1 */
        maxUnavailable: z.number({ message: WHOLE }).int(WHOLE).min(1, WHOLE).optional(),
        /** wait after the pool before the next one; default 0s */
        soak: durationSchema({ positive: false }).optional(),
        /** evict pods (respecting PodDisruptionBudgets) before moving a node; { force, deleteEmptyDirData } as kubectl drain's flags; default false */
        drain: z
            .union(
                [
                    z.boolean(),
                    z.object({ force: z.boolean().optional(), deleteEmptyDirData: z.boolean().optional() }).strict(),
                ],
                {
                    message: "drain must be true, false or { force: true|false, deleteEmptyDirData: true|false }",
                },
            )
            .optional(),
        /** give up draining a node after this long ("0": no limit, as kubectl); default 5m */
        drainTimeout: durationSchema({ positive: false }).optional(),
        /** an ipvs -> iptables move without drain leaves the node without Service routing for a while: say yes to that */
        allowUnroutedNode: z.boolean({ message: "allowUnroutedNode must be true or false" }).optional(),
    })
    .strict();

// The compiler holds the schema and the public PoolSpec interface equal, both ways.
// (the same fields, even optional ones, and each side assignable to the other)
type Same<A, B> = [A, keyof A] extends [B, keyof B] ? ([B, keyof B] extends [A, keyof A] ? true : false) : false;
const poolSpecIsTheSchema: Same<z.infer<typeof poolSchema>, PoolSpec> = true;
void poolSpecIsTheSchema;

/** The finding code for a problem in a pool's field. */
const FIELD_CODES: Record<string, FindingCode> = {
    name: "pools.name",
    nodeSelector: "pools.selector",
    maxUnavailable: "pools.maxUnavailable",
    soak: "pools.soak",
    drain: "pools.drain",
    drainTimeout: "pools.drainTimeout",
    allowUnroutedNode: "pools.allowUnroutedNode",
};

/** Every problem of a list of pools, as findings naming the field: each pool's shape, and names used twice. */
export function validatePools(pools: unknown): Finding[] {
    if (!Array.isArray(pools) || pools.length === 0) {
        return [
            {
                severity: "error",
                code: "pools.empty",
                field: "pools",
                message: "pools must list at least one node pool",
                fix: 'add { name: "all", nodeSelector: "kubernetes.io/os=linux" }',
            },
        ];
    }
    const out: Finding[] = [];
    const seen = new Set<string>();
    pools.forEach((pool: unknown, i) => {
        const parsed = poolSchema.safeParse(pool);
        for (const issue of parsed.success ? [] : parsed.error.issues) {
            const key = issue.path.length ? String(issue.path[0]) : "";
            out.push({
                severity: "error",
                code: FIELD_CODES[key] ?? "pools.field",
                field: key ? `pools[${i}].${key}` : `pools[${i}]`,
                message: issueMessage(issue),
            });
        }
        const name = parsed.success ? parsed.data.name : undefined;
        if (name === undefined) return;
        if (seen.has(name))
            out.push({
                severity: "error",
                code: "pools.duplicate",
                field: `pools[${i}].name`,
                message: `pool name ${name} is used twice`,
            });
        seen.add(name);
    });
    return out;
}
