// The node probe and its cleanup, run as the shell script they are, against stand-in host tools
// on PATH (iptables/ip6tables nft-backend save and restore, ipset, ipvsadm, nft, ip, curl): the
// stand-ins keep a node's state in files and apply what the script asks, as the real tools
// would (iptables-restore --noflush applies -D, flush and -X, and refuses -X of a chain something
// still jumps to). Nothing touches this machine's firewall. What is checked: the cleanup removes
// kube-proxy's objects, IPv4 and IPv6, and leaves every other agent's (kube-router's KUBE-ROUTER-*
// and KUBE-NWPLCY-* chains, its KUBE-SRC-* ipset, a non-kube IPVS virtual server, another nftables
// table) reported as "not ours, left alone"; the probe fails, naming the tool and the node, when
// it cannot look; an IPv6 ClusterIP is bracketed in the connection check's URL.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import {
    chmodSync,
    existsSync,
    mkdirSync,
    mkdtempSync,
    readFileSync,
    rmSync,
    symlinkSync,
    writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { judgeProbe, parseProbeOutput, PROBE_SCRIPT, type ProbeExpectations } from "../../components/core/probe.js";
import { runAsync } from "../helpers.js";

/** One multi-call stand-in for the host tools: its name says which tool it plays. */
const STANDIN = `
const fs = require("fs"), path = require("path");
const S = process.env.FAKE_STATE, tool = path.basename(process.argv[1]), args = process.argv.slice(2);
fs.appendFileSync(S + "/calls.log", tool + " " + args.join(" ") + "\\n");
const file = (f) => S + "/" + f;
const read = (f) => (fs.existsSync(file(f)) ? fs.readFileSync(file(f), "utf8") : "");
const lines = (f) => read(f).split("\\n").filter((l) => l);
const write = (f, ls) => fs.writeFileSync(file(f), ls.map((l) => l + "\\n").join(""));
const failWith = process.env["FAKE_FAIL_" + tool.replace(/-/g, "_")];
if (failWith) { process.stderr.write(failWith + "\\n"); process.exit(1); }
const die = (m) => { process.stderr.write(m + "\\n"); process.exit(1); };
const fam = tool.startsWith("ip6") ? "ipt6" : "ipt4";
function tables(text) {
  const t = new Map(); let cur;
  for (const l of text.split("\\n")) {
    if (l.startsWith("*")) { cur = l.slice(1); if (!t.has(cur)) t.set(cur, []); }
    else if (l === "COMMIT" || !l || l.startsWith("#")) continue;
    else t.get(cur).push(l);
  }
  return t;
}
switch (tool) {
  case "iptables": case "ip6tables": console.log(tool + " v1.8.9 (nf_tables)"); break;
  case "iptables-nft-save": case "ip6tables-nft-save":
    for (const [t, ls] of tables(read(fam))) { console.log("*" + t); for (const l of ls) console.log(l); console.log("COMMIT"); }
    break;
  case "iptables-nft-restore": case "ip6tables-nft-restore": {
    if (!args.includes("--noflush")) die("stand-in: a restore without --noflush rewrites whole tables");
    const input = fs.readFileSync(0, "utf8");
    fs.appendFileSync(file("restores.log"), "--- " + tool + "\\n" + input);
    if (process.env.FAKE_LATE_RULE && fam === "ipt4") { const t0 = tables(read(fam)); t0.get("filter").push(process.env.FAKE_LATE_RULE); const o = []; for (const [t, ls] of t0) o.push("*" + t, ...ls, "COMMIT"); write(fam, o); }
    const st = tables(read(fam)); let cur;
    for (const l of input.split("\\n")) {
      if (l.startsWith("*")) { cur = l.slice(1); if (!st.has(cur)) st.set(cur, []); continue; }
      if (!l || l === "COMMIT") continue;
      const ls = st.get(cur), w = l.split(" ");
      if (l.startsWith(":")) { const c = w[0].slice(1); const has = ls.some((x) => x.split(" ")[0] === ":" + c); if (has) st.set(cur, ls.filter((x) => !x.startsWith("-A " + c + " "))); else ls.push(l); }
      else if (w[0] === "-D") { const i = ls.indexOf("-A" + l.slice(2)); if (i < 0) die("iptables-restore: line: Bad rule (does a matching rule exist in that chain?)"); ls.splice(i, 1); }
      else if (w[0] === "-X") { const c = w[1]; if (ls.some((x) => x.startsWith("-A ") && / -[jg] /.test(x) && x.split(" ").some((f, i, a) => (a[i - 1] === "-j" || a[i - 1] === "-g") && f === c))) die("iptables-restore: -X " + c + ": Too many links"); if (ls.some((x) => x.startsWith("-A " + c + " "))) die("iptables-restore: -X " + c + ": Directory not empty"); st.set(cur, ls.filter((x) => x.split(" ")[0] !== ":" + c)); }
      else if (w[0] === "-A") ls.push(l);
    }
    const out = []; for (const [t, ls] of st) { out.push("*" + t, ...ls, "COMMIT"); } write(fam, out);
    break;
  }
  case "ipset":
    if (args[0] === "list" && args[1] === "-n") { for (const l of lines("ipsets")) console.log(l); break; }
    if (args[0] === "destroy") { write("ipsets", lines("ipsets").filter((l) => l !== args[1])); break; }
    die("ipset stand-in: " + args.join(" "));
  case "ipvsadm":
    if (args[0] === "-Ln") { console.log("IP Virtual Server version 1.2.1 (size=4096)"); console.log("Prot LocalAddress:Port Scheduler Flags"); for (const l of lines("ipvs")) console.log(l.split("|")[0]); break; }
    if (args[0] === "-D") { write("ipvs", lines("ipvs").filter((l) => l.split("|")[0].split(/ +/)[1] !== args[2])); break; }
    die("ipvsadm stand-in refuses " + args.join(" "));
  case "nft":
    if (args.join(" ") === "list tables") { for (const l of lines("nft")) console.log("table " + l); break; }
    if (args[0] === "delete" && args[1] === "table") { write("nft", lines("nft").filter((l) => l !== args[2] + " " + args[3])); break; }
    die("nft stand-in: " + args.join(" "));
  case "ip": {
    const a = args.join(" ");
    const addrs = lines("kube-ipvs0");
    const present = fs.existsSync(file("kube-ipvs0"));
    if (a === "link show kube-ipvs0") process.exit(present ? 0 : 1);
    if (a === "-o addr show dev kube-ipvs0") { if (!present) die("Device \\"kube-ipvs0\\" does not exist."); addrs.forEach((x) => console.log("5: kube-ipvs0    inet " + x + " scope global kube-ipvs0")); break; }
    if (a === "link del kube-ipvs0") { fs.rmSync(file("kube-ipvs0")); break; }
    die("ip stand-in: " + a);
  }
  case "curl": {
    const url = args[args.length - 1];
    if (url.endsWith("/proxyMode")) { process.stdout.write("nftables"); break; }
    if (url.endsWith("/metrics")) { console.log('kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} ' + Math.floor(Date.now() / 1000)); console.log('kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv6"} ' + Math.floor(Date.now() / 1000)); break; }
    fs.appendFileSync(file("urls.log"), url + "\\n");
    break;
  }
  default: die("no stand-in for " + tool);
}
`;

