// The EKS managed add-on's detection and findings, pure: the add-on told by its objects' field
// manager on the RECONSTRUCTED add-on objects (tests/fixtures/eks/managed-addon, see its README).
import assert from "node:assert/strict";
import { eksAddonFindings, managedAddonOf, type ObjectMetadata } from "../../components/core/eksAddon.js";
import { ADDON_CONFIG_MAP, ADDON_DAEMON_SET, SELF_MANAGED_CONFIG_MAP, SELF_MANAGED_DAEMON_SET } from "./eksObjects.js";

describe("managedAddonOf: the add-on told by its objects' field manager", () => {
    const meta = (o: { kind: string; metadata: ObjectMetadata }): ObjectMetadata => ({ ...o.metadata, kind: o.kind });
    it("the add-on's ConfigMap and DaemonSet: both named, with the field manager, the operation and the label", () => {
        assert.deepEqual(managedAddonOf([meta(ADDON_CONFIG_MAP), meta(ADDON_DAEMON_SET)])?.evidence, [
            'ConfigMap kube-system/kube-proxy-config (field manager "eks", Apply; label eks.amazonaws.com/component=kube-proxy)',
            'DaemonSet kube-system/kube-proxy (field manager "eks", Apply; label eks.amazonaws.com/component=kube-proxy)',
        ]);
    });
    it("the label eks.amazonaws.com/component without the field manager eks (EKS's self-managed kube-proxy): not the add-on", () => {
        assert.equal(managedAddonOf([meta(SELF_MANAGED_CONFIG_MAP), meta(SELF_MANAGED_DAEMON_SET)]), undefined);
    });
    it("one object of the two managed is enough", () => {
        assert.equal(managedAddonOf([meta(SELF_MANAGED_CONFIG_MAP), meta(ADDON_DAEMON_SET)])?.evidence.length, 1);
    });
});

describe("eksAddonFindings", () => {
    const addon = { evidence: ['ConfigMap kube-system/kube-proxy-config (field manager "eks", Apply)'] };
    it("no add-on and no eksAddon: nothing to say", () => {
        assert.deepEqual(eksAddonFindings(undefined, undefined, "nftables"), []);
    });
    it("no add-on detected but values given: still checked (a mismatch the stack states is refused)", () => {
        const [f] = eksAddonFindings(undefined, { configurationValues: '{"mode":"iptables"}' }, "nftables");
        assert.equal(f.severity, "error");
        assert.equal(f.code, "eks.addonMode");
    });
    it("YAML null and whitespace count as no values: no mode", () => {
        for (const text of ["  \n", "null", "~"])
            assert.equal(
                eksAddonFindings(addon, { configurationValues: text }, "nftables")[0].code,
                "eks.addonMode",
                text,
            );
    });
    it("text that is neither JSON nor YAML: refused naming the field", () => {
        const [f] = eksAddonFindings(addon, { configurationValues: '{"mode": "nftables"' }, "nftables");
        assert.equal(f.code, "eks.addonValues");
        assert.equal(f.field, "eksAddon.configurationValues");
        assert.match(f.message, /is not JSON or YAML/);
    });
});

describe("managedAddonOf: the evidence line for an object with less metadata", () => {
    it("no labels, no namespace, an entry without its operation: still the add-on, each part said as known", () => {
        assert.deepEqual(
            managedAddonOf([
                { kind: "ConfigMap", name: "kube-proxy-config", managedFields: [{ manager: "eks" }] },
                { kind: "DaemonSet", namespace: "kube-system", name: "kube-proxy" },
            ])?.evidence,
            ['ConfigMap /kube-proxy-config (field manager "eks", unknown operation)'],
        );
    });
    it("several entries of the manager eks: each operation once", () => {
        assert.deepEqual(
            managedAddonOf([
                {
                    kind: "DaemonSet",
                    namespace: "kube-system",
                    name: "kube-proxy",
                    managedFields: [
                        { manager: "eks", operation: "Apply" },
                        { manager: "kubectl", operation: "Update" },
                        { manager: "eks", operation: "Update" },
                        { manager: "eks", operation: "Apply" },
                    ],
                },
            ])?.evidence,
            ['DaemonSet kube-system/kube-proxy (field manager "eks", Apply, Update)'],
        );
    });
});

