// The last step of `npm run build`. Each module in dist/components/libraries, as tsc writes it, is
// a re-export of one runtime library; this replaces each with one minified bundle of that library
// and its own dependencies, built by esbuild from the locked node_modules, so a program loads one
// file per library instead of the library's many (about 970 for @kubernetes/client-node), and
// writes the licence of every package a bundle holds to dist/components/libraries/LICENSES.txt,
// since the libraries are not installed with the package. Why, and what it measured:
// docs/design.md, "The libraries load as bundles".
import { buildSync } from "esbuild";
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";

const root = dirname(dirname(__dirname));
const libraries = join(dirname(__dirname), "components", "libraries");

/** The package directory an input of a bundle belongs to (the innermost node_modules/NAME), if any. */
function packageDir(input: string): string | undefined {
    const m = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
    return m?.[1];
}

/** package directory -> the bundles that hold a part of it */
const packages = new Map<string, Set<string>>();
for (const file of readdirSync(libraries).filter((f) => f.endsWith(".js"))) {
    const outfile = join(libraries, file);
    const result = buildSync({
        entryPoints: [outfile],
        // the inputs' paths in the metafile are relative to it
        absWorkingDir: root,
        outfile,
        allowOverwrite: true,
        bundle: true,
        platform: "node",
        format: "cjs",
        target: "node20",
        minify: true,
        // the libraries' errors and stack traces keep their own function and class names
        keepNames: true,
        // comments a library marks as its licence are kept, at the end of the file; the whole
        // licence of each package bundled is in LICENSES.txt beside the bundles (below)
        legalComments: "eof",
        // no source map: a Pulumi program registers source-map-support, which maps every stack
        // trace it sees, and the engine's SDK takes one per resource; the first trace through a
        // bundle with a map parsed the map (client-node's: 5 MB), about 0.6 s and 120 MB more
        sourcemap: false,
        logLevel: "warning",
        metafile: true,
    });
    // tsc's map of the re-export it replaced describes a file that is no longer there
    rmSync(`${outfile}.map`, { force: true });
    const inputs = Object.keys(result.metafile.inputs);
    for (const input of inputs) {
        const dir = packageDir(input);
        if (dir) packages.set(dir, (packages.get(dir) ?? new Set()).add(file));
    }
    const bytes = Object.entries(result.metafile.outputs).find(([o]) => o.endsWith(".js"))?.[1].bytes ?? 0;
    console.log(`bundled ${file}: ${inputs.length} file(s), ${(bytes / 1e3).toFixed(0)} kB`);
}

const notices = [...packages]
    .map(([dir, bundles]) => {
        const abs = join(root, dir);
        const pkg = JSON.parse(readFileSync(join(abs, "package.json"), "utf8")) as {
            name: string;
            version: string;
            license?: string;
        };
        const texts = readdirSync(abs)
            .filter((f) => /^(licen[cs]e|copying|notice)/i.test(f))
            .sort()
            .map((f) => readFileSync(join(abs, f), "utf8").trim());
        const head = `${pkg.name}@${pkg.version} (${pkg.license ?? "no licence field"}), in ${[...bundles].sort().join(", ")}`;
        return `${head}\n${"-".repeat(head.length)}\n\n${texts.length ? texts.join("\n\n") : `(the package has no licence file; its package.json says: ${pkg.license ?? "nothing"})`}\n`;
    })
    .sort();
writeFileSync(
    join(libraries, "LICENSES.txt"),
    `The packages bundled into the modules of this folder by kube-proxy-mode's build, and their licences.\n\n${notices.join("\n\n")}`,
);
console.log(`LICENSES.txt: ${notices.length} package(s), from ${relative(root, libraries)}`);
