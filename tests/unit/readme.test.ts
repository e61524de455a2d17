// The README is the front door: short, with the two commands a newcomer runs, and every link in it
// and in docs/ leads somewhere (a file of the repository, and a heading of it when it names one).
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { ROOT } from "../helpers.js";

const README = join(ROOT, "README.md");

/** The lines of a Markdown file outside fenced code blocks, with their numbers. */
function proseLines(text: string): [number, string][] {
    const out: [number, string][] = [];
    let fenced = false;
    text.split("\n").forEach((line, i) => {
        if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
        else if (!fenced) out.push([i + 1, line]);
    });
    return out;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchorsOf(file: string): Set<string> {
    const anchors = new Set<string>();
    const seen = new Map<string, number>();
    for (const [, line] of proseLines(readFileSync(file, "utf8"))) {
        const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
        if (!m) continue;
        const slug = m[1]
            .trim()
            .toLowerCase()
            .replace(/[^\p{L}\p{N}\s_-]/gu, "")
            .replace(/\s/g, "-");
        const n = seen.get(slug) ?? 0;
        seen.set(slug, n + 1);
        anchors.add(n ? `${slug}-${n}` : slug);
    }
    return anchors;
}

/** Every relative link of a Markdown file that does not lead to a file, or to a heading of it. */
function brokenLinks(file: string, text = readFileSync(file, "utf8")): string[] {
    const broken: string[] = [];
    for (const [n, line] of proseLines(text)) {
        for (const m of line.replace(/`[^`]*`/g, "").matchAll(/\]\(([^)\s]+)\)/g)) {
            const href = m[1];
            if (/^[a-z]+:/i.test(href)) continue; // https:, mailto:
            const [path, anchor] = href.split("#");
            const target = path ? resolve(dirname(file), path) : file;
            const where = `${relative(ROOT, file)}:${n}: ${href}`;
            if (!existsSync(target)) broken.push(`${where} (no such file)`);
            else if (anchor !== undefined && statSync(target).isFile() && target.endsWith(".md")) {
                if (!anchorsOf(target).has(anchor)) broken.push(`${where} (no such heading)`);
            }
        }
    }
    return broken;
}

describe("the README and docs/", () => {
    const readme = readFileSync(README, "utf8");
    it("the README is a front door: at most 160 lines", () => {
        const lines = readme.trimEnd().split("\n").length;
        assert.ok(lines <= 160, `README.md has ${lines} lines; move reference material to docs/`);
    });
    it("the README names the five-minute start and the tests as commands: npm run demo, npm test", () => {
        const shell = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]).join("\n");
        assert.match(shell, /^npm run demo\b/m, "a sh block of README.md starts a line with `npm run demo`");
        assert.match(shell, /^npm test\b/m, "a sh block of README.md starts a line with `npm test`");
        const scripts = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).scripts;
        assert.ok(scripts.demo && scripts.test, "package.json has the scripts demo and test");
    });
    it("the README says how to install without the npm registry: npm pack, then the tarball", () => {
        const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
        assert.match(readme, /npm pack/);
        assert.ok(
            readme.includes(`npm install /path/to/${pkg.name}-${pkg.version}.tgz`),
            "installs the packed tarball by name",
        );
    });
    it("every relative link in README.md and docs/*.md leads to a file, and to a heading when it names one", () => {
        const files = [
            README,
            ...readdirSync(join(ROOT, "docs"))
                .filter((f) => f.endsWith(".md"))
                .map((f) => join(ROOT, "docs", f)),
        ];
        assert.deepEqual(
            files.flatMap((f) => brokenLinks(f)),
            [],
        );
    });
    it("the link check finds a missing file and a missing heading, and skips code and absolute URLs", () => {
        const probe = join(ROOT, "docs", "cli.md");
        const text = [
            "[a](no-such-page.md) [b](#no-such-heading) [c](#exit-codes) [d](rbac.md#credentials)",
            "`[e](in-code.md)` [f](https://example.com/x.md)",
            "```",
            "[g](in-a-fence.md)",
            "```",
        ].join("\n");
        assert.deepEqual(brokenLinks(probe, text), [
            "docs/cli.md:1: no-such-page.md (no such file)",
            "docs/cli.md:1: #no-such-heading (no such heading)",
        ]);
    });
});
