// A user's first five minutes, @e2e: `npm pack` this package, install the tarball into a scratch
// Pulumi TypeScript project beside the SDK versions at the low and the high end of the peer
// ranges, typecheck the README's component example (examples/component/index.ts) in the tsconfig
// `pulumi new typescript` writes (strict, commonjs, no skipLibCheck), and load the package, which
// runs one copy of each runtime library: its bundle, none installed with it (docs/design.md,
// "The libraries load as bundles"). Needs the npm registry. Prints the install size of each
// consumer project.
import assert from "node:assert/strict";
import { copyFileSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, runAsync } from "../helpers.js";

const PKG = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));

/** The runtime libraries: the package each module of components/libraries re-exports. */
const LIBRARIES = readdirSync(join(ROOT, "components", "libraries"))
    .filter((f) => f.endsWith(".ts"))
    .map(
        (f) =>
            /(?:from|require\()\s*"([^"]+)"/.exec(readFileSync(join(ROOT, "components", "libraries", f), "utf8"))![1],
    )
    .sort();

/**
 * The optional packages the client-node bundle asks for, each in a try, and uses only when the
 * user has them: ws's `bufferutil` and `utf-8-validate`, node-fetch's `encoding` (a dependency of
 * some @pulumi/pulumi versions' own tree).
 */
const OPTIONAL = ["bufferutil", "encoding", "utf-8-validate"];

/** Loads the package and prints every package (not a relative path, not Node.js's own) its own files required and found. */
const LOAD_REQUIRES = `
    const Module = require("node:module");
    const seen = new Set();
    const resolve = Module._resolveFilename;
    Module._resolveFilename = function (request, parent, ...rest) {
        const found = resolve.call(this, request, parent, ...rest);
        const own = parent && parent.filename && parent.filename.includes("/node_modules/kube-proxy-mode/");
        if (own && !request.startsWith(".") && !request.startsWith("node:") && !Module.isBuiltin(request)) seen.add(request);
        return found;
    };
    require("kube-proxy-mode");
    console.log(JSON.stringify([...seen].sort()));`;

/** The tsconfig.json of `pulumi new typescript`. */
const PULUMI_TSCONFIG = {
    compilerOptions: {
        strict: true,
        outDir: "bin",
        target: "es2020",
        module: "commonjs",
        moduleResolution: "node",
        sourceMap: true,
        experimentalDecorators: true,
        pretty: false,
        noFallthroughCasesInSwitch: true,
        noImplicitReturns: true,
        forceConsistentCasingInFileNames: true,
    },
    files: ["index.ts"],
};

/** The ends of the peer ranges in package.json, as tested here. */
const ENDS = [
    { name: "low end", pulumi: "3.200.0", kubernetes: "4.25.0" },
    { name: "high end", pulumi: "3.276.0", kubernetes: "4.34.2" },
];

function bytesUnder(path: string): number {
    const st = lstatSync(path);
    if (!st.isDirectory()) return st.size;
    return readdirSync(path).reduce((sum, e) => sum + bytesUnder(join(path, e)), 0);
}

