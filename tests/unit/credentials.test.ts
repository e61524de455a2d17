// A kubeconfig's credentials in every shape: the CLI against a SIMULATED API server (a small HTTP
// server on 127.0.0.1 that checks the Authorization header), a verify hook that prints what it
// was given, and the component's refusal. Nothing a user reads may carry a credential.
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as YAML from "yaml";
import * as pulumi from "@pulumi/pulumi";
import { loadKubeConfig } from "../../components/cluster/client.js";
import { configHash } from "../../components/core/plan.js";
import { RefusalError } from "../../components/pulumi/refusal.js";
import { RolloutFailure, runPools, type Context } from "../../components/rollout/runner.js";
import { rolloutSpecSchema, type RolloutSpec } from "../../components/rollout/spec.js";
import { CLI, runAsync, withEnvironment } from "../helpers.js";
import { FakeClock, FakeCluster, kubeProxyConfig } from "./fakeCluster.js";
import { answer, failure, listenSimulated, type SimulatedServer } from "./simulatedApi.js";

const TOKEN = "kpm-unit-token-4f1c9a0e7b3d2c58a6e1";
/** A JWT-shaped token (what ServiceAccount and OIDC tokens are) that expires in 2100. */
const JWT = [
    Buffer.from(JSON.stringify({ alg: "RS256", kid: "unit" })).toString("base64url"),
    Buffer.from(JSON.stringify({ sub: "system:serviceaccount:kube-system:unit", exp: 4102444800 })).toString(
        "base64url",
    ),
    "c2lnbmF0dXJlLW9mLXRoZS11bml0LXRva2Vu",
].join(".");
const EXEC_ENV_SECRET = "exec-env-secret-7d41b2";

/** Every encoding of `secret` a leak could take: raw, base64 (plain and wrapped), base64url. */
function encodings(secret: string): string[] {
    const b64 = Buffer.from(secret).toString("base64");
    return [secret, b64, b64.slice(0, 40), Buffer.from(secret).toString("base64url").slice(0, 40)];
}

function assertNoLeak(text: string, ...secrets: string[]): void {
    for (const s of secrets)
        for (const form of encodings(s))
            assert.ok(!text.includes(form), `a credential leaked (${form.slice(0, 6)}...) in:\n${text}`);
}

function kubeconfig(server: string, user: Record<string, unknown>): string {
    return YAML.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "sim", cluster: { server, "insecure-skip-tls-verify": true } }],
        users: [{ name: "rollout", user }],
        contexts: [{ name: "sim", context: { cluster: "sim", user: "rollout" } }],
        "current-context": "sim",
    });
}

/** A SIMULATED API server that answers only `Bearer <token>`, with one node; it records every Authorization header. */
async function apiServer(token: string): Promise<SimulatedServer & { seen: string[] }> {
    const seen: string[] = [];
    const server = await listenSimulated((req: IncomingMessage, res: ServerResponse) => {
        seen.push(req.headers.authorization ?? "(none)");
        if (req.headers.authorization !== `Bearer ${token}`)
            return answer(res, 401, failure(401, "Unauthorized", "Unauthorized"));
        if (req.url?.startsWith("/version"))
            return answer(res, 200, { major: "1", minor: "37", gitVersion: "v1.37.2" });
        const node = {
            metadata: { name: "node-1", labels: { "kubernetes.io/os": "linux" } },
            status: {
                nodeInfo: { kernelVersion: "6.8.0-51-generic", osImage: "Ubuntu 24.04", operatingSystem: "linux" },
            },
        };
        return answer(res, 200, { kind: "NodeList", apiVersion: "v1", metadata: {}, items: [node] });
    });
    return { ...server, seen };
}

