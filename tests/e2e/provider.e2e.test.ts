// End to end through the provider plugin: a Pulumi program uses KubeProxyMode as a remote
// component (the engine starts bin/pulumi-resource-kube-proxy-mode and asks it to construct the
// component), as Python, Go, C# and YAML programs do through their generated SDKs. Its preview of
// the ipvs -> nftables example on the reference cluster must show the reviewer the same
// configuration diff, plan and findings as the TypeScript program that builds the component
// in-process (the root Pulumi.yaml's). kwok nodes: no node checks run (preview runs none anyway).
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { LocalWorkspace, type EngineEvent } from "@pulumi/pulumi/automation";
import type { ClusterState } from "../../scripts/referenceCluster.js";
import { KUBE_PROXY_MODE_TYPE } from "../../components/core/types.js";
import { ROOT } from "../helpers.js";
import {
    clients,
    POOLS,
    projectDir,
    setKubeconfig,
    setStackConfig,
    startCluster,
    stopCluster,
    workspace,
    type Workspace,
} from "./support.js";

const NFT = { mode: "nftables", nodePortAddresses: ["0.0.0.0/0"] };

interface Seen {
    /** what the reviewer reads on the component: "severity: message", in order */
    diagnostics: string[];
    /** the stack's outputs after the preview */
    outputs: Record<string, unknown>;
    /** resource types the preview would create */
    creates: string[];
    text: string;
}

async function previewOf(ws: { stack: Workspace["stack"] }): Promise<Seen> {
    const seen: Seen = { diagnostics: [], outputs: {}, creates: [], text: "" };
    const onEvent = (e: EngineEvent) => {
        const d = e.diagnosticEvent;
        if (d?.urn?.includes(`${KUBE_PROXY_MODE_TYPE}::`)) seen.diagnostics.push(`${d.severity}: ${d.message.trim()}`);
        const pre = e.resourcePreEvent?.metadata;
        if (pre?.op === "create") seen.creates.push(pre.type);
        const out = e.resOutputsEvent?.metadata;
        if (out?.type === "pulumi:pulumi:Stack") seen.outputs = (out.new?.outputs ?? {}) as Record<string, unknown>;
    };
    const r = await ws.stack.preview({ diff: true, onEvent, onOutput: (s) => (seen.text += s) });
    seen.text += r.stdout;
    return seen;
}

/** A project running tests/e2e/programs/remoteComponent.ts, with the plugin found in this checkout's bin/ (Pulumi.yaml `plugins`). */
async function remoteWorkspace(
    cluster: ClusterState,
    program = "remoteComponent",
    env: Record<string, string> = {},
): Promise<Workspace> {
    const { dir, envVars, pulumiCommand } = await projectDir("kpm-e2e-provider-");
    Object.assign(envVars, env);
    writeFileSync(
        join(dir, "Pulumi.yaml"),
        [
            "name: kube-proxy-mode-remote",
            "runtime: nodejs",
            `main: dist/tests/e2e/programs/${program}.js`,
            "plugins:",
            "  providers:",
            "    - name: kube-proxy-mode",
            `      path: ${join(ROOT, "bin")}`,
            "",
        ].join("\n"),
    );
    const stack = await LocalWorkspace.createOrSelectStack(
        { stackName: "e2e", workDir: dir },
        { workDir: dir, envVars, pulumiCommand },
    );
    await setKubeconfig(stack, cluster);
    await setStackConfig(stack, { pools: POOLS, verify: { nodeChecks: false }, ...NFT });
    return {
        dir,
        stack,
        output: [],
        setConfig: (v) => setStackConfig(stack, v),
        dispose: () => rmSync(dir, { recursive: true, force: true }),
    };
}

