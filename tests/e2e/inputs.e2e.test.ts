// End to end, the real engine on two reference clusters (SIMULATED kwok nodes: the built-in node
// checks cannot run on them and are off): the component acts on the cluster it reviewed and no
// other (F7), refuses inputs the resource graph or the rollout cannot use before anything is
// written, and a rotated credential in a moved checkout re-runs no step (F8).
import assert from "node:assert/strict";
import { cpSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import * as pulumi from "@pulumi/pulumi";
import { LocalWorkspace, type EngineEvent } from "@pulumi/pulumi/automation";
import YAML from "yaml";
import type { ClusterState } from "../../scripts/referenceCluster.js";
import { MARKS } from "../../components/core/plan.js";
import {
    clients,
    POOLS,
    projectDir,
    resourceVersions,
    setStackConfig,
    startCluster,
    stopCluster,
    workspace,
    type Workspace,
} from "./support.js";

const KWOK = "(SIMULATED kwok nodes: built-in node checks not run)";
const NFT = { mode: "nftables", nodePortAddresses: ["0.0.0.0/0"] };

/** One kubeconfig holding both clusters, each with its own user; current-context is the first. */
function twoClusterKubeconfig(a: ClusterState, b: ClusterState): string {
    const parts = [a, b].map((c) => YAML.parse(readFileSync(c.kubeconfig, "utf8")));
    const named = parts.map((k, i) => ({
        cluster: k.clusters[0],
        user: { name: `admin-${i}`, user: k.users[0].user },
        context: { name: k.contexts[0].name, context: { cluster: k.clusters[0].name, user: `admin-${i}` } },
    }));
    return YAML.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: named.map((n) => n.cluster),
        users: named.map((n) => n.user),
        contexts: named.map((n) => n.context),
        "current-context": named[0].context.name,
    });
}

function server(c: ClusterState): string {
    return `https://127.0.0.1:${c.ports.apiserver}`;
}

function contextOf(c: ClusterState): string {
    return YAML.parse(readFileSync(c.kubeconfig, "utf8"))["current-context"];
}

/**
 * What the rollout could write on a cluster: kube-system's ConfigMaps and DaemonSets (their
 * resourceVersions), and per Node its kube-proxy-mode labels and annotations and whether it is
 * cordoned. (A fresh cluster's nodes still settle, kubelet labels and taints, so not all of a Node.)
 */
async function clusterSnapshot(c: ClusterState) {
    const rv = Object.fromEntries(
        Object.entries(await resourceVersions(c)).filter(([k]) => /^(ConfigMap|DaemonSet) /.test(k)),
    );
    const ours = (m: Record<string, string> | undefined) =>
        Object.fromEntries(Object.entries(m ?? {}).filter(([k]) => k.includes("kube-proxy-mode")));
    const nodes = Object.fromEntries(
        (await clients(c).core.listNode()).items.map((n) => [
            n.metadata!.name!,
            {
                labels: ours(n.metadata?.labels),
                annotations: ours(n.metadata?.annotations),
                cordoned: n.spec?.unschedulable === true,
            },
        ]),
    );
    return { kubeSystem: rv, nodes };
}

async function configMode(c: ClusterState): Promise<string> {
    const cm = await clients(c).core.readNamespacedConfigMap({ name: "kube-proxy", namespace: "kube-system" });
    return /^mode: *"?(\w*)"?/m.exec(cm.data!["config.conf"])?.[1] ?? "";
}

