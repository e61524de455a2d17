// The CLI as kubectl users expect it (issue #41): a missing kubeconfig said plainly, an unreachable
// server that fails fast or shows its wait, -o json|yaml, render's ConfigMap ready for
// kubectl apply, and findings wrapped to the terminal.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as YAML from "yaml";
import { main } from "../../components/cli/main.js";
import { wrapLine } from "../../components/cli/output.js";
import { fixture, runAsync, runCli, CLI } from "../helpers.js";

/** A kubeconfig file pointing at `server` with a token (never to be printed). */
function kubeconfigAt(server: string): string {
    const dir = mkdtempSync(join(tmpdir(), "kpm-frontdoor-"));
    const path = join(dir, "kubeconfig");
    writeFileSync(
        path,
        YAML.stringify({
            apiVersion: "v1",
            kind: "Config",
            clusters: [{ name: "c", cluster: { server, "insecure-skip-tls-verify": true } }],
            contexts: [{ name: "ctx", context: { cluster: "c", user: "u" } }],
            "current-context": "ctx",
            users: [{ name: "u", user: { token: "front-door-secret-token" } }],
        }),
    );
    return path;
}

/** A port that refuses connections: one a server listened on, then closed. */
async function closedPort(): Promise<number> {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as { port: number }).port;
    await new Promise<void>((r) => server.close(() => r()));
    return port;
}

/** A server that accepts connections and never says a word (a black-holed API server). */
async function silentServer(): Promise<{ port: number; close: () => Promise<void> }> {
    const sockets: Socket[] = [];
    const server: Server = createServer((s) => void sockets.push(s));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return {
        port: (server.address() as { port: number }).port,
        close: () => {
            for (const s of sockets) s.destroy();
            return new Promise<void>((r) => server.close(() => r()));
        },
    };
}

const RENDER = ["render", "--current", "-", "--mode", "nftables", "--kubernetes-version", "1.37"];
const CONFIGMAP = fixture("kubeadm/1.37-ipvs/configmap.yaml");

