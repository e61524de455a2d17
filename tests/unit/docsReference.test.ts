// The generated reference pages (docs/reference/) equal what their sources generate today: a
// changed description, default, flag or help text needs `npm run docs:reference`.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { referencePages } from "../../scripts/docsReference.js";
import { ROOT } from "../helpers.js";

describe("docs/reference: the generated pages equal their sources (else: npm run docs:reference)", () => {
    let pages: Record<string, string>;
    before(async () => {
        pages = await referencePages();
    });

    it("generates both pages", () => {
        assert.deepEqual(Object.keys(pages).sort(), ["docs/reference/cli.md", "docs/reference/inputs.md"]);
    });

    for (const path of ["docs/reference/inputs.md", "docs/reference/cli.md"]) {
        it(`${path} is current`, () => {
            const file = join(ROOT, path);
            assert.ok(existsSync(file), `${path} is missing: run npm run docs:reference`);
            const committed = readFileSync(file, "utf8");
            if (committed === pages[path]) return;
            const a = committed.split("\n");
            const b = pages[path].split("\n");
            const line = a.findIndex((l, i) => l !== b[i]);
            assert.fail(
                `${path} differs from its sources at line ${line + 1}:\n  file:      ${a[line]}\n  generated: ${b[line]}\n` +
                    "run npm run docs:reference and commit the result",
            );
        });
    }

    it("every input has a description, every flag a row", () => {
        const inputs = pages["docs/reference/inputs.md"];
        const empty = inputs.split("\n").filter((l) => /^\| `[^`]+` \|.*\| {2}\|$/.test(l));
        assert.deepEqual(empty, [], "inputs without a description (add .describe() to the zod schema)");
        const cli = pages["docs/reference/cli.md"];
        assert.doesNotMatch(cli, /Flags: see the help above/, "a command without an exported *_FLAGS FlagSet");
        assert.match(cli, /^\| \[render\]\(#render\) \|/m, "the commands are read from the usage's listing");
    });
});
