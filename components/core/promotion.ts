// Promotion gates between stacks: prod moves only after staging has finished the same target,
// verified every node, and held it for a while. Pure: the component reads the upstream stack's
// `promotion` output through a StackReference and calls checkPromotion; the clock comes in as
// an argument.
//
// "The same target" is the rendered configuration's data-plane settings, not its whole text:
// two clusters legitimately differ in clusterCIDR, hostnameOverride, the kubeconfig path or
// bind addresses, so their full configuration hashes never match. The target is what decides
// how kube-proxy programs the node and that kube-proxy-mode owns: the mode, the active mode's
// block (syncPeriod, minSyncPeriod, masqueradeAll, masqueradeBit), feature gates,
// nodePortAddresses and conntrack.tcpBeLiberal, with zero values normalised away.
import { createHash } from "node:crypto";
import { z } from "../libraries/zod.js";
import { effectiveMode, getPath, isZeroValue, parseKubeProxyConfiguration } from "./config.js";
import { formatDuration } from "./duration.js";
import { MODE_SETTINGS } from "./facts.js";
import { MARKS } from "./plan.js";
import { durationSchema, secondsOf } from "./schema.js";
import { PROXY_MODES, type PromotionRecord, type ProxyMode } from "./types.js";
import { nameList } from "./text.js";

/** The fields of a KubeProxyConfiguration that make up a promotion target (besides the mode's block). */
export const TARGET_FIELDS = ["featureGates", "nodePortAddresses", "conntrack.tcpBeLiberal"] as const;

export type PromotionTarget = Record<string, unknown>;

function sortKeys(v: unknown): unknown {
    if (Array.isArray(v)) return v.map(sortKeys);
    if (v && typeof v === "object") {
        const o = v as Record<string, unknown>;
        return Object.fromEntries(
            Object.keys(o)
                .sort()
                .map((k) => [k, sortKeys(o[k])]),
        );
    }
    return v;
}

/** The data-plane settings of a rendered configuration text, and their hash. */
export function promotionTarget(configText: string): { target: PromotionTarget; targetHash: string } {
    const config = parseKubeProxyConfiguration(configText, "the target configuration");
    const mode = effectiveMode(config);
    const target: PromotionTarget = { mode };
    const paths = [...new Set([...Object.values(MODE_SETTINGS[mode]), ...TARGET_FIELDS])].sort();
    for (const path of paths) {
        const value = getPath(config, path);
        if (!isZeroValue(value)) target[path] = sortKeys(value);
    }
    const targetHash = createHash("sha256").update(JSON.stringify(target)).digest("hex").slice(0, 10);
    return { target, targetHash };
}

/** What a finished stack exports as its `promotion` output, for the stacks after it. */
export const promotionRecordSchema = z.object({
    /** hash of the data-plane settings (promotionTarget) */
    targetHash: z.string().min(1),
    target: z.record(z.string(), z.unknown()),
    /** content hash of the whole configuration in that stack's cluster */
    configHash: z.string().min(1),
    mode: z.enum(PROXY_MODES),
    /** when the finish step completed (ISO 8601) */
    finishedAt: z.string().refine((s) => !Number.isNaN(Date.parse(s)), "finishedAt must be an ISO 8601 time"),
    /** nodes of the pools verified on configHash */
    nodesVerified: z.number().int().min(0),
    /** of those, verified by the built-in node checks (the rest by hooks only, verify.nodeChecks: false) */
    nodesChecked: z.number().int().min(0),
    nodesTotal: z.number().int().min(0),
    /** nodes of the pools not verified on configHash */
    unverified: z.array(z.string()).default([]),
    /** where the stack's cluster is, for summaries */
    cluster: z.string().optional(),
});
export type { PromotionRecord };
// the schema and the plain interface (part of the public declarations, with no zod in them) agree
const sameShape: z.infer<typeof promotionRecordSchema> extends PromotionRecord
    ? PromotionRecord extends z.infer<typeof promotionRecordSchema>
        ? true
        : false
    : false = true;
void sameShape;

const STACK_NAME = /^[^/\s]+\/[^/\s]+\/[^/\s]+$/;

