// Flag parsing shared by every subcommand: node's own parseArgs, strict, with errors
// that name the flag and point at the command's help.
import { closeSync, openSync, readSync } from "node:fs";
import { parseArgs } from "node:util";
import { closest, distance } from "../libraries/levenshtein.js";
import { FLAVORS, type Flavor } from "../core/facts.js";
import { poolInputSchema } from "../core/pools.js";
import { parseSelector, type Selector } from "../core/selector.js";
import { PROXY_MODES, type ProxyMode } from "../core/types.js";
import { parseKubeVersion, type KubeVersion } from "../core/versions.js";
import { withOutput, type Io } from "./io.js";
import { CliError } from "./output.js";

/** How one flag's text becomes its typed value; throws a CliError naming the flag when it cannot. */
export type FlagValue<T> = (raw: string, flag: string) => T;

/** A flag that takes one value (the last one given wins, as parseArgs). */
export interface ValueFlag<T> {
    type: "string";
    multiple?: false;
    value: FlagValue<T>;
    /** a one-letter alias (-o), as kubectl has it */
    short?: string;
}

/** A repeatable flag: every value, in order. */
export interface ListFlag<T> {
    type: "string";
    multiple: true;
    value: FlagValue<T>;
}

/** A switch: present or not; it takes no value. */
export interface SwitchFlag {
    type: "boolean";
}

export type FlagSpec = ValueFlag<unknown> | ListFlag<unknown> | SwitchFlag;

/** A command's flags, by name (without the leading --): the one place a reader sees what a command takes. */
export type FlagSet = Record<string, FlagSpec>;

/** The typed values of a command's flags: a flag not given is undefined. `help` is every command's. */
export type Flags<S extends FlagSet> = {
    [K in keyof S]?: S[K] extends ListFlag<infer T> ? T[] : S[K] extends ValueFlag<infer T> ? T : boolean;
} & { help?: boolean };

const asText: FlagValue<string> = (raw) => raw;

/** Builders for a FlagSet's entries. */
export const flag = {
    /** one value, checked and converted by `value` (default: the text as given) */
    value<T = string>(value?: FlagValue<T>): ValueFlag<T> {
        return { type: "string", value: value ?? (asText as FlagValue<T>) };
    },
    /** repeatable; each value checked and converted by `value` */
    list<T = string>(value?: FlagValue<T>): ListFlag<T> {
        return { type: "string", multiple: true, value: value ?? (asText as FlagValue<T>) };
    },
    switch(): SwitchFlag {
        return { type: "boolean" };
    },
    /** -o/--output json|yaml, kubectl's spelling beside --json (parseFlags holds the two together) */
    output(): ValueFlag<OutputFormat> {
        return { type: "string", short: "o", value: outputValue };
    },
};

export const OUTPUT_FORMATS = ["json", "yaml"] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

const outputValue: FlagValue<OutputFormat> = (raw) => {
    if (!(OUTPUT_FORMATS as readonly string[]).includes(raw))
        throw new CliError(`-o/--output ${JSON.stringify(raw)}: expected ${OUTPUT_FORMATS.join(" or ")}`);
    return raw as OutputFormat;
};

/** The declared flag closest to a misspelt one, when it is close enough to be a typo. */
function suggestFlag(given: string, names: string[]): string | undefined {
    const bare = given.replace(/^-+/, "").replace(/=.*$/, "");
    if (bare === "") return undefined;
    const best = closest(bare, names);
    return distance(bare, best) <= Math.max(2, Math.floor(bare.length / 4)) ? `--${best}` : undefined;
}

/** parseArgs' refusal as one line naming the flag, with the declared flag a misspelt one was meant to be. */
function flagError(command: string, e: unknown, names: string[]): CliError {
    const msg = (e as Error).message.split("\n")[0].replace(/\. To specify a positional argument.*$/, "");
    const unknown = (e as { code?: string }).code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" && /'([^']+)'/.exec(msg)?.[1];
    const suggestion = unknown ? suggestFlag(unknown, names) : undefined;
    const meant = suggestion ? ` (did you mean ${suggestion}?)` : "";
    return new CliError(`${command}: ${msg}${meant}; see kube-proxy-mode ${command} --help`);
}

/**
 * Parses a command's argv against its FlagSet: strict (an unknown flag, a missing value, a value
 * given to a switch and a stray argument are refused, naming the flag), then every value through
 * its flag's `value`, so the command receives typed values and a wrongly typed one is refused
 * before the command reads any input or touches a cluster.
 */