describe("@e2e KubeProxyMode through the provider plugin (remote component) on the reference cluster (kwok nodes)", function () {
    this.timeout(900_000);
    let cluster: ClusterState | undefined;
    let remote: Workspace | undefined;
    let previewed: Seen | undefined;
    const spaces: Workspace[] = [];

    after(async () => {
        for (const w of spaces) w.dispose();
        await stopCluster(cluster);
    });

    it("previews ipvs -> nftables through pulumi-resource-kube-proxy-mode with the same diff, plan and findings as the in-process TypeScript component", async () => {
        cluster = await startCluster();
        const local = await workspace(cluster, NFT);
        spaces.push(local);
        remote = await remoteWorkspace(cluster);
        spaces.push(remote);

        const inProcess = await previewOf(local);
        const viaPlugin = await previewOf(remote);
        previewed = viaPlugin;
        try {
            // the reviewer's view: the diff, the plan and every finding, as diagnostics on the component
            assert.ok(
                viaPlugin.diagnostics.some(
                    (m) => /^info: kube-proxy configuration .* -> nftables/.test(m) && /^\+mode: nftables/m.test(m),
                ),
                "the diff is shown",
            );
            assert.ok(
                viaPlugin.diagnostics.some((m) => /1\. pool canary \(pool=canary\)/.test(m)),
                "the plan is shown",
            );
            assert.deepEqual(viaPlugin.diagnostics, inProcess.diagnostics);
            // the outputs: the same configuration diff, plan, findings, hash and change
            for (const k of ["configDiff", "plan", "findings", "configHash", "mode", "change"]) {
                assert.notEqual(viaPlugin.outputs[k], undefined, `output ${k} is known at preview`);
                assert.deepEqual(viaPlugin.outputs[k], inProcess.outputs[k], `output ${k}`);
            }
            assert.equal(viaPlugin.outputs.mode, "nftables");
            assert.match(String(viaPlugin.outputs.configDiff), /^-mode: ipvs/m);
            assert.deepEqual(
                (viaPlugin.outputs.plan as any).pools.map((p: any) => p.name),
                ["canary", "workers", "batch"],
            );
            // the same resources under the component (one step per pool, the finish, the ConfigMap
            // patch), plus the plugin's own provider
            assert.ok(
                viaPlugin.creates.includes("pulumi:providers:kube-proxy-mode"),
                "the engine started the kube-proxy-mode plugin",
            );
            const besides = (c: string[]) =>
                c.filter((t) => t !== "pulumi:pulumi:Stack" && t !== "pulumi:providers:kube-proxy-mode").sort();
            assert.deepEqual(besides(viaPlugin.creates), besides(inProcess.creates));
            assert.ok(viaPlugin.creates.includes(KUBE_PROXY_MODE_TYPE));
        } catch (e) {
            process.stderr.write(
                `--- in-process preview ---\n${inProcess.text.slice(-4000)}\n--- through the plugin ---\n${viaPlugin.text.slice(-6000)}\n`,
            );
            throw e;
        }
    });

    it("the generated Node.js SDK (sdk/nodejs, compiled) previews through the plugin with the same diff, plan and findings as the in-process component", async () => {
        assert.ok(cluster && previewed, "the first preview test ran first");
        // compile sdk/nodejs as its own tsconfig says (npm run build there), against this checkout's @pulumi/pulumi
        const sdkDir = mkdtempSync(join(tmpdir(), "kpm-e2e-nodejs-sdk-"));
        try {
            cpSync(join(ROOT, "sdk", "nodejs"), sdkDir, { recursive: true });
            symlinkSync(join(ROOT, "node_modules"), join(sdkDir, "node_modules"));
            execFileSync(process.execPath, [join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", sdkDir], {
                stdio: "pipe",
            });
            // as Pulumi's SDK builds do: the package.json beside the compiled code (utilities.ts reads its version)
            cpSync(join(sdkDir, "package.json"), join(sdkDir, "bin", "package.json"));
            const generated = await remoteWorkspace(cluster, "generatedSdk", {
                KPM_GENERATED_SDK: join(sdkDir, "bin"),
            });
            spaces.push(generated);
            const viaSdk = await previewOf(generated);
            try {
                assert.ok(
                    viaSdk.creates.includes("pulumi:providers:kube-proxy-mode"),
                    "the engine started the kube-proxy-mode plugin",
                );
                assert.deepEqual(viaSdk.diagnostics, previewed.diagnostics);
                for (const k of ["configDiff", "plan", "findings", "configHash", "mode", "change"])
                    assert.deepEqual(viaSdk.outputs[k], previewed.outputs[k], `output ${k}`);
            } catch (e) {
                process.stderr.write(`--- through the generated SDK ---\n${viaSdk.text.slice(-6000)}\n`);
                throw e;
            }
        } finally {
            rmSync(sdkDir, { recursive: true, force: true });
        }
    });

    it("up through the plugin moves the cluster to the previewed configuration: kube-proxy's ConfigMap on nftables, no node left cordoned, the finish's status and the promotion record as outputs (kwok nodes: node checks off)", async () => {
        assert.ok(cluster && remote && previewed, "the preview test ran first");
        let text = "";
        try {
            const up = await remote.stack.up({ onOutput: (s) => (text += s) });
            assert.equal(up.summary.result, "succeeded");
            const out = up.outputs;
            assert.equal(out.mode.value, "nftables");
            assert.equal(
                out.configHash.value,
                previewed.outputs.configHash,
                "up applied the configuration the preview showed",
            );
            assert.match(String(out.status.value), /\S/, "the finish step's report");
            assert.equal(
                (out.promotion?.value as any)?.configHash,
                previewed.outputs.configHash,
                "the promotion record names the applied configuration",
            );
            const { core } = clients(cluster);
            const cm = await core.readNamespacedConfigMap({ name: "kube-proxy", namespace: "kube-system" });
            assert.match(cm.data!["config.conf"], /^mode: nftables$/m);
            const cordoned = (await core.listNode()).items
                .filter((n) => n.spec?.unschedulable)
                .map((n) => n.metadata!.name);
            assert.deepEqual(cordoned, []);
        } catch (e) {
            process.stderr.write(`--- up through the plugin ---\n${text.slice(-6000)}\n`);
            throw e;
        }
    });
});
