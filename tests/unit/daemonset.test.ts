// components/core/daemonset.ts: the DaemonSet shapes of a per-node rollout.
import assert from "node:assert/strict";
import * as YAML from "yaml";
import { canonicalDuringRollout, MARKS, targetDaemonSetSpec } from "../../components/core/index.js";
import { fixture } from "../helpers.js";

describe("DaemonSet shapes for a per-node rollout", () => {
    const original = YAML.parse(fixture("kubeadm/1.37/daemonset.yaml")).spec;

    it("keeps the installer's DaemonSet off labelled nodes and stops it from rolling on its own", () => {
        const spec = canonicalDuringRollout(original);
        assert.deepEqual(spec.updateStrategy, { type: "OnDelete" });
        const terms =
            spec.template.spec!.affinity!.nodeAffinity!.requiredDuringSchedulingIgnoredDuringExecution!
                .nodeSelectorTerms;
        assert.deepEqual(terms, [{ matchExpressions: [{ key: MARKS.configLabel, operator: "DoesNotExist" }] }]);
        assert.deepEqual(
            spec.template.spec?.containers,
            original.template.spec.containers,
            "the container is untouched",
        );
        assert.equal(original.updateStrategy.type, "RollingUpdate", "the input is not modified");
    });
    it("adds the requirement to every existing affinity term", () => {
        const withAffinity = structuredClone(original);
        withAffinity.template.spec.affinity = {
            nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                    nodeSelectorTerms: [
                        { matchExpressions: [{ key: "a", operator: "Exists" }] },
                        { matchFields: [{ key: "metadata.name", operator: "In", values: ["n"] }] },
                    ],
                },
            },
        };
        const terms =
            canonicalDuringRollout(withAffinity).template.spec!.affinity!.nodeAffinity!
                .requiredDuringSchedulingIgnoredDuringExecution!.nodeSelectorTerms;
        assert.equal(terms.length, 2);
        for (const t of terms)
            assert.ok(t.matchExpressions?.some((e) => e.key === MARKS.configLabel && e.operator === "DoesNotExist"));
    });
    it("runs the target on nodes labelled with its hash, mounting its own ConfigMap", () => {
        const spec = targetDaemonSetSpec(original, { hash: "abc123", canonicalConfigMap: "kube-proxy" });
        assert.equal(spec.selector.matchLabels?.[MARKS.configLabel], "abc123");
        assert.equal(spec.template.metadata?.labels?.[MARKS.configLabel], "abc123");
        assert.equal(
            spec.template.spec?.volumes?.find((v) => v.name === "kube-proxy")?.configMap?.name,
            "kube-proxy-abc123",
        );
        const req =
            spec.template.spec.affinity!.nodeAffinity!.requiredDuringSchedulingIgnoredDuringExecution!
                .nodeSelectorTerms[0].matchExpressions;
        assert.deepEqual(req, [{ key: MARKS.configLabel, operator: "In", values: ["abc123"] }]);
    });
    it("refuses a DaemonSet that does not mount the ConfigMap", () => {
        assert.throws(
            () => targetDaemonSetSpec(original, { hash: "x", canonicalConfigMap: "kube-proxy-config" }),
            /mounts no volume from ConfigMap kube-proxy-config/,
        );
    });
});
