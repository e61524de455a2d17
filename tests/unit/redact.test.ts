// The one redactor and the kubeconfig loader that feeds it: each credential form, each encoding.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as YAML from "yaml";
import { hookKubeconfig } from "../../components/cluster/credentials.js";
import { loadKubeConfig } from "../../components/cluster/client.js";
import { forgetSecrets, redact, rememberSecret } from "../../components/core/redact.js";
import { hookEnvironment } from "../../components/cluster/hookKubeconfig.js";

const TOKEN = "kpm-redact-token-93be0c7f1a";
const b64 = (s: string) => Buffer.from(s).toString("base64");
const wrap = (s: string, n: number, eol: string) => (s.match(new RegExp(`.{1,${n}}`, "g")) ?? []).join(eol);
/** A PEM private key made here, so its body is long enough to be wrapped as a real one is. */
const KEY_PEM = `-----BEGIN RSA PRIVATE KEY-----\n${wrap(b64("kpm-redact-key-material/".repeat(20)), 64, "\n")}\n-----END RSA PRIVATE KEY-----\n`;
const KEY_BODY = KEY_PEM.split("\n").slice(1, -2).join("");

function kubeconfigText(user: Record<string, unknown>, more: Record<string, unknown> = {}): string {
    return YAML.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [
            { name: "c", cluster: { server: "https://127.0.0.1:6443" } },
            { name: "other", cluster: { server: "https://10.0.0.1" } },
        ],
        users: [
            { name: "u", user },
            { name: "admin-elsewhere", user: { token: "another-admin-token-1234" } },
        ],
        contexts: [
            { name: "c", context: { cluster: "c", user: "u" } },
            { name: "other", context: { cluster: "other", user: "admin-elsewhere" } },
        ],
        "current-context": "c",
        ...more,
    });
}