async function must(cmd: string, args: string[], cwd: string): Promise<string> {
    const r = await runAsync(cmd, args, { cwd });
    assert.equal(r.code, 0, `${cmd} ${args.join(" ")} in ${cwd} exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
    return r.stdout;
}

describe("@e2e consumer: the packed package in a scratch Pulumi TypeScript project", function () {
    this.timeout(15 * 60_000);
    // made when the suite runs, not when mocha loads the file (a filtered-out suite runs no after())
    let work = "";
    let tarball = "";
    before(async () => {
        work = mkdtempSync(join(tmpdir(), "kpm-consumer-"));
        const out = await must("npm", ["pack", "--silent", "--pack-destination", work], ROOT);
        tarball = join(work, out.trim().split("\n").pop()!);
    });
    after(() => {
        if (work) rmSync(work, { recursive: true, force: true });
    });

    it("the peer ranges in package.json are the ends tested here", () => {
        assert.equal(PKG.peerDependencies["@pulumi/pulumi"], `>=${ENDS[0].pulumi} <4`);
        assert.equal(PKG.peerDependencies["@pulumi/kubernetes"], `>=${ENDS[0].kubernetes} <5`);
    });

    for (const end of ENDS) {
        it(`${end.name} (@pulumi/pulumi ${end.pulumi}, @pulumi/kubernetes ${end.kubernetes}): one copy of each SDK, no type error in the README example or any declaration it reaches (no skipLibCheck), the package loads`, async () => {
            const dir = join(work, end.name.replace(/ /g, "-"));
            await must("mkdir", ["-p", dir], work);
            writeFileSync(
                join(dir, "package.json"),
                JSON.stringify({ name: "consumer", version: "0.0.0", private: true }),
            );
            writeFileSync(join(dir, "tsconfig.json"), JSON.stringify(PULUMI_TSCONFIG, null, 4));
            copyFileSync(join(ROOT, "examples", "component", "index.ts"), join(dir, "index.ts"));
            const deps = [
                tarball,
                `@pulumi/pulumi@${end.pulumi}`,
                `@pulumi/kubernetes@${end.kubernetes}`,
                "typescript@~5.9.3",
                "@types/node@^20.19.0",
            ];
            await must("npm", ["install", "--no-audit", "--no-fund", "--ignore-scripts", ...deps], dir);

            // one copy of each SDK: the user's own versions, no nested ones under kube-proxy-mode
            const ls = JSON.parse(
                (await runAsync("npm", ["ls", "--all", "--json", "@pulumi/pulumi", "@pulumi/kubernetes"], { cwd: dir }))
                    .stdout,
            );
            const versions = new Map<string, Set<string>>();
            const visit = (deps: Record<string, { version: string; dependencies?: object }> = {}) => {
                for (const [name, d] of Object.entries(deps)) {
                    if (name.startsWith("@pulumi/"))
                        versions.set(name, new Set([...(versions.get(name) ?? []), d.version]));
                    visit(d.dependencies as never);
                }
            };
            visit(ls.dependencies);
            assert.deepEqual([...(versions.get("@pulumi/pulumi") ?? [])], [end.pulumi]);
            assert.deepEqual([...(versions.get("@pulumi/kubernetes") ?? [])], [end.kubernetes]);

            // one copy of each runtime library: its bundle; none installed with the package, none
            // loaded from node_modules by the package's own files (the SDKs' own copies are theirs)
            const installed = JSON.parse(
                readFileSync(join(dir, "node_modules", "kube-proxy-mode", "package.json"), "utf8"),
            ) as { dependencies?: Record<string, string> };
            assert.deepEqual(
                Object.keys(installed.dependencies ?? {}).filter((name) => LIBRARIES.includes(name)),
                [],
            );
            assert.deepEqual(
                readdirSync(join(dir, "node_modules", "kube-proxy-mode")).filter((e) => e === "node_modules"),
                [],
            );
            const required = JSON.parse(await must(process.execPath, ["-e", LOAD_REQUIRES], dir)) as string[];
            assert.deepEqual(
                required.filter((r) => !r.startsWith("@pulumi/") && !OPTIONAL.includes(r)),
                [],
                "the package loads no library from node_modules",
            );

            const tsc = await runAsync(
                process.execPath,
                [join(dir, "node_modules", "typescript", "bin", "tsc"), "--noEmit", "-p", "."],
                { cwd: dir },
            );
            // no skipLibCheck: every declaration the package reaches typechecks in a default Pulumi tsconfig
            const errors = tsc.stdout.split("\n").filter((l) => /error TS\d+/.test(l));
            assert.deepEqual(errors, [], "the example and every declaration it reaches typecheck");
            const bytes = bytesUnder(join(dir, "node_modules"));
            const packages =
                new Set(
                    (await runAsync("npm", ["ls", "--all", "--parseable"], { cwd: dir })).stdout
                        .split("\n")
                        .filter(Boolean),
                ).size - 1;
            const load = await must(
                process.execPath,
                ["-e", "const m = require('kube-proxy-mode'); console.log(Object.keys(m).sort().join(','))"],
                dir,
            );
            assert.equal(
                load.trim(),
                "IPVS_TIMELINE,InputError,KUBE_PROXY_MODE_TYPE,KubeProxyMode,PROXY_MODES,kubeProxyModeRbac,precheckNodes,renderKubeProxyConfig,renderRbacManifest",
            );
            console.log(
                `      ${end.name}: node_modules ${(bytes / 1e6).toFixed(0)} MB, ${packages} packages; ` +
                    `tsc (default Pulumi tsconfig, no skipLibCheck): ${errors.length} error(s)`,
            );
        });
    }
});
