// The repository stands alone: a fresh clone builds and tests without anything beside it.
// Code, scripts and tests must not read the team's reference folder that sits beside a
// developer's checkout (a user's clone has none): the facts they rely on live in docs/facts.md
// and components/core/facts.ts. The folder's name is assembled below, so this guard does not
// itself name the path it forbids.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
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
