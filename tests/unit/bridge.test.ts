// The bridge (core/bridge.ts) as the probe pod runs it: the probe script's bridge and unbridge
// actions against the real nft, in a private network namespace of their own (unshare -n), so
// nothing touches this machine's rules; the copy's priorities; the leftovers check and the
// cleanup that see a copy left behind.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
    BRIDGE_NFT_TABLES,
    judgeBridgeCopy,
    judgeBridgeRemoval,
    parseBridgeOutput,
    priorityValue,
} from "../../components/core/bridge.js";
import { judgeProbe, parseProbeOutput, PROBE_SCRIPT } from "../../components/core/probe.js";

/** kube-proxy's nftables tables in the shape nftables mode writes them (base chains, a set, a map, a Service). */
function kubeProxyRuleset(prerouting = "dstnat"): string {
    return ["ip", "ip6"]
        .map((f) => {
            const ip = f === "ip" ? "10.96.0.10" : "fd00::10";
            const backend = f === "ip" ? "10.244.1.5" : "[fd00:244::5]";
            return `table ${f} kube-proxy {
    comment "rules for kube-proxy"
    set cluster-ips { type ${f === "ip" ? "ipv4_addr" : "ipv6_addr"}; elements = { ${ip} } }
    map service-ips { type ${f === "ip" ? "ipv4_addr" : "ipv6_addr"} . inet_proto . inet_service : verdict; elements = { ${ip} . tcp . 80 : goto service-demo } }
    chain nat-prerouting { type nat hook prerouting priority ${prerouting}; policy accept; jump services; }
    chain nat-output { type nat hook output priority -100; policy accept; jump services; }
    chain nat-postrouting { type nat hook postrouting priority srcnat; policy accept; }
    chain filter-output { type filter hook output priority -110; policy accept; }
    chain services { ${f === "ip" ? "ip" : "ip6"} daddr . meta l4proto . th dport vmap @service-ips; }
    chain service-demo { meta l4proto tcp dnat to ${backend}:8080; }
}`;
        })
        .join("\n");
}

