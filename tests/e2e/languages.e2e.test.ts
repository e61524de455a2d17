// End to end, @e2e: the ipvs -> nftables example as a Pulumi YAML program
// (examples/ipvs-to-nftables-yaml), as a Python program (examples/ipvs-to-nftables-python) and as
// a Go program (examples/ipvs-to-nftables-go), each on the real engine through its real language
// host (pulumi-language-yaml, pulumi-language-python with the `pulumi` package from PyPI,
// pulumi-language-go compiling the program against the generated Go SDK, all from the toolchain)
// and the kube-proxy-mode provider plugin (bin/pulumi-resource-kube-proxy-mode). One reference
// cluster is shared: the four previews run on the untouched ipvs cluster and must show what the
// TypeScript program shows; then YAML moves it to nftables and back, Python moves it to nftables,
// and Go moves it back to ipvs.
// kwok nodes run no process: the built-in node checks are off (as in rollout.e2e.test.ts), and the
// examples' pools (a 10m soak, a drain) are swapped for the suite's (no soak, no drain).
import assert from "node:assert/strict";
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { LocalWorkspace, PulumiCommand, type EngineEvent, type Stack } from "@pulumi/pulumi/automation";
import * as YAML from "yaml";
import { engineTemp, type ClusterState } from "../../scripts/referenceCluster.js";
import { ROOT, runAsync } from "../helpers.js";
import {
    clients,
    leastPrivilegeKubeconfig,
    POOLS,
    startCluster,
    stopCluster,
    toolchain,
    watchCordons,
    workspace,
    type Workspace,
} from "./support.js";

const KWOK = "(kwok nodes: built-in node checks not run)";
/** For the Go program's builds: a go.mod/go.sum the example keeps complete, no workspace file. */
const GO_ENV = { GOFLAGS: "-mod=mod", GOWORK: "off" };
/** The pool steps are command:local:Command resources; here their plugin is the SIMULATED stand-in unless a real one is on PATH. */
const COMMAND = "(command plugin: SIMULATED stand-in where no real one is on PATH)";
const VERIFY = { nodeChecks: false };
/** What examples/ipvs-to-nftables*, less its soak/drain/service, asks for: the TypeScript program's stack config. */
const TS_CONFIG = {
    mode: "nftables",
    nodePortAddresses: ["0.0.0.0/0"],
    conntrack: { tcpBeLiberal: true },
    target: { flavor: "kubeadm" },
    onFailure: "rollback-node",
    pools: POOLS,
    verify: VERIFY,
};

type Language = "yaml" | "python" | "go";

/** The parts of a Pulumi YAML program this suite reads and rewrites. */
interface YamlProgram {
    name: string;
    resources: Record<string, { properties: Record<string, unknown> }>;
    plugins?: { providers?: { name: string; path: string }[] };
}

interface LanguageStack {
    dir: string;
    stack: Stack;
    project: string;
    dispose(): void;
}

/**
 * An example's Pulumi.yaml for a copy elsewhere: its `plugins.providers` entry for kube-proxy-mode
 * (../../bin, this checkout's bin/ from the example) made absolute, so the copy loads the same plugin.
 */
function projectWithPlugin(example: string): YamlProgram {
    const project = YAML.parse(readFileSync(join(example, "Pulumi.yaml"), "utf8")) as YamlProgram;
    const entry = project.plugins?.providers?.find((p) => p.name === "kube-proxy-mode");
    assert.ok(entry, `${example}/Pulumi.yaml declares the kube-proxy-mode plugin under plugins.providers`);
    assert.equal(resolve(example, entry.path), join(ROOT, "bin"), "the example's plugin path is this checkout's bin/");
    entry.path = join(ROOT, "bin");
    return project;
}

/**
 * The example of `language`, copied into a temporary Pulumi project with a file backend, run by
 * the engine with the toolchain's language host. The plugin comes from this checkout's bin/, as the
 * example's Pulumi.yaml declares it (plugins.providers).
 */
