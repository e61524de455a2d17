// `npm run metrics`: figures a maintainer watches (issue 13). Counts, per source file outside
// tests: `any` in type positions, functions longer than 60 lines, lines longer than 120
// characters. Reads the TypeScript sources with the compiler's own parser; prints a table, or one
// JSON object with --json. Measures only; asserts nothing.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

const ROOT = join(__dirname, "..", "..");
const MAX_FUNCTION_LINES = 60;
const MAX_LINE = 120;

interface LongFunction {
    file: string;
    name: string;
    line: number;
    lines: number;
}

interface FileMetrics {
    file: string;
    anys: number;
    longLines: number;
    longFunctions: LongFunction[];
}

function tsFiles(dir: string): string[] {
    const out: string[] = [];
    for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = join(dir, e.name);
        if (e.isDirectory()) {
            if (e.name !== "node_modules" && e.name !== "dist") out.push(...tsFiles(p));
        } else if (e.name.endsWith(".ts") && !e.name.endsWith(".d.ts")) out.push(p);
    }
    return out;
}

/** A readable name for a function node: its own, the variable or property it is assigned to, or "(anonymous)". */
function functionName(node: ts.Node, sf: ts.SourceFile): string {
    const named = node as ts.Node & { name?: ts.Node };
    if (named.name) return named.name.getText(sf);
    if (ts.isConstructorDeclaration(node)) {
        const cls = node.parent as ts.ClassDeclaration;
        return `${cls.name?.getText(sf) ?? "(class)"}.constructor`;
    }
    const parent = node.parent;
    if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
        return parent.name.getText(sf);
    if (ts.isCallExpression(parent)) return `(callback of ${parent.expression.getText(sf).slice(0, 40)})`;
    return "(anonymous)";
}

function measure(file: string): FileMetrics {
    const text = readFileSync(file, "utf8");
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
    const rel = relative(ROOT, file);
    let anys = 0;
    const longFunctions: LongFunction[] = [];
    const visit = (node: ts.Node) => {
        if (node.kind === ts.SyntaxKind.AnyKeyword) anys++;
        if (ts.isFunctionLike(node) && (node as ts.FunctionLikeDeclaration).body) {
            const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
            const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
            const lines = end - start + 1;
            if (lines > MAX_FUNCTION_LINES)
                longFunctions.push({ file: rel, name: functionName(node, sf), line: start + 1, lines });
        }
        ts.forEachChild(node, visit);
    };
    visit(sf);
    const longLines = text.split("\n").filter((l) => l.length > MAX_LINE).length;
    return { file: rel, anys, longLines, longFunctions };
}

function main(argv: string[]): void {
    const files = ["components", "scripts"].flatMap((d) => tsFiles(join(ROOT, d))).sort();
    const metrics = files.map(measure);
    const sum = (k: "anys" | "longLines", prefix: string) =>
        metrics.filter((m) => m.file.startsWith(prefix)).reduce((n, m) => n + m[k], 0);
    const longFunctions = metrics.flatMap((m) => m.longFunctions).sort((a, b) => b.lines - a.lines);
    const totals = {
        files: files.length,
        anyInComponents: sum("anys", "components/"),
        anyInScripts: sum("anys", "scripts/"),
        linesOver120: sum("longLines", ""),
        functionsOver60Lines: longFunctions.length,
    };
    if (argv.includes("--json")) {
        console.log(JSON.stringify({ totals, longFunctions, files: metrics }, null, 2));
        return;
    }
    console.log(`source files (components/, scripts/; tests excluded): ${totals.files}`);
    console.log(`\`any\` in components/: ${totals.anyInComponents}   in scripts/: ${totals.anyInScripts}`);
    console.log(`lines over ${MAX_LINE} characters: ${totals.linesOver120}`);
    console.log(`functions over ${MAX_FUNCTION_LINES} lines: ${totals.functionsOver60Lines}`);
    for (const f of longFunctions) console.log(`  ${String(f.lines).padStart(4)}  ${f.file}:${f.line}  ${f.name}`);
    console.log("`any` per file (components/):");
    for (const m of metrics
        .filter((m) => m.anys > 0 && m.file.startsWith("components/"))
        .sort((a, b) => b.anys - a.anys))
        console.log(`  ${String(m.anys).padStart(4)}  ${m.file}`);
}

main(process.argv.slice(2));
