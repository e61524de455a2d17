// A fleet of stacks moved in waves (issue #42): the fleet file's schema and findings, and the
// fleet's workflow id. Pure: the text and the fleet file's folder come in as data. The scheduler
// is in fleetSchedule.ts, which the Temporal workflow's sandbox loads.
import { createHash } from "node:crypto";
import * as path from "node:path";
import * as YAML from "../libraries/yaml.js";
import { z } from "../libraries/zod.js";
import { durationSchema, issueMessage, issuePath, secondsOf } from "./schema.js";
import type { Fleet } from "./fleetSchedule.js";
import type { ProxyMode } from "./types.js";

export * from "./fleetSchedule.js";

const WAVE_NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const STACK_NAME = /^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+){0,2}$/;
const WHOLE = "maxParallel must be a whole number of at least 1, e.g. 2";

/** A text field's refusal: `missing` when absent, else that it must be text. */
const text = (field: string, missing: string) => (iss: { input?: unknown }) =>
    iss.input === undefined ? missing : `${field} must be text, not ${JSON.stringify(iss.input)}; ${missing}`;

/** One stack as the fleet file lists it. */
const stackInputSchema = z
    .strictObject(
        {
            dir: z
                .string({ error: text("dir", "dir is required: the stack's Pulumi project directory, e.g. ./infra") })
                .trim()
                .min(1, "dir is required: the stack's Pulumi project directory, e.g. ./infra")
                .describe("The Pulumi project's directory, relative to the fleet file's folder (or absolute)."),
            stack: z
                .string({ error: text("stack", "stack is required: the stack's name, e.g. prod") })
                .regex(
                    STACK_NAME,
                    "stack must be a Pulumi stack name (letters, digits, '-', '_', '.'; or org/project/stack)",
                )
                .describe("The stack's name in that project, e.g. prod (or org/project/prod)."),
        },
        { error: "a stack must be a mapping, e.g. { dir: ./infra, stack: dev }" },
    )
    .describe("A Pulumi stack: its project directory and its name. Each stack appears once in the fleet.");

/** One wave as the fleet file lists it: durations stay text ("10m"). */
const waveInputSchema = z
    .strictObject(
        {
            name: z
                .string({ error: text("name", "a wave needs a name, e.g. canary") })
                .regex(WAVE_NAME, "wave name must be lower-case letters, digits and '-' (at most 63), e.g. canary")
                .describe("The wave's name: lower-case letters, digits and '-' (at most 63); unique in the fleet."),
            maxParallel: z
                .number({ error: WHOLE })
                .int(WHOLE)
                .min(1, WHOLE)
                .optional()
                .describe("How many of the wave's stacks move at once. Default: 1."),
            soak: z
                .preprocess((v) => (typeof v === "number" ? String(v) : v), durationSchema({ positive: false }))
                .optional()
                .describe(
                    "How long to wait after every stack of the wave succeeded before the next wave starts, e.g. 10m. Not waited after the last wave, nor after a wave whose stacks were all skipped. Default: 0.",
                ),
            stacks: z
                .array(stackInputSchema, { error: "stacks must be a list of { dir, stack }" })
                .min(1, "a wave must list at least one stack, e.g. - { dir: ./infra, stack: dev }")
                .describe("The wave's stacks, in the order they start."),
        },
        { error: "a wave must be a mapping, e.g. { name: canary, stacks: [{ dir: ./infra, stack: dev }] }" },
    )
    .describe("A wave: stacks that move together; a wave starts after every earlier wave succeeded and soaked.");

/** The fleet file (fleet.yaml) as the user writes it. */
export const fleetFileSchema = z
    .strictObject(
        {
            waves: z
                .array(waveInputSchema, {
                    error: "waves must be a list of waves, e.g. - { name: canary, stacks: [...] }",
                })
                .min(1, "a fleet must list at least one wave, e.g. - { name: canary, stacks: [...] }")
                .describe("The waves, in the order they run."),
        },
        { error: "the fleet file must be a mapping with waves: [...]" },
    )
    .describe("A fleet of Pulumi stacks moved to the target in waves (kube-proxy-mode fleet up --file fleet.yaml).");

/** A problem in the fleet file: the field's path (waves[1].stacks[0].stack), what is wrong and the fix. */
export interface FleetFinding {
    field: string;
    message: string;
    /** 1-based line in the fleet file, when known */
    line?: number;
}

/** A stack's directory as the fleet knows it: absolute dirs normalised, relative ones joined to `fileDir`. */
export function resolveStackDir(dir: string, fileDir: string): string {
    const joined = path.isAbsolute(dir) ? path.normalize(dir) : path.join(fileDir, dir);
    return joined.length > 1 && joined.endsWith(path.sep) ? joined.slice(0, -1) : joined;
}

const keyOf = (dir: string, stack: string) => `${stack}@${dir}`;

