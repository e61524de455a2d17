// Inputs kube-proxy or the API server would refuse are refused at preview, naming the field and
// the fix; the CLI reads bounded input and exits with the code docs/cli.md's table gives.
import assert from "node:assert/strict";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as YAML from "yaml";
import {
    classifyNodePortAddress,
    gateRegistry,
    parseCurrentConfig,
    parseKubeVersion,
    renderConfiguration,
    validateDesired,
} from "../../components/core/index.js";
import { parseSelector } from "../../components/core/selector.js";
import { describeIssues } from "../../components/core/schema.js";
import { poolInputSchema } from "../../components/core/pools.js";
import { hookInputSchema, rolloutSpecSchema, targetSchema, verifyInputSchema } from "../../components/rollout/spec.js";
import { EXIT } from "../../components/cli/output.js";
import { FIXTURES, ROOT, runCli } from "../helpers.js";

const KUBEADM = join(FIXTURES, "kubeadm/1.37/configmap.yaml");

function current() {
    return parseCurrentConfig(
        YAML.stringify({ apiVersion: "kubeproxy.config.k8s.io/v1alpha1", kind: "KubeProxyConfiguration", mode: "" }),
    );
}

/** The issues of a schema's parse, one "<field>: <message>" line each (as the preview prints them). */
function issues(schema: { safeParse(v: unknown): { success: boolean; error?: { issues: any[] } } }, value: unknown) {
    const r = schema.safeParse(value);
    return r.success ? [] : describeIssues(r.error!.issues, "");
}

describe("feature gates are looked up as the release's own names, never through the object prototype", () => {
    const PROTOTYPE_NAMES = ["constructor", "toString", "__proto__", "hasOwnProperty", "valueOf", "isPrototypeOf"];
    it("featureGates.__proto__ is refused by the settings' shape (zod would drop it without a word)", () => {
        const featureGates = JSON.parse('{"__proto__": true, "NFTablesProxyMode": true}') as Record<string, boolean>;
        const { settings, findings } = validateDesired({ mode: "nftables", featureGates });
        assert.equal(settings, undefined);
        assert.deepEqual(
            findings.map((f) => `${f.code} ${f.field}`),
            ["settings.shape featureGates.__proto__"],
        );
        assert.match(findings[0].message, /not a feature gate of any Kubernetes release.*remove it/);
    });
    for (const name of PROTOTYPE_NAMES.filter((n) => n !== "__proto__")) {
        it(`featureGates.${name} is an unknown gate (gate.unknown error), as kube-proxy's registry refuses it`, () => {
            const featureGates = JSON.parse(`{${JSON.stringify(name)}: true}`) as Record<string, boolean>;
            const { settings, findings } = validateDesired({
                mode: "nftables",
                kubernetesVersion: "1.37",
                featureGates,
            });
            assert.deepEqual(findings, []);
            assert.deepEqual(Object.keys(settings!.featureGates!), [name], "the gate reaches the rules");
            const r = renderConfiguration(current(), settings!);
            const unknown = r.findings.filter((f) => f.code === "gate.unknown");
            assert.equal(unknown.length, 1, JSON.stringify(r.findings));
            assert.equal(unknown[0].severity, "error");
            assert.equal(unknown[0].field, `featureGates.${name}`);
            assert.match(unknown[0].message, /is not a feature gate of Kubernetes 1\.37/);
        });
    }
    it("the registry of every release holds no inherited name", () => {
        const registry = gateRegistry(parseKubeVersion("1.37"));
        for (const name of PROTOTYPE_NAMES) assert.equal(registry.gates[name], undefined, name);
        assert.ok(registry.gates.NFTablesProxyMode, "a real gate is still found");
    });
});

