// The pieces every input schema shares: durations checked with the project's own parser, and the
// one formatter of zod's issues into "<field>: <what is wrong and the fix>" lines. Pure.
import { z } from "zod";
import { parseDuration } from "./duration.js";

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
    });
}

/** The dotted/indexed path of an issue under `prefix`: pools[0].name. */
export function issuePath(path: readonly PropertyKey[], prefix: string): string {
    return path.reduce<string>(
        (acc, p) => (typeof p === "number" ? `${acc}[${p}]` : `${acc}${acc ? "." : ""}${String(p)}`),
        prefix,
    );
}

/** What is wrong, for one issue: an unknown key is named with the fix. */
export function issueMessage(i: z.core.$ZodIssue): string {
    return i.code === "unrecognized_keys"
        ? `unknown field(s) ${i.keys.map((k) => JSON.stringify(k)).join(", ")}: check the spelling`
        : i.message;
}

/** A zod error as one line per field: "<field>: <what is wrong and the fix>". */
export function describeIssues(issues: z.core.$ZodIssue[], prefix: string): string[] {
    return issues.map((i) => `${issuePath(i.path, prefix) || "spec"}: ${issueMessage(i)}`);
}