describe("the redactor", () => {
    beforeEach(() => forgetSecrets());

    it("removes a remembered token raw, trimmed, base64 (whole, wrapped at 64 and 76, CRLF, indented, JSON-escaped) and base64 at any offset", () => {
        rememberSecret(`${TOKEN}\n`);
        const texts = [
            `Bearer ${TOKEN}\n is not a legal HTTP header value`,
            `token=${TOKEN}`,
            b64(TOKEN),
            b64(`${TOKEN}\n`),
            wrap(b64(`${TOKEN}${TOKEN}`), 64, "\n"),
            wrap(b64(TOKEN), 12, "\r\n"),
            wrap(b64(TOKEN), 10, "\n    "),
            JSON.stringify(wrap(b64(TOKEN), 16, "\n")),
            Buffer.from(TOKEN).toString("base64url"),
            b64(`a: ${TOKEN}`),
            b64(`ab: ${TOKEN}`),
            b64(`abc: ${TOKEN}`),
        ];
        for (const t of texts) {
            const out = redact(`before ${t} after`);
            assert.match(out, /^before .*\[secret\].* after$/s, out);
            assert.ok(!out.includes(TOKEN) && !out.includes(b64(TOKEN).slice(0, 16)), `${t} -> ${out}`);
        }
    });

    it("removes a client key given as client-key-data, decoded to its PEM, wrapped at 76, or read from its file", () => {
        rememberSecret(b64(KEY_PEM));
        for (const t of [b64(KEY_PEM), wrap(b64(KEY_PEM), 76, "\n"), KEY_PEM, KEY_BODY, JSON.stringify(KEY_PEM)]) {
            const out = redact(t);
            for (const line of KEY_PEM.split("\n").slice(1, -2)) assert.ok(!out.includes(line.slice(0, 20)), out);
        }
        forgetSecrets();
        rememberSecret(KEY_PEM); // a client-key file's contents
        assert.equal(redact(`key: ${wrap(KEY_BODY, 64, "\n")}`), "key: [secret]");
        assert.equal(redact(b64(KEY_PEM)).includes(b64(KEY_PEM).slice(0, 30)), false);
    });

    it("removes what is shaped like a credential, known or not: a JWT, an EKS token, a Bearer header, a private key's body", () => {
        const jwt = `eyJhbGciOiJSUzI1NiJ9.${Buffer.from('{"sub":"x","exp":1}').toString("base64url")}.c2lnbmF0dXJl`;
        assert.equal(redact(`token ${jwt} expired`), "token [secret] expired");
        assert.equal(redact("k8s-aws-v1.aHR0cHM6Ly9zdHMuYW1hem9uYXdzLmNvbQ"), "[secret]");
        assert.equal(redact("Authorization: Bearer abcdefgh12345678"), "Authorization: Bearer [secret]");
        assert.equal(
            redact("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----"),
            "-----BEGIN EC PRIVATE KEY-----[secret]-----END EC PRIVATE KEY-----",
        );
    });

    it("removes a secret's base64 inside a longer base64 text at each offset, in both alphabets, leaving only the neighbours' groups", () => {
        // 22 bytes: its whole base64 ends in padding, so only the offset forms match inside a longer text
        const secret = "kpm-secret-0123456789x";
        rememberSecret(secret);
        assert.equal(
            redact(`x ${b64(secret)} ${Buffer.from(secret).toString("base64url")} y`),
            "x [secret] [secret] y",
        );
        assert.equal(redact(b64(`${secret}xyz`)), "[secret]eHh5eg==");
        assert.equal(redact(b64(`a${secret}xyz`)), "YWtw[secret]OXh4eXo=");
        assert.equal(redact(b64(`ab${secret}xyz`)), "YWJr[secret]eHl6");
        assert.equal(redact(b64(`abc${secret}xyz`)), "YWJj[secret]eHh5eg==");
        forgetSecrets();
        // ">>>???~~~" encode to "+" and "/" in base64, "-" and "_" in base64url
        const symbols = "kpm>>>???secret~~~";
        rememberSecret(symbols);
        const url = (s: string) => Buffer.from(s).toString("base64url");
        assert.equal(redact(url(`${symbols}!`)), "[secret]IQ");
        assert.equal(redact(url(`a${symbols}!`)), "YWtw[secret]fiE");
        assert.equal(redact(url(`ab${symbols}!`)), "YWJr[secret]fn4h");
        assert.equal(redact(b64(`a${symbols}!`)), "YWtw[secret]fiE=");
    });

    it("removes a secret broken by tabs, by a JSON-escaped CRLF, or with spaces of its own, however the text breaks it", () => {
        rememberSecret(TOKEN);
        assert.equal(redact(`x ${wrap(b64(TOKEN), 10, "\n\t\t")} y`), "x [secret] y");
        assert.equal(redact(JSON.stringify(`x ${wrap(b64(TOKEN), 16, "\r\n")} y`)), '"x [secret] y"');
        rememberSecret("correct horse battery staple");
        assert.equal(redact("pw: correct horse battery staple!"), "pw: [secret]!");
        assert.equal(redact("pw: correct\n  horse battery\tstaple!"), "pw: [secret]!");
    });

    it("one mark for secrets that overlap, whichever is longer; two secrets side by side both go", () => {
        rememberSecret("secret-value");
        rememberSecret("alpha-secret-value");
        rememberSecret("secret-value-longer");
        assert.equal(redact("x alpha-secret-value y"), "x [secret] y");
        assert.equal(redact("x secret-value-longer y"), "x [secret] y");
        assert.equal(redact("x secret-value alpha-secret-value y"), "x [secret] [secret] y");
    });

    it("removes a secret remembered after an earlier redaction; forgets every secret when told", () => {
        rememberSecret("first-secret-kpm");
        assert.equal(redact("first-secret-kpm"), "[secret]");
        rememberSecret("second-secret-kpm");
        assert.equal(redact("first-secret-kpm second-secret-kpm"), "[secret] [secret]");
        forgetSecrets();
        assert.equal(redact("first-secret-kpm second-secret-kpm"), "first-secret-kpm second-secret-kpm");
    });

    it("removes a password with a backslash or quotes of its own, as written and JSON-escaped, and the key of a client-key-data value wrapped in lines", () => {
        rememberSecret("hunter2\\temp-password");
        assert.equal(redact("pw: hunter2\\temp-password."), "pw: [secret].");
        // the CLI's --json output escapes it
        assert.equal(redact(JSON.stringify({ pw: "hunter2\\temp-password" })), '{"pw":"[secret]"}');
        rememberSecret('say-"friend"-and-enter');
        assert.equal(redact(JSON.stringify(['say-"friend"-and-enter'])), '["[secret]"]');
        rememberSecret(wrap(b64(KEY_PEM), 76, "\n"));
        assert.equal(redact(`key: ${KEY_BODY}`), "key: [secret]");
    });

    it("remembers a value of eight characters and more, and nothing that is not a string", () => {
        rememberSecret("pa55word");
        rememberSecret("pa55wrd");
        rememberSecret(undefined);
        rememberSecret(12345678);
        assert.equal(redact("pa55word pa55wrd 12345678"), "[secret] pa55wrd 12345678");
    });

    it("removes the body of an encrypted PEM key printed without its headers, and keeps the headers readable", () => {
        const body = ["S2V5Qm9keUxpbmVPbmVGb3JUZXN0cw==", "U2Vjb25kTGluZU9mVGhlS2V5Qm9keQ=="];
        const pem = [
            "-----BEGIN RSA PRIVATE KEY-----",
            "Proc-Type: 4,ENCRYPTED",
            "DEK-Info: AES-128-CBC,0A1B2C3D4E5F",
            "",
            ...body,
            "-----END RSA PRIVATE KEY-----",
            "",
        ];
        rememberSecret(pem.join("\r\n"));
        assert.equal(redact(`body: ${body.join("\n")} end`), "body: [secret] end");
        forgetSecrets();
        rememberSecret(pem.join("\n"));
        assert.equal(redact(`body: ${body.join("\n")} end`), "body: [secret] end", "LF line ends");
        assert.equal(redact("DEK-Info: AES-128-CBC,0A1B2C3D4E5F"), "DEK-Info: AES-128-CBC,0A1B2C3D4E5F");
    });

    it("removes an unknown key cut off before its END line, and a lower-case bearer or basic credential after any spaces", () => {
        assert.equal(
            redact("log: -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC"),
            "log: -----BEGIN PRIVATE KEY-----[secret]",
        );
        assert.equal(
            redact("authorization: bearer  abcdefgh12345678 and basic dXNlcjpwYXNzd29yZA== ok"),
            "authorization: bearer  [secret] and basic [secret] ok",
        );
    });

    it("leaves ordinary text alone: short values are never remembered, node names and hashes stay", () => {
        rememberSecret("short");
        rememberSecret(TOKEN);
        const text = "node ip-10-0-1-23.ec2.internal (pool workers): configuration 5e1f0a2b3c verified; a short word";
        assert.equal(redact(text), text);
    });
});

