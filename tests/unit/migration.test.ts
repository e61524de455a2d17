// components/core/migration.ts: one migration decided from a cluster snapshot, or refused with
// every error it breaks; the snapshots are the component tests' (tests/unit/snapshots.ts).
import assert from "node:assert/strict";
import { decideMigration, MigrationRefused, type ServiceFacts } from "../../components/core/migration.js";
import { clusterSnapshot, nodeState } from "./snapshots.js";

const ALL = [{ name: "all", nodeSelector: "kubernetes.io/os=linux" }];

/** The MigrationRefused that deciding throws. */
function refusal(...args: Parameters<typeof decideMigration>): MigrationRefused {
    try {
        decideMigration(...args);
    } catch (e) {
        if (e instanceof MigrationRefused) return e;
        throw e;
    }
    assert.fail("the migration was not refused");
}

describe("decideMigration: the refusal", () => {
    it("lists only the errors, each with its field, nodes and fix, and keeps every finding", () => {
        // a pool that leaves w1 and w2 out, and a canary whose kernel cannot run nftables
        const snapshot = clusterSnapshot([
            nodeState("c1", "canary", "5.10.0"),
            nodeState("w1", "workers"),
            nodeState("w2", "workers"),
        ]);
        const e = refusal(snapshot, { mode: "nftables" }, [{ name: "canary", nodeSelector: "pool=canary" }]);
        assert.equal(e.name, "MigrationRefused");
        const lines = e.message.split("\n");
        assert.equal(lines[0], "kube-proxy-mode refuses this change (2 problem(s)):");
        assert.match(
            lines[1],
            /^- pools\[0\] \(canary\) node c1: status\.nodeInfo\.kernelVersion: c1: kernel 5\.10\.0 /,
        );
        assert.match(lines[1], / \[nodes: c1\]$/);
        assert.match(lines[2], /^ {2}fix: upgrade the node's kernel/);
        assert.match(
            lines[3],
            /^- pools: 2 node\(s\) run kube-proxy but are in no pool: w1, w2\. .* \[nodes: w1, w2\]$/,
        );
        assert.match(lines[4], /^ {2}fix: add a pool that selects them/);
        assert.equal(lines.length, 5, "warnings are not listed");
        assert.ok(e.findings.some((f) => f.severity === "warning"));
        assert.ok(e.findings.every((f) => typeof f.code === "string"));
    });
    it("an error without nodes or fix is one line", () => {
        const e = refusal(clusterSnapshot([]), { mode: "bogus" }, ALL);
        assert.match(
            e.message,
            /\(1 problem\(s\)\):\n- mode: mode "bogus" is not a kube-proxy mode; [^\n]*someone else decides$/,
        );
    });
    it("pools that do not parse are refused with their findings, and with the configuration's", () => {
        const e = refusal(clusterSnapshot([nodeState("n1", "a")]), { mode: "nftables" }, [{ name: "All" }]);
        assert.deepEqual(
            e.findings.filter((f) => f.severity === "error").map((f) => [f.code, f.field]),
            [
                ["pools.name", "pools[0].name"],
                ["pools.selector", "pools[0].nodeSelector"],
            ],
        );
        assert.ok(e.findings.some((f) => f.code === "nodePort.reach"));
        assert.ok(e.findings.every((f) => typeof f.code === "string"));
    });
    it("ipvs -> iptables is judged from the mode the cluster runs: an undrained pool is refused", () => {
        const e = refusal(clusterSnapshot([nodeState("n1", "a")]), { mode: "iptables" }, ALL);
        assert.deepEqual(
            e.findings.filter((f) => f.severity === "error").map((f) => f.field),
            ["pools[0].drain"],
        );
    });
});

describe("decideMigration: the findings of a migration", () => {
    it("a configuration that renders unchanged leaves the nodes on the installer's DaemonSet done", () => {
        const m = decideMigration(clusterSnapshot([nodeState("n1", "a")]), { mode: "ipvs" }, ALL);
        assert.equal(m.diff, "");
        assert.equal(m.plan.moving, 0);
        assert.deepEqual(
            m.plan.pools[0].nodes.map((n) => [n.name, n.action]),
            [["n1", "done"]],
        );
    });
    it("kubernetesVersion other than the server's is a warning, and the migration is for that release", () => {
        const m = decideMigration(
            clusterSnapshot([nodeState("n1", "a")]),
            { mode: "nftables", kubernetesVersion: "1.36" },
            ALL,
        );
        assert.equal(m.kubernetesVersion, "1.36");
        assert.deepEqual(
            m.findings.filter((f) => f.code === "version.mismatch"),
            [
                {
                    severity: "warning",
                    code: "version.mismatch",
                    field: "kubernetesVersion",
                    message: "kubernetesVersion says 1.36 but the API server runs v1.37.2; rules use 1.36",
                },
            ],
        );
    });
    it("no version warning when kubernetesVersion is the server's release or absent", () => {
        for (const desired of [{ mode: "nftables", kubernetesVersion: "v1.37.0" }, { mode: "nftables" }]) {
            const m = decideMigration(clusterSnapshot([nodeState("n1", "a")]), desired, ALL);
            assert.equal(m.kubernetesVersion, "1.37");
            assert.deepEqual(
                m.findings.filter((f) => f.code === "version.mismatch"),
                [],
                JSON.stringify(desired),
            );
        }
    });
    it("conntrack.tcpBeLiberal in the new configuration silences the pre-6.1 warning for each moving node", () => {
        const snapshot = clusterSnapshot([nodeState("n1", "a", "5.14.0")]);
        const perNode = (desired: object) =>
            decideMigration(snapshot, desired, ALL)
                .findings.filter((f) => f.code === "nftables.conntrack" && f.nodes)
                .map((f) => f.field);
        assert.deepEqual(perNode({ mode: "nftables" }), ["pools[0] (all) node n1: conntrack.tcpBeLiberal"]);
        assert.deepEqual(perNode({ mode: "nftables", conntrack: { tcpBeLiberal: true } }), []);
    });
});

describe("decideMigration: the Services a NodePort warning names", () => {
    const service = (name: string, nodePorts: number[]): ServiceFacts => ({
        namespace: "shop",
        name,
        type: nodePorts.length ? "NodePort" : "ClusterIP",
        nodePorts,
    });
    const messages = (services: ServiceFacts[]) => {
        const m = decideMigration(clusterSnapshot([nodeState("n1", "a")], { services }), { mode: "nftables" }, ALL);
        return new Map(m.findings.map((f) => [f.code, f.message]));
    };

    it("both NodePort warnings name the Services that expose NodePorts; other findings do not", () => {
        const m = messages([service("web", [30080, 30443]), service("db", [])]);
        const named = ". 1 Service(s) expose NodePorts: shop/web (30080, 30443)";
        assert.ok(m.get("nodePort.reach")?.endsWith(named), m.get("nodePort.reach"));
        assert.ok(m.get("nodePort.localhost")?.endsWith(named), m.get("nodePort.localhost"));
        assert.doesNotMatch(m.get("nftables.stateMoves") ?? "", /expose NodePorts/);
    });
    it("without a Service exposing NodePorts the warnings name none", () => {
        assert.doesNotMatch(messages([service("db", [])]).get("nodePort.reach") ?? "", /Service/);
    });
    it("names at most 8 Services, then ...", () => {
        const services = (n: number) => Array.from({ length: n }, (_, i) => service(`s${i + 1}`, [30000 + i]));
        const eight = messages(services(8)).get("nodePort.reach") ?? "";
        assert.match(
            eight,
            /\. 8 Service\(s\) expose NodePorts: shop\/s1 \(30000\), shop\/s2 \(30001\), .*shop\/s8 \(30007\)$/,
        );
        const nine = messages(services(9)).get("nodePort.reach") ?? "";
        assert.match(nine, /\. 9 Service\(s\) expose NodePorts: shop\/s1 .*shop\/s8 \(30007\) \.\.\. and 1 more$/);
    });
});
