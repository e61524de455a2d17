// End to end on REAL nodes: every reference-cluster node is a network namespace where the node
// agent runs the real kube-proxy binary (iptables and nftables modes), probe pods run as a kubelet
// would run their spec (a mount namespace with the node's root at /host, busybox-static standing
// in for the probe image, so the probe's `chroot /host` path runs), and traffic to a Service's ClusterIP goes through the rules that node's
// kube-proxy programmed. The one SIMULATED piece is ipvs mode (no IPVS in this kernel): a
// stand-in lays down ipvs-era node state; the test names say where it is involved.
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import type { ClusterState } from "../../scripts/referenceCluster.js";
import { realNodesSupported } from "../../scripts/realNodes.js";
import { PAUSE_TOOLS_LABEL, pauseDir, WITHOUT_TOOLS_LABEL } from "../../scripts/nodeAgent.constants.js";
import { runCli } from "../helpers.js";
import {
    BUILT_IN_CHECKS,
    backendClusterIP,
    clients,
    eventuallyOnNode,
    kubeProxyPids,
    onNode,
    proxiesAnswer,
    startCluster,
    stopCluster,
    workspace,
    type Workspace,
} from "./support.js";

const SMALL: [string, number][] = [
    ["canary", 1],
    ["workers", 2],
];
const POOLS = [
    { name: "canary", nodeSelector: "pool=canary" },
    { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2 },
];
const VERIFY = { nodeChecks: true, service: "demo/backend" };

function verify(c: ClusterState, node: string, extra: string[] = []) {
    const r = runCli(["verify", "--node", node, "--service", "demo/backend", "--json", ...extra], {
        env: { KUBECONFIG: c.kubeconfig },
    });
    return { code: r.code, stderr: r.stderr, result: r.stdout ? JSON.parse(r.stdout) : undefined };
}

function failedChecks(result: any): string[] {
    return result.checks.filter((x: any) => !x.ok).map((x: any) => x.check);
}

// ---- another agent on the node: kube-router (as k3s embeds it), beside kube-proxy ----------------

/** The other agent's objects: names kube-router uses (KUBE-ROUTER-*, KUBE-NWPLCY-*, KUBE-SRC-*), an nftables table of its own. */
const FOREIGN = {
    chainIn: "KUBE-ROUTER-INPUT",
    natChain: "KUBE-NWPLCY-6MLZY3WQ4CE2",
    set4: "KUBE-SRC-OGEBQ3C2ZBT4",
    set6: "KUBE-SRC-6OGEBQ3C2ZBT4",
    nftTable: "kube-router-lb",
};
const FOREIGN_LINE = new RegExp(`${FOREIGN.chainIn}|${FOREIGN.natChain}|KUBE-SRC-`);

/** Lays down the other agent's state on a node, IPv4 and IPv6: chains with rules (and rules jumping to them from built-in chains), ipsets, an nftables table with a chain and a rule. */
function plantForeignAgent(c: ClusterState, node: string): void {
    for (const [ipt, set, family, net] of [
        ["iptables", FOREIGN.set4, "inet", "10.96.0.0/12"],
        ["ip6tables", FOREIGN.set6, "inet6", "fd00:10:96::/108"],
    ] as const) {
        for (const argv of [
            [ipt, "-t", "filter", "-N", FOREIGN.chainIn],
            [ipt, "-t", "filter", "-A", FOREIGN.chainIn, "-d", net, "-j", "RETURN"],
            [
                ipt,
                "-t",
                "filter",
                "-I",
                "INPUT",
                "-m",
                "comment",
                "--comment",
                "kube-router netpol",
                "-j",
                FOREIGN.chainIn,
            ],
            [ipt, "-t", "nat", "-N", FOREIGN.natChain],
            ["ipset", "create", set, "hash:ip", "family", family],
            ["ipset", "add", set, family === "inet" ? "10.213.0.7" : "fd00:213::7"],
            [ipt, "-t", "nat", "-A", FOREIGN.natChain, "-m", "set", "--match-set", set, "src", "-j", "RETURN"],
        ]) {
            const r = onNode(c, node, argv);
            assert.equal(r.code, 0, `${node}: ${argv.join(" ")}: ${r.out}`);
        }
    }
    for (const argv of [
        ["nft", "add", "table", "inet", FOREIGN.nftTable],
        ["nft", "add", "chain", "inet", FOREIGN.nftTable, "input", "{ type filter hook input priority 0; }"],
        ["nft", "add", "rule", "inet", FOREIGN.nftTable, "input", "tcp", "dport", "6443", "counter", "accept"],
    ])
        assert.equal(onNode(c, node, argv).code, 0, `${node}: ${argv.join(" ")}`);
}