export function parseFlags<S extends FlagSet>(command: string, argv: string[], flags: S): Flags<S> {
    const names = [...Object.keys(flags), "help"];
    let values: Record<string, string | boolean | (string | boolean)[] | undefined>;
    try {
        ({ values } = parseArgs({
            args: argv,
            options: {
                ...Object.fromEntries(
                    Object.entries(flags).map(([name, f]) => [
                        name,
                        f.type === "boolean"
                            ? { type: f.type }
                            : {
                                  type: f.type,
                                  multiple: f.multiple === true,
                                  ...("short" in f && f.short ? { short: f.short } : {}),
                              },
                    ]),
                ),
                help: { type: "boolean", short: "h" },
            },
            strict: true,
            allowPositionals: false,
        }));
    } catch (e) {
        throw flagError(command, e, names);
    }
    const typed: Record<string, unknown> = {};
    for (const [name, given] of Object.entries(values)) {
        const spec = flags[name];
        if (!spec || spec.type === "boolean") typed[name] = given;
        else if (Array.isArray(given)) typed[name] = given.map((v) => spec.value(String(v), `--${name}`));
        else if (given !== undefined) typed[name] = spec.value(String(given), `--${name}`);
    }
    if (typed.output !== undefined && "json" in flags) {
        // -o json is --json; -o yaml the same object as YAML
        if (typed.json === true && typed.output !== "json")
            throw new CliError(`${command}: --json and -o ${typed.output as string} ask for two formats; pass one`);
        typed.json = true;
    }
    return typed as Flags<S>;
}

/** The flag every command's FlagSet has: -o/--output json|yaml. */
type OutputFlagSet = { output: ValueFlag<OutputFormat> };

/**
 * What every command does first: its flags parsed and typed (a wrong one refused, exit 2, before
 * any input is read or a cluster touched), and its output set as -o/--output asks; undefined when
 * --help was asked (printed here, the command exits 0).
 */
export function commandFlags<S extends FlagSet & OutputFlagSet>(
    command: string,
    argv: string[],
    io: Io,
    flagSet: S,
    help: string,
): { flags: Flags<S>; io: Io } | undefined {
    const flags = parseFlags(command, argv, flagSet);
    const out = withOutput(io, (flags as Flags<OutputFlagSet>).output);
    if (flags.help) {
        out.out(help);
        return undefined;
    }
    return { flags, io: out };
}

/**
 * The most a command reads of one input, so a wrong file (or /dev/zero) is refused at once instead
 * of filling memory. A ConfigMap is at most 1 MiB in the API, and kubectl's YAML of it (with the
 * last-applied copy and managedFields) stays under 4 MiB; a rollout spec carries one configuration.
 * A node list grows with the cluster (kubectl get nodes -o json).
 */
export const INPUT_LIMITS = { default: 4 << 20, nodeList: 64 << 20 } as const;

