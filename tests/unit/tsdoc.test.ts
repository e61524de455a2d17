// The TSDoc of KubeProxyModeArgs (components/pulumi/kubeProxyModeArgs.ts) says what the zod schemas
// say: each property's first paragraph is its input's `.describe()` text without the trailing
// "Default: ..." and its @default the default the schema states (the schemas are the one source;
// docs/reference/inputs.md and schema.json read them).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as ts from "typescript";
import { z } from "../../components/libraries/zod.js";
import { componentInputSchema } from "../../components/provider/schema.js";
import { ROOT } from "../helpers.js";

const ARGS_FILE = join(ROOT, "components", "pulumi", "kubeProxyModeArgs.ts");

/** A JSON-schema node as zod's toJSONSchema writes it (the parts compared here). */
interface Node {
    type?: string;
    default?: unknown;
    anyOf?: Node[];
    items?: Node;
    properties?: Record<string, Node>;
    description?: string;
}

/** The description without its trailing "Default: ..." (as scripts/docsReference.ts splits it). */
function what(description = ""): string {
    const at = description.lastIndexOf(" Default: ");
    return at < 0 ? description : description.slice(0, at);
}

/** The object inside a field whose fields are the next interface's: itself, an array's items, a union's object. */
function nestedObject(node: Node): Node | undefined {
    if (node.properties) return node;
    if (node.type === "array" && node.items) return nestedObject(node.items);
    for (const n of node.anyOf ?? []) {
        const o = nestedObject(n);
        if (o) return o;
    }
    return undefined;
}

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim();

/** A property's TSDoc: its first paragraph (before any tag), on one line; undefined without one. */
export function firstParagraph(member: ts.Node): string | undefined {
    const docs = ts.getJSDocCommentsAndTags(member).filter(ts.isJSDoc);
    const text = docs.length ? ts.getTextOfJSDocComment(docs[docs.length - 1].comment) : undefined;
    if (!text?.trim()) return undefined;
    return oneLine(text.split(/\n\s*\n/)[0]);
}

export interface Mismatch {
    property: string;
    tsdoc: string | undefined;
    zod: string | undefined;
}

/** A property's `@default` tag, on one line; undefined without one. */
export function defaultTag(member: ts.Node): string | undefined {
    const tag = ts.getJSDocTags(member).find((t) => t.tagName.text === "default");
    return tag ? oneLine(ts.getTextOfJSDocComment(tag.comment) ?? "") : undefined;
}

/**
 * The default the schema states for an input, as docs/reference/inputs.md shows it: the
 * description's trailing "Default: ..." (a default the code computes), else zod's `.default()` as
 * JSON; undefined when it states none.
 */
export function schemaDefault(node: Node): string | undefined {
    const at = (node.description ?? "").lastIndexOf(" Default: ");
    if (at >= 0) return oneLine(node.description!.slice(at + " Default: ".length).replace(/\.$/, ""));
    return node.default !== undefined ? JSON.stringify(node.default) : undefined;
}

/**
 * Whether a `@default` tag says the schema's default: that text exactly, or followed by a remark in
 * parentheses (`"busybox:1.36@sha256:..." (busybox 1.36, pinned by digest)`). A tag on an input
 * whose schema states no default must not restate a value (JSON) the schema does not hold.
 */