/** A second, valid credential for the same cluster: a ServiceAccount bound to cluster-admin and a token minted for it (TokenRequest). */
async function rotatedKubeconfig(c: ClusterState): Promise<string> {
    const { kc, core } = clients(c);
    const rbac = kc.makeApiClient(k8s.RbacAuthorizationV1Api);
    const name = "kpm-e2e-rotated";
    await core.createNamespacedServiceAccount({ namespace: "default", body: { metadata: { name } } });
    await rbac.createClusterRoleBinding({
        body: {
            metadata: { name },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" },
            subjects: [{ kind: "ServiceAccount", name, namespace: "default" }],
        },
    });
    const tr = await core.createNamespacedServiceAccountToken({
        name,
        namespace: "default",
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    const k = YAML.parse(readFileSync(c.kubeconfig, "utf8"));
    const old = k.users[0].user.token;
    k.users[0].user = { token: tr.status!.token };
    assert.notEqual(tr.status!.token, old);
    return YAML.stringify(k);
}

describe("@e2e KubeProxyMode's inputs on two reference clusters " + KWOK, function () {
    this.timeout(900_000);
    let a: ClusterState | undefined;
    let b: ClusterState | undefined;
    const disposables: (() => void)[] = [];
    const lines: string[] = [];
    const onOutput = (s: string) => lines.push(s);

    before(async () => {
        [a, b] = [await startCluster({ nodes: "kwok" }), await startCluster({ nodes: "kwok" })];
    });
    after(async () => {
        for (const d of disposables) d();
        await stopCluster(a);
        await stopCluster(b);
    });
    beforeEach(() => {
        lines.length = 0;
    });
    afterEach(function () {
        if (this.currentTest?.state === "failed")
            process.stderr.write(`--- pulumi output of the failed test ---\n${lines.join("").slice(-8000)}\n`);
    });

    it("F7: a bad verify duration and pools given as an Output fail the preview, and nothing is written on either cluster", async () => {
        const before = [await clusterSnapshot(a!), await clusterSnapshot(b!)];
        const ws: Workspace = await workspace(a!, { ...NFT, verify: { nodeChecks: false, maxSyncAge: "banana" } });
        disposables.push(() => ws.dispose());
        await assert.rejects(ws.stack.preview({ onOutput }), (e: Error) => {
            assert.match(e.message, /verify\.maxSyncAge: "banana" is not a duration; write it like 30s, 10m or 1h30m/);
            return true;
        });
        await assert.rejects(ws.stack.up({ onOutput }), /verify\.maxSyncAge/);

        // pools as an Output: only code can say that, so an inline program
        const { dir, envVars, pulumiCommand } = await projectDir("kpm-e2e-inline-");
        disposables.push(() => rmSync(dir, { recursive: true, force: true }));
        rmSync(join(dir, "Pulumi.yaml")); // an inline program of its own, not the config-driven one
        const kubeconfig = readFileSync(a!.kubeconfig, "utf8");
        const stack = await LocalWorkspace.createOrSelectStack(
            {
                stackName: "inline",
                projectName: "kpm-inline",
                program: async () => {
                    const { KubeProxyMode } = await import("../../components/pulumi/kubeProxyMode.js");
                    new KubeProxyMode("kube-proxy", {
                        ...NFT,
                        mode: "nftables",
                        kubeconfig: pulumi.secret(kubeconfig),
                        pools: pulumi.output(POOLS) as any,
                        verify: { nodeChecks: false },
                    });
                },
            },
            { workDir: dir, envVars, pulumiCommand, projectSettings: { name: "kpm-inline", runtime: "nodejs" } },
        );
        await assert.rejects(stack.up({ onOutput }), (e: Error) => {
            assert.match(e.message, /pools: is an Output: the rollout has one step per pool/);
            return true;
        });
        assert.deepEqual(
            [await clusterSnapshot(a!), await clusterSnapshot(b!)],
            before,
            "nothing written on either cluster",
        );
    });

    it(
        "F7: context naming the second cluster of a two-cluster kubeconfig: preview prints it, up moves only its nodes, the first cluster is untouched " +
            KWOK,
        async () => {
            const ws: Workspace = await workspace(a!, NFT);
            disposables.push(() => ws.dispose());
            await ws.stack.setConfig("kube-proxy-mode:kubeconfig", {
                value: twoClusterKubeconfig(a!, b!),
                secret: true,
            });
            await setStackConfig(ws.stack, { context: contextOf(b!) });
            const untouched = await clusterSnapshot(a!);

            const p = await ws.stack.preview({ onOutput });
            assert.match(
                p.stdout + p.stderr,
                new RegExp(
                    `cluster ${server(b!).replace(/[.]/g, "\\.")} \\(context ${contextOf(b!)}, from kubeconfig\\)`,
                ),
            );
            await ws.stack.up({ onOutput });

            assert.equal(await configMode(b!), "nftables", "the reviewed cluster (B) is on the target");
            for (const n of (await clients(b!).core.listNode()).items) {
                assert.match(
                    n.metadata?.annotations?.[MARKS.verifiedAnnotation] ?? "",
                    /\w/,
                    `${n.metadata!.name} of B moved`,
                );
            }
            assert.equal(await configMode(a!), "ipvs");
            assert.deepEqual(
                await clusterSnapshot(a!),
                untouched,
                "the current-context's cluster (A): no kube-proxy-mode label or annotation on a Node, none cordoned, no ConfigMap or DaemonSet of kube-system changed",
            );
        },
    );

    it(
        "F8: a rotated credential and a moved checkout: up runs no step (Commands, SIMULATED command plugin unless a real one is on PATH), their output and the promotion record unchanged " +
            KWOK,
        async () => {
            const first: Workspace = await workspace(a!, NFT);
            disposables.push(() => first.dispose());
            await first.stack.up({ onOutput });
            const stepsOf = async (stack: typeof first.stack) =>
                Object.fromEntries(
                    ((await stack.exportStack()).deployment.resources ?? [])
                        .filter((r: any) => r.type === "command:local:Command")
                        .map((r: any) => [r.urn.split("::").pop(), r.id]),
                );
            const stepsBefore = await stepsOf(first.stack);
            const promotionBefore = (await first.stack.outputs()).promotion?.value;
            assert.ok(promotionBefore?.finishedAt, "the first up recorded a promotion");
            assert.equal(Object.keys(stepsBefore).length, 4);

            // the same stack from another directory, with a different valid credential
            const moved = await projectDir("kpm-e2e-moved-");
            disposables.push(() => rmSync(moved.dir, { recursive: true, force: true }));
            cpSync(join(first.dir, ".state"), join(moved.dir, ".state"), { recursive: true });
            cpSync(join(first.dir, "Pulumi.e2e.yaml"), join(moved.dir, "Pulumi.e2e.yaml"));
            const stack = await LocalWorkspace.selectStack(
                { stackName: "e2e", workDir: moved.dir },
                { workDir: moved.dir, envVars: moved.envVars, pulumiCommand: moved.pulumiCommand },
            );
            await stack.setConfig("kube-proxy-mode:kubeconfig", { value: await rotatedKubeconfig(a!), secret: true });

            const ops: Record<string, string> = {};
            const onEvent = (e: EngineEvent) => {
                const m = e.resOutputsEvent?.metadata;
                if (m) ops[`${m.type} ${m.urn.split("::").pop()}`] = m.op;
            };
            await stack.up({ onOutput, onEvent });
            const stepOps = Object.entries(ops).filter(([k]) => k.startsWith("command:local:Command "));
            assert.equal(stepOps.length, 4);
            assert.deepEqual(
                stepOps.filter(([, op]) => op !== "same"),
                [],
                "no step updated or replaced",
            );
            assert.deepEqual(await stepsOf(stack), stepsBefore, "every step kept (same ids: none replaced)");
            assert.deepEqual(
                (await stack.outputs()).promotion?.value,
                promotionBefore,
                "the promotion record unchanged",
            );
        },
    );
});
