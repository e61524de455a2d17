// components/core/nodes.ts: whether a node can run a mode, judged by the kernel it reports.
import assert from "node:assert/strict";
import {
    compareNodeNames,
    IPVS_DEPRECATION_TEXT,
    nodeFacts,
    nodeVerdict,
    parseNodeList,
} from "../../components/core/index.js";

describe("nodeVerdict: kernel precheck for nftables", () => {
    const table: [string | undefined, string][] = [
        ["5.14.0-427.13.1.el9_4.x86_64", "warn"],
        ["6.8.0-51-generic", "ok"],
        ["5.10.205-195.807.amzn2.x86_64", "fail"],
        ["4.18.0-553.el8_10.x86_64", "fail"],
        ["5.13.0", "warn"],
        ["5.12.19", "fail"],
        ["6.1.0-28-cloud-amd64", "ok"],
        ["5.15.153.1-microsoft-standard-WSL2", "warn"],
        ["", "fail"],
        [undefined, "fail"],
        ["unknown", "fail"],
        ["v6.8", "fail"],
    ];
    for (const [kernel, verdict] of table) {
        it(`${JSON.stringify(kernel)} -> ${verdict}`, () => {
            assert.equal(nodeVerdict({ name: "n1", labels: {}, kernelVersion: kernel }, "nftables").verdict, verdict);
        });
    }
    it("a failing node's finding names the node and quotes kube-proxy's own start-up error", () => {
        const v = nodeVerdict({ name: "old-1", labels: {}, kernelVersion: "5.10.0" }, "nftables");
        assert.match(v.findings[0].message, /old-1/);
        assert.match(v.findings[0].message, /requires kernel 5\.13 or later/);
    });
    it("windows nodes are skipped, not failed", () => {
        assert.equal(
            nodeVerdict(
                { name: "w", labels: {}, operatingSystem: "windows", kernelVersion: "10.0.17763.5458" },
                "nftables",
            ).verdict,
            "skip",
        );
    });
    it("iptables runs on any readable kernel", () => {
        assert.equal(
            nodeVerdict({ name: "n", labels: {}, kernelVersion: "4.18.0-553.el8_10.x86_64" }, "iptables").verdict,
            "ok",
        );
    });
});