export function defaultAgrees(tag: string | undefined, schema: string | undefined): boolean {
    if (tag === undefined) return schema === undefined;
    // TSDoc may set names in code (`kubernetes:context`) and a duration as the string it is given ("0s")
    const said = tag.replace(/`/g, "");
    if (schema === undefined) return !isJson(said);
    const unquoted = /^"[^"]*"$/.test(said) ? (JSON.parse(said) as string) : said;
    return said === schema || unquoted === schema || said.startsWith(`${schema} (`);
}

function isJson(text: string): boolean {
    try {
        JSON.parse(text);
        return true;
    } catch {
        return false;
    }
}

/** The object literal types inside a property's type (`drain?: Input<boolean | { force?: ... }>`). */
function typeLiterals(type: ts.TypeNode): ts.TypeLiteralNode[] {
    const found: ts.TypeLiteralNode[] = [];
    const visit = (n: ts.Node): void => {
        if (ts.isTypeLiteralNode(n)) found.push(n);
        else ts.forEachChild(n, visit);
    };
    visit(type);
    return found;
}

/**
 * Every property of the args interfaces whose TSDoc differs from its zod description: starting at
 * KubeProxyModeArgs (the schema's root), an interface named in a property's type, and an object
 * literal type inside it, are compared with that property's object in the schema (itself, an
 * array's items or a union's object, as scripts/docsReference.ts nests them). Also every interface
 * of the file must be reached.
 */
export function tsdocMismatches(
    source: string,
    schema: Node,
): { mismatches: Mismatch[]; defaults: Mismatch[]; unreached: string[] } {
    const file = ts.createSourceFile("kubeProxyModeArgs.ts", source, ts.ScriptTarget.Latest, true);
    const interfaces = new Map<string, ts.InterfaceDeclaration>();
    for (const s of file.statements) if (ts.isInterfaceDeclaration(s)) interfaces.set(s.name.text, s);
    const mismatches: Mismatch[] = [];
    const defaults: Mismatch[] = [];
    const reached = new Set<string>();
    const queue: [string, ts.NodeArray<ts.TypeElement>, Node][] = [
        ["KubeProxyModeArgs", interfaces.get("KubeProxyModeArgs")!.members, schema],
    ];
    while (queue.length) {
        const [name, members, node] = queue.shift()!;
        if (reached.has(name)) continue;
        reached.add(name);
        for (const member of members) {
            if (!ts.isPropertySignature(member)) continue;
            const key = member.name.getText(file);
            const property = `${name}.${key}`;
            const child = node.properties?.[key];
            const tsdoc = firstParagraph(member);
            const zod = child ? oneLine(what(child.description)) : undefined;
            if (tsdoc === undefined || zod === undefined || tsdoc !== zod) mismatches.push({ property, tsdoc, zod });
            const tag = defaultTag(member);
            const stated = child && schemaDefault(child);
            if (child && !defaultAgrees(tag, stated)) defaults.push({ property, tsdoc: tag, zod: stated });
            const nested = child && nestedObject(child);
            if (!nested || !member.type) continue;
            for (const other of member.type.getText(file).match(/\b[A-Z]\w*\b/g) ?? [])
                if (interfaces.has(other)) queue.push([other, interfaces.get(other)!.members, nested]);
            for (const literal of typeLiterals(member.type)) queue.push([property, literal.members, nested]);
        }
        for (const key of Object.keys(node.properties ?? {}))
            if (!members.some((m) => m.name?.getText(file) === key))
                mismatches.push({
                    property: `${name}.${key}`,
                    tsdoc: undefined,
                    zod: oneLine(what(node.properties![key].description)),
                });
    }
    return { mismatches, defaults, unreached: [...interfaces.keys()].filter((n) => !reached.has(n)) };
}

describe("TSDoc of KubeProxyModeArgs: each property's first paragraph is its zod description", () => {
    const schema = z.toJSONSchema(componentInputSchema, { io: "input", unrepresentable: "any" }) as Node;

    it("every property of the args interfaces has a TSDoc equal to its input's zod .describe() text", () => {
        const { mismatches } = tsdocMismatches(readFileSync(ARGS_FILE, "utf8"), schema);
        assert.equal(
            mismatches.length,
            0,
            "TSDoc and zod description differ (components/pulumi/kubeProxyModeArgs.ts vs the .describe() of the schemas):\n" +
                mismatches
                    .map(
                        (m) =>
                            `  ${m.property}\n    TSDoc: ${m.tsdoc ?? "(none)"}\n    zod:   ${m.zod ?? "(no such input)"}`,
                    )
                    .join("\n"),
        );
    });

    it("every property's @default says the default its schema states (zod's .default(), or the description's Default:)", () => {
        const { defaults } = tsdocMismatches(readFileSync(ARGS_FILE, "utf8"), schema);
        assert.equal(
            defaults.length,
            0,
            "@default and the schema's default differ (components/pulumi/kubeProxyModeArgs.ts vs the schemas):\n" +
                defaults
                    .map(
                        (m) =>
                            `  ${m.property}\n    @default: ${m.tsdoc ?? "(none)"}\n    schema:   ${m.zod ?? "(states none)"}`,
                    )
                    .join("\n"),
        );
    });

    it("reports a @default that differs from the schema's, one missing, and a value the schema does not hold", () => {
        const source = [
            "export interface KubeProxyModeArgs {",
            "    /**",
            "     * A.",
            '     * @default "5m"',
            "     */",
            "    a?: string;",
            "    /**",
            "     * B.",
            '     * @default "0s"',
            "     */",
            "    b?: string;",
            "    /** C. */",
            "    c?: boolean;",
            "    /**",
            "     * D.",
            "     * @default {}",
            "     */",
            "    d?: object;",
            "    /**",
            "     * E.",
            '     * @default "busybox:1" (busybox 1)',
            "     */",
            "    e?: string;",
            "}",
        ].join("\n");
        const { defaults } = tsdocMismatches(source, {
            properties: {
                a: { description: "A. Default: 300s." },
                b: { description: "B. Default: 0s." },
                c: { description: "C.", default: false },
                d: { description: "D. Default: none." },
                e: { description: "E.", default: "busybox:1" },
            },
        });
        assert.deepEqual(defaults, [
            { property: "KubeProxyModeArgs.a", tsdoc: '"5m"', zod: "300s" },
            { property: "KubeProxyModeArgs.c", tsdoc: undefined, zod: "false" },
            { property: "KubeProxyModeArgs.d", tsdoc: "{}", zod: "none" },
        ]);
        const stated = tsdocMismatches(source.replace("D.\n     * @default {}", "D.\n     * @default none"), {
            properties: { d: { description: "D." } },
        });
        assert.deepEqual(
            stated.defaults.filter((m) => m.property === "KubeProxyModeArgs.d"),
            [],
            "words where the schema states no default",
        );
    });

    it("reaches every interface of kubeProxyModeArgs.ts from KubeProxyModeArgs", () => {
        assert.deepEqual(tsdocMismatches(readFileSync(ARGS_FILE, "utf8"), schema).unreached, []);
    });

    it("reports a property without TSDoc, and one whose TSDoc differs, with both texts", () => {
        const source = [
            "export interface KubeProxyModeArgs {",
            "    /** Old words. */",
            "    mode: string;",
            "    context?: string;",
            "}",
        ].join("\n");
        const { mismatches } = tsdocMismatches(source, {
            properties: {
                mode: { description: "New words. Default: x." },
                context: { description: "The context." },
            },
        });
        assert.deepEqual(mismatches, [
            { property: "KubeProxyModeArgs.mode", tsdoc: "Old words.", zod: "New words." },
            { property: "KubeProxyModeArgs.context", tsdoc: undefined, zod: "The context." },
        ]);
    });
});
