// Every credential form a kubeconfig can carry, on a real API server (the reference cluster, kwok
// nodes): `status` and `precheck` work with each, or fail, and never print the credential. A
// verify hook reaches the cluster through an exec credential plugin (a SIMULATED stand-in for EKS's
// `aws eks get-token`, reading its token from AWS_WEB_IDENTITY_TOKEN_FILE) without the tool's secrets.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as YAML from "yaml";
import { configHash, parseCurrentConfig, renderConfiguration } from "../../components/core/index.js";
import type { ClusterState } from "../../scripts/referenceCluster.js";
import { CLI, runAsync, type CliRun } from "../helpers.js";
import { clients, leastPrivilegeKubeconfig, scratchDir, startCluster, stopCluster } from "./support.js";

const KWOK = "(kwok nodes: built-in node checks not run)";

describe(
    "@e2e credential forms: status and precheck on a real API server never print a credential " + KWOK,
    function () {
        this.timeout(180_000);
        let cluster: ClusterState | undefined;
        let dir: string;
        let token: string;
        let server: string;
        let caData: string;
        let keyPem: string;

        /** Every encoding of a secret that would be a leak. */
        function assertNoLeak(r: CliRun, ...secrets: string[]): void {
            const text = `${r.stdout}\n${r.stderr}`;
            for (const s of secrets)
                for (const form of [s, Buffer.from(s).toString("base64").slice(0, 40)])
                    assert.ok(!text.includes(form), `a credential leaked (${form.slice(0, 6)}...) in:\n${text}`);
        }

        function write(name: string, content: string): string {
            const path = join(dir, name);
            writeFileSync(path, content, { mode: 0o600 });
            return path;
        }

        /** A kubeconfig for the reference cluster with this user, as YAML text (`token: |` stays a block scalar). */
        function kubeconfig(name: string, user: Record<string, unknown>): string {
            return write(
                name,
                YAML.stringify({
                    apiVersion: "v1",
                    kind: "Config",
                    clusters: [{ name: "ref", cluster: { server, "certificate-authority-data": caData } }],
                    users: [{ name: "rollout", user }],
                    contexts: [{ name: "ref", context: { cluster: "ref", user: "rollout" } }],
                    "current-context": "ref",
                }),
            );
        }

        /** A SIMULATED exec credential plugin (node, no shell): prints the token of $AWS_WEB_IDENTITY_TOKEN_FILE, or fails printing it. */
        function plugin(fails: boolean): Record<string, unknown> {
            const script = write(
                fails ? "plugin-fails.js" : "plugin.js",
                [
                    `const token = require("fs").readFileSync(process.env.AWS_WEB_IDENTITY_TOKEN_FILE, "utf8").trim();`,
                    fails
                        ? `process.stderr.write("error: the token " + token + " was refused; key " + process.env.KPM_E2E_PLUGIN_KEY + "\\n"); process.exit(1);`
                        : `process.stdout.write(JSON.stringify({ apiVersion: "client.authentication.k8s.io/v1", kind: "ExecCredential", status: { token } }));`,
                ].join("\n"),
            );
            return {
                exec: {
                    apiVersion: "client.authentication.k8s.io/v1",
                    command: process.execPath,
                    args: [script],
                    env: [{ name: "KPM_E2E_PLUGIN_KEY", value: "plugin-env-secret-value" }],
                    interactiveMode: "Never",
                },
            };
        }

        const env = () => ({ KPM_API_RETRY_SECONDS: "0", AWS_WEB_IDENTITY_TOKEN_FILE: join(dir, "token") });
        const status = (file: string) =>
            runAsync(process.execPath, [CLI, "status", "--kubeconfig", file], { env: env() });
        const precheck = (file: string) =>
            runAsync(process.execPath, [CLI, "precheck", "--mode", "nftables", "--kubeconfig", file], { env: env() });

        before(async () => {
            cluster = await startCluster({ nodes: "kwok", pools: [["canary", 1]] });
            dir = scratchDir("kpm-credentials-");
            // a ServiceAccount bound to exactly the shipped role: the identity every form below carries
            const sa = YAML.parse(await leastPrivilegeKubeconfig(cluster)) as { users: { user: { token: string } }[] };
            token = sa.users[0].user.token;
            const admin = clients(cluster).kc.getCurrentCluster()!;
            server = admin.server;
            caData = admin.caData ?? readFileSync(admin.caFile!).toString("base64");
            write("token", `${token}\n`); // as `kubectl create token ... > token` or `echo` writes it
            // a client certificate signed by the reference cluster's client CA
            const pki = join(cluster.dir, "pki");
            const openssl = (args: string[]) => {
                const r = spawnSync("openssl", args, { encoding: "utf8" });
                assert.equal(r.status, 0, r.stderr);
            };
            openssl([
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                "/CN=kpm-e2e-client/O=system:masters",
                "-keyout",
                join(dir, "client.key"),
                "-out",
                join(dir, "client.csr"),
            ]);
            openssl([
                "x509",
                "-req",
                "-in",
                join(dir, "client.csr"),
                "-CA",
                join(pki, "client-ca.crt"),
                "-CAkey",
                join(pki, "client-ca.key"),
                "-CAcreateserial",
                "-days",
                "1",
                "-out",
                join(dir, "client.crt"),
            ]);
            keyPem = readFileSync(join(dir, "client.key"), "utf8");
        });

        after(async () => {
            await stopCluster(cluster);
        });

        const keyLines = () => keyPem.split("\n").filter((l) => l && !l.startsWith("-----"));

        const working: [string, () => Record<string, unknown>][] = [
            ["a token", () => ({ token })],
            ["a token with a trailing newline (`token: |`)", () => ({ token: `${token}\n` })],
            ["a tokenFile written with a trailing newline", () => ({ tokenFile: join(dir, "token") })],
            [
                "client certificates (client-certificate-data, client-key-data)",
                () => ({
                    "client-certificate-data": readFileSync(join(dir, "client.crt")).toString("base64"),
                    "client-key-data": Buffer.from(keyPem).toString("base64"),
                }),
            ],
            [
                "client certificate and key files",
                () => ({ "client-certificate": join(dir, "client.crt"), "client-key": join(dir, "client.key") }),
            ],
            ["an exec credential plugin", () => plugin(false)],
            [
                "an auth-provider (oidc) whose id-token has a trailing newline",
                () => ({ "auth-provider": { name: "oidc", config: { "client-id": "kpm", "id-token": `${token}\n` } } }),
            ],
        ];
        for (const [what, user] of working) {
            it(`${what}: status and precheck read the cluster`, async () => {
                const file = kubeconfig(`kubeconfig-${what.replace(/\W+/g, "-")}`, user());
                const [s, p] = await Promise.all([status(file), precheck(file)]);
                assert.equal(s.code, 0, `status: ${s.stdout}\n${s.stderr}`);
                assert.match(s.stdout, /canary-1/);
                assert.equal(p.code, 0, `precheck: ${p.stdout}\n${p.stderr}`);
                assert.match(p.stdout, /canary-1/);
                for (const r of [s, p]) assertNoLeak(r, token, ...keyLines());
            });
        }

        it("a failing exec credential plugin that prints the token and its env's secret on stderr: both fail, neither prints them", async () => {
            const file = kubeconfig("kubeconfig-plugin-fails", plugin(true));
            const [s, p] = await Promise.all([status(file), precheck(file)]);
            for (const r of [s, p]) {
                assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
                assert.match(r.stderr, /error: the token \[secret\] was refused; key \[secret\]/);
                assertNoLeak(r, token, "plugin-env-secret-value");
            }
        });

        it("a token with a line break inside: both refuse it naming the user and the field (exit 2), never its value", async () => {
            const file = kubeconfig("kubeconfig-broken", { token: `${token.slice(0, 40)}\n${token.slice(40)}` });
            const [s, p] = await Promise.all([status(file), precheck(file)]);
            for (const r of [s, p]) {
                assert.equal(r.code, 2, `${r.stdout}\n${r.stderr}`);
                assert.match(r.stderr, /the kubeconfig user "rollout": its token has a line break/);
                assertNoLeak(r, token.slice(0, 40), token.slice(40));
            }
        });

        it("a verify hook reaches the cluster through the exec plugin (kubectl in the hook runs it), and gets none of the tool's secrets", async () => {
            const { core } = clients(cluster!);
            const cm = await core.readNamespacedConfigMap({ name: "kube-proxy", namespace: "kube-system" });
            const current = parseCurrentConfig(
                JSON.stringify({ ...cm, kind: "ConfigMap" }),
                "ConfigMap kube-system/kube-proxy",
            );
            const config = renderConfiguration(current, { mode: "nftables", kubernetesVersion: "1.37" }).config;
            const hook = write(
                "hook.js",
                [
                    `for (const n of ["KPM_KUBECONFIG", "PULUMI_CONFIG_PASSPHRASE", "PULUMI_ACCESS_TOKEN"])`,
                    `    if (process.env[n] !== undefined) { console.log("the hook got " + n); process.exit(3); }`,
                    `const out = require("child_process").execFileSync("kubectl", ["get", "node", process.env.NODE, "-o", "name"], { encoding: "utf8" });`,
                    `console.log("kubectl says " + out.trim());`,
                ].join("\n"),
            );
            const spec = write(
                "spec.json",
                JSON.stringify({
                    target: { hash: configHash(config), mode: "nftables", config },
                    pools: [{ name: "canary", nodeSelector: "pool=canary" }],
                    verify: {
                        nodeChecks: false,
                        hooks: [{ name: "kubectl", command: [process.execPath, hook], timeout: "60s" }],
                    },
                }),
            );
            const file = kubeconfig("kubeconfig-hook", plugin(false));
            const r = await runAsync(
                process.execPath,
                [CLI, "rollout", "--spec", spec, "--pool=canary", "--kubeconfig", file],
                {
                    env: {
                        ...env(),
                        KPM_KUBECONFIG: readFileSync(file, "utf8"),
                        PULUMI_CONFIG_PASSPHRASE: "e2e-passphrase",
                        PULUMI_ACCESS_TOKEN: "pul-e2e-0123456789",
                    },
                },
            );
            assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
            assert.match(r.stdout, /ok hook kubectl/);
            assertNoLeak(r, token, "pul-e2e-0123456789");
        });
    },
);
