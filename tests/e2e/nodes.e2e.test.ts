// End to end on REAL nodes: every reference-cluster node is a network namespace where the node
// agent runs the real kube-proxy binary (iptables and nftables modes), probe pods run as a kubelet
// would run their spec (a mount namespace with the node's root at /host, busybox-static standing
// in for the probe image, so the probe's `chroot /host` path runs), and traffic to a Service's ClusterIP goes through the rules that node's
// kube-proxy programmed. The one SIMULATED piece is ipvs mode (no IPVS in this kernel): a
// stand-in lays down ipvs-era node state; the test names say where it is involved.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { ClusterState } from "../../scripts/referenceCluster.js";
import { realNodesSupported } from "../../scripts/realNodes.js";
import { WITHOUT_TOOLS_LABEL } from "../../scripts/nodeAgent.constants.js";
import { runCli } from "../helpers.js";
import { clients, startCluster, stopCluster, workspace, type Workspace } from "./support.js";

const SMALL: [string, number][] = [
    ["canary", 1],
    ["workers", 2],
];
const POOLS = [
    { name: "canary", nodeSelector: "pool=canary" },
    { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2 },
];
const VERIFY = { nodeChecks: true, service: "demo/backend" };

function netns(c: ClusterState, node: string): string {
    return c.network!.nodes.find((n) => n.name === node)!.netns;
}

/** A command in a node's network namespace (argv, no shell). */
function onNode(c: ClusterState, node: string, argv: string[]): { code: number; out: string } {
    const r = spawnSync("ip", ["netns", "exec", netns(c, node), ...argv], { encoding: "utf8" });
    return { code: r.status ?? 1, out: `${r.stdout}${r.stderr}` };
}

async function backendClusterIP(c: ClusterState): Promise<string> {
    const svc = await clients(c).core.readNamespacedService({ name: "backend", namespace: "demo" });
    return svc.spec!.clusterIP!;
}

/** Waits until every node's kube-proxy answers /proxyMode (the processes start right after the cluster is up). */
async function proxiesAnswer(c: ClusterState): Promise<void> {
    const until = Date.now() + 60_000;
    for (const n of c.nodes) {
        while (onNode(c, n.name, ["curl", "-s", "-m", "2", "127.0.0.1:10249/proxyMode"]).out === "") {
            if (Date.now() > until) throw new Error(`kube-proxy on ${n.name} does not answer /proxyMode`);
            await new Promise((r) => setTimeout(r, 300));
        }
    }
}

/** Polls a node until `argv`'s output matches `pattern`: kube-proxy answers /proxyMode before its first sync has written any rule. */
async function eventuallyOnNode(c: ClusterState, node: string, argv: string[], pattern: RegExp, what: string): Promise<void> {
    const until = Date.now() + 60_000;
    let last = onNode(c, node, argv).out;
    while (!pattern.test(last)) {
        if (Date.now() > until) assert.fail(`${node}: ${what} within 60 s; last output of ${argv.join(" ")}:\n${last}`);
        await new Promise((r) => setTimeout(r, 500));
        last = onNode(c, node, argv).out;
    }
}

/** The real kube-proxy processes in a node's namespace. */
function kubeProxyPids(c: ClusterState, node: string): string[] {
    return execFileSync("ip", ["netns", "pids", netns(c, node)], { encoding: "utf8" })
        .split("\n")
        .filter((p) => {
            try {
                return p !== "" && /\/kube-proxy\0/.test(readFileSync(`/proc/${p}/cmdline`, "utf8"));
            } catch {
                return false; // gone between the listing and the read (a probe, a restart)
            }
        });
}

function verify(c: ClusterState, node: string, extra: string[] = []) {
    const r = runCli(["verify", "--node", node, "--service", "demo/backend", "--json", ...extra], { env: { KUBECONFIG: c.kubeconfig } });
    return { code: r.code, stderr: r.stderr, result: r.stdout ? JSON.parse(r.stdout) : undefined };
}

function failedChecks(result: any): string[] {
    return result.checks.filter((x: any) => !x.ok).map((x: any) => x.check);
}

