// Golden cases from real configurations (kubeadm's own output, EKS's ConfigMap, a hand-kept
// file): the rendered configuration and its diff are compared to reviewed files under
// tests/fixtures/golden. UPDATE_GOLDEN=1 rewrites them (review the diff before committing).
import assert from "node:assert/strict";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as YAML from "yaml";
import { parseCurrentConfig, renderConfiguration, type DesiredSettings } from "../../components/core/index.js";
import { FIXTURES, fixture } from "../helpers.js";

interface Case {
    name: string;
    input: string;
    desired: DesiredSettings;
}

const nft = (extra: Partial<DesiredSettings> = {}): DesiredSettings => ({
    mode: "nftables",
    kubernetesVersion: "1.37",
    ...extra,
});

export const GOLDEN_CASES: Case[] = [
    { name: "kubeadm-1.37-iptables-to-nftables", input: "kubeadm/1.37/configmap.yaml", desired: nft() },
    {
        name: "kubeadm-1.37-iptables-to-nftables-keep-reach",
        input: "kubeadm/1.37/configmap.yaml",
        desired: nft({
            nodePortAddresses: ["primary", "localhost"],
            featureGates: { KubeProxyNFTablesLocalhostNodePorts: true },
            conntrack: { tcpBeLiberal: true },
        }),
    },
    {
        name: "kubeadm-1.37-ipvs-to-nftables",
        input: "kubeadm/1.37-ipvs/configmap.yaml",
        desired: nft({ nodePortAddresses: ["0.0.0.0/0"] }),
    },
    {
        name: "kubeadm-1.37-ipvs-to-iptables",
        input: "kubeadm/1.37-ipvs/configmap.yaml",
        desired: { mode: "iptables", kubernetesVersion: "1.37" },
    },
    {
        name: "kubeadm-1.33-to-nftables",
        input: "kubeadm/1.33/configmap.yaml",
        desired: nft({ kubernetesVersion: "1.33" }),
    },
    {
        name: "kubeadm-1.29-to-nftables",
        input: "kubeadm/1.29/configmap.yaml",
        desired: nft({ kubernetesVersion: "1.29", featureGates: { NFTablesProxyMode: true } }),
    },
    {
        name: "eks-iptables-to-nftables",
        input: "eks/kube-proxy-config.yaml",
        desired: nft({ kubernetesVersion: "1.33", nodePortAddresses: ["0.0.0.0/0"] }),
    },
    { name: "handwritten-ipvs-lc-to-nftables", input: "handwritten/ipvs-lc.yaml", desired: nft() },
];

const GOLDEN = join(FIXTURES, "golden");

describe("golden cases from real configurations", () => {
    for (const c of GOLDEN_CASES) {
        describe(c.name, () => {
            const present = existsSync(join(FIXTURES, c.input));
            it(`the input fixture ${c.input} exists`, () => assert.ok(present, `missing fixture ${c.input}`));
            if (!present) return;
            const current = parseCurrentConfig(fixture(c.input));
            const r = renderConfiguration(current, c.desired);

            it("renders the reviewed configuration and diff", () => {
                assert.deepEqual(
                    r.findings.filter((f) => f.severity === "error"),
                    [],
                );
                const record = {
                    config: r.config,
                    diff: r.diff,
                    changes: r.changes.map((x) => `${x.path}: ${JSON.stringify(x.from)} -> ${JSON.stringify(x.to)}`),
                };
                const file = join(GOLDEN, `${c.name}.yaml`);
                if (process.env.UPDATE_GOLDEN) {
                    mkdirSync(GOLDEN, { recursive: true });
                    writeFileSync(file, YAML.stringify(record, { lineWidth: 0, blockQuote: "literal" }));
                }
                const golden = YAML.parse(fixture(join("golden", `${c.name}.yaml`)));
                assert.equal(r.config, golden.config);
                assert.equal(r.diff, golden.diff);
                assert.deepEqual(record.changes, golden.changes);
            });

            it("changes only the lines of the fields it reports", () => {
                const removed = r.diff.split("\n").filter((l) => l.startsWith("-") && !l.startsWith("---"));
                const fields = new Set(r.changes.map((x) => x.path.split(".").pop()!.replace(/\[.*$/, "")));
                for (const line of removed) {
                    const key = /^-\s*([A-Za-z]+):/.exec(line)?.[1];
                    if (key)
                        assert.ok(
                            fields.has(key),
                            `the diff removes ${line.trim()} but no change is reported for ${key}`,
                        );
                }
            });

            it("is idempotent: rendering its own output again changes nothing", () => {
                const again = renderConfiguration(parseCurrentConfig(r.config), c.desired);
                assert.deepEqual(again.changes, []);
                assert.equal(again.config, r.config);
                assert.equal(again.diff, "");
            });

            it("keeps every field it does not own", () => {
                const owned = new Set(r.changes.map((x) => x.path));
                const walk = (before: any, after: any, path: string) => {
                    if (owned.has(path)) return;
                    if (before && typeof before === "object" && !Array.isArray(before)) {
                        for (const k of Object.keys(before)) walk(before[k], after?.[k], path ? `${path}.${k}` : k);
                    } else assert.deepEqual(after, before, `field ${path} changed without a reported change`);
                };
                walk(r.before, r.after, "");
            });
        });
    }
});
