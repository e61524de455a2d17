// components/core/nodes.ts: whether a node can run a mode, judged by the kernel it reports.
import assert from "node:assert/strict";
import { nodeVerdict } from "../../components/core/index.js";

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