describe("credentials in every shape", () => {
    let dir: string;
    before(() => {
        dir = mkdtempSync(join(tmpdir(), "kpm-credentials-"));
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    function write(name: string, content: string, mode = 0o600): string {
        const path = join(dir, name);
        writeFileSync(path, content, { mode });
        chmodSync(path, mode);
        return path;
    }

    /** A credential plugin (node, no shell) that prints `stdout` and `stderr` and exits with `code`. */
    function plugin(name: string, stdout: string, stderr: string, code: number): Record<string, unknown> {
        const script = write(
            `${name}.js`,
            `process.stdout.write(${JSON.stringify(stdout)}); process.stderr.write(${JSON.stringify(stderr)}.replace("$SECRET", process.env.KPM_UNIT_EXEC_SECRET)); process.exit(${code});`,
        );
        return {
            exec: {
                apiVersion: "client.authentication.k8s.io/v1",
                command: process.execPath,
                args: [script],
                env: [{ name: "KPM_UNIT_EXEC_SECRET", value: EXEC_ENV_SECRET }],
                interactiveMode: "Never",
            },
        };
    }

    function precheck(config: string) {
        const path = write(`kubeconfig-${Math.random().toString(36).slice(2)}`, config);
        return runAsync(CLI, ["precheck", "--mode", "nftables", "--kubeconfig", path], {
            env: { KPM_API_RETRY_SECONDS: "0" },
        });
    }

    describe("the CLI reads the cluster with each form, and prints none of it", () => {
        const forms: [string, (token: string) => Record<string, unknown>][] = [
            ["a token with a trailing newline (`token: |`)", (t) => ({ token: `${t}\n` })],
            ["a tokenFile written by `echo` (trailing newline)", (t) => ({ tokenFile: write("token-echo", `${t}\n`) })],
            [
                "a token-file (client-node's spelling) with a trailing CRLF",
                (t) => ({ "token-file": write("token-crlf", `${t}\r\n`) }),
            ],
            [
                "an auth-provider (oidc) whose id-token has a trailing newline",
                (t) => ({ "auth-provider": { name: "oidc", config: { "client-id": "kpm", "id-token": `${t}\n` } } }),
            ],
            [
                "an exec credential plugin",
                (t) =>
                    plugin(
                        "exec-ok",
                        JSON.stringify({
                            apiVersion: "client.authentication.k8s.io/v1",
                            kind: "ExecCredential",
                            status: { token: t },
                        }),
                        "",
                        0,
                    ),
            ],
        ];
        for (const [what, user] of forms) {
            it(what, async () => {
                const token = what.includes("oidc") || what.includes("exec") ? JWT : TOKEN;
                const server = await apiServer(token);
                try {
                    const r = await precheck(kubeconfig(server.url, user(token)));
                    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
                    assert.match(r.stdout, /node-1/);
                    assert.ok(
                        server.seen.length > 0 && server.seen.every((h) => h === `Bearer ${token}`),
                        "sent the token trimmed",
                    );
                    assertNoLeak(`${r.stdout}\n${r.stderr}`, token);
                } finally {
                    await server.close();
                }
            });
        }
    });

    describe("a credential that cannot be used is an error naming the user and the field, never the value", () => {
        const cases: [string, Record<string, unknown>, RegExp][] = [
            [
                "a token with a line break inside",
                { token: `${TOKEN.slice(0, 12)}\n${TOKEN.slice(12)}` },
                /user "rollout": its token .*line break/,
            ],
            ["a token of blanks", { token: " \n" }, /user "rollout": its token is empty/],
            [
                "a tokenFile that cannot be read",
                { tokenFile: "/nonexistent/kpm-token" },
                /user "rollout": its tokenFile \/nonexistent\/kpm-token cannot be read/,
            ],
            [
                "an auth-provider id-token with a space inside",
                { "auth-provider": { name: "oidc", config: { "id-token": `${TOKEN} ${TOKEN}` } } },
                /user "rollout": its auth-provider id-token .*space/,
            ],
        ];
        for (const [what, user, error] of cases) {
            it(what, async () => {
                const server = await apiServer(TOKEN);
                try {
                    const r = await precheck(kubeconfig(server.url, user));
                    assert.equal(r.code, 2, `${r.stdout}\n${r.stderr}`);
                    assert.match(r.stderr, error);
                    assert.deepEqual(server.seen, [], "nothing was sent");
                    assertNoLeak(`${r.stdout}\n${r.stderr}`, TOKEN, TOKEN.slice(12));
                } finally {
                    await server.close();
                }
            });
        }

        it("a failing exec credential plugin that prints a token and its env's secret on stderr", async () => {
            const server = await apiServer(JWT);
            try {
                const user = plugin("exec-fails", "", `error: cannot refresh ${JWT}; key $SECRET\n`, 1);
                const r = await precheck(kubeconfig(server.url, user));
                assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
                assert.match(r.stderr, /cannot refresh \[secret\]; key \[secret\]/, "the plugin's words are kept");
                assertNoLeak(`${r.stdout}\n${r.stderr}`, JWT, EXEC_ENV_SECRET);
            } finally {
                await server.close();
            }
        });

        it("a refused token: the 401 names no credential", async () => {
            const server = await apiServer("another-token-entirely");
            try {
                const r = await precheck(kubeconfig(server.url, { token: `${TOKEN}\n` }));
                assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
                assert.match(r.stderr, /401/);
                assertNoLeak(`${r.stdout}\n${r.stderr}`, TOKEN);
            } finally {
                await server.close();
            }
        });
    });
});

const TARGET = kubeProxyConfig("nftables");

function hookRun(hook: { name: string; command: string[] }, kubeconfigText: string) {
    const spec: RolloutSpec = rolloutSpecSchema.parse({
        target: { hash: configHash(TARGET), mode: "nftables", config: TARGET },
        pools: [{ name: "canary", nodeSelector: "pool=canary" }],
        verify: { hooks: [hook] },
    });
    const clock = new FakeClock();
    const cluster = new FakeCluster(clock, { installerMode: "ipvs", pools: { canary: 1 } });
    const lines: string[] = [];
    const ctx: Context = {
        cluster,
        spec,
        log: (l) => lines.push(l),
        holder: "run-1",
        clock,
        soakCheckSeconds: 30,
        kubeconfig: kubeconfigText,
    };
    return { run: runPools(ctx, ["canary"]).catch((e: unknown) => e), lines };
}

/** The names a hook prints in the tests below: the tool's own secrets, a CI's, the cloud's, and what a hook needs. */
const ENV_NAMES = [
    "KPM_KUBECONFIG",
    "KPM_ROLLOUT_SPEC",
    "PULUMI_CONFIG_PASSPHRASE",
    "PULUMI_ACCESS_TOKEN",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_PROFILE",
    "GITHUB_TOKEN",
    "PATH",
    "HOME",
    "NODE",
    "KUBECONFIG",
];
/** A hook's program (node -e) that prints ENV_NAMES as it got them and fails, so its output reaches the error */
const PRINT_ENV = `for (const k of ${JSON.stringify(ENV_NAMES)}) console.log(k + "=" + (process.env[k] ?? "(unset)")); process.exit(5)`;

/** What a hook printed of ENV_NAMES ("NAME=value" lines), unset names left out. */
function hookEnv(detail: string): Record<string, string> {
    const env: Record<string, string> = {};
    for (const line of detail.split("\n")) {
        const m = /^([A-Z_]+)=(.*)$/.exec(line);
        if (m && m[2] !== "(unset)") env[m[1]] = m[2];
    }
    return env;
}

describe("a verify hook and the credentials", () => {
    const KEY_PEM = [
        "-----BEGIN PRIVATE KEY-----",
        // a stand-in key body: long enough to be wrapped, like a real one
        ...(Buffer.from("kpm-unit-private-key-material-".repeat(6))
            .toString("base64")
            .match(/.{1,64}/g) ?? []),
        "-----END PRIVATE KEY-----",
        "",
    ].join("\n");
    const KEY_DATA = Buffer.from(KEY_PEM).toString("base64");
    const PASSWORD = "hunter2-password-kpm";
    const ID_TOKEN = "oidc-id-token-kpm-5e8f";

    it("a hook that prints the kubeconfig's credentials in every encoding: its output carries none of them", async function () {
        this.timeout(120_000);
        const kc = YAML.stringify({
            apiVersion: "v1",
            kind: "Config",
            clusters: [{ name: "c", cluster: { server: "https://127.0.0.1:6443" } }],
            users: [
                {
                    name: "rollout",
                    user: { token: TOKEN, "client-key-data": KEY_DATA, "client-certificate-data": "Y2VydA==" },
                },
                { name: "basic", user: { username: "admin", password: PASSWORD } },
                { name: "oidc", user: { "auth-provider": { name: "oidc", config: { "id-token": ID_TOKEN } } } },
                {
                    name: "exec",
                    user: {
                        exec: {
                            command: "aws",
                            args: ["eks", "get-token"],
                            env: [{ name: "AWS_SECRET", value: EXEC_ENV_SECRET }],
                        },
                    },
                },
            ],
            contexts: [{ name: "c", context: { cluster: "c", user: "rollout" } }],
            "current-context": "c",
        });
        // one hook run per credential and encoding: a failure keeps the output's last 20 lines only
        const ENCODE: Record<string, string> = {
            raw: "v",
            trimmed: "v.trim()",
            base64: "b(v)",
            "base64 of it with a newline": "b(v + '\\n')",
            "base64 wrapped at 64": "wrap(b(v), 64, '\\n')",
            "base64 wrapped at 76, CRLF": "wrap(b(v), 76, '\\r\\n')",
            "wrapped at 76": "wrap(v, 76, '\\n')",
            "inside a base64-encoded text": "b('token: ' + v + '\\n')",
            "decoded from base64 (a PEM)": "Buffer.from(v, 'base64').toString()",
            "decoded, JSON-escaped": "JSON.stringify(Buffer.from(v, 'base64').toString())",
        };
        for (const secret of [TOKEN, KEY_DATA, PASSWORD, ID_TOKEN, EXEC_ENV_SECRET]) {
            for (const [encoding, expr] of Object.entries(ENCODE)) {
                if (encoding.startsWith("decoded") && secret !== KEY_DATA) continue;
                const print = [
                    "const b = (s) => Buffer.from(s).toString('base64');",
                    "const wrap = (s, n, eol) => s.match(new RegExp('.{1,' + n + '}', 'g')).join(eol);",
                    "const v = process.env.SECRET;",
                    `console.log('printed: ' + ${expr});`,
                    "process.exit(4);",
                ].join("\n");
                const hook = { name: "leaky", command: [process.execPath, "-e", print], env: { SECRET: secret } };
                const { run, lines } = hookRun(hook, kc);
                const err = await run;
                assert.ok(err instanceof RolloutFailure, String(err));
                assert.equal(err.check, "hook leaky");
                const what = `${secret.slice(0, 6)}... ${encoding}`;
                assert.match(err.detail, /exit code 4; output:\nprinted: /, what);
                assert.match(err.detail, /\[secret\]/, what);
                const all = `${err.message}\n${err.detail}\n${lines.join("\n")}`;
                const body = KEY_PEM.split("\n").slice(1, -2).join("");
                assertNoLeak(all, TOKEN, PASSWORD, ID_TOKEN, EXEC_ENV_SECRET, KEY_DATA.slice(0, 60), body.slice(0, 60));
                for (const line of [...KEY_PEM.split("\n").slice(1, -2), ...(KEY_DATA.match(/.{1,64}/g) ?? [])])
                    assert.ok(!all.includes(line.slice(0, 40)), `${what}: a key line leaked: ${line}`);
            }
        }
    });

    it("a hook gets none of the tool's own secrets; PATH, HOME and its own KUBECONFIG it gets", async () => {
        await withEnvironment(
            {
                KPM_KUBECONFIG: "raw-kubeconfig-content",
                KPM_ROLLOUT_SPEC: "{}",
                PULUMI_CONFIG_PASSPHRASE: "pulumi-passphrase",
                PULUMI_ACCESS_TOKEN: "pul-0123456789",
                AWS_SECRET_ACCESS_KEY: "aws-secret-key",
                GITHUB_TOKEN: "ghp_unit",
            },
            async () => {
                const kc = kubeconfig("https://127.0.0.1:6443", { token: TOKEN });
                const { run } = hookRun({ name: "env", command: [process.execPath, "-e", PRINT_ENV] }, kc);
                const err = await run;
                assert.ok(err instanceof RolloutFailure, String(err));
                const env = hookEnv(err.detail);
                for (const name of [
                    "KPM_KUBECONFIG",
                    "KPM_ROLLOUT_SPEC",
                    "PULUMI_CONFIG_PASSPHRASE",
                    "PULUMI_ACCESS_TOKEN",
                    "AWS_SECRET_ACCESS_KEY",
                    "GITHUB_TOKEN",
                ])
                    assert.equal(env[name], undefined, `the hook got ${name}`);
                assert.equal(env.PATH, process.env.PATH);
                assert.equal(env.HOME, process.env.HOME);
                assert.equal(env.NODE, "canary-1");
                assert.match(env.KUBECONFIG ?? "", /kpm-hook-.*kubeconfig$/);
            },
        );
    });

    it("with an exec credential plugin in the kubeconfig, the hook gets the cloud's credentials the plugin reads (AWS_*), and still no tool secret", async () => {
        await withEnvironment(
            {
                AWS_PROFILE: "prod",
                AWS_SECRET_ACCESS_KEY: "aws-secret-key",
                PULUMI_CONFIG_PASSPHRASE: "pulumi-passphrase",
            },
            async () => {
                const kc = kubeconfig("https://127.0.0.1:6443", {
                    exec: {
                        apiVersion: "client.authentication.k8s.io/v1beta1",
                        command: "aws",
                        args: ["eks", "get-token"],
                    },
                });
                const { run } = hookRun({ name: "env", command: [process.execPath, "-e", PRINT_ENV] }, kc);
                const err = await run;
                assert.ok(err instanceof RolloutFailure, String(err));
                const env = hookEnv(err.detail);
                assert.equal(env.AWS_PROFILE, "prod");
                assert.equal(env.AWS_SECRET_ACCESS_KEY, "aws-secret-key");
                assert.equal(env.PULUMI_CONFIG_PASSPHRASE, undefined);
            },
        );
    });
});

describe("the component's refusal and the credentials", () => {
    it("a refusal whose reason quotes the loaded kubeconfig's token (client-node's header error) carries [secret] instead", () => {
        const kc = kubeconfig("https://127.0.0.1:6443", { token: `${TOKEN}\n` });
        loadKubeConfig({ kubeconfigContent: kc });
        const component = { urn: pulumi.output("urn:pulumi:s::p::kube-proxy-mode:index:KubeProxyMode::m") };
        const e = new RefusalError(
            component as unknown as pulumi.ComponentResource,
            "m",
            "cluster",
            `cannot read the cluster: Bearer ${TOKEN}\n is not a legal HTTP header value`,
        );
        assert.match(e.message, /cannot read the cluster: Bearer \[secret\]/);
        assertNoLeak(e.message, TOKEN);
    });
});
