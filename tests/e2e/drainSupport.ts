// Shared by the drain and RBAC e2e tests: a rollout spec for the reference cluster's current
// configuration (ipvs -> nftables), written to a file, and the CLI run against it.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { configHash, parseCurrentConfig, renderConfiguration } from "../../components/core/index.js";
import type { ClusterState } from "../../scripts/referenceCluster.js";
import { CLI, runAsync, type CliRun } from "../helpers.js";
import { clients, scratchDir } from "./support.js";

export async function writeSpec(state: ClusterState, pools: Record<string, unknown>[]): Promise<string> {
    const { core } = clients(state);
    const cm = await core.readNamespacedConfigMap({ name: "kube-proxy", namespace: "kube-system" });
    const current = parseCurrentConfig(
        JSON.stringify({ ...cm, kind: "ConfigMap" }),
        "ConfigMap kube-system/kube-proxy",
    );
    const config = renderConfiguration(current, { mode: "nftables", kubernetesVersion: "1.37" }).config;
    // kwok nodes run no kube-proxy process, so the built-in node checks cannot run there
    const spec = {
        target: { hash: configHash(config), mode: "nftables", config },
        pools,
        verify: { nodeChecks: false },
    };
    const file = join(scratchDir("kpm-spec-"), "spec.json");
    writeFileSync(file, JSON.stringify(spec));
    return file;
}

export function rollout(kubeconfig: string, spec: string, pool: string): Promise<CliRun> {
    return runAsync(process.execPath, [CLI, "rollout", "--spec", spec, `--pool=${pool}`, "--kubeconfig", kubeconfig]);
}
