// ESLint (flat config) with typescript-eslint's type-checked rules. Formatting is prettier's job
// (.prettierrc.json); this file only holds rules about meaning. `npm run lint`.
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** The runtime libraries the build bundles: the package each module of components/libraries re-exports. */
const LIBRARIES_DIR = join(import.meta.dirname, "components", "libraries");
const LIBRARIES = readdirSync(LIBRARIES_DIR)
    .filter((f) => f.endsWith(".ts"))
    .map((f) => /(?:from|require\()\s*"([^"]+)"/.exec(readFileSync(join(LIBRARIES_DIR, f), "utf8"))[1]);
const USE_BUNDLE = "import it from components/libraries (the bundled library)";

export default tseslint.config(
    {
        ignores: [
            "dist/**",
            "node_modules/**",
            "**/*.js",
            "**/*.cjs",
            "components/policy/analyzer",
            "bin/**",
            "sdk/**",
            // npm run mutation: Stryker's sandbox (a copy of the sources) and its reports
            ".stryker-tmp/**",
            "reports/**",
        ],
    },
    js.configs.recommended,
    ...tseslint.configs.recommendedTypeChecked,
    {
        languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
        rules: {
            // What @pulumi/eslint-plugin guards against, with typescript-eslint's own rules: a promise
            // left floating in a Pulumi program is an unhandled failure at `up`, and an Output (an
            // object) in a template string prints Pulumi's warning text instead of the value.
            "@typescript-eslint/no-floating-promises": "error",
            "@typescript-eslint/no-misused-promises": "error",
            "@typescript-eslint/restrict-template-expressions": [
                "error",
                { allowNumber: true, allowBoolean: true, allowNullish: true },
            ],
            "@typescript-eslint/no-unused-vars": [
                "error",
                { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none", ignoreRestSiblings: true },
            ],
            // `any` is counted by `npm run metrics`; typed boundaries are the goal (issue 13), so warn, don't block
            "@typescript-eslint/no-explicit-any": "warn",
            "@typescript-eslint/no-unsafe-assignment": "warn",
            "@typescript-eslint/no-unsafe-member-access": "warn",
            "@typescript-eslint/no-unsafe-argument": "warn",
            "@typescript-eslint/no-unsafe-return": "warn",
            "@typescript-eslint/no-unsafe-call": "warn",
        },
    },
    {
        // Tests and the reference cluster's scripts read JSON from the API server, the engine and
        // processes, and assert on it: untyped reads there are the point, not a boundary to type.
        files: ["tests/**/*.ts", "scripts/**/*.ts"],
        rules: {
            "@typescript-eslint/no-explicit-any": "off",
            "@typescript-eslint/no-unsafe-assignment": "off",
            "@typescript-eslint/no-unsafe-member-access": "off",
            "@typescript-eslint/no-unsafe-argument": "off",
            "@typescript-eslint/no-unsafe-return": "off",
            "@typescript-eslint/no-unsafe-call": "off",
            // fakes implement async interfaces without awaiting anything; assertions take methods as values
            "@typescript-eslint/require-await": "off",
            "@typescript-eslint/unbound-method": "off",
            "@typescript-eslint/no-unnecessary-type-assertion": "off",
            // tests assert that control characters never reach a terminal
            "no-control-regex": "off",
        },
    },
    {
        // The product loads its runtime libraries through components/libraries, one module each,
        // which the build turns into one bundled file each (docs/design.md, "The libraries load as
        // bundles"); a direct import would load the library's own files a second time. Types alone
        // cost nothing at run time.
        files: ["components/**/*.ts"],
        ignores: ["components/libraries/*.ts"],
        rules: {
            "@typescript-eslint/no-restricted-imports": [
                "error",
                {
                    paths: LIBRARIES.map((name) => ({ name, message: USE_BUNDLE, allowTypeImports: true })),
                    patterns: [
                        { group: LIBRARIES.map((name) => `${name}/*`), message: USE_BUNDLE, allowTypeImports: true },
                    ],
                },
            ],
        },
    },
    {
        // config files are plain JavaScript modules, outside the TypeScript project
        files: ["**/*.mjs"],
        ...tseslint.configs.disableTypeChecked,
    },
);