async function languageStack(language: Language, cluster: ClusterState): Promise<LanguageStack> {
    const bin = toolchain();
    const example = join(ROOT, "examples", `ipvs-to-nftables-${language}`);
    const dir = mkdtempSync(join(tmpdir(), `kpm-e2e-${language}-`));
    let project: string;
    if (language === "yaml") {
        const program = projectWithPlugin(example);
        const props = program.resources["kube-proxy"].properties;
        props.pools = POOLS;
        props.verify = VERIFY;
        writeFileSync(join(dir, "Pulumi.yaml"), YAML.stringify(program));
        project = program.name;
    } else if (language === "go") {
        for (const f of ["main.go", "go.sum"]) copyFileSync(join(example, f), join(dir, f));
        writeFileSync(join(dir, "Pulumi.yaml"), YAML.stringify(projectWithPlugin(example)));
        // the example's replace points at ../../sdk/go; from the copy, at this checkout's sdk/go
        const gomod = readFileSync(join(example, "go.mod"), "utf8").replace(
            /=> \.\.\/\.\.\/sdk\/go$/m,
            `=> ${join(ROOT, "sdk", "go")}`,
        );
        assert.notEqual(gomod, readFileSync(join(example, "go.mod"), "utf8"), "the example's go.mod replaces the SDK");
        writeFileSync(join(dir, "go.mod"), gomod);
        project = projectWithPlugin(example).name;
        // The language host compiles the program on every preview and up; the first compile builds
        // the Pulumi Go SDK and the generated SDK. Done here once, so that the build cache makes
        // the host's compiles short; its time is printed (a figure, not an assertion).
        const t0 = performance.now();
        const build = await runAsync("go", ["build", "-o", join(dir, ".prebuilt"), "."], { cwd: dir, env: GO_ENV });
        assert.equal(build.code, 0, `go build of the Go example failed:\n${build.stdout}\n${build.stderr}`);
        process.stderr.write(
            `    (go: the example's first build took ${((performance.now() - t0) / 1000).toFixed(1)} s)\n`,
        );
    } else {
        for (const f of ["__main__.py", "requirements.txt"]) copyFileSync(join(example, f), join(dir, f));
        writeFileSync(join(dir, "Pulumi.yaml"), YAML.stringify(projectWithPlugin(example)));
        project = projectWithPlugin(example).name;
        // The generated SDK (sdk/python), installed as a user would (`pip install`), beside the
        // program rather than into the toolchain's shared venv; from a copy, so the build leaves
        // nothing in this checkout. pip fetches the build backend (setuptools, wheel) from PyPI.
        cpSync(join(ROOT, "sdk", "python"), join(dir, ".sdk-src"), { recursive: true });
        const pip = await runAsync(join(bin, "pulumi-python-venv", "bin", "python"), [
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--target",
            join(dir, ".sdk"),
            join(dir, ".sdk-src"),
        ]);
        assert.equal(pip.code, 0, `pip install sdk/python failed:\n${pip.stdout}\n${pip.stderr}`);
    }
    mkdirSync(join(dir, ".state"));
    const envVars: Record<string, string> = {
        PULUMI_BACKEND_URL: `file://${join(dir, ".state")}`,
        ...engineTemp(dir),
        PULUMI_CONFIG_PASSPHRASE: "e2e-passphrase",
        PULUMI_HOME: join(dir, ".pulumi-home"),
        PULUMI_SKIP_UPDATE_CHECK: "true",
        PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
        PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK: "true",
        PATH: `${join(ROOT, "bin")}:${process.env.PATH}`,
        // the v3.68.0 Python host ignores Pulumi.yaml's runtime options under this CLI (they are no
        // longer passed as flags); it runs programs with PULUMI_PYTHON_CMD (the toolchain's venv)
        PULUMI_PYTHON_CMD: join(bin, "pulumi-python-venv", "bin", "python"),
        PYTHONPATH: join(dir, ".sdk"),
        ...GO_ENV,
        KUBECONFIG: join(dir, "no-ambient-kubeconfig"),
    };
    const pulumiCommand = await PulumiCommand.get({ skipVersionCheck: true });
    const stack = await LocalWorkspace.createOrSelectStack(
        { stackName: "e2e", workDir: dir },
        { workDir: dir, envVars, pulumiCommand },
    );
    // As YAML text, as a kubeconfig file is: pulumi-language-yaml turns any config string that
    // parses as JSON into an object (pkg/server/server.go of pulumi-yaml v1.25.0), and the
    // client library exports this kubeconfig as JSON.
    const kubeconfig = YAML.stringify(JSON.parse(await leastPrivilegeKubeconfig(cluster)));
    await stack.setConfig(`${project}:kubeconfig`, { value: kubeconfig, secret: true });
    if (language === "go") {
        // the Go program reads them into the generated SDK's structs (camelCase, as in JSON)
        await stack.setAllConfig({
            [`${project}:pools`]: { value: JSON.stringify(POOLS) },
            [`${project}:verify`]: { value: JSON.stringify(VERIFY) },
        });
    }
    if (language === "python") {
        // the generated SDK's dict inputs take Python's snake_case names
        const pools = POOLS.map((p) => ({
            name: p.name,
            node_selector: p.nodeSelector,
            max_unavailable: p.maxUnavailable,
        }));
        await stack.setAllConfig({
            [`${project}:pools`]: { value: JSON.stringify(pools) },
            [`${project}:verify`]: { value: JSON.stringify({ node_checks: false }) },
        });
    }
    return { dir, stack, project, dispose: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * What the component showed the reviewer: the engine's diagnostic events of the KubeProxyMode
 * resource, in order (the configuration diff, the changes, the plan, the findings), without the
 * engine's notices about where it found a plugin, so that programs in different languages compare
 * message for message.
 */
function reviewCollector(): { onEvent: (e: EngineEvent) => void; messages: string[] } {
    const messages: string[] = [];
    return {
        messages,
        onEvent: (e) => {
            const d = e.diagnosticEvent;
            if (!d || !d.urn?.endsWith("kube-proxy-mode:index:KubeProxyMode::kube-proxy")) return;
            if (/^using pulumi-\S+ from \$PATH/.test(d.message)) return;
            messages.push(`${d.severity}: ${d.message.trimEnd()}`);
        },
    };
}

async function kubeProxyConfig(cluster: ClusterState): Promise<string> {
    const cm = await clients(cluster).core.readNamespacedConfigMap({ name: "kube-proxy", namespace: "kube-system" });
    return cm.data!["config.conf"];
}

describe("@e2e the ipvs -> nftables example in YAML, Python and Go on the reference cluster " + KWOK, function () {
    this.timeout(900_000);
    let cluster: ClusterState | undefined;
    const opened: { dispose(): void }[] = [];
    const stacks: Partial<Record<Language, LanguageStack>> = {};
    const lines: string[] = [];
    const onOutput = (s: string) => lines.push(s);
    let typescriptReview: string[] = [];

    before(async () => {
        cluster = await startCluster();
    });
    after(async () => {
        for (const o of opened) o.dispose();
        await stopCluster(cluster);
    });
    beforeEach(() => {
        lines.length = 0;
    });
    afterEach(function () {
        if (this.currentTest?.state === "failed")
            process.stderr.write(`--- pulumi output of the failed test ---\n${lines.join("").slice(-8000)}\n`);
    });

    async function open(language: Language): Promise<LanguageStack> {
        if (!stacks[language]) {
            stacks[language] = await languageStack(language, cluster!);
            opened.push(stacks[language]);
        }
        return stacks[language];
    }

    it("the TypeScript program's preview (the reference): configuration diff, plan and findings", async () => {
        const ws: Workspace = await workspace(cluster!, TS_CONFIG);
        opened.push(ws);
        const review = reviewCollector();
        await ws.stack.preview({ diff: true, onOutput, onEvent: review.onEvent });
        typescriptReview = review.messages;
        const text = typescriptReview.join("\n");
        assert.match(text, /^-mode: ipvs$/m);
        assert.match(text, /^\+mode: nftables$/m);
        assert.match(text, /^ {2}1\. pool canary \(pool=canary\): 1 node\(s\), max 1 at a time/m);
        assert.match(text, /^ {2}2\. pool workers \(pool=workers\): 3 node\(s\), max 2 at a time/m);
        assert.match(text, /batch 1: workers-1, workers-2$/m);
        assert.match(text, /^ {2}3\. pool batch/m);
        assert.match(
            text,
            /^warning: nodePortAddresses: 127\.0\.0\.1:<nodePort> stops answering in nftables mode/m,
            "the finding on localhost NodePorts",
        );
    });

    for (const language of ["yaml", "python", "go"] as const) {
        it(`${language}: preview shows the same configuration diff, plan and findings as the TypeScript program, and writes nothing`, async () => {
            assert.ok(typescriptReview.length > 0, "the TypeScript preview ran first");
            const s = await open(language);
            const before = await kubeProxyConfig(cluster!);
            const review = reviewCollector();
            const r = await s.stack.preview({ diff: true, onOutput, onEvent: review.onEvent });
            assert.deepEqual(review.messages, typescriptReview);
            assert.match(r.stdout, /ConfigMapPatch/, "the canonical ConfigMap change is part of the preview");
            assert.equal(await kubeProxyConfig(cluster!), before, "preview must not write the canonical ConfigMap");
        });
    }

    async function upAndCheck(language: Language, mode: "nftables" | "ipvs") {
        const s = await open(language);
        const watch = await watchCordons(cluster!);
        try {
            await s.stack.up({ onOutput });
        } finally {
            watch.stop();
        }
        assert.deepEqual(watch.poolOrder, ["canary", "workers", "batch"], `cordon order: ${watch.events.join(", ")}`);
        assert.equal(watch.maxCordoned.workers, 2, "workers moved two at a time");
        assert.ok(watch.maxCordoned.canary <= 1 && watch.maxCordoned.batch <= 1, JSON.stringify(watch.maxCordoned));
        assert.match(await kubeProxyConfig(cluster!), new RegExp(`^mode: ${mode}$`, "m"));
        const all = await s.stack.outputs();
        const outputs = {
            status: String(all.status?.value),
            configDiff: String(all.configDiff?.value),
            plan: all.plan?.value as { pools?: { name: string }[] } | undefined,
            findings: all.findings?.value as { message: string }[] | undefined,
        };
        assert.match(
            outputs.status,
            new RegExp(`finished: every node runs ${mode}`),
            "the status output is the finish step's report",
        );
        assert.match(outputs.configDiff, new RegExp(`^\\+mode: ${mode}$`, "m"), "the configDiff output");
        assert.deepEqual(
            outputs.plan?.pools?.map((p) => p.name),
            ["canary", "workers", "batch"],
            "the plan output",
        );
        assert.ok(Array.isArray(outputs.findings), "the findings output");
        const nodes = (await clients(cluster!).core.listNode()).items;
        assert.ok(
            nodes.every((n) => !n.spec?.unschedulable),
            "no node is left cordoned",
        );
        return outputs;
    }

    it(`yaml: up moves the pools in order to nftables, and the outputs are the component's ${KWOK} ${COMMAND}`, async () => {
        const outputs = await upAndCheck("yaml", "nftables");
        assert.ok(
            outputs.findings?.some((f) => /127\.0\.0\.1:<nodePort> stops answering/.test(f.message)),
            JSON.stringify(outputs.findings),
        );
    });

    it(`yaml: setting mode back to ipvs and up moves every node back ${KWOK} ${COMMAND}`, async () => {
        const s = await open("yaml");
        await s.stack.setConfig(`${s.project}:mode`, { value: "ipvs" });
        await upAndCheck("yaml", "ipvs");
    });

    it(`python: up moves the pools in order to nftables ${KWOK} ${COMMAND}`, async () => {
        await upAndCheck("python", "nftables");
    });

    it(`go: setting mode back to ipvs and up moves every node back ${KWOK} ${COMMAND}`, async () => {
        const s = await open("go");
        await s.stack.setConfig(`${s.project}:mode`, { value: "ipvs" });
        await upAndCheck("go", "ipvs");
    });
});