describe("the kubeconfig loader", () => {
    let dir: string;
    before(() => {
        dir = mkdtempSync(join(tmpdir(), "kpm-loader-"));
    });
    after(() => rmSync(dir, { recursive: true, force: true }));
    beforeEach(() => forgetSecrets());

    it("trims a token, a tokenFile (kubectl's spelling, relative to the kubeconfig's directory) and an oidc id-token, and remembers each", () => {
        const forms: [Record<string, unknown>, (kc: ReturnType<typeof loadKubeConfig>) => string | undefined][] = [
            [{ token: `${TOKEN}\n` }, (kc) => kc.getCurrentUser()?.token],
            [{ tokenFile: "token" }, (kc) => kc.getCurrentUser()?.token],
            [{ "token-file": join(dir, "token") }, (kc) => kc.getCurrentUser()?.token],
            [
                {
                    "auth-provider": {
                        name: "oidc",
                        config: { "id-token": ` ${TOKEN}\r\n`, "client-id": "kpm-client" },
                    },
                },
                (kc) => (kc.getCurrentUser()?.authProvider as { config: Record<string, string> }).config["id-token"],
            ],
        ];
        writeFileSync(join(dir, "token"), `${TOKEN}\n`);
        for (const [user, token] of forms) {
            forgetSecrets();
            writeFileSync(join(dir, "kubeconfig"), kubeconfigText(user));
            const kc = loadKubeConfig({ kubeconfig: join(dir, "kubeconfig") });
            assert.equal(token(kc), TOKEN, JSON.stringify(user));
            assert.equal(redact(`x ${b64(TOKEN)} y`), "x [secret] y", JSON.stringify(user));
        }
    });

    it("remembers the password, client-key-data, a client-key file, exec.env values and auth-provider tokens; not the issuer or client id", () => {
        writeFileSync(join(dir, "client.key"), KEY_PEM);
        const user = {
            username: "admin",
            password: "hunter2-password",
            "client-certificate-data": b64("-----BEGIN CERTIFICATE-----\nY2VydA==\n-----END CERTIFICATE-----\n"),
            "client-key": join(dir, "client.key"),
            exec: {
                command: "aws",
                args: ["eks", "get-token"],
                env: [{ name: "AWS_SECRET", value: "exec-env-secret-value" }],
            },
        };
        loadKubeConfig({ kubeconfigContent: kubeconfigText(user) });
        assert.equal(redact("hunter2-password exec-env-secret-value"), "[secret] [secret]");
        assert.equal(redact(KEY_BODY), "[secret]");
        forgetSecrets();
        const oidc = {
            "auth-provider": {
                name: "oidc",
                config: {
                    "id-token": TOKEN,
                    "refresh-token": "refresh-token-kpm",
                    "idp-issuer-url": "https://issuer.example",
                    "client-id": "kpm-client-id",
                },
            },
        };
        loadKubeConfig({ kubeconfigContent: kubeconfigText(oidc) });
        assert.equal(
            redact(`${TOKEN} refresh-token-kpm https://issuer.example kpm-client-id`),
            "[secret] [secret] https://issuer.example kpm-client-id",
        );
    });

    it("refuses the current user's unusable token naming the user and the field, never the value; another user's is not its business", () => {
        const cases: [Record<string, unknown>, RegExp][] = [
            [{ token: `${TOKEN}\n${TOKEN}` }, /^the kubeconfig user "u": its token has a line break, a space/],
            [{ token: "\n" }, /^the kubeconfig user "u": its token is empty$/],
            [
                { tokenFile: join(dir, "missing") },
                /^the kubeconfig user "u": its tokenFile .*missing cannot be read \(ENOENT\)$/,
            ],
            [
                { "auth-provider": { name: "oidc", config: { "access-token": `${TOKEN} x` } } },
                /its auth-provider access-token has a line break, a space/,
            ],
        ];
        for (const [user, message] of cases) {
            const e = (() => {
                try {
                    loadKubeConfig({ kubeconfigContent: kubeconfigText(user) });
                } catch (err) {
                    return err as Error;
                }
                return undefined;
            })();
            assert.ok(e, JSON.stringify(user));
            assert.match(e.message, message);
            assert.ok(!e.message.includes(TOKEN), e.message);
        }
        const other = kubeconfigText(
            { token: TOKEN },
            {
                users: [
                    { name: "u", user: { token: TOKEN } },
                    { name: "x", user: { token: "a\nb" } },
                ],
            },
        );
        assert.equal(loadKubeConfig({ kubeconfigContent: other }).getCurrentUser()?.token, TOKEN);
    });

    it("a hook's kubeconfig holds the run's context, cluster and user alone; a tokenFile stays a file, an exec plugin stays a plugin", () => {
        writeFileSync(join(dir, "token"), `${TOKEN}\n`);
        const exec = { apiVersion: "client.authentication.k8s.io/v1beta1", command: "aws", args: ["eks", "get-token"] };
        for (const [user, expected] of [
            [{ tokenFile: join(dir, "token") }, { tokenFile: join(dir, "token") }],
            [{ exec }, { exec }],
        ] as const) {
            const doc = JSON.parse(hookKubeconfig(loadKubeConfig({ kubeconfigContent: kubeconfigText(user) })));
            assert.deepEqual(
                doc.contexts.map((c: { name: string }) => c.name),
                ["c"],
            );
            assert.deepEqual(
                doc.clusters.map((c: { name: string }) => c.name),
                ["c"],
            );
            assert.deepEqual(
                doc.users.map((u: { name: string }) => u.name),
                ["u"],
            );
            assert.equal(doc["current-context"], "c");
            for (const [k, v] of Object.entries(expected)) assert.deepEqual(doc.users[0].user[k], v);
            assert.equal(doc.users[0].user.token, undefined, "no copy of the token");
            assert.ok(!JSON.stringify(doc).includes("another-admin-token"));
        }
    });
});