/** The other agent's state as the node's own tools print it, filtered to it: iptables-save and ip6tables-save lines naming its chains or sets, its ipsets, its nftables table in `nft list ruleset`. */
function foreignState(c: ClusterState, node: string) {
    const save = (ipt: string) =>
        onNode(c, node, [`${ipt}-save`])
            .out.split("\n")
            .filter((l) => FOREIGN_LINE.test(l));
    const ruleset = onNode(c, node, ["nft", "list", "ruleset"]).out;
    const start = ruleset.indexOf(`table inet ${FOREIGN.nftTable} {`);
    return {
        iptables: save("iptables"),
        ip6tables: save("ip6tables"),
        ipsets: [FOREIGN.set4, FOREIGN.set6].map((s) => onNode(c, node, ["ipset", "list", s]).out),
        nft: start < 0 ? "" : ruleset.slice(start, ruleset.indexOf("\n}", start) + 2),
    };
}

/** Rules another process adds to a node while the cleanup runs: to the other agent's filter chain (IPv4, IPv6) and to nat's built-in POSTROUTING, the table kube-proxy's chains live in. */
const LATE_RULES: { ipt: "iptables" | "ip6tables"; table: string; rule: string[]; saved: string }[] = [
    {
        ipt: "iptables",
        table: "filter",
        rule: [
            "-A",
            FOREIGN.chainIn,
            "-s",
            "10.213.0.99/32",
            "-m",
            "comment",
            "--comment",
            "added during the cleanup",
            "-j",
            "RETURN",
        ],
        saved: `-A ${FOREIGN.chainIn} -s 10.213.0.99/32 -m comment --comment "added during the cleanup" -j RETURN`,
    },
    {
        ipt: "iptables",
        table: "nat",
        rule: ["-A", "POSTROUTING", "-m", "comment", "--comment", "added during the cleanup", "-j", FOREIGN.natChain],
        saved: `-A POSTROUTING -m comment --comment "added during the cleanup" -j ${FOREIGN.natChain}`,
    },
    {
        ipt: "ip6tables",
        table: "filter",
        rule: [
            "-A",
            FOREIGN.chainIn,
            "-s",
            "fd00:213::99/128",
            "-m",
            "comment",
            "--comment",
            "added during the cleanup",
            "-j",
            "RETURN",
        ],
        saved: `-A ${FOREIGN.chainIn} -s fd00:213::99/128 -m comment --comment "added during the cleanup" -j RETURN`,
    },
];

/** Asserts the other agent's state is byte-identical to `before`, plus exactly the rules added during the cleanup, each still there. */
function assertForeignKept(
    c: ClusterState,
    node: string,
    before: ReturnType<typeof foreignState>,
    late: typeof LATE_RULES = [],
): void {
    const now = foreignState(c, node);
    for (const r of late)
        assert.ok(
            now[r.ipt].includes(r.saved),
            `${node}: the rule added during the cleanup survives: ${r.saved}\n${now[r.ipt].join("\n")}`,
        );
    const added = new Set(late.map((r) => r.saved));
    assert.deepEqual(
        {
            ...now,
            iptables: now.iptables.filter((l) => !added.has(l)),
            ip6tables: now.ip6tables.filter((l) => !added.has(l)),
        },
        before,
        `${node}: the other agent's chains, rules, ipsets and table are as they were`,
    );
}

/**
 * Runs `write` on a node while the cleanup is inside its window: the reference cluster's TEST HOOK
 * (PAUSE_TOOLS_LABEL, set on the node beforehand) holds the node's `tool` (the cleanup's restore,
 * after it read the tables) until `write` is done. Resolves false when `done` settles first
 * (the tool was never called).
 */
async function whileToolPaused(
    c: ClusterState,
    node: string,
    tool: string,
    done: Promise<unknown>,
    write: () => void,
): Promise<boolean> {
    let settled = false;
    void done.then(
        () => (settled = true),
        () => (settled = true),
    );
    const dir = pauseDir(c.dir, node);
    while (!existsSync(join(dir, `paused-${tool}`))) {
        if (settled) return false;
        await new Promise((r) => setTimeout(r, 200));
    }
    try {
        write();
    } finally {
        writeFileSync(join(dir, `resume-${tool}`), "");
    }
    return true;
}

