// components/core/config.ts: what a user hands over as the current configuration is read, or
// refused with an InputError naming the input, the field and what to give instead; the helpers
// the rules and the render read the configuration through (mode, dotted paths, zero values).
import assert from "node:assert/strict";
import {
    effectiveMode,
    getPath,
    isZeroValue,
    parseCurrentConfig,
    parseKubeProxyConfiguration,
    pinnedMode,
} from "../../components/core/config.js";
import { InputError } from "../../components/core/types.js";

const KPC = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: nftables\n";

/** The InputError `read` throws, as "[field] message". */
function refusal(read: () => unknown): string {
    try {
        read();
    } catch (e) {
        assert.ok(e instanceof InputError, `not an InputError: ${String(e)}`);
        return `[${e.field}] ${e.message}`;
    }
    assert.fail("the input was read");
}

describe("parseCurrentConfig: the current configuration as a user hands it over", () => {
    it("a bare KubeProxyConfiguration is read as it is, its text kept byte for byte", () => {
        const text = `# kept\n${KPC}ipvs:\n  scheduler: lc\n`;
        const current = parseCurrentConfig(text);
        assert.equal(current.text, text);
        assert.deepEqual(current.source, { kind: "KubeProxyConfiguration" });
        assert.equal(current.config.mode, "nftables");
        assert.deepEqual(current.config.ipvs, { scheduler: "lc" });
    });

    it("a ConfigMap: the configuration under config.conf (kubeadm), with the map's name, namespace and object", () => {
        const cm = {
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: "kube-proxy", namespace: "kube-system" },
            data: { "config.conf": KPC, kubeconfig: "x" },
        };
        const current = parseCurrentConfig(JSON.stringify(cm));
        assert.equal(current.text, KPC);
        assert.equal(current.config.mode, "nftables");
        assert.deepEqual(current.source, {
            kind: "ConfigMap",
            name: "kube-proxy",
            namespace: "kube-system",
            key: "config.conf",
            object: cm,
        });
    });

    it("EKS keeps it under config; config.conf wins when both are there; a key that is not text is not the configuration", () => {
        const eks = parseCurrentConfig(JSON.stringify({ kind: "ConfigMap", data: { config: KPC } }));
        assert.equal(eks.source.kind === "ConfigMap" && eks.source.key, "config");
        assert.deepEqual(eks.source.kind === "ConfigMap" && [eks.source.name, eks.source.namespace], [
            undefined,
            undefined,
        ]);
        const both = parseCurrentConfig(
            JSON.stringify({
                kind: "ConfigMap",
                data: { config: KPC.replace("nftables", "ipvs"), "config.conf": KPC },
            }),
        );
        assert.equal(both.source.kind === "ConfigMap" && both.source.key, "config.conf");
        assert.equal(both.config.mode, "nftables");
        const numeric = parseCurrentConfig(
            JSON.stringify({
                kind: "ConfigMap",
                metadata: { name: 7, namespace: 8 },
                data: { "config.conf": 1, config: KPC },
            }),
        );
        assert.equal(numeric.source.kind === "ConfigMap" && numeric.source.key, "config");
        assert.deepEqual(numeric.source.kind === "ConfigMap" && [numeric.source.name, numeric.source.namespace], [
            undefined,
            undefined,
        ]);
    });

    it("a List (kubectl get cm -o yaml of several) holding exactly one ConfigMap is that ConfigMap; other kinds in it are skipped", () => {
        const list = {
            kind: "List",
            items: [{ kind: "Secret" }, "text", { kind: "ConfigMap", metadata: { name: "kp" }, data: { config: KPC } }],
        };
        const current = parseCurrentConfig(JSON.stringify(list));
        assert.equal(current.text, KPC);
        assert.equal(current.source.kind === "ConfigMap" && current.source.name, "kp");
        assert.equal(
            refusal(() => parseCurrentConfig(JSON.stringify({ kind: "List", items: [{ kind: "Secret" }] }))),
            "[input] --current is a List with 0 ConfigMaps: give exactly one",
        );
        assert.equal(
            refusal(() =>
                parseCurrentConfig(
                    JSON.stringify({ kind: "List", items: [{ kind: "ConfigMap" }, { kind: "ConfigMap" }] }),
                ),
            ),
            "[input] --current is a List with 2 ConfigMaps: give exactly one",
        );
    });

    it("empty input, or only comments, is refused as empty, naming the input", () => {
        for (const input of ["", " \n\t\n", "# a comment\n"])
            assert.equal(
                refusal(() => parseCurrentConfig(input, "cm.yaml")),
                "[input] cm.yaml is empty: expected a KubeProxyConfiguration or a ConfigMap holding one",
                JSON.stringify(input),
            );
    });

    it("a stray document marker is no document: a trailing or leading `---` is read, `---` alone is empty", () => {
        assert.equal(parseCurrentConfig(`${KPC}---\n`).config.mode, "nftables");
        assert.equal(parseCurrentConfig(`---\n${KPC}---\n`).text, `---\n${KPC}---\n`);
        assert.match(
            refusal(() => parseCurrentConfig("---\n")),
            /^\[input\] --current is empty: /,
        );
        // a document that is one bare value, or one that does not parse, is still a document
        assert.match(
            refusal(() => parseCurrentConfig("nftables\n")),
            /^\[input\] --current is not a mapping: /,
        );
        assert.match(
            refusal(() => parseCurrentConfig("]\n")),
            /^\[input\] --current is not valid YAML or JSON \(line 1\)/,
        );
    });

    it("text that is not YAML is refused with the line of the error; two documents are refused", () => {
        // the first line of the parser's own message: what is wrong, not where (the line number says that)
        assert.match(
            refusal(() => parseCurrentConfig("kind: ConfigMap\ndata: [\n")),
            /^\[input\] --current is not valid YAML or JSON \(line 3\): [A-Z][^\n]{20,}$/,
        );
        assert.equal(
            refusal(() => parseCurrentConfig(`${KPC}---\n${KPC}`)),
            "[input] --current holds 2 YAML documents: give exactly one KubeProxyConfiguration or ConfigMap",
        );
        // an error in the second document is reported, not the count
        assert.match(
            refusal(() => parseCurrentConfig(`${KPC}---\na: [\n`)),
            /is not valid YAML or JSON/,
        );
    });

    it("what is not a mapping, or of another kind, is refused naming the kind and the command that prints the right one", () => {
        assert.equal(
            refusal(() => parseCurrentConfig("- a\n")),
            "[input] --current is not a mapping: expected a ConfigMap or a KubeProxyConfiguration",
        );
        assert.equal(
            refusal(() => parseCurrentConfig("kind: Secret\n")),
            '[kind] --current has kind "Secret": expected a ConfigMap (kubectl get cm -n kube-system kube-proxy -o yaml) or a KubeProxyConfiguration',
        );
        assert.match(
            refusal(() => parseCurrentConfig("{}")),
            /^\[kind\] --current has kind null: /,
        );
    });

    it("a ConfigMap without the configuration is refused naming the keys looked for and the keys found", () => {
        assert.equal(
            refusal(() => parseCurrentConfig("kind: ConfigMap\nmetadata: {name: kp}\ndata: {foo: bar, baz: 1}\n")),
            '[data] ConfigMap kp has no data["config.conf"] or data["config"] (keys found: foo, baz); kubeadm keeps the configuration under config.conf, EKS under config',
        );
        assert.match(
            refusal(() => parseCurrentConfig("kind: ConfigMap\ndata: [config]\n")),
            /^\[data\] ConfigMap \(unnamed\) has no .* \(keys found: none\);/,
        );
    });

    it("the configuration inside a ConfigMap is checked too, the error naming the key and the map", () => {
        assert.equal(
            refusal(() => parseCurrentConfig("kind: ConfigMap\nmetadata: {name: kp}\ndata: {config: 'kind: X'}\n")),
            '[kind] data["config"] of ConfigMap kp has kind "X": expected kind: KubeProxyConfiguration',
        );
        assert.match(
            refusal(() => parseCurrentConfig("kind: ConfigMap\ndata: {config.conf: 'kind: X'}\n")),
            /^\[kind\] data\["config\.conf"\] of ConfigMap \(unnamed\) has kind "X"/,
        );
    });
});

