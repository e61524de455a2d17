// The probe pod asks for what the probe uses and no more: host network, privileged, the node's
// root at /host; no hostPID, kube-proxy's own tolerations, default priority, a pinned image.
import assert from "node:assert/strict";
import { probePodSpec } from "../../components/cluster/probePod.js";
import { PROBE_SCRIPT } from "../../components/core/probe.js";
import { verifySchema } from "../../components/rollout/spec.js";

describe("the probe pod's spec", () => {
    const tolerations = [{ key: "node-role.kubernetes.io/control-plane", operator: "Exists", effect: "NoSchedule" }];
    const spec = probePodSpec("n1", {
        image: "img",
        action: "probe",
        env: {},
        tolerations,
        activeDeadlineSeconds: 150,
    });
    it("has no hostPID (the probe reads the host network's /proc/net and the host's tools through chroot /host, not host processes)", () => {
        assert.equal(spec.hostPID, undefined);
        assert.equal(spec.hostNetwork, true);
        assert.doesNotMatch(
            PROBE_SCRIPT,
            /\/proc\/[0-9$]|nsenter|pidof|pgrep/,
            "the probe script reads no host process",
        );
    });
    it("tolerates only what the kube-proxy DaemonSet tolerates, and has the default priority unless one is configured", () => {
        assert.deepEqual(spec.tolerations, tolerations);
        assert.equal(spec.priorityClassName, undefined);
        assert.equal(
            probePodSpec("n1", {
                image: "img",
                action: "probe",
                env: {},
                tolerations,
                priorityClassName: "ops-low",
                activeDeadlineSeconds: 150,
            }).priorityClassName,
            "ops-low",
        );
    });
    it("the default image is busybox 1.36 pinned by digest, overridable by verify.image", () => {
        assert.match(verifySchema.parse({}).image, /^busybox:1\.36@sha256:[0-9a-f]{64}$/);
        assert.equal(verifySchema.parse({ image: "registry.local/busybox:1.36" }).image, "registry.local/busybox:1.36");
        assert.equal(verifySchema.parse({ priorityClassName: "x" }).priorityClassName, "x");
    });
});
