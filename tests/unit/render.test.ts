// components/core/render.ts: the configuration text the preview shows and the rollout writes.
// Each edit changes only its own field, in the text's own style (key order, list indentation,
// final newline, the user's comments); each change says why; nothing is written for what is
// already so.
import assert from "node:assert/strict";
import * as YAML from "yaml";
import {
    applyChanges,
    explainDiff,
    planConfigChanges,
    rememberedIpvsSettings,
    renderConfiguration,
} from "../../components/core/render.js";
import { parseCurrentConfig, parseKubeProxyConfiguration } from "../../components/core/config.js";
import type { DesiredSettings } from "../../components/core/types.js";
import { parseKubeVersion } from "../../components/core/versions.js";

const HEAD = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n";

/** A KubeProxyConfiguration of these fields, as plain data. */
function config(fields: Record<string, unknown>) {
    return parseKubeProxyConfiguration(
        YAML.stringify({ apiVersion: "kubeproxy.config.k8s.io/v1alpha1", kind: "KubeProxyConfiguration", ...fields }),
    );
}

/** The changes as "path: from -> to (reason)" for comparing whole lists. */
function listed(changes: { path: string; from: unknown; to: unknown }[]): string[] {
    return changes.map((c) => `${c.path}: ${JSON.stringify(c.from)} -> ${JSON.stringify(c.to)}`);
}