describe("parseKubeProxyConfiguration: only a KubeProxyConfiguration of the version this tool reads", () => {
    it("refuses another kind, another apiVersion, and what is not a mapping, naming the field", () => {
        assert.equal(
            refusal(() => parseKubeProxyConfiguration("[1]")),
            "[input] the configuration is not a mapping: expected kind: KubeProxyConfiguration",
        );
        assert.equal(
            refusal(() =>
                parseKubeProxyConfiguration("apiVersion: v1\nkind: ConfigMap\n", "the rendered configuration"),
            ),
            '[kind] the rendered configuration has kind "ConfigMap": expected kind: KubeProxyConfiguration',
        );
        assert.equal(
            refusal(() => parseKubeProxyConfiguration("kind: KubeProxyConfiguration\n")),
            "[apiVersion] the configuration has apiVersion null: this tool reads kubeproxy.config.k8s.io/v1alpha1",
        );
        assert.equal(
            refusal(() => parseKubeProxyConfiguration(KPC.replace("v1alpha1", "v1beta1"))),
            '[apiVersion] the configuration has apiVersion "kubeproxy.config.k8s.io/v1beta1": this tool reads kubeproxy.config.k8s.io/v1alpha1',
        );
        assert.equal(parseKubeProxyConfiguration(KPC).mode, "nftables");
    });
});

