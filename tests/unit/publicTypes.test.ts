// Every type named in the public signatures (components/index.ts's exported functions and classes,
// and the exported types they name, transitively) is itself exported from components/index.ts, so
// a consumer can name what the API hands them. Read with the TypeScript compiler API.
import assert from "node:assert/strict";
import { join } from "node:path";
import * as ts from "typescript";
import { ROOT } from "../helpers.js";

const ENTRY = join(ROOT, "components", "index.ts");
const COMPONENTS = join(ROOT, "components") + "/";

/** The type nodes of a declaration's public signature: no bodies, no private, protected or `@internal` members. */
function signatureTypes(decl: ts.Declaration): ts.Node[] {
    const nodes: ts.Node[] = [];
    const isPublic = (m: ts.Node) =>
        !ts.canHaveModifiers(m) ||
        !(ts.getModifiers(m) ?? []).some(
            (x) => x.kind === ts.SyntaxKind.PrivateKeyword || x.kind === ts.SyntaxKind.ProtectedKeyword,
        );
    const ofSignature = (s: ts.SignatureDeclarationBase) => {
        for (const p of s.parameters) if (p.type) nodes.push(p.type);
        if (s.type) nodes.push(s.type);
    };
    if (ts.isFunctionDeclaration(decl)) ofSignature(decl);
    else if (ts.isTypeAliasDeclaration(decl)) nodes.push(decl.type);
    else if (ts.isClassDeclaration(decl) || ts.isInterfaceDeclaration(decl)) {
        for (const h of decl.heritageClauses ?? []) nodes.push(...h.types);
        for (const m of decl.members) {
            if (!isPublic(m) || (m.name && ts.isPrivateIdentifier(m.name))) continue;
            // a member for tests and embedding, not a consumer's API
            if (ts.getJSDocTags(m).some((t) => t.tagName.text === "internal")) continue;
            if (ts.isPropertyDeclaration(m) || ts.isPropertySignature(m)) {
                if (m.type) nodes.push(m.type);
            } else if (
                ts.isConstructorDeclaration(m) ||
                ts.isMethodDeclaration(m) ||
                ts.isMethodSignature(m) ||
                ts.isGetAccessorDeclaration(m)
            ) {
                ofSignature(m);
            }
        }
    }
    return nodes;
}

/** The package's own types a signature names (type references; not `typeof x`, not type parameters). */
function namedTypes(checker: ts.TypeChecker, root: ts.Node): ts.Symbol[] {
    const found: ts.Symbol[] = [];
    const visit = (n: ts.Node): void => {
        if (ts.isTypeQueryNode(n)) return;
        const name = ts.isTypeReferenceNode(n)
            ? n.typeName
            : ts.isExpressionWithTypeArguments(n)
              ? n.expression
              : undefined;
        if (name) {
            let s = checker.getSymbolAtLocation(ts.isQualifiedName(name) ? name.right : name);
            if (s && s.flags & ts.SymbolFlags.Alias) s = checker.getAliasedSymbol(s);
            const decl = s?.declarations?.[0];
            if (
                s &&
                decl &&
                !(s.flags & ts.SymbolFlags.TypeParameter) &&
                decl.getSourceFile().fileName.startsWith(COMPONENTS)
            )
                found.push(s);
        }
        ts.forEachChild(n, visit);
    };
    visit(root);
    return found;
}

/** "Name (named by Where)" for each type the public signatures name that components/index.ts does not export. */
export function unexportedPublicTypes(entry: string): string[] {
    const program = ts.createProgram([entry], {
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        target: ts.ScriptTarget.ES2022,
        strict: true,
        skipLibCheck: true,
        noEmit: true,
        types: [],
    });
    const checker = program.getTypeChecker();
    const module = checker.getSymbolAtLocation(program.getSourceFile(entry)!)!;
    const resolve = (s: ts.Symbol) => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s);
    const exported = new Set(checker.getExportsOfModule(module).map(resolve));
    const missing = new Map<string, Set<string>>();
    const queue = [...exported].filter((s) => s.flags & (ts.SymbolFlags.Function | ts.SymbolFlags.Class));
    const seen = new Set<ts.Symbol>();
    while (queue.length) {
        const s = queue.shift()!;
        if (seen.has(s)) continue;
        seen.add(s);
        for (const decl of s.declarations ?? [])
            for (const node of signatureTypes(decl))
                for (const t of namedTypes(checker, node)) {
                    if (exported.has(t)) queue.push(t);
                    else missing.set(t.name, (missing.get(t.name) ?? new Set()).add(s.name));
                }
    }
    return [...missing].map(([name, by]) => `${name} (named by ${[...by].sort().join(", ")})`).sort();
}

describe("public types: every type the API's signatures name is exported from components/index.ts", () => {
    it("no function, class or exported type of components/index.ts names a type the package does not export", function () {
        this.timeout(60000);
        assert.deepEqual(unexportedPublicTypes(ENTRY), []);
    });
});