describe("planConfigChanges: the edits, each with its reason", () => {
    it("a move between modes says from which to which; an unpinned mode says what it runs today", () => {
        const move = planConfigChanges(config({ mode: "iptables" }), { mode: "nftables" });
        assert.deepEqual(move.changes, [
            {
                path: "mode",
                from: "iptables",
                to: "nftables",
                reason: "move kube-proxy from iptables to nftables mode",
            },
        ]);
        for (const unpinned of [{ mode: "" }, {}]) {
            const pin = planConfigChanges(config(unpinned), { mode: "iptables" });
            assert.deepEqual(pin.changes, [
                {
                    path: "mode",
                    from: unpinned.mode ?? null,
                    to: "iptables",
                    reason: "pin the mode: an empty mode runs iptables today and follows upstream's default when it changes",
                },
            ]);
        }
        assert.deepEqual(planConfigChanges(config({ mode: "nftables" }), { mode: "nftables" }).changes, []);
    });

    it("feature gates, NodePort addresses and conntrack.tcpBeLiberal are set when they differ, each named in its reason", () => {
        const { changes, findings } = planConfigChanges(
            config({ mode: "nftables", featureGates: { A: true }, nodePortAddresses: ["primary"] }),
            {
                mode: "nftables",
                featureGates: { A: true, B: false },
                nodePortAddresses: ["primary", "localhost"],
                conntrack: { tcpBeLiberal: true },
            },
        );
        assert.deepEqual(findings, []);
        assert.deepEqual(
            changes.map((c) => [c.path, c.from, c.to, c.reason]),
            [
                ["featureGates.B", null, false, "feature gate B requested"],
                ["nodePortAddresses", ["primary"], ["primary", "localhost"], "NodePort addresses requested"],
                ["conntrack.tcpBeLiberal", null, true, "conntrack.tcpBeLiberal requested"],
            ],
        );
        // an edit carries a memory field only when it sets or clears one
        assert.ok(changes.every((c) => !("remember" in c)));
    });

    it("asking for what is already there, or for nothing, plans nothing", () => {
        const current = config({
            mode: "nftables",
            featureGates: { A: true },
            nodePortAddresses: [],
            conntrack: { tcpBeLiberal: false },
        });
        const same: DesiredSettings = {
            mode: "nftables",
            featureGates: { A: true },
            nodePortAddresses: [],
            conntrack: { tcpBeLiberal: false },
        };
        assert.deepEqual(planConfigChanges(current, same), { changes: [], findings: [] });
        assert.deepEqual(planConfigChanges(current, { mode: "nftables", conntrack: {} }).changes, []);
        // an empty list where there was none is still an edit: kube-proxy reads a missing list as the default
        assert.deepEqual(
            listed(
                planConfigChanges(config({ mode: "nftables" }), { mode: "nftables", nodePortAddresses: [] }).changes,
            ),
            ["nodePortAddresses: null -> []"],
        );
    });

    it("per-mode settings are carried only on a move, only where the two modes read different fields", () => {
        const current = config({
            mode: "ipvs",
            ipvs: { syncPeriod: "45s" },
            iptables: { masqueradeAll: true, syncPeriod: "20s" },
        });
        // staying in ipvs carries nothing
        assert.deepEqual(planConfigChanges(current, { mode: "ipvs" }), { changes: [], findings: [] });
        // ipvs reads masqueradeAll from the iptables block already: only the sync period moves, and
        // the iptables block's own sync period is kept, with a warning naming both fields
        const toIptables = planConfigChanges(current, { mode: "iptables" });
        assert.deepEqual(listed(toIptables.changes), ['mode: "ipvs" -> "iptables"']);
        assert.deepEqual(toIptables.findings, [
            {
                severity: "warning",
                code: "carry.conflict",
                field: "iptables.syncPeriod",
                message:
                    'ipvs.syncPeriod is "45s" but iptables.syncPeriod, which iptables mode reads, is already "20s"; keeping iptables.syncPeriod',
                fix: "set iptables.syncPeriod to the value you want iptables mode to use",
            },
        ]);
        const toNft = planConfigChanges(current, { mode: "nftables" });
        assert.deepEqual(listed(toNft.changes), [
            'mode: "ipvs" -> "nftables"',
            'nftables.syncPeriod: null -> "45s"',
            "nftables.masqueradeAll: null -> true",
        ]);
        assert.equal(
            toNft.changes[1].reason,
            "carried from ipvs.syncPeriod: nftables mode reads nftables.syncPeriod, so without this syncPeriod would revert to its default",
        );
    });

    it("a value already equal in the new block is neither edited nor a conflict", () => {
        const r = planConfigChanges(
            config({ mode: "iptables", iptables: { syncPeriod: "45s" }, nftables: { syncPeriod: "45s" } }),
            { mode: "nftables" },
        );
        assert.deepEqual(listed(r.changes), ['mode: "iptables" -> "nftables"']);
        assert.deepEqual(r.findings, []);
    });

    it("leaving ipvs resets each non-zero ipvs-only value and remembers it; a move back restores only what is still reset", () => {
        const out = planConfigChanges(config({ mode: "ipvs", ipvs: { scheduler: "lc", tcpTimeout: "0s" } }), {
            mode: "iptables",
        });
        assert.deepEqual(listed(out.changes), ['mode: "ipvs" -> "iptables"', 'ipvs.scheduler: "lc" -> ""']);
        assert.equal(
            out.changes[1].remember,
            'kube-proxy-mode: was "lc" in ipvs mode, restored on a move back to ipvs',
        );
        const back = planConfigChanges(
            config({ mode: "iptables", ipvs: { scheduler: "", strictARP: true } }),
            { mode: "ipvs" },
            { "ipvs.scheduler": "lc", "ipvs.strictARP": true, "ipvs.syncPeriod": "45s" },
        );
        // strictARP was set again by hand, syncPeriod is not an ipvs-only setting: neither is touched
        assert.deepEqual(listed(back.changes), ['mode: "iptables" -> "ipvs"', 'ipvs.scheduler: "" -> "lc"']);
        assert.equal(back.changes[1].remember, null, "the restore takes the memory out");
        assert.equal(
            back.changes[1].reason,
            'restored: ipvs.scheduler was "lc" before this cluster left ipvs mode (kept in a comment beside it)',
        );
        // staying in ipvs, or staying out of it, restores nothing
        assert.deepEqual(
            listed(
                planConfigChanges(
                    config({ mode: "ipvs", ipvs: { scheduler: "" } }),
                    { mode: "ipvs" },
                    { "ipvs.scheduler": "lc" },
                ).changes,
            ),
            [],
        );
        assert.deepEqual(
            listed(
                planConfigChanges(config({ mode: "nftables" }), { mode: "iptables" }, { "ipvs.scheduler": "lc" })
                    .changes,
            ),
            ['mode: "nftables" -> "iptables"'],
        );
    });
});

describe("rememberedIpvsSettings reads the memory back from the comments", () => {
    it("a memory alone, or after the user's words, is read; any other comment is not", () => {
        const text = [
            HEAD.trimEnd(),
            "mode: nftables",
            "ipvs:",
            '  scheduler: "" # kube-proxy-mode: was "lc" in ipvs mode, restored on a move back to ipvs',
            "  strictARP: false # MetalLB;kube-proxy-mode: was true in ipvs mode, restored on a move back to ipvs",
            '  tcpTimeout: 0s # notes kube-proxy-mode: was "900s" in ipvs mode, restored on a move back to ipvs',
            '  udpTimeout: 0s # kube-proxy-mode: was "9s" in ipvs mode, restored on a move back to ipvs later',
            "",
        ].join("\n");
        assert.deepEqual(rememberedIpvsSettings(text), { "ipvs.scheduler": "lc", "ipvs.strictARP": true });
        assert.deepEqual(rememberedIpvsSettings(`${HEAD}mode: nftables\n`), {});
    });
});