describe("nodeVerdict: the findings precheck prints and reports", () => {
    it("an unreadable kernel fails with node.kernelUnknown, saying whether it is missing or unreadable", () => {
        const missing = nodeVerdict({ name: "n1", labels: {} }, "iptables");
        assert.deepEqual(
            missing.findings.map(({ severity, code, field, nodes }) => ({ severity, code, field, nodes })),
            [{ severity: "error", code: "node.kernelUnknown", field: "status.nodeInfo.kernelVersion", nodes: ["n1"] }],
        );
        assert.match(
            missing.findings[0].message,
            /^n1: kernel version is missing, so it cannot be shown to support iptables/,
        );
        assert.match(missing.findings[0].fix ?? "", /status\.nodeInfo\.kernelVersion/);
        const unreadable = nodeVerdict({ name: "n1", labels: {}, kernelVersion: "unknown" }, "ipvs");
        assert.equal(unreadable.verdict, "fail");
        assert.match(unreadable.findings[0].message, /^n1: kernel version "unknown" cannot be read/);
    });
    it("ipvs on a readable kernel warns that ipvs is deprecated, naming the node", () => {
        const v = nodeVerdict({ name: "n1", labels: {}, kernelVersion: "6.8.0" }, "ipvs");
        assert.equal(v.verdict, "warn");
        assert.deepEqual(v.findings, [
            {
                severity: "warning",
                code: "ipvs.deprecated",
                field: "mode",
                nodes: ["n1"],
                message: `n1: ${IPVS_DEPRECATION_TEXT}`,
            },
        ]);
    });
    it("iptables on a readable kernel has no findings", () => {
        assert.deepEqual(nodeVerdict({ name: "n1", labels: {}, kernelVersion: "4.18.0" }, "iptables").findings, []);
    });
    it("a kernel older than 5.13 fails nftables with a fix naming the kernel to upgrade to", () => {
        const [f] = nodeVerdict({ name: "old-1", labels: {}, kernelVersion: "5.10.0" }, "nftables").findings;
        assert.equal(f.field, "status.nodeInfo.kernelVersion");
        assert.deepEqual(f.nodes, ["old-1"]);
        assert.match(f.fix ?? "", /upgrade the node's kernel to 5\.13\+/);
    });
    it("the pre-6.1 conntrack warning names the node, and tcpBeLiberal silences it", () => {
        const node = { name: "n1", labels: {}, kernelVersion: "5.14.0" };
        const [f] = nodeVerdict(node, "nftables").findings;
        assert.equal(f.code, "nftables.conntrack");
        assert.deepEqual(f.nodes, ["n1"]);
        assert.match(f.message, /^n1: kernel older than 6\.1: /);
        assert.deepEqual(nodeVerdict(node, "nftables", { tcpBeLiberal: true }), {
            node: "n1",
            kernel: "5.14.0",
            osImage: undefined,
            verdict: "ok",
            findings: [],
        });
    });
    it("a non-Linux node is skipped with one info finding that names its OS", () => {
        assert.deepEqual(
            nodeVerdict(
                { name: "w", labels: {}, operatingSystem: "windows", kernelVersion: "10.0", osImage: "Windows Server" },
                "nftables",
            ),
            {
                node: "w",
                kernel: "10.0",
                osImage: "Windows Server",
                verdict: "skip",
                findings: [
                    {
                        severity: "info",
                        code: "node.notLinux",
                        field: "nodes",
                        nodes: ["w"],
                        message: "w runs windows: Linux proxy modes do not apply",
                    },
                ],
            },
        );
    });
});

describe("nodeFacts: what is read from a Node object", () => {
    it("reads name, labels, nodeInfo and the cordon", () => {
        const labels = { "kubernetes.io/os": "linux", pool: "a" };
        const facts = nodeFacts({
            metadata: { name: "n1", labels },
            spec: { unschedulable: true },
            status: {
                nodeInfo: {
                    kernelVersion: "6.8.0",
                    osImage: "Ubuntu 24.04",
                    operatingSystem: "linux",
                    kubeProxyVersion: "v1.31.0",
                },
            },
        });
        assert.deepEqual(facts, {
            name: "n1",
            labels,
            kernelVersion: "6.8.0",
            osImage: "Ubuntu 24.04",
            operatingSystem: "linux",
            kubeProxyVersion: "v1.31.0",
            unschedulable: true,
        });
        assert.notEqual(facts.labels, labels, "the labels are a copy");
    });
    it("an empty Node reads as nameless and schedulable, with no nodeInfo", () => {
        assert.deepEqual(nodeFacts({}), {
            name: "",
            labels: {},
            kernelVersion: undefined,
            osImage: undefined,
            operatingSystem: undefined,
            kubeProxyVersion: undefined,
            unschedulable: false,
        });
    });
    it("empty nodeInfo strings read as absent; the OS falls back to the kubernetes.io/os label", () => {
        const facts = nodeFacts({
            metadata: { name: "w", labels: { "kubernetes.io/os": "windows" } },
            spec: { unschedulable: false },
            status: { nodeInfo: { kernelVersion: "", osImage: "", operatingSystem: "", kubeProxyVersion: "" } },
        });
        assert.deepEqual(
            [facts.kernelVersion, facts.osImage, facts.operatingSystem, facts.kubeProxyVersion, facts.unschedulable],
            [undefined, undefined, "windows", undefined, false],
        );
    });
    it("nodeInfo's operatingSystem is read without the label", () => {
        assert.equal(nodeFacts({ status: { nodeInfo: { operatingSystem: "linux" } } }).operatingSystem, "linux");
    });
});

describe("parseNodeList: the --nodes input", () => {
    const node = (name?: string, extra: object = {}) => ({
        ...extra,
        metadata: name === undefined ? {} : { name },
        status: { nodeInfo: { kernelVersion: "6.8.0" } },
    });
    const refused = (text: string, message: RegExp, what?: string) =>
        assert.throws(() => parseNodeList(text, what), { name: "InputError", message });

    it("reads a NodeList, as kubectl get nodes -o json prints it", () => {
        const text = JSON.stringify({
            kind: "List",
            items: [node("a", { kind: "Node" }), node("b", { kind: "Node" })],
        });
        assert.deepEqual(
            parseNodeList(text).map((n) => [n.name, n.kernelVersion]),
            [
                ["a", "6.8.0"],
                ["b", "6.8.0"],
            ],
        );
    });
    it("reads a single Node, and items without a kind", () => {
        assert.deepEqual(
            parseNodeList(JSON.stringify(node("a", { kind: "Node" }))).map((n) => n.name),
            ["a"],
        );
        assert.deepEqual(
            parseNodeList(JSON.stringify({ items: [node("a")] })).map((n) => n.name),
            ["a"],
        );
    });
    it("leaves out items of another kind", () => {
        const text = JSON.stringify({ kind: "List", items: [node("a", { kind: "Node" }), node("p", { kind: "Pod" })] });
        assert.deepEqual(
            parseNodeList(text).map((n) => n.name),
            ["a"],
        );
    });
    it("refuses empty input and non-JSON, naming the flag (--nodes by default)", () => {
        refused(" \n", /^--nodes is empty: expected the output of kubectl get nodes -o json$/);
        refused("{", /^--nodes is not JSON \(.+\): expected the output of kubectl get nodes -o json$/);
        refused("", /^nodes\.json is empty/, "nodes.json");
    });
    it("refuses JSON that is neither a NodeList nor a Node, quoting its kind", () => {
        refused(JSON.stringify({ kind: "Pod" }), /^--nodes has kind "Pod": expected a NodeList/);
        refused("[]", /^--nodes has kind null: expected a NodeList/);
    });
    it("refuses a nameless item, giving its index", () => {
        refused(JSON.stringify({ items: [node("a"), node()] }), /^--nodes: item 1 has no metadata\.name$/);
        refused(JSON.stringify({ items: [null] }), /^--nodes: item 0 has no metadata\.name$/);
    });
    it("counts the index over every item of the list, Pods included", () => {
        const pod = { kind: "Pod", metadata: { name: "p" } };
        refused(JSON.stringify({ items: [pod, node("a"), node()] }), /^--nodes: item 2 has no metadata\.name$/);
    });
});

describe("compareNodeNames: natural order of node names", () => {
    // [a, b]: a comes before b
    const before: [string, string, string][] = [
        ["workers-2", "workers-10", "digit runs compare as numbers"],
        ["n-001", "n-2", "leading zeros do not count"],
        ["n-12-b", "n-13-a", "the first differing number decides"],
        ["n-1", "n-01-a", "after numerically equal runs, fewer runs first"],
        ["n-01", "n-1", "names equal as numbers fall back to string order"],
        ["workers", "workers-2", "a prefix comes first"],
        ["api-1", "db-1", "letter runs compare as strings, not by length"],
        ["10.0.0.5", "a1", "a name starting with a number comes before one starting with a letter"],
        ["node1", "node-1", "a letter run compares whole, not character by character"],
        ["", "0", "the empty name comes first"],
    ];
    for (const [a, b, why] of before) {
        it(`${a} < ${b}: ${why}`, () => {
            assert.ok(compareNodeNames(a, b) < 0, `${a} vs ${b}`);
            assert.ok(compareNodeNames(b, a) > 0, `${b} vs ${a}`);
        });
    }
    it("is a total order: antisymmetric, transitive and 0 only for the same name", () => {
        const names = [
            "",
            "0",
            "10",
            "a",
            "a1",
            "-ab",
            ".x",
            "n-1",
            "n-01",
            "n-01-a",
            "node1",
            "node-1",
            "w-2",
            "w-10",
        ];
        const sign = (a: string, b: string) => Math.sign(compareNodeNames(a, b));
        for (const a of names)
            for (const b of names) {
                assert.equal(sign(a, b) + sign(b, a), 0, `${a} vs ${b}`);
                assert.equal(sign(a, b) === 0, a === b, `${a} vs ${b}`);
                for (const c of names)
                    if (sign(a, b) < 0 && sign(b, c) < 0) assert.equal(sign(a, c), -1, `${a} < ${b} < ${c}`);
            }
    });
});
