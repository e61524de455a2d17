// components/core/daemonset.ts: the DaemonSet shapes of a per-node rollout.
import assert from "node:assert/strict";
import * as YAML from "yaml";
import {
    canonicalDuringRollout,
    MARKS,
    podIsOfRevision,
    revisionLabels,
    targetDaemonSetSpec,
    templateGenerationAfterRestore,
} from "../../components/core/index.js";
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

describe("a pod as of a DaemonSet revision, by the DaemonSet controller's rule", () => {
    const revision = { hash: "7d9f", templateGeneration: "4" };

    it("counts a pod current when its hash OR its template generation matches", () => {
        assert.equal(
            podIsOfRevision({ "controller-revision-hash": "7d9f", "pod-template-generation": "3" }, revision),
            true,
        );
        assert.equal(
            podIsOfRevision({ "controller-revision-hash": "5c1a", "pod-template-generation": "4" }, revision),
            true,
        );
        assert.equal(
            podIsOfRevision({ "controller-revision-hash": "5c1a", "pod-template-generation": "3" }, revision),
            false,
        );
        assert.equal(podIsOfRevision(undefined, revision), false);
    });

    it("marks a pod with the parts of the revision it has, labels it counts as current", () => {
        assert.deepEqual(revisionLabels(revision), {
            "controller-revision-hash": "7d9f",
            "pod-template-generation": "4",
        });
        assert.deepEqual(revisionLabels({ templateGeneration: "4" }), { "pod-template-generation": "4" });
        assert.equal(podIsOfRevision(revisionLabels({ hash: "7d9f" }), revision), true);
    });

    it("never matches on a part the revision lacks (an empty hash, no template generation)", () => {
        assert.equal(podIsOfRevision({ "controller-revision-hash": "" }, { hash: "" }), false);
        assert.equal(podIsOfRevision({}, { hash: "7d9f" }), false);
        assert.equal(podIsOfRevision({ "pod-template-generation": "4" }, { hash: "7d9f" }), false);
    });

    it("the restore's template generation is one more than the DaemonSet's; none when it carries none or a bad one", () => {
        assert.equal(templateGenerationAfterRestore({ "deprecated.daemonset.template.generation": "3" }), "4");
        assert.equal(templateGenerationAfterRestore({}), undefined);
        assert.equal(templateGenerationAfterRestore(undefined), undefined);
        assert.equal(templateGenerationAfterRestore({ "deprecated.daemonset.template.generation": "x" }), undefined);
    });
});