/** Blocks the thread for `ms` (a non-blocking standard input that has nothing yet). */
function pause(ms: number): void {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Reads a file argument ("-" is standard input), at most `limit` bytes: more is refused naming the flag. */
export function readInput(path: string, flag: string, limit: number = INPUT_LIMITS.default): string {
    const what = path === "-" ? "standard input" : path;
    const unreadable = (e: unknown) => {
        const code = (e as NodeJS.ErrnoException).code;
        return new CliError(`${flag}: cannot read ${what}${code ? ` (${code})` : ""}`);
    };
    let fd: number;
    try {
        fd = path === "-" ? 0 : openSync(path, "r");
    } catch (e) {
        throw unreadable(e);
    }
    try {
        const chunks: Buffer[] = [];
        const buffer = Buffer.alloc(1 << 16);
        let total = 0;
        for (;;) {
            let n: number;
            try {
                n = readSync(fd, buffer, 0, buffer.length, null);
            } catch (e) {
                const code = (e as NodeJS.ErrnoException).code;
                if (code === "EAGAIN") {
                    pause(10);
                    continue;
                }
                if (code === "EOF") break;
                throw unreadable(e);
            }
            if (n === 0) break;
            total += n;
            if (total > limit)
                throw new CliError(
                    `${flag}: ${what} is larger than ${limit >> 20} MiB, the most this command reads for ${flag}; pass the one object it takes (see --help)`,
                );
            chunks.push(Buffer.from(buffer.subarray(0, n)));
        }
        return Buffer.concat(chunks).toString("utf8");
    } finally {
        if (path !== "-") closeSync(fd);
    }
}

export function requireMode(value: string | undefined, flag = "--mode"): ProxyMode {
    if (value === undefined || value === "") {
        throw new CliError(
            `${flag} is required: one of ${PROXY_MODES.join(", ")} (an unpinned mode changes when upstream's default changes)`,
        );
    }
    if (!(PROXY_MODES as readonly string[]).includes(value)) {
        throw new CliError(
            `${flag} ${JSON.stringify(value)} is not a kube-proxy mode: use one of ${PROXY_MODES.join(", ")}`,
        );
    }
    return value as ProxyMode;
}

export function parseBool(value: string, flag: string): boolean {
    if (value === "true") return true;
    if (value === "false") return false;
    throw new CliError(`${flag} ${JSON.stringify(value)}: expected true or false`);
}

/**
 * A comma-separated list whose every entry counts (A,B): an empty entry (a trailing or doubled
 * comma) is refused, as kube-proxy would read it as an empty value rather than drop it.
 */
export const strictListValue: FlagValue<string[]> = (raw, name) => {
    const entries = raw.split(",").map((s) => s.trim());
    const empty = entries.findIndex((s) => s === "");
    if (empty >= 0)
        throw new CliError(
            `${name} ${JSON.stringify(raw)}: entry ${empty + 1} is empty (a trailing or doubled comma); remove it`,
        );
    return entries;
};

/** --feature-gate NAME=true|false, repeatable; also accepts A=true,B=false in one flag. */
export function parseFeatureGates(values: string[] | undefined): Record<string, boolean> | undefined {
    if (!values || values.length === 0) return undefined;
    const gates: Record<string, boolean> = {};
    for (const v of values.flatMap((x) => x.split(","))) {
        const m = /^\s*([A-Za-z0-9]+)\s*=\s*(\S+)\s*$/.exec(v);
        if (!m) throw new CliError(`--feature-gate ${JSON.stringify(v)}: expected NAME=true or NAME=false`);
        gates[m[1]] = parseBool(m[2], `--feature-gate ${m[1]}`);
    }
    return gates;
}

export function splitList(value: string | undefined): string[] | undefined {
    if (value === undefined) return undefined;
    return value
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s !== "");
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * A Kubernetes object name as the CLI takes it: node names are DNS-1123 subdomains (at most 253
 * characters of lower-case letters, digits, '-' and '.', each dot-separated part a DNS-1123
 * label), namespaces and Service names DNS-1123 labels (at most 63, no dot). Anything else is
 * refused before it reaches a field selector or a URL.
 */
export function requireName(
    value: string | undefined,
    flag: string,
    kind: "subdomain" | "label" = "subdomain",
): string {
    if (value === undefined || value === "") throw new CliError(`${flag} is required`);
    const max = kind === "label" ? 63 : 253;
    const ok =
        value.length <= max &&
        (kind === "label"
            ? DNS1123_LABEL.test(value)
            : value.split(".").every((part) => part.length <= 63 && DNS1123_LABEL.test(part)));
    if (!ok) {
        throw new CliError(
            `${flag} ${JSON.stringify(value)} is not a valid ${kind === "label" ? "DNS-1123 label" : "DNS-1123 subdomain"} name: ` +
                `lower-case letters, digits and '-'${kind === "label" ? "" : " and '.'"}, starting and ending with a letter or digit, at most ${max} characters`,
        );
    }
    return value;
}

/** "namespace/name" (a Service), each part a DNS-1123 label. */
export function requireNamespacedName(value: string, flag: string): string {
    const parts = value.split("/");
    if (parts.length !== 2) throw new CliError(`${flag} ${JSON.stringify(value)}: expected NAMESPACE/NAME`);
    requireName(parts[0], `${flag} namespace`, "label");
    requireName(parts[1], `${flag} name`, "label");
    return value;
}

// The values the commands' flags take, each checked once here (the FlagSets name them).

/** --mode: one of the proxy modes. */
export const modeValue: FlagValue<ProxyMode> = (raw, name) => requireMode(raw, name);

/** true or false, spelt out (a flag whose value is a setting, not a switch). */
export const booleanValue: FlagValue<boolean> = (raw, name) => parseBool(raw, name);

/** X.Y or vX.Y.Z. */
export const kubeVersionValue: FlagValue<KubeVersion> = (raw, name) => {
    const version = parseKubeVersion(raw);
    if (!version) throw new CliError(`${name} ${JSON.stringify(raw)}: expected X.Y or vX.Y.Z`);
    return version;
};

/** Where the installer keeps kube-proxy. */
export const flavorValue: FlagValue<Flavor> = (raw, name) => {
    if (!Object.keys(FLAVORS).includes(raw))
        throw new CliError(`${name} ${JSON.stringify(raw)}: use ${Object.keys(FLAVORS).join(" or ")}`);
    return raw as Flavor;
};

/** A node's name (a DNS-1123 subdomain). */
export const nodeNameValue: FlagValue<string> = (raw, name) => requireName(raw, name);

/** NAMESPACE/NAME of a Service. */
export const serviceValue: FlagValue<string> = (raw, name) => requireNamespacedName(raw, name);

/** A pool's name, by the rule the pools' schema holds. */
export const poolNameValue: FlagValue<string> = (raw, name) => {
    const parsed = poolInputSchema.shape.name.safeParse(raw);
    if (!parsed.success) throw new CliError(`${name} ${JSON.stringify(raw)}: ${parsed.error.issues[0].message}`);
    return parsed.data;
};

/** A label selector. */
export const selectorValue: FlagValue<Selector> = (raw, name) => parseSelector(raw, name);

/** Any text but the empty one (an image, a path, a context). */
export const nonEmptyValue: FlagValue<string> = (raw, name) => {
    if (raw.trim() === "") throw new CliError(`${name} needs a value; see --help`);
    return raw;
};

/** A comma-separated list (A,B,C); empty entries dropped. */
export const listValue: FlagValue<string[]> = (raw) => splitList(raw) ?? [];

/** --feature-gate NAME=true|false (or A=true,B=false in one flag). */
export const featureGatesValue: FlagValue<Record<string, boolean>> = (raw) => parseFeatureGates([raw]) ?? {};
