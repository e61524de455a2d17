// The runtime libraries as the product loads them: one bundled file each, made by `npm run build`
// (components/libraries, scripts/bundleLibraries.ts), and the only copy a user installs: the
// libraries are dev dependencies, not installed with the package. These tests read the built
// files, so they need `npm run build` (which `npm test` runs), not a bare `tsc`.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { join, sep } from "node:path";
import { ROOT } from "../helpers.js";

const components = join(ROOT, "dist", "components");
const libraries = join(components, "libraries");

/** Each built module of components/libraries and the package its source re-exports. */
const PACKAGES: Record<string, string> = Object.fromEntries(
    readdirSync(join(ROOT, "components", "libraries"))
        .filter((f) => f.endsWith(".ts"))
        .map((f) => {
            const source = readFileSync(join(ROOT, "components", "libraries", f), "utf8");
            const pkg = /(?:from|require\()\s*"([^"]+)"/.exec(source)?.[1];
            assert.ok(pkg, `components/libraries/${f} re-exports a package`);
            return [f.replace(/\.ts$/, ".js"), pkg];
        }),
);

interface Loaded {
    /** every `require` a fresh process made while loading: what asked, what for, and the file it got */
    requires: { from: string; request: string; resolved: string }[];
    names: string[];
}

/** Loads `file` in a fresh Node.js process and reports every `require` it made and its export names. */
function load(file: string): Loaded {
    const program = `
        const Module = require("node:module");
        const requires = [];
        const resolve = Module._resolveFilename;
        Module._resolveFilename = function (request, parent, ...rest) {
            const resolved = resolve.call(this, request, parent, ...rest);
            requires.push({ from: parent?.filename ?? "", request, resolved });
            return resolved;
        };
        const m = require(${JSON.stringify(file)});
        process.stdout.write(JSON.stringify({ requires, names: Object.keys(m).sort() }));`;
    return JSON.parse(execFileSync(process.execPath, ["-e", program], { encoding: "utf8" })) as Loaded;
}

const builtin = (request: string) => request.startsWith("node:") || builtinModules.includes(request);

describe("the runtime libraries, as the product loads them (built by npm run build)", function () {
    this.timeout(120_000);

    it("each library is a dev dependency, not installed with the package (its bundle is the one copy); the package's dependencies are Pulumi packages alone", () => {
        const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
            dependencies: Record<string, string>;
            devDependencies: Record<string, string>;
        };
        const libs = [...new Set(Object.values(PACKAGES))].sort();
        assert.deepEqual(
            libs.filter((name) => !pkg.devDependencies[name]),
            [],
        );
        assert.deepEqual(
            Object.keys(pkg.dependencies).filter((name) => !name.startsWith("@pulumi/")),
            [],
        );
        assert.deepEqual(
            readdirSync(libraries)
                .filter((f) => f.endsWith(".js"))
                .sort(),
            Object.keys(PACKAGES).sort(),
        );
    });

    it("LICENSES.txt beside the bundles holds the licence file of each library bundled", () => {
        const notices = readFileSync(join(libraries, "LICENSES.txt"), "utf8");
        for (const pkg of new Set(Object.values(PACKAGES))) {
            const { version } = JSON.parse(readFileSync(join(ROOT, "node_modules", pkg, "package.json"), "utf8")) as {
                version: string;
            };
            const at = notices.indexOf(`\n${pkg}@${version} (`);
            assert.ok(at >= 0, `${pkg}@${version} is in LICENSES.txt`);
            assert.doesNotMatch(notices.slice(at, at + 500), /has no licence file/, pkg);
        }
    });

    it("no bundle carries a source map, which a Pulumi program's source-map-support would parse on its first stack trace", () => {
        const built = readdirSync(libraries);
        assert.deepEqual(
            built.filter((f) => f.endsWith(".map")),
            [],
        );
        for (const file of Object.keys(PACKAGES)) {
            assert.doesNotMatch(readFileSync(join(libraries, file), "utf8"), /sourceMappingURL/, file);
        }
    });

    for (const [file, pkg] of Object.entries(PACKAGES)) {
        it(`${pkg} is one bundled file (${file}): loading it requires only Node.js's own modules, and it exports every name the package does`, () => {
            const bundled = load(join(libraries, file));
            assert.deepEqual(
                bundled.requires.filter((r) => r.from === join(libraries, file) && !builtin(r.request)),
                [],
                "run `npm run build`: the module is not the bundle, or the bundle requires a package",
            );
            const own = load(pkg).names.filter((n) => n !== "default" && n !== "__esModule");
            assert.ok(own.length > 0, `the package's export names were read: ${own.length}`);
            const extra = file === "kubernetesClient.js" ? ["CoreV1ApiResponseProcessor"] : [];
            assert.deepEqual(
                bundled.names.filter((n) => n !== "default" && n !== "__esModule"),
                [...own, ...extra].sort(),
            );
        });
    }

    it("no built module outside components/libraries requires a package but the Pulumi SDKs and the Temporal SDK", () => {
        const files = (dir: string): string[] =>
            readdirSync(dir).flatMap((f) => {
                const path = join(dir, f);
                if (statSync(path).isDirectory()) return path === libraries ? [] : files(path);
                return f.endsWith(".js") ? [path] : [];
            });
        const found = files(components).flatMap((file) =>
            [...readFileSync(file, "utf8").matchAll(/(?<![.\w$])require\("([^"]+)"\)/g)]
                .map((m) => m[1])
                // @temporalio/*: optional peer dependencies, loaded only by the fleet's modules
                .filter((r) => !builtin(r) && !r.startsWith(".") && !r.startsWith("@pulumi/"))
                .filter((r) => !(r.startsWith("@temporalio/") && file.includes(`${sep}fleet${sep}`)))
                .map((r) => `${file.slice(components.length + 1)}: ${r}`),
        );
        assert.ok(files(components).length > 50);
        assert.deepEqual(found, []);
    });

    for (const entry of ["index.js", join("cli", "main.js")]) {
        it(`${entry} requires no package but the Pulumi SDKs (its peers): every library through its bundle`, () => {
            const { requires } = load(join(components, entry));
            const ours = requires.filter((r) => r.from.startsWith(components + sep));
            assert.ok(ours.length > 30, `the modules' requires were seen: ${ours.length}`);
            const packages = ours.filter(
                (r) => !builtin(r.request) && !r.request.startsWith(".") && !r.request.startsWith("@pulumi/"),
            );
            assert.deepEqual(packages, []);
        });
    }
});
