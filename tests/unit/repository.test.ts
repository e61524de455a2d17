// The repository stands alone: a fresh clone builds and tests without anything beside it.
// Code, scripts and tests must not read the team's reference folder that sits beside a
// developer's checkout (a user's clone has none): the facts they rely on live in docs/facts.md
// and components/core/facts.ts. The folder's name is assembled below, so this guard does not
// itself name the path it forbids.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import * as ts from "typescript";
import { ROOT } from "../helpers.js";

/** Files of `dir` (recursively), skipping build output and dependencies. */
function sourceFiles(dir: string): string[] {
    const out: string[] = [];
    for (const e of readdirSync(dir, { withFileTypes: true })) {
        if (e.name === "node_modules" || e.name === "dist") continue;
        const p = join(dir, e.name);
        if (e.isDirectory()) out.push(...sourceFiles(p));
        else if (/\.(ts|js|mjs|cjs|sh|json|yaml|yml)$/.test(e.name)) out.push(p);
    }
    return out;
}

/** The reference folder beside a developer's checkout, by name. */
const FOLDER = ["sha", "red"].join("");
const UP = "..";

/** A path to that folder: parent-relative, its reference/ subfolder, as join() segments after "..", or absolute under /work. */
export const OUTSIDE_PATH = new RegExp(
    [
        `\\.\\./${FOLDER}\\b`,
        `\\b${FOLDER}/reference\\b`,
        `["'\`]\\.\\.["'\`]\\s*,\\s*["'\`]${FOLDER}["'\`]`,
        `/work/${FOLDER}\\b`,
    ].join("|"),
);

describe("the repository stands alone", () => {
    it("no file under components/, scripts/ or tests/ names a path into the shared reference folder", () => {
        const offenders: string[] = [];
        for (const top of ["components", "scripts", "tests"]) {
            for (const file of sourceFiles(join(ROOT, top))) {
                const rel = relative(ROOT, file);
                readFileSync(file, "utf8")
                    .split("\n")
                    .forEach((line, i) => {
                        if (OUTSIDE_PATH.test(line)) offenders.push(`${rel}:${i + 1}: ${line.trim()}`);
                    });
            }
        }
        assert.deepEqual(
            offenders,
            [],
            `read the repository's own copy (docs/facts.md) instead:\n${offenders.join("\n")}`,
        );
    });
    it("the pattern catches each way of naming the folder (join segments, parent-relative, reference/ subfolder, absolute)", () => {
        for (const line of [
            `readFileSync(join(ROOT, "${UP}", "${FOLDER}", "reference", "DOMAIN.md"))`,
            `const p = "${UP}/${FOLDER}/reference/DOMAIN.md";`,
            `// read ${FOLDER}/reference/DOMAIN.md`,
            `cat /work/${FOLDER}/x`,
        ])
            assert.ok(OUTSIDE_PATH.test(line), line);
        for (const line of [
            `// ${FOLDER} by every subcommand`,
            `const ${FOLDER} = 1;`,
            `join(ROOT, "docs", "facts.md")`,
        ])
            assert.ok(!OUTSIDE_PATH.test(line), line);
    });
});

/**
 * The names `source` declares and exports: exported functions (a function's overloads are one
 * name), classes, interfaces, type aliases, enums, namespaces and variables, and local
 * declarations exported by an `export { ... }` list. Re-exports (`export ... from`, or an
 * `export { ... }` of an imported name) declare nothing.
 */
