// Terminal-safe output: values from the cluster cannot drive the terminal or forge rows, and
// every name the CLI takes is a DNS-1123 name before it reaches a selector or a URL.
import assert from "node:assert/strict";
import { requireName, requireNamespacedName } from "../../components/cli/args.js";
import { table, terminalSafe, terminalSafeText } from "../../components/cli/output.js";
import { runCli } from "../helpers.js";

describe("terminal-safe output", () => {
    it("escapes ESC, CR, newline, C1 controls and direction overrides; leaves plain text alone", () => {
        assert.equal(terminalSafe("6.8.0\u001b[2J\nfake-row"), "6.8.0\\u001b[2J\\nfake-row");
        assert.equal(terminalSafe("a\rb\tc\u009bd\u202ee"), "a\\rb\\tc\\u009bd\\u202ee");
        assert.equal(terminalSafe("Ubuntu 24.04.1 LTS (ünïcode ok)"), "Ubuntu 24.04.1 LTS (ünïcode ok)");
        assert.equal(terminalSafeText("line 1\nline \u001b[31m2"), "line 1\nline \\u001b[31m2");
    });
    it("a table cell holding a newline stays one row", () => {
        const out = table(["NODE", "KERNEL"], [["n1", "6.8\nn2  5.4  forged"]]);
        assert.equal(out.split("\n").length, 2);
        assert.doesNotMatch(out, /\u001b/);
    });
    it("precheck: a kernel string with ESC[2J and a newline does not forge a row or reach the terminal", () => {
        const nodes = JSON.stringify({
            apiVersion: "v1",
            kind: "List",
            items: [
                {
                    kind: "Node",
                    metadata: { name: "n1" },
                    status: {
                        nodeInfo: {
                            kernelVersion: "6.8.0\u001b[2J\nforged-node  6.8.0  ok",
                            osImage: "OS\u001b]0;title\u0007",
                            operatingSystem: "linux",
                        },
                    },
                },
            ],
        });
        const r = runCli(["precheck", "--mode", "nftables", "--nodes", "-"], { input: nodes });
        const rows = r.stdout.trim().split("\n");
        assert.equal(rows.length, 2, r.stdout);
        assert.doesNotMatch(rows[1], /^forged-node/m);
        assert.doesNotMatch(r.stdout + r.stderr, /[\u001b\u0007]/);
        assert.match(rows[1], /^n1\s+6\.8\.0\\u001b\[2J\\nforged-node/);
    });
});

describe("names the CLI takes are DNS-1123", () => {
    it("accepts node names and refuses selector syntax, upper case and over-long names, naming the flag", () => {
        assert.equal(
            requireName("ip-10-0-1-2.eu-west-1.compute.internal", "--node"),
            "ip-10-0-1-2.eu-west-1.compute.internal",
        );
        for (const bad of ["n1,metadata.name!=x", "N1", "-n1", "n1.", "a".repeat(254), "n 1", ""]) {
            assert.throws(() => requireName(bad, "--node"), /--node/, bad);
        }
        assert.throws(() => requireName("a.b", "--x", "label"), /DNS-1123 label/);
        assert.equal(requireNamespacedName("default/kubernetes", "--service"), "default/kubernetes");
        assert.throws(() => requireNamespacedName("default/kube,x=y", "--service"), /--service name/);
    });
    it("verify --node with a field-selector payload is refused before any cluster call (exit 2)", () => {
        const r = runCli(["verify", "--node", "n1,metadata.name!=x", "--kubeconfig", "/nonexistent"]);
        assert.equal(r.code, 2, r.stderr);
        assert.match(r.stderr, /--node "n1,metadata\.name!=x" is not a valid DNS-1123 subdomain/);
    });
    it("status and verify say in --help that they create a privileged pod", () => {
        assert.match(runCli(["status", "--help"]).stdout, /creates a privileged pod on every node/);
        assert.match(runCli(["verify", "--help"]).stdout, /Creates a privileged pod on the node/);
    });
});