describe("nodePortAddresses: a CIDR is what Go's net.ParseCIDR reads, as kube-proxy parses it", () => {
    const REFUSED: [string, RegExp][] = [
        ["10/8", /not a CIDR kube-proxy reads: .*four decimal octets/],
        ["10.1/16", /four decimal octets/],
        ["0x0a000000/8", /four decimal octets/],
        ["010.0.0.0/8", /leading zero/],
        ["10.0.0.0/33", /prefix length/],
        ["10.0.0.0/", /prefix length/],
        ["10.0.0.0/+8", /prefix length/],
        ["256.0.0.0/8", /four decimal octets/],
        ["fe80::1%eth0/64", /zone/],
        ["fe80::1/129", /prefix length/],
        ["1:2:3:4:5:6:7:8:9/64", /not a CIDR kube-proxy reads/],
        ["::ffff:10.1/96", /not a CIDR kube-proxy reads/],
        ["::ffff:010.0.0.1/96", /leading zero/],
        [" 10.0.0.0/8", /space/],
        ["10.0.0.0/8 ", /space/],
    ];
    for (const [entry, why] of REFUSED) {
        it(`${JSON.stringify(entry)} is invalid, saying why and how to write it`, () => {
            const e = classifyNodePortAddress(entry);
            assert.equal(e.kind, "invalid", JSON.stringify(e));
            assert.match((e as { reason: string }).reason, why);
        });
    }
    const ACCEPTED: [string, "ipv4" | "ipv6"][] = [
        ["10.0.0.0/8", "ipv4"],
        ["0.0.0.0/0", "ipv4"],
        ["192.168.1.0/24", "ipv4"],
        ["10.0.0.1/32", "ipv4"],
        ["::/0", "ipv6"],
        ["2001:db8::/32", "ipv6"],
        ["::ffff:10.0.0.0/104", "ipv6"],
        ["fd00:0:0:0:0:0:0:0/8", "ipv6"],
        ["FE80::/10", "ipv6"],
    ];
    for (const [entry, family] of ACCEPTED) {
        it(`${entry} is a ${family} CIDR`, () => {
            assert.deepEqual(classifyNodePortAddress(entry), { kind: "cidr", family, cidr: entry });
        });
    }
    it("an address alone is refused with its /32 or /128 as the fix; a short IPv4 form gets no such fix", () => {
        assert.deepEqual(classifyNodePortAddress("10.1.2.3"), {
            kind: "invalid",
            reason: '"10.1.2.3" is an address, not a CIDR',
            suggestion: "10.1.2.3/32",
        });
        const short = classifyNodePortAddress("10");
        assert.equal(short.kind, "invalid");
        assert.equal((short as { suggestion?: string }).suggestion, undefined);
    });
    it("the preview's rules report each refused entry at its index, with the fix", () => {
        const r = renderConfiguration(current(), {
            mode: "nftables",
            kubernetesVersion: "1.37",
            nodePortAddresses: ["10.0.0.0/8", "10/8", "fe80::1%eth0/64"],
        });
        const bad = r.findings.filter((f) => f.code === "nodePortAddresses.invalid");
        assert.deepEqual(
            bad.map((f) => f.field),
            ["nodePortAddresses[1]", "nodePortAddresses[2]"],
        );
        assert.match(bad[0].fix!, /10\.0\.0\.0\/8/);
    });
    it("render --node-port-addresses with a trailing comma exits 2 naming the empty entry (kube-proxy reads it as an empty CIDR)", () => {
        const r = runCli([
            "render",
            "--current",
            KUBEADM,
            "--mode",
            "nftables",
            "--kubernetes-version",
            "1.37",
            "--node-port-addresses",
            "10.0.0.0/8,",
        ]);
        assert.equal(r.code, 2, r.stderr);
        assert.match(r.stderr, /--node-port-addresses "10\.0\.0\.0\/8,": entry 2 is empty/);
        assert.equal(r.stdout, "");
    });
});

describe("target names are Kubernetes object names, checked before they reach an API path", () => {
    const BAD_NAMESPACES = ["Kube-System", "kube_system", "a/b", "..", "kube-system/../default", "-a", "a".repeat(64)];
    for (const ns of BAD_NAMESPACES) {
        it(`target.namespace ${JSON.stringify(ns.length > 20 ? `${ns.slice(0, 8)}... (${ns.length})` : ns)} is refused naming the field and the rule`, () => {
            const lines = issues(targetSchema, { namespace: ns });
            assert.equal(lines.length, 1, lines.join("\n"));
            assert.match(lines[0], /^namespace: .* is not a namespace name: a DNS-1123 label/);
            assert.match(lines[0], /at most 63 characters/);
            // the rollout spec the CLI reads has the same rule
            const spec = issues(rolloutSpecSchema, {
                names: { namespace: ns },
                target: { hash: "h", mode: "nftables", config: "" },
                pools: [{ name: "all", nodeSelector: "a=b" }],
            });
            assert.ok(
                spec.some((l) => l.startsWith("names.namespace: ")),
                spec.join("\n"),
            );
        });
    }
    it("kube-system, a 63-character label and the other names as the API allows them pass", () => {
        assert.deepEqual(
            issues(targetSchema, {
                namespace: `a${"b".repeat(61)}c`,
                configMap: "kube-proxy.v2",
                daemonSet: "kube-proxy",
                key: "config.conf",
            }),
            [],
        );
        assert.deepEqual(issues(targetSchema, { namespace: "kube-system" }), []);
    });
    it("target.configMap, target.daemonSet (DNS-1123 subdomains) and target.key (a ConfigMap key) are checked too", () => {
        assert.match(issues(targetSchema, { configMap: "Kube/Proxy" })[0], /^configMap: .*DNS-1123 subdomain/);
        assert.match(issues(targetSchema, { daemonSet: "kube proxy" })[0], /^daemonSet: .*DNS-1123 subdomain/);
        assert.match(issues(targetSchema, { key: "a/b" })[0], /^key: .*ConfigMap key/);
        assert.match(issues(targetSchema, { key: ".." })[0], /^key: .*ConfigMap key/);
    });
});

