// The package's public API (components/index.ts): a curated list of runtime exports, the two
// library entry points behind `render` and `precheck`, and which third-party typings the public
// declarations drag into a consumer's compilation.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import * as api from "../../components/index.js";
import { FIXTURES, ROOT } from "../helpers.js";

/** Every module a declaration file imports, following the package's own relative imports. */
export function declarationClosure(entry: string): { files: string[]; external: Map<string, string[]> } {
    const seen = new Set<string>();
    const external = new Map<string, string[]>();
    const queue = [entry];
    while (queue.length > 0) {
        const file = queue.pop()!;
        if (seen.has(file)) continue;
        seen.add(file);
        // without block comments: a TSDoc @example's `import ... from "kube-proxy-mode"` is no import
        const text = readFileSync(file, "utf8").replace(/\/\*[\s\S]*?\*\//g, "");
        for (const m of text.matchAll(/(?:from|import)\s*\(?\s*["']([^"']+)["']/g)) {
            const spec = m[1];
            if (spec.startsWith(".")) queue.push(resolve(dirname(file), spec.replace(/\.js$/, ".d.ts")));
            else external.set(spec, [...(external.get(spec) ?? []), file.slice(ROOT.length + 1)]);
        }
    }
    return { files: [...seen], external };
}

describe("public API (components/index.ts)", () => {
    it("exports the component, its type token, the mode list, InputError, the ipvs timeline, the two library functions and the RBAC helper and manifest, nothing else", () => {
        assert.deepEqual(Object.keys(api).sort(), [
            "IPVS_TIMELINE",
            "InputError",
            "KUBE_PROXY_MODE_TYPE",
            "KubeProxyMode",
            "PROXY_MODES",
            "kubeProxyModeRbac",
            "precheckNodes",
            "renderKubeProxyConfig",
            "renderRbacManifest",
        ]);
    });
    it("renderKubeProxyConfig renders kubeadm 1.37's ipvs ConfigMap for nftables: the mode changes, with a diff", () => {
        const current = readFileSync(join(FIXTURES, "kubeadm", "1.37-ipvs", "configmap.yaml"), "utf8");
        const r = api.renderKubeProxyConfig(current, {
            mode: "nftables",
            kubernetesVersion: "1.37",
            nodePortAddresses: ["0.0.0.0/0"],
        });
        assert.equal(r.ok, true, JSON.stringify(r.findings));
        assert.match(r.config, /^mode: nftables$/m);
        assert.match(r.diff, /^\+mode: nftables$/m);
        assert.ok(r.changes.some((c) => c.path === "mode"));
        assert.equal(r.kubernetesVersion, "1.37");
    });
    it("renderKubeProxyConfig throws InputError naming the field for an invalid mode, and for unreadable input", () => {
        assert.throws(
            () => api.renderKubeProxyConfig("mode: ipvs\n", { mode: "ebpf" as never }),
            (e: unknown) => e instanceof api.InputError && /mode/.test(e.message),
        );
        assert.throws(() => api.renderKubeProxyConfig("- just\n- a list\n", { mode: "nftables" }), api.InputError);
    });
    it("renderKubeProxyConfig refuses ipvs on 1.43 with ok false and the input unchanged", () => {
        const current = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: iptables\n";
        const r = api.renderKubeProxyConfig(current, { mode: "ipvs", kubernetesVersion: "1.43" });
        assert.equal(r.ok, false);
        assert.equal(r.config, current);
        assert.equal(r.diff, "");
        assert.ok(r.findings.some((f) => f.severity === "error"));
    });
    it("precheckNodes: fail below kernel 5.13 for nftables, ok above, skip for Windows", () => {
        const node = (name: string, kernelVersion: string, os = "linux") => ({
            metadata: { name, labels: { "kubernetes.io/os": os } },
            status: { nodeInfo: { kernelVersion, osImage: "x", operatingSystem: os } },
        });
        const v = api.precheckNodes(
            [node("old", "5.4.0-150-generic"), node("new", "6.8.0-45-generic"), node("win", "10.0.20348", "windows")],
            "nftables",
            { tcpBeLiberal: true },
        );
        assert.deepEqual(
            v.map((x) => `${x.node} ${x.verdict}`),
            ["old fail", "new ok", "win skip"],
        );
    });
    it("no third-party typings reach the public declarations but the Pulumi SDKs' (a consumer's default tsconfig needs no skipLibCheck)", function () {
        const entry = join(ROOT, "dist", "components", "index.d.ts");
        if (!existsSync(entry)) this.skip();
        const { external } = declarationClosure(entry);
        const allowed = new Set(["@pulumi/pulumi", "@pulumi/kubernetes"]);
        const leaks = [...external.entries()]
            .filter(([m]) => !allowed.has(m) && !m.startsWith("node:"))
            .map(([m, files]) => `${m} <- ${[...new Set(files)].sort().join(", ")}`);
        // PromotionRecord, ClusterAccess and Names come from zod- and client-free modules
        // (core/types.ts, cluster/access.ts, rollout/cluster.ts)
        assert.deepEqual(leaks, []);
    });
});