describe("eksAddonFindings: what each answer tells the user", () => {
    const addon = { evidence: ['ConfigMap kube-system/kube-proxy-config (field manager "eks", Apply)'] };
    const values = (text: string, target: "iptables" | "nftables" = "nftables", detected = addon) =>
        eksAddonFindings(detected, { configurationValues: text }, target);

    it("a mode of null or empty text is no mode: the add-on version's default would be written", () => {
        for (const text of ['{"mode":null}', '{"mode":""}', "mode:"]) {
            const [f] = values(text);
            assert.equal(f.code, "eks.addonMode", text);
            assert.equal(f.severity, "error", text);
            assert.match(
                f.message,
                /set no mode: the next add-on update with resolveConflicts OVERWRITE rewrites kube-system\/kube-proxy-config/,
                text,
            );
            assert.match(
                f.message,
                /with the add-on version's default mode, and every node running nftables would move to it/,
                text,
            );
        }
    });
    it("a mode kube-proxy does not know is refused as bad values, listing the modes it knows", () => {
        for (const text of ['{"mode":"ebpf"}', '{"mode":3}', '{"mode":["nftables"]}']) {
            const [f] = values(text);
            assert.equal(f.code, "eks.addonValues", text);
            assert.equal(f.field, "eksAddon.configurationValues", text);
            assert.match(f.message, /which kube-proxy does not know \(it knows iptables, ipvs, nftables\)/, text);
        }
    });
    it("another mode: says the update would move every node to it, and how to fix the values in order", () => {
        const [f] = values('{"mode":"ipvs"}', "iptables");
        assert.match(
            f.message,
            /rewrites kube-system\/kube-proxy-config to ipvs, and every node would move to it at its next restart/,
        );
        assert.equal(
            f.fix,
            'set the add-on\'s configurationValues to carry mode iptables (e.g. {"mode":"iptables"}) and pass the same text as eksAddon.configurationValues; ' +
                "apply them to the add-on only after the finish (changing them rewrites kube-proxy-config for every node)",
        );
    });
    it("the target mode: an info that still warns of the other settings, naming what EKS manages when detected", () => {
        const [detected] = values('{"mode":"nftables"}');
        assert.equal(detected.severity, "info");
        assert.match(
            detected.message,
            /^the kube-proxy add-on's configurationValues set mode nftables, the target: an add-on update keeps the mode /,
        );
        assert.match(
            detected.message,
            /\(with resolveConflicts OVERWRITE it still resets kube-proxy-config's other settings to the add-on's\)/,
        );
        assert.match(
            detected.message,
            /; EKS manages ConfigMap kube-system\/kube-proxy-config \(field manager "eks", Apply\)$/,
        );
        const two = { evidence: ["ConfigMap a/b (x)", "DaemonSet a/c (y)"] };
        assert.match(
            values('{"mode":"nftables"}', "nftables", two)[0].message,
            /; EKS manages ConfigMap a\/b \(x\), DaemonSet a\/c \(y\)$/,
        );
        const [undetected] = eksAddonFindings(undefined, { configurationValues: '{"mode":"nftables"}' }, "nftables");
        assert.equal(undetected.severity, "info");
        assert.match(undetected.message, /other settings to the add-on's\)$/, "ends there: nothing detected to name");
    });
    it("acknowledgeOverwrite on a detected add-on: a warning naming each object and what may happen, with the fix", () => {
        const two = { evidence: ["ConfigMap a/b (x)", "DaemonSet a/c (y)"] };
        const [f] = eksAddonFindings(two, { acknowledgeOverwrite: true }, "nftables");
        assert.equal(f.severity, "warning");
        assert.equal(f.code, "eks.addonUnchecked");
        assert.match(
            f.message,
            /^EKS manages kube-proxy as an add-on \(ConfigMap a\/b \(x\), DaemonSet a\/c \(y\)\) and its configurationValues were not checked/,
        );
        assert.match(
            f.message,
            /may rewrite kube-system\/kube-proxy-config and move every node at its next restart, unverified$/,
        );
        assert.equal(
            f.fix,
            "pass the add-on's configurationValues as eksAddon.configurationValues, with mode nftables",
        );
    });
    it("acknowledgeOverwrite without a detected add-on: nothing to say", () => {
        assert.deepEqual(eksAddonFindings(undefined, { acknowledgeOverwrite: true }, "nftables"), []);
    });
    it("a detected add-on and no eksAddon: refused, naming each object, where the values live, and both ways on", () => {
        const two = { evidence: ["ConfigMap a/b (x)", "DaemonSet a/c (y)"] };
        const [f] = eksAddonFindings(two, undefined, "iptables");
        assert.equal(f.severity, "error");
        assert.equal(f.code, "eks.addonManaged");
        assert.equal(f.field, "eksAddon");
        assert.match(
            f.message,
            /^EKS manages kube-proxy as an add-on \(ConfigMap a\/b \(x\), DaemonSet a\/c \(y\)\): its next update/,
        );
        assert.match(
            f.message,
            /from the add-on's configurationValues, which live in AWS's API and which this preview cannot read; a mode there other than iptables/,
        );
        assert.match(f.message, /would move every node at its next restart, unverified$/);
        assert.match(
            f.fix!,
            /must carry mode iptables, e\.g\. \{"mode":"iptables"\}\), or set eksAddon\.acknowledgeOverwrite: true/,
        );
    });
});