describe("the CLI as kubectl users expect (issue #41)", () => {
    describe("no kubeconfig", () => {
        const home = mkdtempSync(join(tmpdir(), "kpm-nohome-"));
        for (const argv of [["status"], ["precheck", "--mode", "nftables"]]) {
            it(`${argv[0]} says no kubeconfig was found, where it looked and the fix (exit 2)`, () => {
                const r = runCli(argv, { env: { HOME: home, KUBECONFIG: "", KPM_KUBECONFIG: "" } });
                assert.equal(r.code, 2, r.stderr);
                assert.doesNotMatch(r.stderr, /HTTP protocol|skipTLSVerify/);
                assert.match(r.stderr, /no kubeconfig/);
                assert.match(r.stderr, /KUBECONFIG is not set/);
                assert.ok(r.stderr.includes(join(home, ".kube", "config")), r.stderr);
                assert.match(r.stderr, /--kubeconfig/);
                assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
            });
        }
        it("KUBECONFIG naming files that do not exist is said so, naming them", () => {
            const r = runCli(["status"], { env: { HOME: home, KUBECONFIG: "/nonexistent/a:/nonexistent/b" } });
            assert.equal(r.code, 2, r.stderr);
            assert.match(r.stderr, /no kubeconfig/);
            assert.match(r.stderr, /KUBECONFIG names \/nonexistent\/a, \/nonexistent\/b/);
            assert.match(r.stderr, /--kubeconfig/);
        });
    });

    describe("an unreachable API server", () => {
        it("refusing connections fails in seconds, naming the server", async () => {
            const server = `https://127.0.0.1:${await closedPort()}`;
            const started = Date.now();
            const r = await runAsync(process.execPath, [CLI, "status", "--kubeconfig", kubeconfigAt(server)]);
            const seconds = (Date.now() - started) / 1000;
            assert.equal(r.code, 1, r.stderr);
            assert.ok(seconds < 8, `took ${seconds}s`);
            assert.match(r.stderr, new RegExp(`cannot reach the API server ${server}.*connection refused`));
            assert.doesNotMatch(r.stderr, /front-door-secret-token/);
        });
        it("that never answers prints a progress line, then fails naming the server and the timeout's variable", async () => {
            const silent = await silentServer();
            try {
                const server = `https://127.0.0.1:${silent.port}`;
                const started = Date.now();
                const r = await runAsync(process.execPath, [CLI, "status", "--kubeconfig", kubeconfigAt(server)], {
                    env: { KPM_API_TIMEOUT_SECONDS: "7" },
                });
                const seconds = (Date.now() - started) / 1000;
                assert.equal(r.code, 1, r.stderr);
                assert.ok(seconds < 14, `took ${seconds}s`);
                assert.match(r.stderr, new RegExp(`waiting for ${server}: no answer after 5s`));
                assert.match(r.stderr, new RegExp(`${server}.*within 7s.*KPM_API_TIMEOUT_SECONDS`));
            } finally {
                await silent.close();
            }
        }).timeout(30_000);
    });

    describe("-o json|yaml", () => {
        it("-o json prints what --json prints", () => {
            const json = runCli([...RENDER, "--json"], { input: CONFIGMAP });
            const o = runCli([...RENDER, "-o", "json"], { input: CONFIGMAP });
            assert.equal(o.code, 0, o.stderr);
            assert.deepEqual(JSON.parse(o.stdout), JSON.parse(json.stdout));
            const long = runCli([...RENDER, "--output=json"], { input: CONFIGMAP });
            assert.deepEqual(JSON.parse(long.stdout), JSON.parse(json.stdout));
        });
        it("-o yaml prints the same object as YAML", () => {
            const json = runCli([...RENDER, "--json"], { input: CONFIGMAP });
            const y = runCli([...RENDER, "-o", "yaml"], { input: CONFIGMAP });
            assert.equal(y.code, 0, y.stderr);
            assert.throws(() => JSON.parse(y.stdout));
            assert.deepEqual(YAML.parse(y.stdout), JSON.parse(json.stdout));
            assert.match(y.stdout, /^config: \|/m, "a multi-line text as a literal block, line for line");
        });
        it("an unknown value is a usage error (exit 2) naming the flag and the values it takes", () => {
            for (const argv of [
                [...RENDER, "-o", "xml"],
                ["status", "-o", "wide"],
                ["precheck", "--mode", "nftables", "--output", "table"],
            ]) {
                const r = runCli(argv, { input: CONFIGMAP });
                assert.equal(r.code, 2, `${argv.join(" ")}: ${r.stderr}`);
                assert.match(r.stderr, /-o\/--output "(xml|wide|table)": expected json or yaml/);
                assert.doesNotMatch(r.stderr, /kubeconfig/);
            }
        });
        it("--json and -o yaml together are refused", () => {
            const r = runCli([...RENDER, "--json", "-o", "yaml"], { input: CONFIGMAP });
            assert.equal(r.code, 2);
            assert.match(r.stderr, /--json and -o yaml/);
        });
    });

    describe("render given a ConfigMap", () => {
        /** The fixture as the API server returns it: with the fields the server sets. */
        const served = (() => {
            const doc = YAML.parse(CONFIGMAP) as { metadata: Record<string, unknown> };
            Object.assign(doc.metadata, {
                resourceVersion: "4711",
                uid: "0b1c2d3e-0000-4000-8000-000000000001",
                creationTimestamp: "2026-01-01T00:00:00Z",
                generation: 1,
                managedFields: [{ manager: "kubeadm", operation: "Update" }],
            });
            doc.metadata.annotations = { "kubectl.kubernetes.io/last-applied-configuration": "{}", keep: "me" };
            return YAML.stringify(doc);
        })();
        it("prints a whole ConfigMap kubectl apply takes: kind, name, namespace, data; no server-set fields", () => {
            const r = runCli(RENDER, { input: served });
            assert.equal(r.code, 0, r.stderr);
            const cm = YAML.parse(r.stdout) as {
                apiVersion: string;
                kind: string;
                metadata: Record<string, unknown>;
                data: Record<string, string>;
            };
            assert.equal(cm.apiVersion, "v1");
            assert.equal(cm.kind, "ConfigMap");
            assert.equal(cm.metadata.name, "kube-proxy");
            assert.equal(cm.metadata.namespace, "kube-system");
            assert.deepEqual(cm.metadata.labels, { app: "kube-proxy" });
            for (const field of ["resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"])
                assert.equal(cm.metadata[field], undefined, field);
            const annotations = (cm.metadata.annotations ?? {}) as Record<string, string>;
            assert.deepEqual(annotations, { keep: "me" }, "kubectl's last-applied copy dropped, the rest kept");
            assert.deepEqual(Object.keys(cm.data).sort(), ["config.conf", "kubeconfig.conf"]);
            assert.match(cm.data["config.conf"], /^mode: nftables$/m);
            const json = runCli([...RENDER, "--json"], { input: served });
            assert.equal(cm.data["config.conf"], JSON.parse(json.stdout).config, "the rendered text, byte for byte");
            const original = YAML.parse(CONFIGMAP) as { data: Record<string, string> };
            assert.equal(cm.data["kubeconfig.conf"], original.data["kubeconfig.conf"]);
        });
        it("a KubeProxyConfiguration in gives the configuration out, as before", () => {
            const r = runCli(RENDER, { input: fixture("kubeadm/1.37/config.conf") });
            assert.equal(r.code, 0, r.stderr);
            assert.match(r.stdout, /^kind: KubeProxyConfiguration$/m);
            assert.match(r.stdout, /^mode: nftables$/m);
        });
    });

    describe("findings wrapped to the terminal", () => {
        it("wrapLine breaks at spaces within the width and indents continuation lines", () => {
            const text = "warning: nodePortAddresses: NodePorts will answer only on each node's primary IP address";
            const lines = wrapLine(text, 40).split("\n");
            assert.ok(lines.length > 2);
            for (const l of lines) assert.ok(l.length <= 40, l);
            for (const l of lines.slice(1)) assert.match(l, /^ {4}\S/);
            assert.equal(lines.map((l) => l.trim()).join(" "), text);
            assert.equal(wrapLine(text, undefined), text, "no width: no wrapping");
            assert.equal(wrapLine("x".repeat(60), 40), "x".repeat(60), "a word longer than the width stays whole");
        });
        async function run(argv: string[], columns?: number) {
            const out: string[] = [];
            const err: string[] = [];
            const code = await main(argv, {
                out: (l) => out.push(l),
                err: (l) => err.push(l),
                columns,
            });
            return { code, out: out.join("\n"), err: err.join("\n") };
        }
        const file = (() => {
            const dir = mkdtempSync(join(tmpdir(), "kpm-wrap-"));
            writeFileSync(join(dir, "cm.yaml"), CONFIGMAP);
            return join(dir, "cm.yaml");
        })();
        const argv = ["render", "--current", file, "--mode", "nftables", "--kubernetes-version", "1.37", "--diff"];
        it("render's changes and findings wrap at the terminal's width, continuation lines indented", async () => {
            const r = await run(argv, 60);
            assert.equal(r.code, 0, r.err);
            const lines = r.err.split("\n");
            for (const l of lines) assert.ok(l.length <= 60 || !l.trim().includes(" "), l);
            assert.ok(lines.some((l) => /^ {4}\S/.test(l)));
            assert.match(r.err, /^warning: nodePortAddresses:/m);
        });
        it("not a terminal: one line per finding", async () => {
            const r = await run(argv);
            assert.ok(
                r.err.split("\n").every((l) => /^(change|warning|info|error): /.test(l)),
                r.err,
            );
        });
        it("--json is never wrapped", async () => {
            const r = await run([...argv.filter((a) => a !== "--diff"), "--json"], 40);
            assert.equal(r.code, 0);
            const doc = JSON.parse(r.out) as { warnings: { message: string }[] };
            assert.ok(doc.warnings.some((w) => w.message.length > 40));
            assert.ok(r.out.split("\n").some((l) => l.length > 40));
        });
    });
});