/** The `promotion` input as written: `minSoak` is text. */
export const promotionInputSchema = z
    .object({
        after: z
            .string()
            .regex(
                STACK_NAME,
                'promotion.after must be a fully qualified stack name "<org>/<project>/<stack>" (with a file backend: "organization/<project>/<stack>")',
            )
            .describe(
                'The stack that must have finished this target first: "<org>/<project>/<stack>" (file backend: "organization/<project>/<stack>").',
            ),
        minSoak: durationSchema({
            positive: false,
            required:
                'promotion.minSoak is required: how long the upstream stack must have held the target, e.g. "24h" ("0s" only requires that it finished)',
        }).describe('How long the upstream must have held the target, e.g. "24h" ("0s": finished is enough).'),
        requireNodeChecks: z
            .boolean()
            .default(true)
            .describe("Refuse an upstream whose nodes were verified by hooks only (verify.nodeChecks: false)."),
    })
    .strict();

/** The `promotion` input parsed: `minSoakSeconds`. */
export const promotionSchema = promotionInputSchema.transform(({ minSoak, ...options }) => ({
    ...options,
    minSoakSeconds: secondsOf(minSoak),
}));
export type PromotionOptions = z.output<typeof promotionSchema>;

/** Parses the `promotion` input; throws one message naming each bad field. */
export function parsePromotion(input: unknown): PromotionOptions {
    const parsed = promotionSchema.safeParse(input);
    if (!parsed.success) {
        throw new Error(
            parsed.error.issues
                .map((i) =>
                    i.code === "unrecognized_keys"
                        ? `promotion: unknown setting(s) ${i.keys.join(", ")} (promotion takes after, minSoak, requireNodeChecks)`
                        : i.message.startsWith("promotion")
                          ? i.message
                          : `promotion.${i.path.join(".")}: ${i.message}`,
                )
                .join("; "),
        );
    }
    return parsed.data;
}

export interface GateInput {
    /** promotion.after */
    upstream: string;
    /** the upstream stack's `promotion` output, as read (undefined when it has none) */
    record: unknown;
    /** what this stack renders */
    own: { targetHash: string; target: PromotionTarget; mode: ProxyMode };
    /** true when this stack's cluster already runs its target: nothing will move, so nothing to gate */
    alreadyApplied: boolean;
    minSoakSeconds: number;
    requireNodeChecks: boolean;
    now: Date;
}

export interface GateVerdict {
    open: boolean;
    /** what is missing, one line each (empty when open) */
    missing: string[];
    /** facts for the reviewer when open */
    notes: string[];
}

function show(v: unknown): string {
    return v === undefined ? "(unset)" : JSON.stringify(v);
}

/** What the upstream's record lacks for this stack to follow it: the same target, every node verified, the soak held. */
function gateGaps(g: GateInput, r: PromotionRecord, heldSeconds: number): string[] {
    const missing: string[] = [];
    if (r.targetHash !== g.own.targetHash) {
        const keys = [...new Set([...Object.keys(r.target), ...Object.keys(g.own.target)])].sort();
        const diffs = keys
            .filter((k) => JSON.stringify(r.target[k]) !== JSON.stringify(g.own.target[k]))
            .map((k) => `${k}: ${show(r.target[k])} there, ${show(g.own.target[k])} here`);
        missing.push(
            `${g.upstream} finished a different target (${r.mode}, target ${r.targetHash}) than this stack renders (${g.own.mode}, target ${g.own.targetHash}): ${diffs.join("; ") || "settings differ"}; ` +
                `promote the same settings, or move ${g.upstream} to this target first`,
        );
    }
    if (r.nodesTotal === 0 || r.nodesVerified < r.nodesTotal) {
        const unverified = r.unverified.length ? ` (not verified: ${nameList(r.unverified, 10)})` : "";
        missing.push(
            `${g.upstream} verified ${r.nodesVerified} of ${r.nodesTotal} node(s) on configuration ${r.configHash}${unverified}; every node must be verified by its rollout (a configuration written by hand is not)`,
        );
    } else if (g.requireNodeChecks && r.nodesChecked < r.nodesTotal) {
        missing.push(
            `${g.upstream} verified ${r.nodesTotal - r.nodesChecked} of ${r.nodesTotal} node(s) with hooks only (verify.nodeChecks: false there); ` +
                `run its rollout with the built-in node checks, or accept hooks as verification with promotion.requireNodeChecks: false`,
        );
    }
    if (heldSeconds < g.minSoakSeconds) {
        const ready = new Date(Date.parse(r.finishedAt) + g.minSoakSeconds * 1000).toISOString();
        missing.push(
            `${g.upstream} finished at ${r.finishedAt} and has held it for ${formatDuration(heldSeconds)}; promotion.minSoak is ${formatDuration(g.minSoakSeconds)}: ` +
                `${formatDuration(g.minSoakSeconds - heldSeconds)} left (retry after ${ready})`,
        );
    }
    return missing;
}

