// npm run demo: on a fresh checkout, build what is missing, start a 6-node, 3-pool reference
// cluster on ipvs, run `pulumi preview --diff` and `pulumi up` of the ipvs -> nftables example
// through a local file backend, print the per-node status table, and stop the cluster.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as YAML from "yaml";
import { clusterDown, clusterUp, enginePath, engineTemp, ROOT } from "./referenceCluster.js";
import { realNodesSupported } from "./realNodes.js";

function step(title: string): void {
    process.stdout.write(`\n=== ${title}\n`);
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd: string, allowFail = false): number {
    process.stdout.write(`$ ${[cmd, ...args].join(" ")}\n`);
    const r = spawnSync(cmd, args, { env, cwd, stdio: "inherit" });
    if (r.status !== 0 && !allowFail) throw new Error(`${cmd} ${args.join(" ")} exited with ${r.status}`);
    return r.status ?? 1;
}

/** The toolchain (built once, cached outside the repository): its bin dir, and the engine's PATH. */
function toolchain(): { bin: string; engine: ReturnType<typeof enginePath> } {
    step("toolchain (built once, cached outside the repository)");
    const tc = spawnSync("bash", [join(ROOT, "scripts", "toolchain.sh")], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "inherit"],
    });
    if (tc.status !== 0) throw new Error("the toolchain build failed (see above)");
    const bin = tc.stdout.trim().split("\n").pop()!;
    process.env.KPM_BIN = bin;
    const engine = enginePath(bin);
    step(
        `command provider plugin: ${engine.simulated ? `SIMULATED stand-in (no real pulumi-resource-command on PATH): ${engine.commandPlugin}` : engine.commandPlugin}`,
    );
    return { bin, engine };
}

/** The example project in dir, pointed at this checkout's build (kwok nodes: no node checks). */
function writeExampleProject(dir: string, nodes: "real" | "kwok"): void {
    const example = join(ROOT, "examples", "ipvs-to-nftables");
    writeFileSync(join(dir, "Pulumi.yaml"), readFileSync(join(ROOT, "Pulumi.yaml")));
    for (const entry of ["dist", "node_modules", "package.json"]) symlinkSync(join(ROOT, entry), join(dir, entry));
    const stackConfig = YAML.parse(readFileSync(join(example, "Pulumi.demo.yaml"), "utf8")) as {
        config: Record<string, unknown>;
    };
    if (nodes === "kwok") stackConfig.config["kube-proxy-mode:verify"] = { nodeChecks: false };
    writeFileSync(join(dir, "Pulumi.demo.yaml"), YAML.stringify(stackConfig));
    mkdirSync(join(dir, ".state"));
}

/** The stack on a local file backend, the kubeconfig as a secret; preview, up, then every node's status. */
function previewUpStatus(dir: string, env: NodeJS.ProcessEnv, kubeconfig: string, nodes: "real" | "kwok"): void {
    run("pulumi", ["stack", "select", "--create", "demo"], env, dir);
    run(
        "pulumi",
        ["config", "set", "--secret", "kube-proxy-mode:kubeconfig", "--", readFileSync(kubeconfig, "utf8")],
        env,
        dir,
    );
    step("pulumi preview --diff: the change review (configuration diff, plan, findings); nothing is written");
    run("pulumi", ["preview", "--diff", "--non-interactive"], env, dir);
    step("pulumi up: pool by pool, node by node, each verified");
    run("pulumi", ["up", "--yes", "--non-interactive", "--skip-preview"], env, dir);
    step("status: what every node runs now");
    run(
        process.execPath,
        [
            join(ROOT, "bin", "kube-proxy-mode"),
            "status",
            ...(nodes === "real" ? ["--probe", "--service", "demo/backend"] : []),
        ],
        env,
        dir,
    );
}

async function main(): Promise<number> {
    const started = Date.now();
    const { engine } = toolchain();
    const support = realNodesSupported();
    const nodes = support.ok ? "real" : "kwok";
    step(
        `reference cluster: 6 nodes in 3 pools, kube-proxy in ipvs mode (${nodes === "real" ? "real nodes: network namespaces running the real kube-proxy" : `kwok nodes: ${support.why}`})`,
    );
    const name = `demo-${process.pid}`;
    const cluster = await clusterUp({
        name,
        mode: "ipvs",
        nodes,
        log: (l) => process.stdout.write(`[cluster] ${l}\n`),
    });
    const dir = mkdtempSync(join(tmpdir(), "kpm-demo-"));
    try {
        writeExampleProject(dir, nodes);
        const env = {
            ...process.env,
            PATH: engine.path,
            PULUMI_BACKEND_URL: `file://${join(dir, ".state")}`,
            PULUMI_CONFIG_PASSPHRASE: "demo",
            PULUMI_HOME: join(dir, ".pulumi-home"),
            PULUMI_SKIP_UPDATE_CHECK: "true",
            PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
            KUBECONFIG: cluster.kubeconfig,
            // inside the demo's directory, removed after it (the provider's kubeconfig copies)
            ...engineTemp(dir),
        };
        previewUpStatus(dir, env, cluster.kubeconfig, nodes);
        process.stdout.write(`\ndemo finished in ${((Date.now() - started) / 1000).toFixed(0)}s\n`);
        return 0;
    } finally {
        step("stopping the reference cluster");
        await clusterDown(name);
        rmSync(dir, { recursive: true, force: true });
    }
}

main().then(
    (code) => process.exit(code),
    (e) => {
        process.stderr.write(`demo failed: ${(e as Error).message}\n`);
        process.exit(1);
    },
);
