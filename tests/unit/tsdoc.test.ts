// The TSDoc of KubeProxyModeArgs (components/pulumi/kubeProxyModeArgs.ts) says what the zod schemas
// say: each property's first paragraph is its input's `.describe()` text without the trailing
// "Default: ..." (the schemas are the one source; docs/reference/inputs.md and schema.json read them).
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
export function tsdocMismatches(source: string, schema: Node): { mismatches: Mismatch[]; unreached: string[] } {
    const file = ts.createSourceFile("kubeProxyModeArgs.ts", source, ts.ScriptTarget.Latest, true);
    const interfaces = new Map<string, ts.InterfaceDeclaration>();
    for (const s of file.statements) if (ts.isInterfaceDeclaration(s)) interfaces.set(s.name.text, s);
    const mismatches: Mismatch[] = [];
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
    return { mismatches, unreached: [...interfaces.keys()].filter((n) => !reached.has(n)) };
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