async function labelNode(c: ClusterState, node: string, label: string, value: string | null): Promise<void> {
    const k8sApi = await import("@kubernetes/client-node");
    await clients(c).core.patchNode(
        { name: node, body: { metadata: { labels: { [label]: value } } } },
        k8sApi.setHeaderOptions("Content-Type", k8sApi.PatchStrategy.MergePatch),
    );
}

/** The other process: adds LATE_RULES on the node (argv, no shell). */
function addLateRules(c: ClusterState, node: string): void {
    for (const r of LATE_RULES) {
        const out = onNode(c, node, [r.ipt, "-t", r.table, ...r.rule]);
        assert.equal(out.code, 0, `${node}: ${r.ipt} -t ${r.table} ${r.rule.join(" ")}: ${out.out}`);
    }
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
        if (this.currentTest?.state === "failed")
            process.stderr.write(`--- output of the failed test ---\n${lines.join("").slice(-8000)}\n`);
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
            assert.equal(
                onNode(cluster, n.name, ["curl", "-s", "-m", "5", "127.0.0.1:10249/proxyMode"]).out,
                "iptables",
                `${n.name} starts in real iptables mode`,
            );
            await eventuallyOnNode(
                cluster,
                n.name,
                ["iptables-save", "-t", "nat"],
                /^:KUBE-SERVICES/m,
                "the real iptables kube-proxy wrote its KUBE-SERVICES chain",
            );
        }
        ws = await workspace(cluster, {
            mode: "nftables",
            nodePortAddresses: ["0.0.0.0/0"],
            pools: POOLS,
            verify: VERIFY,
        });
        await ws.stack.up({ onOutput });
        const out = lines.join("");
        for (const check of BUILT_IN_CHECKS)
            assert.match(out, new RegExp(`node canary-1: ok ${check}:`), `built-in check ${check} ran and passed`);
        for (const n of cluster.nodes) {
            assert.equal(
                onNode(cluster, n.name, ["nft", "list", "table", "ip", "kube-proxy"]).code,
                0,
                `${n.name} has table ip kube-proxy`,
            );
            assert.doesNotMatch(
                onNode(cluster, n.name, ["iptables-save"]).out,
                /^:KUBE-(SERVICES|SVC-|SEP-|NODEPORTS|POSTROUTING)/m,
                `${n.name} has no kube-proxy iptables chains`,
            );
            assert.equal(
                onNode(cluster, n.name, ["curl", "-s", "-m", "5", "127.0.0.1:10249/proxyMode"]).out,
                "nftables",
            );
            assert.match(
                onNode(cluster, n.name, ["curl", "-s", "-m", "5", `http://${ip}/`]).out,
                /backend answered GET \//,
                `the Service answers from ${n.name}`,
            );
        }
    });

    it("ipvs -> nftables (ipvs state laid down by the SIMULATED stand-in) beside another agent's KUBE-ROUTER-*/KUBE-NWPLCY-* chains, KUBE-SRC-* ipsets and nftables table, IPv4 and IPv6: kube-proxy's leftovers are found and removed through the probe pod's chroot /host, rules another process adds during canary-1's cleanup survive, the other agent's state is byte-identical otherwise, and verify fails when a kube-ipvs0 with addresses is left", async () => {
        cluster = await startCluster({ nodes: "real", mode: "ipvs", pools: SMALL });
        await proxiesAnswer(cluster);
        for (const n of cluster.nodes) {
            await eventuallyOnNode(
                cluster,
                n.name,
                ["ip", "-o", "addr", "show", "dev", "kube-ipvs0"],
                /inet 10\.96\./,
                "the stand-in laid down kube-ipvs0",
            );
        }
        // another agent (kube-router, as k3s embeds it) on every node
        const before = new Map<string, ReturnType<typeof foreignState>>();
        for (const n of cluster.nodes) {
            plantForeignAgent(cluster, n.name);
            before.set(n.name, foreignState(cluster, n.name));
            assert.equal(
                before.get(n.name)!.iptables.filter((l) => l.includes(FOREIGN.chainIn)).length,
                3,
                `the chain, its rule, the INPUT rule:\n${before.get(n.name)!.iptables.join("\n")}`,
            );
        }
        // TEST HOOK: canary-1's cleanup restore waits, after the cleanup read the tables, until another process has written
        await labelNode(cluster, "canary-1", PAUSE_TOOLS_LABEL, "iptables-nft-restore");
        ws = await workspace(cluster, {
            mode: "nftables",
            nodePortAddresses: ["0.0.0.0/0"],
            pools: POOLS,
            verify: VERIFY,
        });
        const up = ws.stack.up({ onOutput });
        const paused = await whileToolPaused(cluster, "canary-1", "iptables-nft-restore", up, () =>
            addLateRules(cluster!, "canary-1"),
        );
        await up;
        assert.ok(paused, "canary-1's cleanup ran iptables-nft-restore, and the other process wrote while it was held");
        const out = lines.join("");
        assert.match(out, /kube-proxy left kube-ipvs0 exists holding \d+ address/);
        assert.match(out, /cleanup: removed link kube-ipvs0/);
        // the probe pod ran the production path: busybox's shell, the host's tools through chroot /host
        assert.match(out, /cleanup: ran via: chroot \/host; the pod's shell: \/bin\/busybox/);
        assert.match(
            out,
            /cleanup: not ours, left alone: iptables chains \(table filter, nft backend\): \d+: [^\n]*KUBE-ROUTER-INPUT/,
        );
        assert.match(
            out,
            /cleanup: not ours, left alone: iptables chains \(table nat, nft backend\): \d+: [^\n]*KUBE-NWPLCY-6MLZY3WQ4CE2/,
        );
        assert.match(out, /cleanup: not ours, left alone: ipsets: \d+: [^\n]*KUBE-SRC-OGEBQ3C2ZBT4/);
        assert.match(out, /cleanup: not ours, left alone: nftables table inet kube-router-lb/);
        for (const n of cluster.nodes) {
            assert.match(
                out,
                new RegExp(`node ${n.name}: ok leftovers: no state of another mode left; not ours, left alone: `),
                `${n.name} verified`,
            );
            assertForeignKept(cluster, n.name, before.get(n.name)!, n.name === "canary-1" ? LATE_RULES : []);
            assert.notEqual(
                onNode(cluster, n.name, ["ip", "link", "show", "kube-ipvs0"]).code,
                0,
                `${n.name}: kube-ipvs0 is gone`,
            );
            assert.doesNotMatch(
                onNode(cluster, n.name, ["ipset", "list", "-n"]).out,
                /^KUBE-(?!SRC-)/m,
                `${n.name}: kube-proxy's ipsets are gone`,
            );
        }
        // a kube-ipvs0 holding a ClusterIP, left behind: the leftovers check must catch it
        const ip = await backendClusterIP(cluster);
        onNode(cluster, "workers-1", ["ip", "link", "add", "kube-ipvs0", "type", "bridge"]);
        onNode(cluster, "workers-1", ["ip", "addr", "add", `${ip}/32`, "dev", "kube-ipvs0"]);
        const v = verify(cluster, "workers-1");
        assert.equal(v.code, 1);
        assert.ok(failedChecks(v.result).includes("leftovers"), JSON.stringify(v.result.checks));
        assert.match(
            v.result.checks.find((x: any) => x.check === "leftovers").detail,
            new RegExp(`kube-ipvs0 exists holding 1 address\\(es\\) \\(${ip.replace(/\./g, "\\.")}/32\\)`),
        );
    });

    it("ipvs -> iptables (ipvs state from the SIMULATED stand-in) beside another agent's chains, ipsets and nftables table, IPv4 and IPv6: kube-proxy is stopped, its ipvs leftovers removed while another process adds rules to the other agent's chain and to nat (every added rule survives), the other agent's state is byte-identical otherwise, and the real iptables kube-proxy starts; a later cleanup beside that live kube-proxy removes re-planted ipvs leftovers and not one of its chains", async () => {
        cluster = await startCluster({ nodes: "real", mode: "ipvs", pools: [["canary", 1]] });
        const node = "canary-1";
        await proxiesAnswer(cluster);
        await eventuallyOnNode(
            cluster,
            node,
            ["ip", "-o", "addr", "show", "dev", "kube-ipvs0"],
            /inet 10\.96\./,
            "the stand-in laid down kube-ipvs0",
        );
        plantForeignAgent(cluster, node);
        const before = foreignState(cluster, node);
        // TEST HOOK: the cleanup's IPv4 restore waits, after the cleanup read the tables, until the other process has written
        await labelNode(cluster, node, PAUSE_TOOLS_LABEL, "iptables-nft-restore");
        ws = await workspace(cluster, {
            mode: "iptables",
            pools: [{ ...POOLS[0], allowUnroutedNode: true }],
            verify: VERIFY,
        });
        const up = ws.stack.up({ onOutput });
        const paused = await whileToolPaused(cluster, node, "iptables-nft-restore", up, () =>
            addLateRules(cluster!, node),
        );
        await up;
        assert.ok(
            paused,
            "the cleanup ran iptables-nft-restore on the node, and the other process wrote while it was held",
        );
        await labelNode(cluster, node, PAUSE_TOOLS_LABEL, null);
        const out = lines.join("");
        assert.match(out, /kube-proxy stopped; removing ipvs leftovers \(iptables mode does not\)/);
        assert.match(
            out,
            /cleanup: removed kube-proxy chains \(iptables table nat, nft backend\): \d+: /,
            "the cleanup removed ipvs chains in the window",
        );
        assert.match(
            out,
            /cleanup: not ours, left alone: iptables chains \(table filter, nft backend\): \d+: [^\n]*KUBE-ROUTER-INPUT/,
        );
        assert.match(
            out,
            /cleanup: not ours, left alone: ip6tables chains \(table filter, nft backend\): \d+: [^\n]*KUBE-ROUTER-INPUT/,
        );
        assert.match(out, /cleanup: not ours, left alone: ipsets: \d+: [^\n]*KUBE-SRC-6OGEBQ3C2ZBT4/);
        assert.match(out, /node canary-1: ok leftovers: no state of another mode left/);
        assertForeignKept(cluster, node, before, LATE_RULES);
        assert.notEqual(onNode(cluster, node, ["ip", "link", "show", "kube-ipvs0"]).code, 0);
        assert.doesNotMatch(
            onNode(cluster, node, ["ipset", "list", "-n"]).out,
            /^KUBE-(?!SRC-)/m,
            "kube-proxy's ipsets are gone",
        );
        assert.equal(onNode(cluster, node, ["curl", "-s", "-m", "5", "127.0.0.1:10249/proxyMode"]).out, "iptables");
        const ip = await backendClusterIP(cluster);
        assert.match(onNode(cluster, node, ["curl", "-s", "-m", "5", `http://${ip}/`]).out, /backend answered/);

        // ipvs leftovers again (as a node rolled back and forth leaves them), now beside the LIVE iptables kube-proxy,
        // which shares KUBE-SERVICES, KUBE-POSTROUTING, KUBE-MARK-MASQ, KUBE-FORWARD, KUBE-PROXY-FIREWALL with ipvs mode
        const IPVS_ONLY = ["KUBE-NODE-PORT", "KUBE-LOAD-BALANCER", "KUBE-IPVS-FILTER"];
        await eventuallyOnNode(
            cluster,
            node,
            ["iptables-save", "-t", "nat"],
            /^-A KUBE-SERVICES .* -j KUBE-SVC-/m,
            "the real iptables kube-proxy wrote its Service chains",
        );
        for (const argv of [
            ["iptables", "-t", "nat", "-N", "KUBE-NODE-PORT"],
            ["iptables", "-t", "nat", "-N", "KUBE-LOAD-BALANCER"],
            [
                "iptables",
                "-t",
                "nat",
                "-A",
                "KUBE-SERVICES",
                "-m",
                "addrtype",
                "--dst-type",
                "LOCAL",
                "-j",
                "KUBE-NODE-PORT",
            ],
            ["iptables", "-t", "filter", "-N", "KUBE-IPVS-FILTER"],
            ["iptables", "-t", "filter", "-A", "INPUT", "-j", "KUBE-IPVS-FILTER"],
            ["ipset", "create", "KUBE-CLUSTER-IP", "hash:ip,port"],
        ])
            assert.equal(onNode(cluster, node, argv).code, 0, argv.join(" "));
        const proxy = kubeProxyPids(cluster, node);
        assert.equal(proxy.length, 1, "one real kube-proxy runs on the node");
        const saved = () =>
            ["iptables", "ip6tables"].flatMap((ipt) =>
                onNode(cluster!, node, [`${ipt}-save`])
                    .out.split("\n")
                    .filter((l) => l && !l.startsWith("#")),
            );
        // kube-proxy held still (SIGSTOP) across the cleanup: a chain the cleanup deleted cannot be written back by it before we look
        process.kill(Number(proxy[0]), "SIGSTOP");
        let cleanup: ReturnType<typeof runCli>;
        let beforeCleanup: string[], afterCleanup: string[];
        try {
            beforeCleanup = saved();
            cleanup = runCli(["cleanup", "--node", node], { env: { KUBECONFIG: cluster.kubeconfig } });
            afterCleanup = saved();
        } finally {
            process.kill(Number(proxy[0]), "SIGCONT");
        }
        assert.equal(cleanup.code, 0, cleanup.stderr + cleanup.stdout);
        for (const c of IPVS_ONLY)
            assert.match(
                cleanup.stdout,
                new RegExp(`^removed kube-proxy chain ${c} \\(iptables table (nat|filter), nft backend\\)$`, "m"),
            );
        assert.match(cleanup.stdout, /^destroyed ipset KUBE-CLUSTER-IP$/m);
        assert.doesNotMatch(
            cleanup.stdout,
            /^removed kube-proxy chain (?!KUBE-NODE-PORT |KUBE-LOAD-BALANCER |KUBE-IPVS-FILTER )/m,
            `no chain of the live iptables kube-proxy was removed; the cleanup said:\n${cleanup.stdout}`,
        );
        const ipvsLine = new RegExp(`(:|-A |-j )(${IPVS_ONLY.join("|")})( |$)`);
        assert.deepEqual(
            afterCleanup,
            beforeCleanup.filter((l) => !ipvsLine.test(l)),
            "every other line of iptables-save and ip6tables-save (the live kube-proxy's chains and rules, the other agent's) is as it was",
        );
        assert.ok(
            afterCleanup.some((l) => /^:KUBE-SERVICES /.test(l)) && afterCleanup.some((l) => /^:KUBE-SVC-/.test(l)),
            "the live kube-proxy's KUBE-SERVICES and KUBE-SVC-* chains are there",
        );
        assertForeignKept(cluster, node, before, LATE_RULES);
        assert.match(
            onNode(cluster, node, ["curl", "-s", "-m", "5", `http://${ip}/`]).out,
            /backend answered/,
            "the Service still answers through the live kube-proxy's rules",
        );
    });

    it("a node whose kube-proxy cannot start in nftables mode (nft missing from its PATH) stops the rollout there; the node is rolled back (to the SIMULATED ipvs stand-in) and the error carries kube-proxy's own message", async () => {
        cluster = await startCluster({
            nodes: "real",
            mode: "ipvs",
            pools: [
                ["canary", 1],
                ["workers", 2],
            ],
            nodeLabels: { "workers-2": { [WITHOUT_TOOLS_LABEL]: "nft" } },
        });
        ws = await workspace(cluster, {
            mode: "nftables",
            nodePortAddresses: ["0.0.0.0/0"],
            pools: [POOLS[0], { ...POOLS[1], maxUnavailable: 1 }],
            verify: VERIFY,
        });
        await assert.rejects(ws.stack.up({ onOutput }), (e: Error) => {
            assert.match(e.message, /node workers-2 \(pool workers\) failed restart/);
            assert.match(e.message, /kube-proxy pod kube-proxy-\w+-\w+ on workers-2 is failing/);
            // kube-proxy's own log line, after the failure names the pod (not just any "nft" in the output)
            assert.match(
                e.message,
                /its log ends:\n[\s\S]*"Error running ProxyServer" err="unable to create proxier: unable to create ipv4 proxier: could not find nftables binary: exec: \\"nft\\": executable file not found in \$PATH"/,
            );
            assert.match(e.message, /rolled back to ipvs mode \(the installer's DaemonSet\) and uncordoned/);
            return true;
        });
        const node = await clients(cluster).core.readNode({ name: "workers-2" });
        assert.equal(node.spec?.unschedulable, undefined);
        assert.equal(
            onNode(cluster, "workers-2", ["curl", "-s", "-m", "5", "127.0.0.1:10249/proxyMode"]).out,
            "ipvs",
            "workers-2 is back on its old (ipvs) configuration",
        );
        assert.equal(
            onNode(cluster, "workers-1", ["curl", "-s", "-m", "5", "127.0.0.1:10249/proxyMode"]).out,
            "nftables",
            "workers-1 moved before it",
        );
    });

    it("a deleted kube-proxy pod gets its grace period, as from a kubelet: SIGTERM, the deletion's grace period, then SIGKILL (a real kube-proxy that does not act on SIGTERM still runs 6 s into a 10 s grace period, then is killed)", async () => {
        cluster = await startCluster({ nodes: "real", mode: "iptables", pools: [["canary", 1]] });
        await proxiesAnswer(cluster);
        const node = "canary-1";
        const pid = Number(kubeProxyPids(cluster, node)[0]);
        assert.ok(pid, "the real kube-proxy process runs in the namespace");
        const { core } = clients(cluster);
        const pod = (
            await core.listNamespacedPod({ namespace: "kube-system", fieldSelector: `spec.nodeName=${node}` })
        ).items.find((p) => p.metadata!.name!.startsWith("kube-proxy"))!;
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
        assert.match(
            readFileSync(join(cluster.dir, "logs", "node-agent.log"), "utf8"),
            new RegExp(`${node}: ${pod.metadata!.name} did not stop within its 10s grace period: SIGKILL`),
        );
    });

    it("the node agent keeps each node's Lease in kube-node-lease renewed, as a kubelet does: held by the node, renewTime advances from one heartbeat (10 s) to the next", async () => {
        cluster = await startCluster({ nodes: "real", mode: "iptables", pools: [["canary", 1]] });
        const kc = clients(cluster).kc;
        const coordination = kc.makeApiClient(k8s.CoordinationV1Api);
        const renewed = async () => {
            const lease = await coordination.readNamespacedLease({ name: "canary-1", namespace: "kube-node-lease" });
            assert.equal(lease.spec?.holderIdentity, "canary-1");
            return new Date(lease.spec!.renewTime!).getTime();
        };
        const first = await renewed();
        await new Promise((r) => setTimeout(r, 12_000));
        const second = await renewed();
        assert.ok(
            second > first,
            `renewTime advanced in 12 s: ${new Date(first).toISOString()} -> ${new Date(second).toISOString()}`,
        );
    });

    it("a node whose rules are broken after start (its kube-proxy table deleted): the connection and rules checks fail and name the node", async () => {
        cluster = await startCluster({ nodes: "real", mode: "iptables", pools: SMALL });
        ws = await workspace(cluster, {
            mode: "nftables",
            nodePortAddresses: ["0.0.0.0/0"],
            pools: POOLS,
            verify: VERIFY,
        });
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
        assert.deepEqual(healthy.result.checks.map((x: any) => x.check).sort(), [
            "connection",
            "leftovers",
            "mode",
            "rules",
            "startup-log",
            "sync",
        ]);

        // mode and startup-log: the process chose nftables, the check expects iptables
        const wrongMode = verify(cluster, node, ["--mode", "iptables"]);
        assert.ok(
            ["mode", "startup-log"].every((c) => failedChecks(wrongMode.result).includes(c)),
            JSON.stringify(wrongMode.result.checks),
        );

        // leftovers: an ipset of ipvs mode on an nftables node
        onNode(cluster, node, ["ipset", "create", "KUBE-CLUSTER-IP", "hash:ip,port"]);
        assert.deepEqual(failedChecks(verify(cluster, node).result), ["leftovers"]);
        onNode(cluster, node, ["ipset", "destroy", "KUBE-CLUSTER-IP"]);

        // leftovers, when the probe cannot look: no IPv4 iptables-save of any backend on the node's PATH
        const k8sApi = await import("@kubernetes/client-node");
        const label = (value: string | null) =>
            clients(cluster!).core.patchNode(
                { name: node, body: { metadata: { labels: { [WITHOUT_TOOLS_LABEL]: value } } } },
                k8sApi.setHeaderOptions("Content-Type", k8sApi.PatchStrategy.MergePatch),
            );
        await label("iptables-save.iptables-nft-save.iptables-legacy-save");
        try {
            const blind = verify(cluster, node);
            assert.deepEqual(failedChecks(blind.result), ["leftovers"], JSON.stringify(blind.result.checks));
            assert.match(
                blind.result.checks.find((x: any) => x.check === "leftovers").detail,
                /^the probe cannot see on node canary-1: iptables-save is not on the node/,
            );
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
        await eventuallyOnNode(
            cluster,
            node,
            ["nft", "list", "table", "ip", "kube-proxy"],
            new RegExp(nowhere.replace(/\./g, "\\.")),
            "kube-proxy synced the moved endpoint",
        );
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