describe("a hook's environment", () => {
    const env = {
        PATH: "/usr/bin",
        HOME: "/home/ci",
        LANG: "C.UTF-8",
        HTTPS_PROXY: "http://proxy:3128",
        KUBECONFIG: "/home/ci/.kube/config",
        KPM_KUBECONFIG: "apiVersion: v1",
        KPM_ROLLOUT_SPEC: "{}",
        PULUMI_CONFIG_PASSPHRASE: "p",
        PULUMI_ACCESS_TOKEN: "pul-x",
        AWS_PROFILE: "prod",
        AWS_SECRET_ACCESS_KEY: "k",
        GOOGLE_APPLICATION_CREDENTIALS: "/sa.json",
        GITHUB_TOKEN: "ghp",
    };

    it("without an exec plugin: what a program needs to run and reach a server, nothing else", () => {
        const kc = kubeconfigText({ token: TOKEN });
        assert.deepEqual(Object.keys(hookEnvironment(env, kc)).sort(), ["HOME", "HTTPS_PROXY", "LANG", "PATH"]);
    });

    it("with an exec plugin: also the cloud CLIs' variables, still none of the tool's or the CI's secrets", () => {
        const kc = kubeconfigText({ exec: { command: "aws", args: ["eks", "get-token"] } });
        assert.deepEqual(Object.keys(hookEnvironment(env, kc)).sort(), [
            "AWS_PROFILE",
            "AWS_SECRET_ACCESS_KEY",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "HOME",
            "HTTPS_PROXY",
            "LANG",
            "PATH",
        ]);
    });
});
