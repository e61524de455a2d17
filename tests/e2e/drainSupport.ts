// Shared by the drain, RBAC and black-hole e2e tests: a rollout spec for the reference cluster's
// current configuration moved to nftables, written to a file, and the CLI run against it.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { configHash, parseCurrentConfig, renderConfiguration } from "../../components/core/index.js";
import type { ClusterState } from "../../scripts/referenceCluster.js";
import { CLI, runAsync, type CliRun } from "../helpers.js";
import { clients, scratchDir } from "./support.js";

/** `verify`: the spec's verify section; by default no built-in node check (kwok nodes run no kube-proxy). */
export async function writeSpec(
    state: ClusterState,
    pools: Record<string, unknown>[],
    verify: Record<string, unknown> = { nodeChecks: false },
): Promise<{ file: string; hash: string }> {
    const { core } = clients(state);
    const cm = await core.readNamespacedConfigMap({ name: "kube-proxy", namespace: "kube-system" });
    const current = parseCurrentConfig(
        JSON.stringify({ ...cm, kind: "ConfigMap" }),
        "ConfigMap kube-system/kube-proxy",
    );
    const config = renderConfiguration(current, { mode: "nftables", kubernetesVersion: "1.37" }).config;
    const hash = configHash(config);
    const file = join(scratchDir("kpm-spec-"), "spec.json");
    writeFileSync(file, JSON.stringify({ target: { hash, mode: "nftables", config }, pools, verify }));
    return { file, hash };
}

export function rollout(kubeconfig: string, spec: string, pool: string): Promise<CliRun> {
    return runAsync(process.execPath, [CLI, "rollout", "--spec", spec, `--pool=${pool}`, "--kubeconfig", kubeconfig]);
}