const SVC = "KUBE-SVC-ERIFXISQEP7F7OF4"; // 16 base32 characters, as kube-proxy hashes them
const SEP = "KUBE-SEP-ZP3FB6NMPNCO4VBJ";
/** A node that ran kube-proxy (iptables chains, ipvs state, nftables tables) beside kube-router and kube-vip. */
const IPT4 = [
    "*nat",
    ":PREROUTING ACCEPT [0:0]",
    ":OUTPUT ACCEPT [0:0]",
    ":POSTROUTING ACCEPT [0:0]",
    ":KUBE-SERVICES - [0:0]",
    ":KUBE-POSTROUTING - [0:0]",
    ":KUBE-MARK-MASQ - [0:0]",
    ":KUBE-NODE-PORT - [0:0]",
    `:${SVC} - [0:0]`,
    `:${SEP} - [0:0]`,
    ":KUBE-KUBELET-CANARY - [0:0]",
    ":KUBE-NWPLCY-6MLZY3WQ4CE2 - [0:0]",
    ":KUBE-SVC-NOTAHASH - [0:0]",
    '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING',
    "-A POSTROUTING -j KUBE-NWPLCY-6MLZY3WQ4CE2",
    `-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m tcp --dport 443 -j ${SVC}`,
    `-A ${SVC} -j ${SEP}`,
    `-A ${SEP} -p tcp -m tcp -j DNAT --to-destination 10.213.1.5:8080`,
    "-A KUBE-NODE-PORT -p tcp -j KUBE-MARK-MASQ",
    "-A KUBE-NWPLCY-6MLZY3WQ4CE2 -m set --match-set KUBE-SRC-OGEBQ3C2ZBT4 src -j ACCEPT",
    "COMMIT",
    "*filter",
    ":INPUT ACCEPT [0:0]",
    ":FORWARD ACCEPT [0:0]",
    ":OUTPUT ACCEPT [0:0]",
    ":KUBE-FORWARD - [0:0]",
    ":KUBE-IPVS-FILTER - [0:0]",
    ":KUBE-FIREWALL - [0:0]",
    ":KUBE-ROUTER-INPUT - [0:0]",
    '-A INPUT -m comment --comment "kube-router netpol" -j KUBE-ROUTER-INPUT',
    "-A INPUT -j KUBE-FIREWALL",
    '-A INPUT -m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-FILTER',
    '-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD',
    "-A KUBE-ROUTER-INPUT -d 10.96.0.0/12 -j RETURN",
    "-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -j DROP",
    "COMMIT",
];
const IPT6 = [
    "*nat",
    ":OUTPUT ACCEPT [0:0]",
    ":KUBE-SERVICES - [0:0]",
    ":KUBE-SEP-4NVHSXKSZJDJ5BIB - [0:0]",
    ":KUBE-ROUTER-OUTPUT - [0:0]",
    '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    "-A OUTPUT -j KUBE-ROUTER-OUTPUT",
    "-A KUBE-SERVICES -j KUBE-SEP-4NVHSXKSZJDJ5BIB",
    "COMMIT",
];

