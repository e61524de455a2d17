// The built binary, as a user runs it: stdout, stderr and exit codes.
import assert from "node:assert/strict";
import { join } from "node:path";
import * as YAML from "yaml";
import { FIXTURES, ROOT, fixture, runCli } from "../helpers.js";

const KUBEADM = join(FIXTURES, "kubeadm/1.37/configmap.yaml");
const KUBEADM_IPVS = join(FIXTURES, "kubeadm/1.37-ipvs/configmap.yaml");

describe("kube-proxy-mode CLI", () => {
    describe("policy-pack", () => {
        it("prints the pack's directory, its launcher, or both with the policies as JSON", () => {
            const dir = runCli(["policy-pack"]);
            assert.equal(dir.code, 0, dir.stderr);
            assert.equal(dir.stdout.trim(), join(ROOT, "components", "policy"));
            assert.equal(
                runCli(["policy-pack", "--launcher"]).stdout.trim(),
                join(ROOT, "components", "policy", "analyzer"),
            );
            const json = JSON.parse(runCli(["policy-pack", "--json"]).stdout);
            assert.deepEqual(
                json.policies.map((p: { name: string; config: string[] }) => `${p.name}:${p.config.join(",")}`),
                [
                    "kube-proxy-mode-pinned:",
                    "kube-proxy-no-ipvs-past-removal:kubernetesVersion,allowUnknownFeatureGates",
                    "kube-proxy-feature-gates-known:kubernetesVersion,allowUnknownFeatureGates",
                    "kube-proxy-config-through-component:",
                ],
            );
            const bad = runCli(["policy-pack", "--dir"]);
            assert.equal(bad.code, 2);
            assert.match(bad.stderr, /^policy-pack: Unknown option '--dir'; see kube-proxy-mode policy-pack --help/);
        });
    });

    describe("render", () => {
        it("reads the ConfigMap from stdin and prints a minimal unified diff; changes and warnings go to stderr", () => {
            const r = runCli(
                ["render", "--current", "-", "--mode", "nftables", "--kubernetes-version", "1.37", "--diff"],
                { input: fixture("kubeadm/1.37-ipvs/configmap.yaml") },
            );
            assert.equal(r.code, 0, r.stderr);
            assert.match(r.stdout, /^-mode: ipvs$/m);
            assert.match(r.stdout, /^\+mode: nftables$/m);
            assert.match(r.stdout, /^\+ {2}syncPeriod: 45s$/m);
            assert.doesNotMatch(r.stdout, /warning:/);
            assert.match(r.stderr, /^change: mode: "ipvs" -> "nftables"/m);
            assert.match(
                r.stderr,
                /^change: ipvs\.scheduler: "lc" -> "" \(dead configuration.*sessionAffinity: ClientIP/m,
            );
            assert.match(
                r.stderr,
                /^warning: nodePortAddresses: NodePorts will answer only on each node's primary IP/m,
            );
        });
        it("prints the whole new configuration without --diff (in its ConfigMap, given one)", () => {
            const r = runCli(["render", "--current", KUBEADM, "--mode", "nftables", "--kubernetes-version", "1.37"]);
            assert.equal(r.code, 0, r.stderr);
            assert.match(r.stdout, /^kind: ConfigMap$/m);
            const config = (YAML.parse(r.stdout) as { data: Record<string, string> }).data["config.conf"];
            assert.match(config, /^apiVersion: kubeproxy\.config\.k8s\.io\/v1alpha1$/m);
            assert.match(config, /^mode: nftables$/m);
            assert.match(config, /^winkernel:$/m, "fields it does not own stay");
        });
        it("--json prints config, diff, changes, warnings and errors", () => {
            const r = runCli([
                "render",
                "--current",
                KUBEADM_IPVS,
                "--mode",
                "nftables",
                "--kubernetes-version",
                "1.37",
                "--node-port-addresses",
                "0.0.0.0/0",
                "--json",
            ]);
            assert.equal(r.code, 0, r.stderr);
            const out = JSON.parse(r.stdout);
            assert.deepEqual(Object.keys(out).sort(), [
                "changes",
                "config",
                "diff",
                "errors",
                "kubernetesVersion",
                "warnings",
            ]);
            assert.ok(
                out.changes.every(
                    (c: any) => typeof c.path === "string" && typeof c.reason === "string" && "from" in c && "to" in c,
                ),
            );
            assert.deepEqual(out.errors, []);
            assert.equal(r.stderr, "");
        });
        it("--feature-gate and --conntrack-tcp-be-liberal reach the configuration", () => {
            const r = runCli([
                "render",
                "--current",
                KUBEADM,
                "--mode",
                "nftables",
                "--kubernetes-version",
                "1.37",
                "--feature-gate",
                "KubeProxyNFTablesLocalhostNodePorts=true",
                "--node-port-addresses",
                "primary,localhost",
                "--conntrack-tcp-be-liberal",
                "true",
            ]);
            assert.equal(r.code, 0, r.stderr);
            const config = (YAML.parse(r.stdout) as { data: Record<string, string> }).data["config.conf"];
            assert.match(config, /featureGates:\n {2}KubeProxyNFTablesLocalhostNodePorts: true/);
            assert.match(config, /tcpBeLiberal: true/);
            assert.doesNotMatch(r.stderr, /127\.0\.0\.1:<nodePort> stops answering/);
        });
        it("says so when there is nothing to change", () => {
            const r = runCli([
                "render",
                "--current",
                KUBEADM,
                "--mode",
                "iptables",
                "--kubernetes-version",
                "1.37",
                "--diff",
            ]);
            assert.equal(r.code, 0);
            assert.equal(r.stdout, "");
            assert.match(r.stderr, /no change/);
        });

        const invalid: [string, string[], string | undefined, RegExp][] = [
            [
                "a missing mode",
                ["render", "--current", KUBEADM],
                undefined,
                /--mode is required: one of iptables, ipvs, nftables/,
            ],
            [
                "an unknown mode",
                ["render", "--current", KUBEADM, "--mode", "nft"],
                undefined,
                /--mode "nft" is not a kube-proxy mode/,
            ],
            [
                "an unknown flag",
                ["render", "--current", KUBEADM, "--mode", "nftables", "--frobnicate"],
                undefined,
                /render: Unknown option '--frobnicate'.*--help/,
            ],
            [
                "input that is not YAML",
                ["render", "--current", "-", "--mode", "nftables"],
                "a: [b\n  c: }",
                /--current is not valid YAML or JSON/,
            ],
            ["an empty file", ["render", "--current", "-", "--mode", "nftables"], "", /--current is empty/],
            [
                "the wrong kind",
                ["render", "--current", "-", "--mode", "nftables"],
                "apiVersion: v1\nkind: Secret\nmetadata: {name: x}\n",
                /has kind "Secret": expected a ConfigMap/,
            ],
            [
                "a ConfigMap without the key",
                ["render", "--current", "-", "--mode", "nftables"],
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {foo: bar}\n",
                /no data\["config.conf"\] or data\["config"\] \(keys found: foo\)/,
            ],
            [
                "a missing file",
                ["render", "--current", "/no/such/file", "--mode", "nftables"],
                undefined,
                /--current: cannot read \/no\/such\/file \(ENOENT\)/,
            ],
            [
                "a bad gate flag",
                ["render", "--current", KUBEADM, "--mode", "nftables", "--feature-gate", "Foo=yes"],
                undefined,
                /--feature-gate Foo "yes": expected true or false/,
            ],
            [
                "an unknown gate",
                [
                    "render",
                    "--current",
                    KUBEADM,
                    "--mode",
                    "nftables",
                    "--kubernetes-version",
                    "1.37",
                    "--feature-gate",
                    "NFTablesProxyMod=true",
                ],
                undefined,
                /error: featureGates\.NFTablesProxyMod: .*did you mean NFTablesProxyMode\?/,
            ],
            [
                "ipvs at 1.43",
                ["render", "--current", KUBEADM_IPVS, "--mode", "ipvs", "--kubernetes-version", "1.43"],
                undefined,
                /error: mode: ipvs mode does not exist in Kubernetes 1\.43/,
            ],
            [
                "a bad version",
                ["render", "--current", KUBEADM, "--mode", "nftables", "--kubernetes-version", "latest"],
                undefined,
                /--kubernetes-version "latest": expected X\.Y or vX\.Y\.Z/,
            ],
        ];
        for (const [what, args, input, message] of invalid) {
            it(`exits 2 with one line naming the problem for ${what}, never a stack trace`, () => {
                const r = runCli(args, { input });
                assert.equal(r.code, 2, `stdout: ${r.stdout}\nstderr: ${r.stderr}`);
                assert.match(r.stderr, message);
                assert.doesNotMatch(r.stderr, /\n\s+at /, "no stack trace");
                assert.equal(r.stdout, "");
            });
        }
        it("--json reports errors as data and exits 2", () => {
            const r = runCli([
                "render",
                "--current",
                KUBEADM_IPVS,
                "--mode",
                "ipvs",
                "--kubernetes-version",
                "1.40",
                "--json",
            ]);
            assert.equal(r.code, 2);
            const out = JSON.parse(r.stdout);
            assert.equal(out.config, null);
            assert.equal(out.errors[0].code, "ipvs.off");
        });
    });

    describe("precheck", () => {
        const nodes = JSON.stringify({
            apiVersion: "v1",
            kind: "List",
            items: [
                {
                    kind: "Node",
                    metadata: { name: "rhel9-a", labels: { pool: "workers" } },
                    status: {
                        nodeInfo: {
                            kernelVersion: "5.14.0-427.13.1.el9_4.x86_64",
                            osImage: "Red Hat Enterprise Linux 9.4 (Plow)",
                            operatingSystem: "linux",
                        },
                    },
                },
                {
                    kind: "Node",
                    metadata: { name: "ubuntu-b", labels: { pool: "workers" } },
                    status: {
                        nodeInfo: {
                            kernelVersion: "6.8.0-51-generic",
                            osImage: "Ubuntu 24.04.1 LTS",
                            operatingSystem: "linux",
                        },
                    },
                },
                {
                    kind: "Node",
                    metadata: { name: "al2-c", labels: { pool: "legacy" } },
                    status: {
                        nodeInfo: {
                            kernelVersion: "5.10.205-195.807.amzn2.x86_64",
                            osImage: "Amazon Linux 2",
                            operatingSystem: "linux",
                        },
                    },
                },
                {
                    kind: "Node",
                    metadata: { name: "odd-d", labels: { pool: "legacy" } },
                    status: { nodeInfo: { osImage: "Custom", operatingSystem: "linux" } },
                },
            ],
        });
        it("prints a row per node and exits 1 when a node cannot run nftables", () => {
            const r = runCli(["precheck", "--mode", "nftables", "--nodes", "-"], { input: nodes });
            assert.equal(r.code, 1);
            const rows = r.stdout.trim().split("\n");
            assert.match(rows[0], /^NODE\s+KERNEL\s+OS-IMAGE\s+VERDICT\s+WHY$/);
            assert.match(
                r.stdout,
                /^al2-c\s+5\.10\.205-195\.807\.amzn2\.x86_64\s+Amazon Linux 2\s+fail\s+kernel 5\.10\.205.* older than 5\.13/m,
            );
            assert.match(r.stdout, /^odd-d\s+\(none\)\s+Custom\s+fail\s+kernel version is missing/m);
            assert.match(r.stdout, /^rhel9-a\s+.*\s+warn\s+.*tcpBeLiberal|older than 6\.1/m);
            assert.match(r.stdout, /^ubuntu-b\s+.*\s+ok\s+can run nftables$/m);
        });
        it("--selector narrows to the pool, which then passes", () => {
            const r = runCli(
                ["precheck", "--mode", "nftables", "--nodes", "-", "--selector", "pool=workers", "--json"],
                { input: nodes },
            );
            assert.equal(r.code, 0, r.stderr);
            const out = JSON.parse(r.stdout);
            assert.deepEqual(
                out.nodes.map((n: any) => [n.node, n.verdict]),
                [
                    ["rhel9-a", "warn"],
                    ["ubuntu-b", "ok"],
                ],
            );
            assert.equal(out.passed, true);
        });
        it("a selector that matches nothing is not a pass", () => {
            const r = runCli(["precheck", "--mode", "nftables", "--nodes", "-", "--selector", "pool=none"], {
                input: nodes,
            });
            assert.equal(r.code, 1);
            assert.match(r.stderr, /no node matches selector "pool=none"/);
        });
        it("exits 2 on input that is not a node list", () => {
            const r = runCli(["precheck", "--mode", "nftables", "--nodes", "-"], { input: "{}" });
            assert.equal(r.code, 2);
            assert.match(r.stderr, /expected a NodeList/);
        });
    });

    it("lists its commands and exits 2 when called with none", () => {
        const r = runCli([]);
        assert.equal(r.code, 2);
        for (const c of ["render", "precheck", "rollout", "status", "verify", "cleanup"])
            assert.match(r.stdout, new RegExp(`^  ${c}\\s`, "m"));
    });
    it("an unknown command exits 2", () => {
        const r = runCli(["frobnicate"]);
        assert.equal(r.code, 2);
        assert.match(r.stderr, /unknown command "frobnicate"/);
    });
    it("rollout refuses an invalid spec with exit 2, naming the field", () => {
        const r = runCli(["rollout", "--spec", "-"], {
            input: JSON.stringify({ target: { hash: "x", mode: "nft", config: "" }, pools: [] }),
        });
        assert.equal(r.code, 2);
        assert.match(r.stderr, /target\.mode/);
        assert.match(r.stderr, /pools/);
    });
    it("rollout refuses a spec with a bad duration with exit 2, naming the field as the component does", () => {
        const r = runCli(["rollout", "--spec", "-"], {
            input: JSON.stringify({
                target: { hash: "x", mode: "nftables", config: "" },
                pools: [{ name: "all", nodeSelector: "kubernetes.io/os=linux", soak: "soon" }],
                verify: { podTimeout: "0" },
            }),
        });
        assert.equal(r.code, 2);
        assert.match(r.stderr, /error: pools\[0\]\.soak: "soon" is not a duration; write it like 30s, 10m or 1h30m/);
        assert.match(r.stderr, /error: verify\.podTimeout: "0" must be longer than 0/);
    });
});
