// The pieces every input schema shares: durations checked with the project's own parser (and
// turned into seconds by the schemas' transforms: the one place a duration is read), and the one
// formatter of zod's issues into "<field>: <what is wrong and the fix>" lines, and eksAddon's
// schema (kept out of core/eksAddon.ts, whose types the public declarations reach). Pure.
import { z } from "../libraries/zod.js";
import { formatDuration, parseDuration } from "./duration.js";

/**
 * The longest wait a timer keeps: past 2^31-1 ms Node's setTimeout fires at once, so a longer hook
 * timeout would end the hook at once instead of never.
 */
export const LONGEST_WAIT_SECONDS = Math.floor((2 ** 31 - 1) / 1000);

/**
 * A Go-style duration ("30s", "10m", "1h30m") as users write it, checked with the project's own
 * parser. `positive`: zero is refused too (a timeout of 0 could never pass). `waited`: the runner
 * waits this long, so it is at most {@link LONGEST_WAIT_SECONDS}. `required`: the message when the
 * field is missing. The text stays text here (the inputs and the step's spec keep what the user
 * wrote); the schema's transform reads it with {@link secondsOf}.
 */
export function durationSchema(opts: { positive: boolean; waited?: boolean; required?: string }) {
    return z.string(opts.required ? { error: opts.required } : undefined).superRefine((text, ctx) => {
        let seconds: number;
        try {
            seconds = parseDuration(text, "duration");
        } catch {
            ctx.addIssue({
                code: "custom",
                message: `${JSON.stringify(text)} is not a duration; write it like 30s, 10m or 1h30m`,
            });
            return;
        }
        if (opts.positive && seconds <= 0)
            ctx.addIssue({
                code: "custom",
                message: `${JSON.stringify(text)} must be longer than 0; write it like 30s, 10m or 1h30m`,
            });
        const longest = opts.waited ? LONGEST_WAIT_SECONDS : Number.MAX_SAFE_INTEGER;
        if (!(seconds <= longest))
            ctx.addIssue({
                code: "custom",
                message: opts.waited
                    ? `${JSON.stringify(text)} is longer than ${formatDuration(longest)}, the longest wait this tool can keep (a timer's limit); write at most ${Math.floor(longest / 3600)}h`
                    : `${JSON.stringify(text)} is too long to be a duration; write it like 30s, 10m or 1h30m`,
            });
    });
}

/**
 * The seconds of a duration `durationSchema` admitted, or `fallback` when the field was left out.
 * Only the schemas' transforms call it: past the parse, code reads `...Seconds` numbers.
 */
export function secondsOf(text: string): number;
export function secondsOf(text: string | undefined, fallback: number): number;
export function secondsOf(text: string | undefined, fallback?: number): number {
    return text === undefined ? fallback! : parseDuration(text, "duration");
}

/** The dotted/indexed path of an issue under `prefix`: pools[0].name. */
/**
 * A refinement for a list whose items' names must differ: an issue at the second use of a name
 * (`path: [i, "name"]`), with `message(name)` and the optional `params`.
 */
export function uniqueNames(message: (name: string) => string, params?: Record<string, unknown>) {
    return (items: readonly { name: string }[], ctx: z.RefinementCtx): void => {
        const seen = new Set<string>();
        items.forEach((item, i) => {
            if (seen.has(item.name))
                ctx.addIssue({ code: "custom", path: [i, "name"], message: message(item.name), params });
            seen.add(item.name);
        });
    };
}

export function issuePath(path: readonly PropertyKey[], prefix: string): string {
    return path.reduce<string>(
        (acc, p) => (typeof p === "number" ? `${acc}[${p}]` : `${acc}${acc ? "." : ""}${String(p)}`),
        prefix,
    );
}

/** What is wrong, for one issue: an unknown key is named with the fix, a bad record key with its rule. */
export function issueMessage(i: z.core.$ZodIssue): string {
    if (i.code === "unrecognized_keys")
        return `unknown field(s) ${i.keys.map((k) => JSON.stringify(k)).join(", ")}: check the spelling`;
    // zod words a record key's refusal "Invalid key in record"; the key schema's own message says why
    if (i.code === "invalid_key" && i.issues.length > 0) return i.issues[0].message;
    return i.message;
}

/** A zod error as one line per field: "<field>: <what is wrong and the fix>". */
export function describeIssues(issues: z.core.$ZodIssue[], prefix: string): string[] {
    return issues.map((i) => `${issuePath(i.path, prefix) || "spec"}: ${issueMessage(i)}`);
}

/**
 * `eksAddon` (core/eksAddon.ts): the EKS add-on's configurationValues as text, or an explicit
 * acknowledgement; one of the two must be given.
 */
export const eksAddonSchema = z
    .strictObject({
        configurationValues: z
            .string({
                error: 'eksAddon.configurationValues must be the add-on\'s values as text, e.g. {"mode":"nftables"}',
            })
            .optional()
            .describe(
                "The kube-proxy add-on's configurationValues as given to AWS (JSON or YAML text, e.g. the configurationValues of your aws.eks.Addon); they must set mode to the target mode.",
            ),
        acknowledgeOverwrite: z
            .boolean({ error: "eksAddon.acknowledgeOverwrite must be true or false" })
            .optional()
            .describe(
                "Go on without the add-on's values: an add-on update with resolveConflicts OVERWRITE may rewrite kube-proxy-config and move every node, unchecked (a warning in the preview). Default: false.",
            ),
    })
    .refine((a) => a.configurationValues !== undefined || a.acknowledgeOverwrite === true, {
        error: 'give configurationValues (the add-on\'s values, e.g. {"mode":"nftables"}) or acknowledgeOverwrite: true',
    });