describe("verify's names are checked as the API would: the Service and the probe pod's priority class", () => {
    for (const service of [
        "default",
        "default/kubernetes/x",
        "Default/kubernetes",
        "default/1kubernetes",
        "default/kube.rnetes",
    ]) {
        it(`verify.service ${JSON.stringify(service)} is refused naming the field`, () => {
            const lines = issues(verifyInputSchema, { service });
            assert.equal(lines.length, 1, lines.join("\n"));
            assert.match(lines[0], /^service: .*; e\.g\. default\/kubernetes$/);
        });
    }
    it("verify.service default/kubernetes and kube-system/kube-dns pass", () => {
        for (const service of ["default/kubernetes", "kube-system/kube-dns"])
            assert.deepEqual(issues(verifyInputSchema, { service }), []);
    });
    it("verify.priorityClassName must be a PriorityClass name; empty still means none (as earlier specs stored it)", () => {
        assert.match(
            issues(verifyInputSchema, { priorityClassName: "System Node Critical" })[0],
            /^priorityClassName: "System Node Critical" is not a PriorityClass name: a DNS-1123 subdomain/,
        );
        assert.deepEqual(issues(verifyInputSchema, { priorityClassName: "" }), []);
        assert.deepEqual(issues(verifyInputSchema, { priorityClassName: "system-node-critical" }), []);
    });
});

describe("target.podSelector is a Kubernetes label selector, as the API parses it", () => {
    const BAD: string[] = [
        "k8s-app=kube-proxy,",
        ",",
        "k8s-app kube-proxy",
        "k8s-app in ()",
        "k8s-app=kube proxy",
        "K8S.io/app=x",
        `k8s-app=${"v".repeat(64)}`,
        `${"k".repeat(64)}=x`,
    ];
    for (const selector of BAD) {
        it(`${JSON.stringify(selector.length > 30 ? `${selector.slice(0, 12)}...` : selector)} is refused, naming target.podSelector and the forms it takes`, () => {
            const lines = issues(targetSchema, { podSelector: selector });
            assert.equal(lines.length, 1, `${selector}: ${lines.join("\n")}`);
            assert.match(lines[0], /^podSelector: /);
        });
    }
    it("the default and the usual forms pass", () => {
        for (const s of ["k8s-app=kube-proxy", "app.kubernetes.io/name in (kube-proxy,proxy),!legacy", "tier!=x", "a="])
            assert.deepEqual(issues(targetSchema, { podSelector: s }), [], s);
    });
    it("a pool's nodeSelector follows the same grammar: a trailing comma is refused", () => {
        assert.throws(() => parseSelector("pool=canary,", "nodeSelector"), /nodeSelector: .*empty requirement/);
        assert.equal(issues(poolInputSchema, { name: "c", nodeSelector: "pool=canary," }).length, 1);
    });
});

describe("hooks: a timeout the timer can keep, a command that names a program", () => {
    it('a hook timeout of "999999h" is refused, naming the field and the longest it may be', () => {
        const lines = issues(verifyInputSchema, { hooks: [{ name: "h", command: ["true"], timeout: "999999h" }] });
        assert.equal(lines.length, 1, lines.join("\n"));
        assert.match(
            lines[0],
            /^hooks\[0\]\.timeout: "999999h" is longer than 596h31m23s, the longest wait this tool can keep/,
        );
    });
    it("the longest timeout the timer keeps passes; one second more is refused", () => {
        assert.deepEqual(issues(hookInputSchema, { name: "h", command: ["true"], timeout: "596h31m23s" }), []);
        assert.equal(issues(hookInputSchema, { name: "h", command: ["true"], timeout: "596h31m24s" }).length, 1);
    });
    it("every duration the runner waits on is bounded the same way: a pool's soak and drainTimeout, verify.podTimeout", () => {
        assert.match(
            issues(poolInputSchema, { name: "c", nodeSelector: "a=b", soak: "999999h" })[0],
            /^soak: "999999h" is longer than/,
        );
        assert.match(
            issues(poolInputSchema, { name: "c", nodeSelector: "a=b", drainTimeout: "1000000h" })[0],
            /^drainTimeout: .* is longer than/,
        );
        assert.match(issues(verifyInputSchema, { podTimeout: "99999999h" })[0], /^podTimeout: .* is longer than/);
    });
    for (const command of [[""], ["", "x"], ["./check\u0000.sh"], ["./check.sh", "a\u0000b"]]) {
        it(`a hook command ${JSON.stringify(command)} is refused naming the field`, () => {
            const lines = issues(hookInputSchema, { name: "h", command });
            assert.equal(lines.length, 1, lines.join("\n"));
            assert.match(lines[0], /^command(\[\d+\])?: /);
        });
    }
    it("an env value with a NUL byte is refused (no process can receive it)", () => {
        assert.match(issues(hookInputSchema, { name: "h", command: ["x"], env: { A: "a\u0000" } })[0], /^env\.A: /);
    });
});

