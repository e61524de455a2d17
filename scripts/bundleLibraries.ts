// The last step of `npm run build`. Each module in dist/components/libraries, as tsc writes it, is
// a re-export of one runtime library; this replaces each with one minified bundle of that library
// and its own dependencies, built by esbuild from the locked node_modules, so a program loads one
// file per library instead of the library's many (about 970 for @kubernetes/client-node). Why, and
// what it measured: docs/design.md, "The libraries load as bundles".
import { buildSync } from "esbuild";
import { readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";

const libraries = join(dirname(__dirname), "components", "libraries");
for (const file of readdirSync(libraries).filter((f) => f.endsWith(".js"))) {
    const outfile = join(libraries, file);
    const result = buildSync({
        entryPoints: [outfile],
        outfile,
        allowOverwrite: true,
        bundle: true,
        platform: "node",
        format: "cjs",
        target: "node20",
        minify: true,
        // the libraries' errors and stack traces keep their own function and class names
        keepNames: true,
        // comments a library marks as its licence are kept, at the end of the file; each library's
        // LICENSE file is installed with it, since every library stays a dependency of the package
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
    const inputs = Object.keys(result.metafile.inputs).length;
    const bytes = Object.entries(result.metafile.outputs).find(([o]) => o.endsWith(".js"))?.[1].bytes ?? 0;
    console.log(`bundled ${file}: ${inputs} file(s), ${(bytes / 1e3).toFixed(0)} kB`);
}
