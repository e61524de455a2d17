// The guard-rail policy pack, run the way a team runs it: `pulumi preview --policy-pack` (the real
// CLI and engine, a file backend) over stacks against the reference cluster. Each policy rejects
// its bad case with a message that says how to fix it, and passes the good one; nothing in the
// cluster changes.
//
// The pack is given as its executable launcher (components/policy/analyzer): the only Node.js
// language host buildable here (v3.68.0) cannot start a policy directory (no RunPlugin), while
// the CLI runs an executable pack directly (see docs/guard-rails.md).
import assert from "node:assert/strict";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ClusterState } from "../../scripts/referenceCluster.js";
import { POLICY } from "../../components/policy/checks.js";
import { ROOT, runAsync, runCli } from "../helpers.js";
import { projectDir, resourceVersions, startCluster, stopCluster } from "./support.js";

// where a user finds it: `kube-proxy-mode policy-pack --launcher`
const PACK = runCli(["policy-pack", "--launcher"]).stdout.trim();

interface Preview {
    code: number | null;
    output: string;
    /** "policy (type: name)" of each violation the CLI listed */
    violations: string[];
}

describe("@e2e guard-rail policy pack: pulumi preview --policy-pack on the reference cluster (kwok nodes)", function () {
    this.timeout(600_000);
    let cluster: ClusterState | undefined;
    /** a second cluster, for a stack that manages two */
    let other: ClusterState | undefined;
    let project: Awaited<ReturnType<typeof projectDir>>;
    let untouched: Record<string, string>;

    async function pulumi(args: string[]): Promise<{ code: number | null; output: string }> {
        const r = await runAsync("pulumi", [...args, "--non-interactive", "--cwd", project.dir], {
            env: project.envVars,
        });
        return { code: r.code, output: r.stdout + r.stderr };
    }
    async function preview(which: string, packConfig?: Record<string, unknown> | string): Promise<Preview> {
        await pulumi(["config", "set", "guardrails:case", which]);
        const args = ["preview", "--policy-pack", PACK];
        if (typeof packConfig === "string") args.push("--policy-pack-config", packConfig);
        else if (packConfig) {
            const file = join(project.dir, `policy-config-${which}.json`);
            writeFileSync(file, JSON.stringify(packConfig));
            args.push("--policy-pack-config", file);
        }
        const { code, output } = await pulumi(args);
        const violations = [...output.matchAll(/- \[mandatory\]\s+(\S+)\s+\(([^)]+)\)/g)].map(
            (m) => `${m[1]} (${m[2]})`,
        );
        return { code, output, violations };
    }

    /** the pack ran and every policy passed */
    function assertPasses(p: Preview): void {
        assert.equal(p.code, 0, p.output);
        assert.deepEqual(p.violations, []);
        assert.match(p.output, /✅ kube-proxy-mode@v0\.1\.0/);
    }
    /** the preview failed on exactly these violations */
    function assertRejects(p: Preview, violations: string[]): void {
        assert.notEqual(p.code, 0, p.output);
        assert.deepEqual([...p.violations].sort(), [...violations].sort(), p.output);
    }

    before(async () => {
        assert.match(PACK, /components\/policy\/analyzer$/);
        [cluster, other] = await Promise.all([
            startCluster({
                nodes: "kwok",
                pools: [
                    ["canary", 1],
                    ["workers", 2],
                ],
            }),
            startCluster({ nodes: "kwok", pools: [["canary", 1]] }),
        ]);
        project = await projectDir("kpm-e2e-policy-");
        writeFileSync(
            join(project.dir, "Pulumi.yaml"),
            "name: guardrails\nruntime: nodejs\nmain: dist/tests/e2e/programs/guardrails.js\n",
        );
        const init = await pulumi(["stack", "init", "e2e"]);
        assert.equal(init.code, 0, init.output);
        const set = await pulumi([
            "config",
            "set",
            "--secret",
            "guardrails:kubeconfig",
            readFileSync(cluster.kubeconfig, "utf8"),
        ]);
        assert.equal(set.code, 0, set.output);
        const setOther = await pulumi([
            "config",
            "set",
            "--secret",
            "guardrails:otherKubeconfig",
            readFileSync(other.kubeconfig, "utf8"),
        ]);
        assert.equal(setOther.code, 0, setOther.output);
        untouched = await resourceVersions(cluster);
    });
    after(async () => {
        try {
            // every preview above left the cluster as it was
            if (cluster) assert.deepEqual(await resourceVersions(cluster), untouched);
        } finally {
            await Promise.all([stopCluster(cluster), stopCluster(other)]);
            if (project) rmSync(project.dir, { recursive: true, force: true });
        }
    });

    it(`${POLICY.pinned} and ${POLICY.gates}: kubeadm's unpinned mode and a misspelt gate are rejected, each naming its resource and the fix`, async () => {
        const p = await preview("unpinned-and-misspelt", { [POLICY.gates]: { kubernetesVersion: "1.37" } });
        assertRejects(p, [
            `${POLICY.gates} (kubernetes:core/v1:ConfigMap: gate-typo)`,
            `${POLICY.pinned} (kubernetes:core/v1:ConfigMapPatch: unpinned)`,
        ]);
        assert.match(
            p.output,
            /ConfigMapPatch kube-system\/kube-proxy \(data\["config.conf"\]\) does not pin the mode \(mode: ""\).*Fix: set mode: nftables/,
        );
        assert.match(
            p.output,
            /ConfigMap default\/kube-proxy-next \(data\["config.conf"\]\): NFTablesProxyMod is not a feature gate of Kubernetes 1\.37.*did you mean NFTablesProxyMode\? Fix: rename it to NFTablesProxyMode/,
        );
    });

    it("the same stack with the mode pinned and the gate spelt right passes every policy (also with the README's example pack config)", async () => {
        const p = await preview("pinned");
        assertPasses(p);
        assert.match(
            p.output,
            /✅ kube-proxy-mode@v0\.1\.0 \(local: .*components\/policy\/analyzer\)/,
            "the pack ran from its launcher",
        );
        assertPasses(await preview("pinned", join(ROOT, "examples", "guard-rails", "kube-proxy-policy.json")));
    });

    it(`${POLICY.pinned}: a kube-proxy configuration rendered by a Helm v4 Chart is read like any other`, async () => {
        const p = await preview("helm-chart-unpinned");
        assertRejects(p, [`${POLICY.pinned} (kubernetes:core/v1:ConfigMap: kube-proxy-chart:kube-system/kube-proxy)`]);
        assert.match(
            p.output,
            /ConfigMap kube-system\/kube-proxy \(data\["config.conf"\]\) does not pin the mode \(mode: ""\)/,
        );
        assertPasses(await preview("helm-chart-pinned"));
    });

    it(`${POLICY.ipvs}: kube-proxy upgraded to 1.40 while the configuration stays on ipvs is rejected (release read from the DaemonSet's image)`, async () => {
        const p = await preview("upgrade-keeping-ipvs");
        assertRejects(p, [`${POLICY.ipvs} (kubernetes:core/v1:ConfigMapPatch: still-ipvs)`]);
        assert.match(
            p.output,
            /kube-proxy 1\.40 exits in ipvs mode unless featureGates\.KubeProxyIPVS is true.*release from the image registry\.k8s\.io\/kube-proxy:v1\.40\.0 of DaemonSetPatch kube-system\/kube-proxy.*Fix: set mode to nftables or iptables/,
        );
        assertPasses(await preview("upgrade-keeping-ipvs-gated"));
    });

    it(`${POLICY.ownership}: a hand-written patch of kube-system/kube-proxy beside KubeProxyMode is rejected; the component alone passes every policy`, async () => {
        assertPasses(await preview("component"));
        const bypass = await preview("component-and-by-hand");
        assertRejects(bypass, [`${POLICY.ownership} (kubernetes:core/v1:ConfigMapPatch: by-hand)`]);
        assert.match(
            bypass.output,
            /ConfigMapPatch kube-system\/kube-proxy is written outside KubeProxyMode "kube-proxy" on the same cluster.*Fix: remove this resource and set what it sets on KubeProxyMode "kube-proxy"/,
        );
    });

    it(`${POLICY.ownership} tells clusters apart by the API server each provider's kubeconfig names: a patch for a second cluster passes, a second provider of the same cluster is rejected`, async () => {
        const otherCluster = await preview("component-and-other-cluster");
        assertPasses(otherCluster);
        const secondProvider = await preview("component-and-second-provider");
        assertRejects(secondProvider, [`${POLICY.ownership} (kubernetes:core/v1:ConfigMapPatch: second-provider)`]);
        assert.match(secondProvider.output, /is written outside KubeProxyMode "kube-proxy" on the same cluster/);
        // the policy read both kubeconfigs; neither reached the output
        for (const c of [cluster!, other!]) {
            const token = /token:\s*(\S+)|client-key-data:\s*(\S+)/.exec(readFileSync(c.kubeconfig, "utf8"));
            const secret = token?.[1] ?? token?.[2];
            assert.ok(secret, "the reference cluster's kubeconfig carries a credential");
            assert.ok(
                ![otherCluster.output, secondProvider.output].some((o) => o.includes(secret)),
                "a credential reached the preview's output",
            );
        }
    });
});