describe("the probe and its cleanup, run as the script they are (stand-in host tools)", function () {
    this.timeout(20_000);
    let dir: string;
    let bin: string;
    let n = 0;

    before(() => {
        dir = mkdtempSync(join(tmpdir(), "kpm-probe-script-"));
        bin = join(dir, "bin");
        mkdirSync(bin);
        writeFileSync(join(dir, "standin.js"), `#!${process.execPath}\n${STANDIN}`);
        chmodSync(join(dir, "standin.js"), 0o755);
        // only these are on PATH: no ip, ipset, ipvsadm, nft or iptables of this machine is reachable
        for (const t of [
            "iptables",
            "ip6tables",
            "iptables-nft-save",
            "iptables-nft-restore",
            "ip6tables-nft-save",
            "ip6tables-nft-restore",
            "ipset",
            "ipvsadm",
            "nft",
            "ip",
            "curl",
        ]) {
            symlinkSync(join(dir, "standin.js"), join(bin, t));
        }
        for (const tool of ["sh", "awk", "cat", "grep", "sed", "head", "tr", "readlink", "date"]) {
            const real = execFileSync("sh", ["-c", 'command -v "$1"', "sh", tool], { encoding: "utf8" }).trim();
            symlinkSync(real, join(bin, tool));
        }
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    /** A fresh node state; `without` leaves tools off its PATH. */
    function node(opts: { without?: string[]; busybox?: boolean } = {}) {
        const state = join(dir, `node-${++n}`);
        const path = join(dir, `path-${n}`);
        mkdirSync(state);
        mkdirSync(path);
        execFileSync("sh", [
            "-c",
            'for f in "$1"/*; do b=$(basename "$f"); case " $3 " in *" $b "*) ;; *) ln -s "$(readlink "$f")" "$2/$b";; esac; done',
            "sh",
            bin,
            path,
            (opts.without ?? []).join(" "),
        ]);
        // the probe pod's tools are busybox's (Debian's busybox-static stands in for the busybox image);
        // its sh stays the host's: Debian's busybox sh prefers its own applets (ip, ...) to the stand-ins on PATH
        if (opts.busybox)
            for (const t of ["awk", "cat", "grep", "sed", "head", "tr", "readlink", "date"])
                execFileSync("ln", ["-sf", "/bin/busybox", join(path, t)]);
        writeFileSync(join(state, "ipt4"), IPT4.join("\n") + "\n");
        writeFileSync(join(state, "ipt6"), IPT6.join("\n") + "\n");
        writeFileSync(
            join(state, "ipsets"),
            ["KUBE-CLUSTER-IP", "KUBE-6-CLUSTER-IP", "KUBE-LOOP-BACK", "KUBE-SRC-OGEBQ3C2ZBT4", "KUBE-DST-ABC"].join(
                "\n",
            ) + "\n",
        );
        // kube-proxy's ClusterIP on kube-ipvs0, and kube-vip's control-plane address (not on it)
        writeFileSync(
            join(state, "ipvs"),
            ["TCP  10.96.0.1:443 rr", "TCP  [fd00::1]:443 rr", "TCP  10.213.1.100:6443 rr"].join("\n") + "\n",
        );
        writeFileSync(
            join(state, "ip_vs"),
            [
                "IP Virtual Server version 1.2.1 (size=4096)",
                "Prot LocalAddress:Port Scheduler Flags",
                "TCP  0A600001:01BB rr",
                "TCP  [fd00:0000:0000:0000:0000:0000:0000:0001]:01BB rr",
                "TCP  0AD50164:192B rr",
            ].join("\n") + "\n",
        );
        writeFileSync(join(state, "kube-ipvs0"), "10.96.0.1/32\nfd00::1/128\n");
        writeFileSync(
            join(state, "nft"),
            ["ip kube-proxy", "ip6 kube-proxy", "ip kpm-bridge", "inet kube-router-lb", "ip filter"].join("\n") + "\n",
        );
        writeFileSync(join(state, "calls.log"), "");
        const read = (f: string) => readFileSync(join(state, f), "utf8");
        const run = async (env: Record<string, string>) => {
            const r = await runAsync(join(path, "sh"), ["-c", PROBE_SCRIPT], {
                env: { PATH: path, FAKE_STATE: state, KPM_IPVS_PROC: join(state, "ip_vs"), ...env },
            });
            return { code: r.code, out: r.stdout + r.stderr };
        };
        return { state, read, run };
    }

    for (const busybox of [false, true])
        it(`cleanup${busybox ? " (busybox's awk, grep, sed, as in the probe pod)" : ""} removes kube-proxy's chains (IPv4 and IPv6), ipsets, IPVS virtual servers, kube-ipvs0 and nftables tables, and leaves every other agent's, reported as not ours`, async () => {
            assert.ok(
                !busybox || existsSync("/bin/busybox"),
                "busybox-static is installed (scripts/toolchain.versions APT_PACKAGES)",
            );
            const nd = node({ busybox });
            const r = await nd.run({ KPM_ACTION: "cleanup" });
            assert.equal(r.code, 0, r.out);
            const v4 = nd.read("ipt4");
            const v6 = nd.read("ipt6");
            // kube-proxy's: gone, with the rules of other chains that jumped into them
            for (const c of [
                "KUBE-SERVICES",
                "KUBE-POSTROUTING",
                "KUBE-MARK-MASQ",
                "KUBE-NODE-PORT",
                SVC,
                SEP,
                "KUBE-FORWARD",
                "KUBE-IPVS-FILTER",
            ])
                assert.doesNotMatch(v4, new RegExp(`^:${c} `, "m"), `IPv4 ${c} removed`);
            assert.doesNotMatch(v4, /-j KUBE-(SERVICES|POSTROUTING|FORWARD|IPVS-FILTER)$/m);
            assert.doesNotMatch(v6, /KUBE-SERVICES|KUBE-SEP-/, "IPv6: kube-proxy's chains removed too");
            // everybody else's: all there, rules included
            for (const l of IPT4.filter((x) =>
                /KUBE-(ROUTER|NWPLCY|FIREWALL|KUBELET)|KUBE-SVC-NOTAHASH|^:(INPUT|FORWARD|OUTPUT|PREROUTING|POSTROUTING) /.test(
                    x,
                ),
            ))
                assert.ok(v4.includes(l + "\n"), `IPv4 kept: ${l}`);
            for (const l of IPT6.filter((x) => /KUBE-ROUTER/.test(x)))
                assert.ok(v6.includes(l + "\n"), `IPv6 kept: ${l}`);
            assert.deepEqual(nd.read("ipsets").trim().split("\n"), ["KUBE-SRC-OGEBQ3C2ZBT4", "KUBE-DST-ABC"]);
            assert.deepEqual(
                nd.read("ipvs").trim().split("\n"),
                ["TCP  10.213.1.100:6443 rr"],
                "kube-vip's virtual server stays",
            );
            assert.deepEqual(nd.read("nft").trim().split("\n"), ["inet kube-router-lb", "ip filter"]);
            assert.doesNotMatch(nd.read("calls.log"), /ipvsadm -C/, "no host-wide IPVS flush");
            // said so
            for (const l of [
                "not ours, left alone: iptables chain KUBE-ROUTER-INPUT (table filter, nft backend)",
                "not ours, left alone: iptables chain KUBE-NWPLCY-6MLZY3WQ4CE2 (table nat, nft backend)",
                "not ours, left alone: ip6tables chain KUBE-ROUTER-OUTPUT (table nat, nft backend)",
                "not ours, left alone: ipset KUBE-SRC-OGEBQ3C2ZBT4",
                "not ours, left alone: IPVS virtual server TCP 10.213.1.100:6443",
                "not ours, left alone: nftables table inet kube-router-lb",
                "removed IPVS virtual server TCP 10.96.0.1:443",
                "removed IPVS virtual server TCP [fd00::1]:443",
                "removed link kube-ipvs0",
                "removed kube-proxy chain KUBE-SERVICES (ip6tables table nat, nft backend)",
                "removed the rule of chain INPUT jumping to KUBE-IPVS-FILTER (iptables table filter, nft backend)",
                "destroyed ipset KUBE-6-CLUSTER-IP",
                "removed nftables table ip6 kube-proxy",
            ])
                assert.ok(r.out.includes(l + "\n"), `says "${l}":\n${r.out}`);
            assert.doesNotMatch(
                r.out,
                /left alone: iptables chain KUBE-(FIREWALL|KUBELET-CANARY)/,
                "the kubelet's chains are neither removed nor called foreign",
            );
        });

    it("cleanup beside a running iptables-mode kube-proxy (KPM_MODE=iptables) keeps the chains that mode uses and removes ipvs mode's own", async () => {
        const nd = node();
        const r = await nd.run({ KPM_ACTION: "cleanup", KPM_MODE: "iptables" });
        assert.equal(r.code, 0, r.out);
        const v4 = nd.read("ipt4");
        for (const c of ["KUBE-SERVICES", "KUBE-POSTROUTING", "KUBE-MARK-MASQ", SVC, SEP, "KUBE-FORWARD"])
            assert.match(v4, new RegExp(`^:${c} `, "m"), `${c} is the live kube-proxy's`);
        assert.match(v4, /^-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES$/m);
        for (const c of ["KUBE-NODE-PORT", "KUBE-IPVS-FILTER"])
            assert.doesNotMatch(v4, new RegExp(`^:${c} `, "m"), `${c} is ipvs mode's alone`);
        assert.doesNotMatch(nd.read("nft"), /kube-proxy/);
    });

    it("a rule another agent adds between the save and the restore is kept: that table's removal fails whole and the cleanup says so (nothing half-done)", async () => {
        const nd = node();
        const late = "-A KUBE-ROUTER-INPUT -m comment --comment late -j KUBE-FORWARD";
        const r = await nd.run({ KPM_ACTION: "cleanup", FAKE_LATE_RULE: late });
        assert.equal(r.code, 1, r.out);
        assert.match(
            r.out,
            /error: iptables-nft-restore --noflush failed, nothing removed from iptables \(nft backend\): iptables-restore: -X KUBE-FORWARD: Too many links/,
        );
        const v4 = nd.read("ipt4");
        assert.ok(v4.includes(late + "\n"), "the late rule is there");
        assert.match(v4, /^:KUBE-SERVICES /m, "the table's transaction was not applied half");
        assert.doesNotMatch(nd.read("ipt6"), /KUBE-SERVICES/, "the other family was cleaned");
    });

    it("cleanup fails, naming the tool, when iptables-save fails or ipvsadm is missing while IPVS virtual servers exist", async () => {
        const a = node();
        const r = await a.run({
            KPM_ACTION: "cleanup",
            FAKE_FAIL_iptables_nft_save: "iptables-nft-save: Permission denied (you must be root)",
        });
        assert.equal(r.code, 1, r.out);
        assert.match(r.out, /error: iptables-nft-save failed: iptables-nft-save: Permission denied/);
        const b = node({ without: ["ipvsadm"] });
        const s = await b.run({ KPM_ACTION: "cleanup" });
        assert.equal(s.code, 1, s.out);
        assert.match(s.out, /error: ipvsadm is not on the node: IPVS virtual servers are there and cannot be removed/);
    });

    const expect: ProbeExpectations = { mode: "nftables", maxSyncAgeSeconds: 300, connect: false, node: "workers-1" };
    const leftovers = (out: string, e = expect) =>
        judgeProbe(parseProbeOutput(out), e).find((c) => c.check === "leftovers")!;

    it("the probe fails leftovers, naming the tool and the node, when iptables-save is missing or fails", async () => {
        const missing = await node({ without: ["iptables-nft-save", "iptables"] }).run({});
        const m = leftovers(missing.out);
        assert.equal(m.ok, false);
        assert.match(m.detail, /the probe cannot see on node workers-1: iptables-save is not on the node/);
        const failing = await node().run({
            FAKE_FAIL_ip6tables_nft_save: "ip6tables-nft-save: table nat: Permission denied",
        });
        const f = leftovers(failing.out);
        assert.equal(f.ok, false);
        assert.match(
            f.detail,
            /on node workers-1: cannot read: ip6tables-nft-save rc=1: ip6tables-nft-save: table nat: Permission denied/,
        );
    });

    it("the probe reads both families and decodes the kernel's IPVS table: kube-proxy's leftovers are named, other agents' listed as not ours", async () => {
        const r = await node().run({});
        const report = parseProbeOutput(r.out);
        assert.equal(report.via, "direct");
        assert.deepEqual(report.ipvsServices, [
            { protocol: "TCP", address: "10.96.0.1", port: 443 },
            { protocol: "TCP", address: "fd00::1", port: 443 },
            { protocol: "TCP", address: "10.213.1.100", port: 6443 },
        ]);
        assert.ok(report.iptables.some((c) => c.family === "IPv6" && c.chain === "KUBE-SEP-4NVHSXKSZJDJ5BIB"));
        const l = leftovers(r.out);
        assert.equal(l.ok, false);
        assert.match(l.detail, /2 IPVS virtual server\(s\) of kube-proxy \(TCP 10\.96\.0\.1:443, TCP fd00::1:443\)/);
        assert.match(l.detail, /ipsets KUBE-CLUSTER-IP, KUBE-6-CLUSTER-IP, KUBE-LOOP-BACK/);
        assert.match(
            l.detail,
            /not ours, left alone: .*IPVS virtual server TCP 10\.213\.1\.100:6443.*ipset KUBE-SRC-OGEBQ3C2ZBT4.*iptables chain KUBE-NWPLCY-6MLZY3WQ4CE2 \(nat, IPv4, nft\)/,
        );
        assert.doesNotMatch(l.detail, /KUBE-SVC-NOTAHASH[^(]*left behind/);
    });

    it("a node without ipset passes when it holds no state of ipvs mode (said explicitly), and fails when it does", async () => {
        const clean = node({ without: ["ipset"] });
        await clean.run({ KPM_ACTION: "cleanup" }); // kube-proxy's state gone; other agents' stays
        const after = leftovers((await clean.run({})).out);
        assert.equal(after.ok, true, after.detail);
        assert.match(
            after.detail,
            /ipset is not on the node: no ipset checked, which passes because only ipvs mode uses ipsets and the node holds no other state of ipvs mode/,
        );
        const before = leftovers((await node({ without: ["ipset"] }).run({})).out);
        assert.equal(before.ok, false);
        assert.match(before.detail, /ipset is not on the node, and the node holds state of ipvs mode/);
    });

    it("an IPv6 ClusterIP is bracketed in the connection check's URL", async () => {
        const nd = node();
        const r = await nd.run({ KPM_SERVICE_IP: "fd00:10:96::1", KPM_SERVICE_PORT: "443" });
        assert.equal(nd.read("urls.log"), "http://[fd00:10:96::1]:443/\n");
        assert.equal(parseProbeOutput(r.out).connect.ok, true);
    });
});
