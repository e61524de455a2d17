// Flag parsing shared by every subcommand: node's own parseArgs, strict, with errors
// that name the flag and point at the command's help.
import { readFileSync } from "node:fs";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { PROXY_MODES, type ProxyMode } from "../core/types.js";
import { CliError } from "./output.js";

export function parseFlags<T extends NonNullable<ParseArgsConfig["options"]>>(
    command: string,
    argv: string[],
    options: T,
) {
    try {
        const { values } = parseArgs({
            args: argv,
            options: { ...options, help: { type: "boolean", short: "h" } },
            strict: true,
            allowPositionals: false,
        });
        return values as {
            [K in keyof T]?: T[K] extends { multiple: true }
                ? string[]
                : T[K] extends { type: "boolean" }
                  ? boolean
                  : string;
        } & { help?: boolean };
    } catch (e) {
        const msg = (e as Error).message.split("\n")[0].replace(/\. To specify a positional argument.*$/, "");
        throw new CliError(`${command}: ${msg}; see kube-proxy-mode ${command} --help`);
    }
}

/** Reads a file argument; "-" is standard input. */
export function readInput(path: string, flag: string): string {
    try {
        return readFileSync(path === "-" ? 0 : path, "utf8");
    } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        throw new CliError(`${flag}: cannot read ${path === "-" ? "standard input" : path}${code ? ` (${code})` : ""}`);
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