describe("the bridge, run as the probe script with the real nft in a private network namespace", function () {
    this.timeout(30_000);
    let dir: string;
    before(() => {
        dir = mkdtempSync(join(tmpdir(), "kpm-bridge-"));
        // the probe pod's awk is busybox's
        symlinkSync("/bin/busybox", join(dir, "awk"));
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    /** Runs `actions` in order in one new network namespace holding `ruleset`; each action's output. */
    function inNamespace(ruleset: string, actions: string[], busybox = true): string[] {
        writeFileSync(join(dir, "ruleset.nft"), ruleset);
        writeFileSync(join(dir, "probe.sh"), PROBE_SCRIPT);
        const steps = actions
            .map((a) =>
                a === "list"
                    ? `echo '%%%'; nft list ruleset`
                    : `echo '%%%'; KPM_ACTION=${a} sh ${join(dir, "probe.sh")}`,
            )
            .join("; ");
        const out = execFileSync("unshare", ["-n", "sh", "-c", `nft -f ${join(dir, "ruleset.nft")} && { ${steps}; }`], {
            encoding: "utf8",
            env: { PATH: `${busybox ? `${dir}:` : ""}/usr/sbin:/usr/bin:/sbin:/bin` },
        });
        return out.split("%%%\n").slice(1);
    }

    for (const busybox of [true, false])
        it(`copies both families as kpm-bridge with every nat base chain one priority later, then deletes it${busybox ? " (busybox's awk)" : ""}`, () => {
            const [copied, listed, removed, after] = inNamespace(
                kubeProxyRuleset(),
                ["bridge", "list", "unbridge", "list"],
                busybox,
            );
            const copy = judgeBridgeCopy(parseBridgeOutput(copied));
            assert.equal(copy.ok, true, `${copy.detail}\n${copied}`);
            assert.deepEqual(copy.families, ["ip", "ip6"]);
            for (const f of ["ip", "ip6"]) {
                const table = listed.slice(listed.indexOf(`table ${f} kpm-bridge {`));
                assert.match(table, /type nat hook prerouting priority dstnat \+ 1;/);
                assert.match(table, /type nat hook output priority -99;/);
                assert.match(table, /type nat hook postrouting priority srcnat \+ 1;/);
                // the filter chains and the Service's rules are copied as they are
                assert.match(table, /type filter hook output priority -110;/);
                assert.match(table, /dnat to/);
            }
            assert.match(listed, /table ip kube-proxy \{/, "kube-proxy's own tables are left as they are");
            const removal = judgeBridgeRemoval(parseBridgeOutput(removed));
            assert.equal(removal.ok, true, removal.detail);
            assert.deepEqual(removal.families, ["ip", "ip6"]);
            assert.doesNotMatch(after, /kpm-bridge/);
            assert.match(after, /table ip6 kube-proxy \{/);
        });

    it("a second copy replaces the first (a resumed move), and a priority with an offset keeps it, one later", () => {
        const [first, second, listed] = inNamespace(kubeProxyRuleset("dstnat - 5"), ["bridge", "bridge", "list"]);
        assert.equal(judgeBridgeCopy(parseBridgeOutput(first)).ok, true, first);
        const again = parseBridgeOutput(second);
        assert.deepEqual(again.deleted, ["ip", "ip6"]);
        assert.equal(judgeBridgeCopy(again).ok, true, second);
        assert.match(listed, /table ip kpm-bridge \{[^]*type nat hook prerouting priority dstnat - 4;/);
        assert.equal((listed.match(/table ip kpm-bridge/g) ?? []).length, 1);
    });

    it("a node with no nftables table of kube-proxy has nothing to bridge, which passes with no family", () => {
        const [out] = inNamespace(
            "table inet other {\n chain c { type filter hook input priority 0; policy accept; }\n}\n",
            ["bridge"],
        );
        const v = judgeBridgeCopy(parseBridgeOutput(out));
        assert.deepEqual([v.ok, v.families], [true, []], v.detail);
        assert.match(v.detail, /no nftables table of kube-proxy/);
    });
});

describe("the bridge's judgement", () => {
    it("reads nft's priorities: names, names with offsets, numbers", () => {
        assert.equal(priorityValue("dstnat"), -100);
        assert.equal(priorityValue("dstnat + 1"), -99);
        assert.equal(priorityValue("srcnat - 4"), 96);
        assert.equal(priorityValue("-99"), -99);
        assert.equal(priorityValue("bogus"), undefined);
    });

    it("fails a copy whose nat chain runs at kube-proxy's own priority, naming the chain", () => {
        const out = [
            "### kpm:bridge",
            "copied ip",
            "nat ip kube-proxy nat-prerouting prerouting dstnat",
            "nat ip kube-proxy nat-output output -100",
            "nat ip kpm-bridge nat-prerouting prerouting dstnat + 1",
            "nat ip kpm-bridge nat-output output -100",
            "present ip kpm-bridge",
            "### kpm:end",
        ].join("\n");
        const v = judgeBridgeCopy(parseBridgeOutput(out));
        assert.equal(v.ok, false);
        assert.match(v.detail, /chain nat-output has priority -100, expected one after kube-proxy's -100/);
    });

    it("fails a copy nft refused, and a delete that left the table", () => {
        const refused = judgeBridgeCopy(
            parseBridgeOutput("### kpm:bridge\nerror nft -f (the copy of ip kube-proxy): Error: syntax\n### kpm:end\n"),
        );
        assert.equal(refused.ok, false);
        assert.match(refused.detail, /could not be made: nft -f/);
        const left = judgeBridgeRemoval(
            parseBridgeOutput(
                "### kpm:bridge\nerror nft delete table ip kpm-bridge: busy\npresent ip kpm-bridge\n### kpm:end\n",
            ),
        );
        assert.equal(left.ok, false);
        assert.match(left.detail, /still there: ip kpm-bridge/);
        assert.equal(judgeBridgeRemoval(parseBridgeOutput("### kpm:bridge\n")).ok, false, "cut off: not confirmed");
    });

    it("the leftovers check fails a node that still holds a bridge, in either mode", () => {
        for (const mode of ["iptables", "nftables"] as const) {
            const report = parseProbeOutput(
                ["### kpm:nftables", "table ip kube-proxy", `table ${BRIDGE_NFT_TABLES[0]}`, "### kpm:end"].join("\n"),
            );
            const leftovers = judgeProbe(report, { mode, maxSyncAgeSeconds: 60, connect: false }).find(
                (c) => c.check === "leftovers",
            );
            assert.equal(leftovers?.ok, false);
            assert.match(leftovers?.detail ?? "", /ip kpm-bridge \(a bridge the rollout did not remove\)/);
        }
    });
});