describe("@e2e real nodes: the real kube-proxy in network namespaces, every built-in check on", function () {
    this.timeout(900_000);
    let cluster: ClusterState | undefined;
    let ws: Workspace | undefined;
    const lines: string[] = [];
    const onOutput = (s: string) => lines.push(s);

    before(function () {
        const s = realNodesSupported();
        // CI runs as root with the tools the toolchain installs: there this must hold
        assert.ok(s.ok, `real nodes are required for these tests: ${s.why}`);
    });
    beforeEach(() => {
        lines.length = 0;
    });
    afterEach(async function () {
        if (this.currentTest?.state === "failed") process.stderr.write(`--- output of the failed test ---\n${lines.join("").slice(-8000)}\n`);
        ws?.dispose();
        ws = undefined;
        await stopCluster(cluster);
        cluster = undefined;
    });

    it("iptables -> nftables, all real: the kube-proxy table exists, the KUBE chains are gone, /proxyMode says nftables, the Service answers from every node", async () => {
        cluster = await startCluster({ nodes: "real", mode: "iptables", pools: SMALL });
        await proxiesAnswer(cluster);
        const ip = await backendClusterIP(cluster);
        for (const n of cluster.nodes) {
            assert.equal(onNode(cluster, n.name, ["curl", "-s", "-m", "5", "127.0.0.1:10249/proxyMode"]).out, "iptables", `${n.name} starts in real iptables mode`);
            await eventuallyOnNode(cluster, n.name, ["iptables-save", "-t", "nat"], /^:KUBE-SERVICES/m, "the real iptables kube-proxy wrote its KUBE-SERVICES chain");
        }
        ws = await workspace(cluster, { mode: "nftables", nodePortAddresses: ["0.0.0.0/0"], pools: POOLS, verify: VERIFY });
        await ws.stack.up({ onOutput });
        const out = lines.join("");
        for (const check of ["startup-log", "mode", "leftovers", "rules", "sync", "connection"]) assert.match(out, new RegExp(`node canary-1: ok ${check}:`), `built-in check ${check} ran and passed`);
        for (const n of cluster.nodes) {
            assert.equal(onNode(cluster, n.name, ["nft", "list", "table", "ip", "kube-proxy"]).code, 0, `${n.name} has table ip kube-proxy`);
            assert.doesNotMatch(onNode(cluster, n.name, ["iptables-save"]).out, /^:KUBE-(SERVICES|SVC-|SEP-|NODEPORTS|POSTROUTING)/m, `${n.name} has no kube-proxy iptables chains`);
            assert.equal(onNode(cluster, n.name, ["curl", "-s", "-m", "5", "127.0.0.1:10249/proxyMode"]).out, "nftables");
            assert.match(onNode(cluster, n.name, ["curl", "-s", "-m", "5", `http://${ip}/`]).out, /backend answered GET \//, `the Service answers from ${n.name}`);
        }
    });

    it("ipvs -> nftables (ipvs state laid down by the SIMULATED stand-in) beside another agent's KUBE-ROUTER-*/KUBE-NWPLCY-* chains, KUBE-SRC-* ipset and nftables table: kube-proxy's leftovers are found and removed through the probe pod's chroot /host, the other agent's are byte-identical afterwards, and verify fails when a kube-ipvs0 with addresses is left", async () => {
        cluster = await startCluster({ nodes: "real", mode: "ipvs", pools: SMALL });
        await proxiesAnswer(cluster);
        for (const n of cluster.nodes) {
            await eventuallyOnNode(cluster, n.name, ["ip", "-o", "addr", "show", "dev", "kube-ipvs0"], /inet 10\.96\./, "the stand-in laid down kube-ipvs0");
        }
        // another agent (kube-router, as k3s embeds it) on every node
        const foreign = (node: string) => ({
            filter: onNode(cluster!, node, ["iptables-save", "-t", "filter"]).out.split("\n").filter((l) => /KUBE-ROUTER-INPUT/.test(l)),
            nat: onNode(cluster!, node, ["iptables-save", "-t", "nat"]).out.split("\n").filter((l) => /KUBE-NWPLCY-6MLZY3WQ4CE2/.test(l)),
            ipset: onNode(cluster!, node, ["ipset", "list", "KUBE-SRC-OGEBQ3C2ZBT4"]).out,
            nft: onNode(cluster!, node, ["nft", "list", "table", "inet", "kube-router-lb"]).out,
        });
        const before = new Map<string, ReturnType<typeof foreign>>();
        for (const n of cluster.nodes) {
            for (const argv of [
                ["iptables", "-t", "filter", "-N", "KUBE-ROUTER-INPUT"],
                ["iptables", "-t", "filter", "-A", "KUBE-ROUTER-INPUT", "-d", "10.96.0.0/12", "-j", "RETURN"],
                ["iptables", "-t", "filter", "-I", "INPUT", "-m", "comment", "--comment", "kube-router netpol", "-j", "KUBE-ROUTER-INPUT"],
                ["iptables", "-t", "nat", "-N", "KUBE-NWPLCY-6MLZY3WQ4CE2"],
                ["ipset", "create", "KUBE-SRC-OGEBQ3C2ZBT4", "hash:ip"],
                ["ipset", "add", "KUBE-SRC-OGEBQ3C2ZBT4", "10.213.0.7"],
                ["iptables", "-t", "nat", "-A", "KUBE-NWPLCY-6MLZY3WQ4CE2", "-m", "set", "--match-set", "KUBE-SRC-OGEBQ3C2ZBT4", "src", "-j", "RETURN"],
                ["nft", "add", "table", "inet", "kube-router-lb"],
                ["nft", "add", "chain", "inet", "kube-router-lb", "input", "{ type filter hook input priority 0; }"],
            ]) assert.equal(onNode(cluster, n.name, argv).code, 0, `${n.name}: ${argv.join(" ")}`);
            before.set(n.name, foreign(n.name));
            assert.equal(before.get(n.name)!.filter.length, 3, "the chain, its rule, the INPUT rule");
        }
        ws = await workspace(cluster, { mode: "nftables", nodePortAddresses: ["0.0.0.0/0"], pools: POOLS, verify: VERIFY });
        await ws.stack.up({ onOutput });
        const out = lines.join("");
        assert.match(out, /kube-proxy left kube-ipvs0 exists holding \d+ address/);
        assert.match(out, /cleanup: removed link kube-ipvs0/);
        // the probe pod ran the production path: busybox's shell, the host's tools through chroot /host
        assert.match(out, /cleanup: ran via: chroot \/host; the pod's shell: \/bin\/busybox/);
        assert.match(out, /cleanup: not ours, left alone: iptables chain KUBE-ROUTER-INPUT \(table filter, nft backend\)/);
        assert.match(out, /cleanup: not ours, left alone: iptables chain KUBE-NWPLCY-6MLZY3WQ4CE2 \(table nat, nft backend\)/);
        assert.match(out, /cleanup: not ours, left alone: ipset KUBE-SRC-OGEBQ3C2ZBT4/);
        assert.match(out, /cleanup: not ours, left alone: nftables table inet kube-router-lb/);
        for (const n of cluster.nodes) {
            assert.match(out, new RegExp(`node ${n.name}: ok leftovers: no state of another mode left; not ours, left alone: `), `${n.name} verified`);
            assert.deepEqual(foreign(n.name), before.get(n.name), `${n.name}: the other agent's chains, rules, ipset and table are as they were`);
            assert.notEqual(onNode(cluster, n.name, ["ip", "link", "show", "kube-ipvs0"]).code, 0, `${n.name}: kube-ipvs0 is gone`);
            assert.doesNotMatch(onNode(cluster, n.name, ["ipset", "list", "-n"]).out, /^KUBE-(?!SRC-)/m, `${n.name}: kube-proxy's ipsets are gone`);
        }
        // a kube-ipvs0 holding a ClusterIP, left behind: the leftovers check must catch it
        const ip = await backendClusterIP(cluster);
        onNode(cluster, "workers-1", ["ip", "link", "add", "kube-ipvs0", "type", "bridge"]);
        onNode(cluster, "workers-1", ["ip", "addr", "add", `${ip}/32`, "dev", "kube-ipvs0"]);
        const v = verify(cluster, "workers-1");
        assert.equal(v.code, 1);
        assert.ok(failedChecks(v.result).includes("leftovers"), JSON.stringify(v.result.checks));
        assert.match(v.result.checks.find((x: any) => x.check === "leftovers").detail, new RegExp(`kube-ipvs0 exists holding 1 address\\(es\\) \\(${ip.replace(/\./g, "\\.")}/32\\)`));
    });

    it("ipvs -> iptables (ipvs state from the SIMULATED stand-in): kube-proxy is stopped, the leftovers removed, then the real iptables kube-proxy starts", async () => {
        cluster = await startCluster({ nodes: "real", mode: "ipvs", pools: [["canary", 1]] });
        ws = await workspace(cluster, { mode: "iptables", pools: [{ ...POOLS[0], allowUnroutedNode: true }], verify: VERIFY });
        await ws.stack.up({ onOutput });
        const out = lines.join("");
        assert.match(out, /kube-proxy stopped; removing ipvs leftovers \(iptables mode does not\)/);
        assert.match(out, /node canary-1: ok leftovers: no state of another mode left/);
        assert.notEqual(onNode(cluster, "canary-1", ["ip", "link", "show", "kube-ipvs0"]).code, 0);
        assert.equal(onNode(cluster, "canary-1", ["curl", "-s", "-m", "5", "127.0.0.1:10249/proxyMode"]).out, "iptables");
        const ip = await backendClusterIP(cluster);
        assert.match(onNode(cluster, "canary-1", ["curl", "-s", "-m", "5", `http://${ip}/`]).out, /backend answered/);
    });

    it("a node whose kube-proxy cannot start in nftables mode (nft missing from its PATH) stops the rollout there; the node is rolled back (to the SIMULATED ipvs stand-in) and the error carries kube-proxy's own message", async () => {
        cluster = await startCluster({ nodes: "real", mode: "ipvs", pools: [["canary", 1], ["workers", 2]], nodeLabels: { "workers-2": { [WITHOUT_TOOLS_LABEL]: "nft" } } });
        ws = await workspace(cluster, { mode: "nftables", nodePortAddresses: ["0.0.0.0/0"], pools: [POOLS[0], { ...POOLS[1], maxUnavailable: 1 }], verify: VERIFY });
        await assert.rejects(ws.stack.up({ onOutput }), (e: Error) => {
            assert.match(e.message, /node workers-2 \(pool workers\) failed restart/);
            assert.match(e.message, /kube-proxy pod kube-proxy-\w+-\w+ on workers-2 is failing/);
            // kube-proxy's own log line, after the failure names the pod (not just any "nft" in the output)
            assert.match(e.message, /its log ends:\n[\s\S]*"Error running ProxyServer" err="unable to create proxier: unable to create ipv4 proxier: could not find nftables binary: exec: \\"nft\\": executable file not found in \$PATH"/);
            assert.match(e.message, /rolled back to ipvs mode \(the installer's DaemonSet\) and uncordoned/);
            return true;
        });
        const node = await clients(cluster).core.readNode({ name: "workers-2" });
        assert.equal(node.spec?.unschedulable, undefined);
        assert.equal(onNode(cluster, "workers-2", ["curl", "-s", "-m", "5", "127.0.0.1:10249/proxyMode"]).out, "ipvs", "workers-2 is back on its old (ipvs) configuration");
        assert.equal(onNode(cluster, "workers-1", ["curl", "-s", "-m", "5", "127.0.0.1:10249/proxyMode"]).out, "nftables", "workers-1 moved before it");
    });

    it("a deleted kube-proxy pod gets its grace period, as from a kubelet: SIGTERM, the deletion's grace period, then SIGKILL (a real kube-proxy that does not act on SIGTERM still runs 6 s into a 10 s grace period, then is killed)", async () => {
        cluster = await startCluster({ nodes: "real", mode: "iptables", pools: [["canary", 1]] });
        await proxiesAnswer(cluster);
        const node = "canary-1";
        const pid = Number(kubeProxyPids(cluster, node)[0]);
        assert.ok(pid, "the real kube-proxy process runs in the namespace");
        const { core } = clients(cluster);
        const pod = (await core.listNamespacedPod({ namespace: "kube-system", fieldSelector: `spec.nodeName=${node}` })).items.find((p) => p.metadata!.name!.startsWith("kube-proxy"))!;
        const alive = () => {
            try {
                process.kill(pid, 0);
                return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
            } catch {
                return false;
            }
        };
        process.kill(pid, "SIGSTOP"); // a stopped process does not act on the SIGTERM it is sent
        await core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: "kube-system", gracePeriodSeconds: 10 });
        await new Promise((r) => setTimeout(r, 6000));
        assert.ok(alive(), "still running 6 s into its 10 s grace period");
        const until = Date.now() + 20_000;
        while (alive() && Date.now() < until) await new Promise((r) => setTimeout(r, 250));
        assert.ok(!alive(), "killed after its grace period");
        assert.match(readFileSync(join(cluster.dir, "logs", "node-agent.log"), "utf8"), new RegExp(`${node}: ${pod.metadata!.name} did not stop within its 10s grace period: SIGKILL`));
    });

    it("a node whose rules are broken after start (its kube-proxy table deleted): the connection and rules checks fail and name the node", async () => {
        cluster = await startCluster({ nodes: "real", mode: "iptables", pools: SMALL });
        ws = await workspace(cluster, { mode: "nftables", nodePortAddresses: ["0.0.0.0/0"], pools: POOLS, verify: VERIFY });
        await ws.stack.up({ onOutput });
        assert.equal(verify(cluster, "workers-2").code, 0, "healthy before");
        assert.equal(onNode(cluster, "workers-2", ["nft", "delete", "table", "ip", "kube-proxy"]).code, 0);
        const v = verify(cluster, "workers-2");
        assert.equal(v.code, 1);
        assert.equal(v.result.node, "workers-2");
        const failed = failedChecks(v.result);
        assert.ok(failed.includes("connection"), JSON.stringify(v.result.checks));
        assert.ok(failed.includes("rules"), JSON.stringify(v.result.checks));
    });

    it("the mode, startup-log, leftovers (a leftover ipset; no iptables-save on the node), connection and sync checks each fail when the condition they guard is broken (real nftables node; rules: the test above)", async () => {
        cluster = await startCluster({ nodes: "real", mode: "nftables", pools: [["canary", 1]] });
        const node = "canary-1";
        // wait for the real kube-proxy to sync once
        for (let i = 0; i < 40 && verify(cluster, node).code !== 0; i++) await new Promise((r) => setTimeout(r, 500));
        const healthy = verify(cluster, node);
        assert.equal(healthy.code, 0, JSON.stringify(healthy.result?.checks ?? healthy.stderr));
        assert.deepEqual(healthy.result.checks.map((x: any) => x.check).sort(), ["connection", "leftovers", "mode", "rules", "startup-log", "sync"]);

        // mode and startup-log: the process chose nftables, the check expects iptables
        const wrongMode = verify(cluster, node, ["--mode", "iptables"]);
        assert.ok(["mode", "startup-log"].every((c) => failedChecks(wrongMode.result).includes(c)), JSON.stringify(wrongMode.result.checks));

        // leftovers: an ipset of ipvs mode on an nftables node
        onNode(cluster, node, ["ipset", "create", "KUBE-CLUSTER-IP", "hash:ip,port"]);
        assert.deepEqual(failedChecks(verify(cluster, node).result), ["leftovers"]);
        onNode(cluster, node, ["ipset", "destroy", "KUBE-CLUSTER-IP"]);

        // leftovers, when the probe cannot look: no IPv4 iptables-save of any backend on the node's PATH
        const k8sApi = await import("@kubernetes/client-node");
        const label = (value: string | null) =>
            clients(cluster!).core.patchNode({ name: node, body: { metadata: { labels: { [WITHOUT_TOOLS_LABEL]: value } } } }, k8sApi.setHeaderOptions("Content-Type", k8sApi.PatchStrategy.MergePatch));
        await label("iptables-save.iptables-nft-save.iptables-legacy-save");
        try {
            const blind = verify(cluster, node);
            assert.deepEqual(failedChecks(blind.result), ["leftovers"], JSON.stringify(blind.result.checks));
            assert.match(blind.result.checks.find((x: any) => x.check === "leftovers").detail, /^the probe cannot see on node canary-1: iptables-save is not on the node/);
        } finally {
            await label(null);
        }

        // connection: the Service's only endpoint moved to an address nothing answers on
        const { kc } = clients(cluster);
        const k8s = await import("@kubernetes/client-node");
        const discovery = kc.makeApiClient(k8s.DiscoveryV1Api);
        const slice = await discovery.readNamespacedEndpointSlice({ name: "backend-1", namespace: "demo" });
        const realIp = slice.endpoints[0].addresses[0];
        const nowhere = realIp.replace(/\.\d+$/, ".250");
        slice.endpoints[0].addresses = [nowhere];
        await discovery.replaceNamespacedEndpointSlice({ name: "backend-1", namespace: "demo", body: slice });
        await eventuallyOnNode(cluster, node, ["nft", "list", "table", "ip", "kube-proxy"], new RegExp(nowhere.replace(/\./g, "\\.")), "kube-proxy synced the moved endpoint");
        assert.deepEqual(failedChecks(verify(cluster, node).result), ["connection"]);

        // sync (and mode): a hung kube-proxy answers nothing and syncs nothing
        const pid = kubeProxyPids(cluster, node)[0];
        assert.ok(pid, "the real kube-proxy process runs in the namespace");
        process.kill(Number(pid), "SIGSTOP");
        try {
            const hung = verify(cluster, node);
            assert.ok(failedChecks(hung.result).includes("sync"), JSON.stringify(hung.result.checks));
        } finally {
            process.kill(Number(pid), "SIGCONT");
        }
    });
});