describe("applyChanges: the edits in the text's own style", () => {
    it("no edit returns the text untouched, spacing and all", () => {
        const text = `${HEAD}mode:   iptables   # odd spacing\n`;
        assert.equal(applyChanges(text, []), text);
    });

    it("the final newline is kept, or kept absent (a ConfigMap value written with |-)", () => {
        const change = [{ path: "mode", from: "iptables", to: "nftables", reason: "" }];
        assert.equal(applyChanges(`${HEAD}mode: iptables\n`, change), `${HEAD}mode: nftables\n`);
        assert.equal(applyChanges(`${HEAD}mode: iptables`, change), `${HEAD}mode: nftables`);
    });

    it("a new key goes in order where the keys are sorted (as kubeadm writes them), at the end where they are not", () => {
        const gate = [{ path: "featureGates.A", from: null, to: true, reason: "" }];
        assert.equal(
            applyChanges(`${HEAD}mode: iptables\n`, gate),
            "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nfeatureGates:\n  A: true\nkind: KubeProxyConfiguration\nmode: iptables\n",
        );
        assert.equal(
            applyChanges(
                "kind: KubeProxyConfiguration\napiVersion: kubeproxy.config.k8s.io/v1alpha1\nmode: iptables\n",
                gate,
            ),
            "kind: KubeProxyConfiguration\napiVersion: kubeproxy.config.k8s.io/v1alpha1\nmode: iptables\nfeatureGates:\n  A: true\n",
        );
        // the last key in a sorted mapping goes last
        assert.equal(
            applyChanges(`${HEAD}mode: iptables\n`, [{ path: "oomScoreAdj", from: null, to: -999, reason: "" }]),
            `${HEAD}mode: iptables\noomScoreAdj: -999\n`,
        );
    });

    it("an empty flow mapping (featureGates: {}) becomes a block; one with entries stays flow", () => {
        const gate = [{ path: "featureGates.A", from: null, to: true, reason: "" }];
        assert.equal(
            applyChanges(`${HEAD}featureGates: {}\nmode: iptables\n`, gate),
            `${HEAD}featureGates:\n  A: true\nmode: iptables\n`,
        );
        assert.equal(
            applyChanges(`${HEAD}featureGates: {B: false}\nmode: iptables\n`, gate),
            `${HEAD}featureGates: { A: true, B: false }\nmode: iptables\n`,
        );
    });

    it("list items follow the text's own indentation: Go's writer does not indent them, others do", () => {
        const to = [{ path: "nodePortAddresses", from: null, to: ["primary", "localhost"], reason: "" }];
        assert.equal(
            applyChanges(`${HEAD}mode: iptables\nnodePortAddresses:\n- 10.0.0.0/8\n`, to),
            `${HEAD}mode: iptables\nnodePortAddresses:\n- primary\n- localhost\n`,
        );
        assert.equal(
            applyChanges(`${HEAD}mode: iptables\nnodePortAddresses:\n  - 10.0.0.0/8\n`, to),
            `${HEAD}mode: iptables\nnodePortAddresses:\n  - primary\n  - localhost\n`,
        );
        // a text with no list yet: Go's style
        assert.equal(
            applyChanges(`${HEAD}mode: iptables\nnodePortAddresses: null\n`, to),
            `${HEAD}mode: iptables\nnodePortAddresses:\n- primary\n- localhost\n`,
        );
        // a comment line or a list item is not the key a list hangs from
        assert.equal(
            applyChanges(
                `${HEAD}clientConnection:\n  # note:\n  - x\nmode: iptables\nnodePortAddresses:\n  - 10.0.0.0/8\n`,
                to,
            )
                .split("\n")
                .slice(-3)
                .join("\n"),
            "  - primary\n  - localhost\n",
        );
    });

    it("the first list under a key decides, not a comment ending in a colon, a literal block's text or a dash inside a value", () => {
        const to = [{ path: "nodePortAddresses", from: null, to: ["primary"], reason: "" }];
        const goStyle = (before: string) =>
            applyChanges(`${HEAD}${before}mode: iptables\nnodePortAddresses:\n- 10.0.0.0/8\n`, to).endsWith(
                "nodePortAddresses:\n- primary\n",
            );
        assert.ok(goStyle("a:\n# b:\n  - x\n"), "a comment is not a key");
        assert.ok(goStyle("hostnameOverride: |\n  - x\n"), "a literal block is not a list");
        assert.ok(goStyle("clientConnection:\n  contentType: a - b\n"), "a dash inside a value is not an item");
        // a key with blanks after its colon still holds the list
        assert.equal(
            applyChanges(`${HEAD}mode: iptables\nnodePortAddresses:  \n  - 10.0.0.0/8\n`, to),
            `${HEAD}mode: iptables\nnodePortAddresses:\n  - primary\n`,
        );
    });

    it("a comment written tight against its mark stays as written when the value changes", () => {
        assert.equal(
            applyChanges(`${HEAD}mode: iptables #pinned by ops\n`, [
                { path: "mode", from: "iptables", to: "nftables", reason: "" },
            ]),
            `${HEAD}mode: nftables #pinned by ops\n`,
        );
    });

    it("the user's comments stay with their values: before and beside an edited value, and on a null made a mapping", () => {
        assert.equal(
            applyChanges(`${HEAD}# about the mode\nmode: iptables # the mode\n`, [
                { path: "mode", from: "iptables", to: "nftables", reason: "" },
            ]),
            `${HEAD}# about the mode\nmode: nftables # the mode\n`,
        );
        const made = applyChanges(`${HEAD}conntrack: null # mine\nmode: iptables\n`, [
            { path: "conntrack.tcpBeLiberal", from: null, to: true, reason: "" },
        ]);
        assert.match(made, /# mine/);
        assert.equal(parseKubeProxyConfiguration(made).conntrack && YAML.parse(made).conntrack.tcpBeLiberal, true);
    });

    it("a memory is set beside the user's words, and taken out leaving them", () => {
        const text = `${HEAD}mode: ipvs\nipvs:\n  scheduler: lc # least connections\n`;
        const memory = 'kube-proxy-mode: was "lc" in ipvs mode, restored on a move back to ipvs';
        const left = applyChanges(text, [{ path: "ipvs.scheduler", from: "lc", to: "", reason: "", remember: memory }]);
        assert.match(left, /^ {2}scheduler: "" # least connections; kube-proxy-mode: was "lc" in ipvs/m);
        const back = applyChanges(left, [{ path: "ipvs.scheduler", from: "", to: "lc", reason: "", remember: null }]);
        assert.equal(back, text);
        // without words of the user's own, the comment goes entirely
        const bare = applyChanges(`${HEAD}mode: ipvs\nipvs:\n  scheduler: lc\n`, [
            { path: "ipvs.scheduler", from: "lc", to: "", reason: "", remember: memory },
        ]);
        assert.equal(
            applyChanges(bare, [{ path: "ipvs.scheduler", from: "", to: "lc", reason: "", remember: null }]),
            `${HEAD}mode: ipvs\nipvs:\n  scheduler: lc\n`,
        );
    });
});

describe("explainDiff and renderConfiguration", () => {
    it("the diff is empty for the same text and names the ConfigMap's key otherwise", () => {
        assert.equal(explainDiff("a\n", "a\n"), "");
        assert.match(explainDiff("a\n", "b\n"), /^-{3} a\/config\.conf\n\+{3} b\/config\.conf\n/m);
        const eks = parseCurrentConfig(
            JSON.stringify({ kind: "ConfigMap", data: { config: `${HEAD}mode: iptables\n` } }),
        );
        const r = renderConfiguration(eks, { mode: "nftables" });
        assert.match(r.diff, /^--- a\/config\n\+\+\+ b\/config\n@@ -1,3 \+1,3 @@\n/m);
        assert.match(r.diff, /^-mode: iptables\n\+mode: nftables$/m);
        // a bare KubeProxyConfiguration's diff names config.conf; three lines of context each side
        const long = parseCurrentConfig(`${HEAD}a: 1\nb: 2\nc: 3\nd: 4\nmode: iptables\ne: 5\nf: 6\ng: 7\nh: 8\n`);
        const diff = renderConfiguration(long, { mode: "nftables" }).diff;
        assert.match(diff, /^--- a\/config\.conf\n\+\+\+ b\/config\.conf\n@@ -4,7 \+4,7 @@\n/m);
    });

    it("the version checked is the cluster's when given, else the settings' own, else none", () => {
        const current = parseCurrentConfig(`${HEAD}mode: iptables\n`);
        const settings: DesiredSettings = { mode: "nftables", kubernetesVersion: "1.29" };
        assert.equal(renderConfiguration(current, settings).version?.release, "1.29");
        const cluster = parseKubeVersion("v1.37.2")!;
        assert.equal(renderConfiguration(current, settings, cluster).version, cluster);
        assert.equal(renderConfiguration(current, { mode: "nftables" }).version, undefined);
    });

    it("the result carries the text, the data before and after, the changes and the findings", () => {
        const current = parseCurrentConfig(
            `${HEAD}mode: iptables\niptables:\n  syncPeriod: 45s\nnftables:\n  syncPeriod: 20s\n`,
        );
        const r = renderConfiguration(current, { mode: "nftables", kubernetesVersion: "1.37" });
        assert.equal(r.config, `${HEAD}mode: nftables\niptables:\n  syncPeriod: 45s\nnftables:\n  syncPeriod: 20s\n`);
        assert.equal(r.before, current.config);
        assert.equal(r.after.mode, "nftables");
        assert.deepEqual(listed(r.changes), ['mode: "iptables" -> "nftables"']);
        // the planner's finding first, then the rules'
        assert.equal(r.findings[0].code, "carry.conflict");
        assert.ok(r.findings.length > 1);
    });
});
