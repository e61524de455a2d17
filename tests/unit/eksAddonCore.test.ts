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