export function exportedDeclarations(fileName: string, source: string): string[] {
    const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
    const exported = (s: ts.Statement) =>
        ts.canHaveModifiers(s) && (ts.getModifiers(s) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
    const names = new Set<string>();
    const local = new Set<string>();
    for (const s of file.statements) {
        const declared: string[] = [];
        if (
            (ts.isFunctionDeclaration(s) ||
                ts.isClassDeclaration(s) ||
                ts.isInterfaceDeclaration(s) ||
                ts.isTypeAliasDeclaration(s) ||
                ts.isEnumDeclaration(s) ||
                ts.isModuleDeclaration(s)) &&
            s.name &&
            ts.isIdentifier(s.name)
        )
            declared.push(s.name.text);
        else if (ts.isVariableStatement(s))
            for (const d of s.declarationList.declarations) if (ts.isIdentifier(d.name)) declared.push(d.name.text);
        for (const name of declared) (exported(s) ? names : local).add(name);
    }
    for (const s of file.statements)
        if (ts.isExportDeclaration(s) && !s.moduleSpecifier && s.exportClause && ts.isNamedExports(s.exportClause))
            for (const e of s.exportClause.elements)
                if (local.has((e.propertyName ?? e.name).text)) names.add(e.name.text);
    return [...names];
}

/** Every .ts file under `dir`, skipping generated code (sdk/) and declaration files. */
function typeScriptFiles(dir: string): string[] {
    const out: string[] = [];
    for (const e of readdirSync(dir, { withFileTypes: true })) {
        if (e.name === "node_modules" || e.name === "dist" || e.name === "sdk") continue;
        const p = join(dir, e.name);
        if (e.isDirectory()) out.push(...typeScriptFiles(p));
        else if (e.name.endsWith(".ts") && !e.name.endsWith(".d.ts")) out.push(p);
    }
    return out;
}

/**
 * The config-driven program's exports are its stack's outputs, named after the component's outputs
 * (configHash, plan, ...): the names are the stack's contract, not declarations of their own.
 */
const STACK_OUTPUTS = join("components", "program", "index.ts");

describe("exported names (issue #41)", () => {
    it("no exported name of components/ is declared in two files: each name says one thing", () => {
        const where = new Map<string, string[]>();
        for (const file of typeScriptFiles(join(ROOT, "components"))) {
            const rel = relative(ROOT, file);
            if (rel === STACK_OUTPUTS) continue;
            for (const name of exportedDeclarations(rel, readFileSync(file, "utf8")))
                where.set(name, [...(where.get(name) ?? []), rel]);
        }
        const twice = [...where]
            .filter(([, files]) => files.length > 1)
            .map(([n, files]) => `${n}: ${files.join(", ")}`);
        assert.deepEqual(
            twice,
            [],
            `give the internal one a name of its own (or merge them when they are one thing):\n${twice.join("\n")}`,
        );
    });
    it("counts declarations, not overloads or re-exports", () => {
        const source = [
            "export function f(a: string): string;",
            "export function f(a: number): number;",
            "export function f(a: unknown) { return a; }",
            "export interface I { a: string }",
            "export type T = string;",
            "export const c = 1, d = 2;",
            "export declare class K {}",
            "export enum E { A }",
            "function hidden() {}",
            "const kept = 1;",
            "export { kept as renamed };",
            'import { imported } from "./other.js";',
            "export { imported };",
            'export { x } from "./other.js";',
            'export type { Y } from "./other.js";',
            'export * from "./other.js";',
        ].join("\n");
        assert.deepEqual(exportedDeclarations("x.ts", source).sort(), ["E", "I", "K", "T", "c", "d", "f", "renamed"]);
    });
});

/** The longest a source file of components/ may be (issue #41): one concept a file. */
const MAX_LINES = 450;

describe("file size (issue #41)", () => {
    it(`no .ts file under components/ is over ${MAX_LINES} lines: split it by concept`, () => {
        const long = typeScriptFiles(join(ROOT, "components"))
            .map((file) => ({
                rel: relative(ROOT, file),
                lines: (readFileSync(file, "utf8").match(/\n/g) ?? []).length,
            }))
            .filter((f) => f.lines > MAX_LINES)
            .map((f) => `${f.rel}: ${f.lines} lines`);
        assert.deepEqual(long, [], `split these by concept (at most ${MAX_LINES} lines each):\n${long.join("\n")}`);
    });
});

describe("the README's component example", () => {
    it("is examples/component/index.ts, quoted verbatim (that file is typechecked in the build and by the consumer e2e)", () => {
        const example = readFileSync(join(ROOT, "examples", "component", "index.ts"), "utf8");
        const readme = readFileSync(join(ROOT, "README.md"), "utf8");
        assert.ok(
            readme.includes("```ts\n" + example + "```"),
            "README.md quotes examples/component/index.ts in a ts block",
        );
    });
});