type Path = (string | number)[];

/**
 * What the schema cannot see alone: a wave name used twice, a stack listed twice (compared after
 * its dir is resolved). One problem at each repeat, naming the first place. Reads whatever shape
 * the file has: the schema reports the shape.
 */
function repeats(raw: unknown, fileDir: string): { path: Path; message: string }[] {
    const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
    const field = (v: unknown, key: string): unknown =>
        v && typeof v === "object" ? (v as Record<string, unknown>)[key] : undefined;
    const names = new Map<string, number>();
    const stacks = new Map<string, string>();
    const out: { path: Path; message: string }[] = [];
    list(field(raw, "waves")).forEach((wave, w) => {
        const name = field(wave, "name");
        if (typeof name === "string" && names.has(name))
            out.push({
                path: ["waves", w, "name"],
                message: `wave name ${name} is already used by waves[${names.get(name)}]; give each wave its own name`,
            });
        else if (typeof name === "string") names.set(name, w);
        list(field(wave, "stacks")).forEach((s, i) => {
            const [dir, stack] = [field(s, "dir"), field(s, "stack")];
            if (typeof dir !== "string" || typeof stack !== "string" || dir.trim() === "") return;
            const key = keyOf(resolveStackDir(dir.trim(), fileDir), stack);
            const first = stacks.get(key);
            if (first === undefined) stacks.set(key, `waves[${w}].stacks[${i}]`);
            else
                out.push({
                    path: ["waves", w, "stacks", i],
                    message: `stack ${key} is already listed at ${first}; list each stack once (remove one of the two)`,
                });
        });
    });
    return out;
}

/**
 * Parses a fleet file's text: the fleet (dirs resolved against `fileDir`, the fleet file's folder;
 * defaults applied; soak in seconds), or (fleet undefined) every problem as a finding naming its
 * field, with its line in the file. YAML errors come first and alone.
 */
export function parseFleet(text: string, fileDir: string): { fleet?: Fleet; findings: FleetFinding[] } {
    const lines = new YAML.LineCounter();
    const doc = YAML.parseDocument(text, { lineCounter: lines, prettyErrors: false });
    if (doc.errors.length > 0)
        return {
            findings: doc.errors.map((e) => {
                const line = lines.linePos(e.pos[0]).line;
                return { field: "fleet file", line, message: `line ${line}: ${e.message}; fix the YAML there` };
            }),
        };
    const raw: unknown = doc.toJS();
    /** The line of the deepest node of `path` the file has (a missing field: its parent's line). */
    const lineOf = (path: Path): number | undefined => {
        for (let n = path.length; n > 0; n--) {
            const node = doc.getIn(path.slice(0, n), true) as YAML.Node | undefined;
            if (node?.range) return lines.linePos(node.range[0]).line;
        }
        return undefined;
    };
    const parsed = fleetFileSchema.safeParse(raw ?? {});
    const problems = [
        ...(parsed.success ? [] : parsed.error.issues).map((i) => {
            const path = i.path.map((p) => (typeof p === "number" ? p : String(p)));
            const at = i.code === "unrecognized_keys" ? [...path, i.keys[0]] : path;
            return { path, at, message: issueMessage(i) };
        }),
        ...repeats(raw, fileDir).map((r) => ({ ...r, at: r.path })),
    ];
    if (!parsed.success || problems.length > 0)
        return {
            findings: problems.map(({ path, at, message }) => {
                const line = lineOf(at);
                return { field: issuePath(path, "") || "fleet file", message, ...(line ? { line } : {}) };
            }),
        };
    const waves = parsed.data.waves.map((w) => ({
        name: w.name,
        maxParallel: w.maxParallel ?? 1,
        soakSeconds: secondsOf(w.soak, 0),
        stacks: w.stacks.map((s) => {
            const dir = resolveStackDir(s.dir, fileDir);
            return { dir, stack: s.stack, key: keyOf(dir, s.stack) };
        }),
    }));
    return { fleet: { waves }, findings: [] };
}

/**
 * The fleet's Temporal workflow id: `kpm-fleet-<first wave>-<hash12>`.
 * Content-derived so that rerunning the same fleet and target resumes its workflow, and a changed fleet starts a new one.
 * No target: each stack moves to the mode its own code declares.
 */
export function fleetId(fleet: Fleet, target?: ProxyMode): string {
    const content = {
        target: target ?? "as declared",
        waves: fleet.waves.map((w) => ({
            name: w.name,
            maxParallel: w.maxParallel,
            soakSeconds: w.soakSeconds,
            stacks: w.stacks.map((s) => [s.dir, s.stack]),
        })),
    };
    const hash = createHash("sha256").update(JSON.stringify(content)).digest("hex").slice(0, 12);
    return `kpm-fleet-${fleet.waves[0].name}-${hash}`;
}