describe("the mode a configuration runs", () => {
    it("pinned: one of the three modes as written; an empty, unknown or non-text mode is not pinned", () => {
        assert.equal(pinnedMode({ mode: "ipvs" }), "ipvs");
        for (const mode of ["", "nft", undefined, 1, ["ipvs"]]) assert.equal(pinnedMode({ mode }), undefined);
    });
    it("effective: the pinned mode, or iptables (upstream's default today) when unpinned", () => {
        assert.equal(effectiveMode({ mode: "nftables" }), "nftables");
        assert.equal(effectiveMode({ mode: "" }), "iptables");
        assert.equal(effectiveMode({}), "iptables");
    });
});

describe("getPath reads a dotted path; isZeroValue knows kubeadm's zero values", () => {
    it("getPath: the value at the path, undefined where the path leaves the data", () => {
        const data = { ipvs: { scheduler: "lc", list: ["a"] }, mode: "ipvs" };
        assert.equal(getPath(data, "ipvs.scheduler"), "lc");
        assert.deepEqual(getPath(data, "ipvs"), { scheduler: "lc", list: ["a"] });
        assert.equal(getPath(data, "mode.length"), undefined);
        assert.equal(getPath(data, "ipvs.list.0"), undefined);
        assert.equal(getPath(data, "nftables.syncPeriod"), undefined);
    });
    it("zero: missing, null, false, empty text, 0, a zero duration, an empty list or mapping", () => {
        for (const v of [
            undefined,
            null,
            false,
            "",
            0,
            "0s",
            "00s",
            "0m0s",
            "0.0s",
            "0.000ms",
            "0µs",
            "0h",
            "0ns",
            [],
            {},
        ])
            assert.equal(isZeroValue(v), true, JSON.stringify(v));
    });
    it("not zero: any other value, including durations that only contain a zero", () => {
        for (const v of [
            true,
            1,
            "0",
            "lc",
            "10s",
            "0.5s",
            "1m0s",
            "0sx",
            "0s ",
            " 0s",
            "0x",
            "0.s",
            [0],
            [""],
            ["0s"],
            { a: 0 },
        ])
            assert.equal(isZeroValue(v), false, JSON.stringify(v));
    });
});