describe("the CLI reads bounded input", () => {
    it("render --current /dev/zero stops at the cap with exit 2, naming the input and the cap", () => {
        const started = Date.now();
        const r = runCli(["render", "--current", "/dev/zero", "--mode", "nftables"]);
        assert.equal(r.code, 2, r.stderr);
        assert.match(r.stderr, /--current: \/dev\/zero is larger than 4 MiB, the most this command reads/);
        assert.ok(Date.now() - started < 20_000, "it stops at the cap, not at the end of the input");
    });
    it("a 5 MiB --current on standard input is refused the same way", () => {
        const r = runCli(["render", "--current", "-", "--mode", "nftables"], { input: "#".repeat(5 << 20) });
        assert.equal(r.code, 2, r.stderr);
        assert.match(r.stderr, /--current: standard input is larger than 4 MiB/);
    });
    it("rollout --spec and precheck --nodes are capped too", () => {
        const spec = runCli(["rollout", "--spec", "/dev/zero"]);
        assert.equal(spec.code, 2, spec.stderr);
        assert.match(spec.stderr, /--spec: \/dev\/zero is larger than 4 MiB/);
        const nodes = runCli(["precheck", "--mode", "nftables", "--nodes", "/dev/zero"]);
        assert.equal(nodes.code, 2, nodes.stderr);
        assert.match(nodes.stderr, /--nodes: \/dev\/zero is larger than 64 MiB/);
    });
    it("a file just under the cap is read", () => {
        const path = join(tmpdir(), `kpm-inputs-${process.pid}.yaml`);
        const config = readFileSync(KUBEADM, "utf8");
        writeFileSync(path, `${config}\n${"#".repeat((4 << 20) - config.length - 10)}\n`);
        try {
            const r = runCli(["render", "--current", path, "--mode", "nftables", "--kubernetes-version", "1.37"]);
            assert.equal(r.code, 0, r.stderr);
        } finally {
            rmSync(path, { force: true });
        }
    });
});

describe("a YAML alias bomb is invalid input (exit 2), not an unexpected failure", () => {
    const levels = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i < 9; i++) {
        const prev = String.fromCharCode(96 + i);
        const name = String.fromCharCode(97 + i);
        levels.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(",")}]`);
    }
    const bomb = `${levels.join("\n")}\n`;
    it("parseCurrentConfig refuses it with an InputError naming the input", () => {
        assert.throws(() => parseCurrentConfig(bomb, "--current"), {
            name: "InputError",
            message: /--current uses YAML aliases too many times/,
        });
    });
    it("render --current exits 2 with one line, quickly", () => {
        const r = runCli(["render", "--current", "-", "--mode", "nftables"], { input: bomb });
        assert.equal(r.code, 2, r.stderr);
        assert.match(r.stderr, /^render: --current uses YAML aliases too many times/);
        assert.doesNotMatch(r.stderr, /unexpected failure/);
    });
});

describe("exit codes follow docs/cli.md's one table", () => {
    it("the table lists exactly the codes of EXIT, by name", () => {
        const doc = readFileSync(join(ROOT, "docs", "cli.md"), "utf8");
        const rows = [...doc.matchAll(/^\| (\d) \| `(\w+)` \|/gm)].map((m) => [m[2], Number(m[1])]);
        assert.deepEqual(Object.fromEntries(rows), { ...EXIT });
    });
    const BAD = "apiVersion: v1\nkind: Config\nclusters: [\n";
    const path = join(tmpdir(), `kpm-bad-kubeconfig-${process.pid}.yaml`);
    before(() => writeFileSync(path, BAD));
    after(() => rmSync(path, { force: true }));
    for (const command of [["precheck", "--mode", "nftables"], ["status"], ["verify", "--node", "n1"]]) {
        it(`${command[0]}: an unreadable kubeconfig is invalid input (exit 2), from --kubeconfig, a missing file or KPM_KUBECONFIG`, () => {
            for (const [args, env] of [
                [["--kubeconfig", path], {}],
                [["--kubeconfig", "/no/such/kubeconfig"], {}],
                [[], { KPM_KUBECONFIG: BAD }],
            ] as [string[], Record<string, string>][]) {
                const r = runCli([...command, ...args], { env });
                assert.equal(r.code, 2, `${JSON.stringify(args)} ${JSON.stringify(env)}: ${r.stderr}`);
                assert.match(r.stderr, /cannot load the kubeconfig/);
            }
        });
    }
});