/** The promotion gate: open only when the upstream finished the same target, verified every node and held it for minSoak. */
export function checkPromotion(g: GateInput): GateVerdict {
    const closed = (why: string): GateVerdict => ({ open: false, missing: [why], notes: [] });
    if (g.alreadyApplied) {
        const note = `this cluster already runs its target (${g.own.mode}, target ${g.own.targetHash}): nothing moves, so ${g.upstream} is not consulted`;
        return { open: true, missing: [], notes: [note] };
    }
    if (g.record === undefined || g.record === null) {
        return closed(
            `${g.upstream} has no promotion record: it has not finished a kube-proxy-mode rollout (run pulumi up there first and let it finish)`,
        );
    }
    const parsed = promotionRecordSchema.safeParse(g.record);
    if (!parsed.success) {
        return closed(
            `${g.upstream}'s promotion output is not a kube-proxy-mode promotion record (${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")})`,
        );
    }
    const r = parsed.data;
    const heldSeconds = Math.max(0, Math.floor((g.now.getTime() - Date.parse(r.finishedAt)) / 1000));
    const missing = gateGaps(g, r, heldSeconds);
    if (missing.length) return { open: false, missing, notes: [] };
    const notes = [
        `${g.upstream} finished ${r.mode} (target ${r.targetHash}) at ${r.finishedAt}, verified ${r.nodesVerified}/${r.nodesTotal} node(s), held for ${formatDuration(heldSeconds)} (minSoak ${formatDuration(g.minSoakSeconds)})`,
    ];
    if (r.nodesChecked < r.nodesTotal)
        notes.push(
            `${g.upstream} verified ${r.nodesTotal - r.nodesChecked} node(s) with hooks only (accepted: promotion.requireNodeChecks is false)`,
        );
    return { open: true, missing: [], notes };
}

/** The error a refused gate fails the preview with. */
export function gateRefusal(upstream: string, verdict: GateVerdict): string {
    return `promotion gate refused: ${upstream} is not ready to be followed:\n${verdict.missing.map((m) => `- ${m}`).join("\n")}`;
}

/**
 * When a refusal (as gateRefusal wrote it, its whitespace maybe collapsed by the engine's text)
 * lacks only the upstream's soak: the time the soak is held, so a caller may wait for it instead
 * of failing. Undefined when anything else is missing too, or the text is no gate refusal.
 */
export function soakOnlyRetryAfter(refusal: string): Date | undefined {
    const m = /promotion gate refused: (\S+) is not ready to be followed:([\s\S]*)$/.exec(refusal);
    if (!m) return undefined;
    // every missing line starts with the upstream's name
    const gaps = m[2].split(`- ${m[1]}`).slice(1);
    if (gaps.length !== 1) return undefined;
    const soak = /has held it for .*\(retry after (\S+)\)/.exec(gaps[0]);
    const at = soak ? new Date(soak[1]) : undefined;
    return at && !Number.isNaN(at.getTime()) ? at : undefined;
}

/** The line `rollout --finish` ends with, that the finish step records: this prefix, then JSON. */
export const STEP_RESULT_PREFIX = "kube-proxy-mode/result ";

/** Counts what the rollout verified, for the promotion record. `verified` is the annotation's hash, `checks` how. */
export function summarizeVerification(
    nodes: { name: string; verified?: string; checks?: string }[],
    poolNodes: string[],
    configHash: string,
): { nodesVerified: number; nodesChecked: number; nodesTotal: number; unverified: string[] } {
    const members = new Set(poolNodes);
    const inPools = nodes.filter((n) => members.has(n.name));
    const verified = inPools.filter((n) => n.verified === configHash);
    return {
        nodesVerified: verified.length,
        nodesChecked: verified.filter((n) => n.checks === MARKS.checksBuiltIn).length,
        nodesTotal: inPools.length,
        unverified: inPools.filter((n) => n.verified !== configHash).map((n) => n.name),
    };
}
