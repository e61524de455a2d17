// components/core/daemonset.ts: the DaemonSet shapes of a per-node rollout.
import assert from "node:assert/strict";
import * as YAML from "yaml";
import {
    canonicalDuringRollout,
    handBackRevision,
    MARKS,
    podIsOfRevision,
    revisionOfTemplate,
    revisionLabels,
    targetDaemonSetSpec,
    templateGenerationAfterRestore,
    templateOfRevisionData,
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
    it("refuses a DaemonSet without a pod template spec, naming what is missing", () => {
        const noPodSpec = { ...structuredClone(original), template: { metadata: original.template.metadata } };
        assert.throws(() => canonicalDuringRollout(noPodSpec), /the kube-proxy DaemonSet has no pod template spec/);
        assert.throws(
            () => targetDaemonSetSpec(noPodSpec, { hash: "x", canonicalConfigMap: "kube-proxy" }),
            /mounts no volume from ConfigMap kube-proxy/,
        );
    });
    it("the target keeps the installer's selector and pod labels beside its hash, and waits for pod deletions", () => {
        const spec = targetDaemonSetSpec(original, { hash: "abc123", canonicalConfigMap: "kube-proxy" });
        assert.deepEqual(spec.selector.matchLabels, { "k8s-app": "kube-proxy", [MARKS.configLabel]: "abc123" });
        assert.deepEqual(spec.template.metadata?.labels, { "k8s-app": "kube-proxy", [MARKS.configLabel]: "abc123" });
        assert.deepEqual(spec.updateStrategy, { type: "OnDelete" });
    });
    it("a term's own expressions and fields are kept; a requirement on the config label is replaced, not doubled", () => {
        const withAffinity = structuredClone(original);
        withAffinity.template.spec.affinity = {
            nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                    nodeSelectorTerms: [
                        {
                            matchExpressions: [
                                { key: "a", operator: "Exists" },
                                { key: MARKS.configLabel, operator: "In", values: ["old"] },
                            ],
                        },
                        { matchFields: [{ key: "metadata.name", operator: "In", values: ["n"] }] },
                    ],
                },
            },
        };
        const requirement = { key: MARKS.configLabel, operator: "DoesNotExist" };
        assert.deepEqual(
            canonicalDuringRollout(withAffinity).template.spec!.affinity!.nodeAffinity!
                .requiredDuringSchedulingIgnoredDuringExecution!.nodeSelectorTerms,
            [
                { matchExpressions: [{ key: "a", operator: "Exists" }, requirement] },
                {
                    matchFields: [{ key: "metadata.name", operator: "In", values: ["n"] }],
                    matchExpressions: [requirement],
                },
            ],
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
        assert.equal(templateGenerationAfterRestore({ "deprecated.daemonset.template.generation": "12" }), "13");
        for (const bad of ["v3", "3a"])
            assert.equal(
                templateGenerationAfterRestore({ "deprecated.daemonset.template.generation": bad }),
                undefined,
            );
    });
});

describe("the hand-back's pods started as of the revision the restore makes current", () => {
    // the installer's template, and the same in the rollout's shape, as the DaemonSet controller
    // records them in its ControllerRevisions' data ({"spec":{"template":{"$patch":"replace",...}}})
    const original = YAML.parse(fixture("kubeadm/1.37/daemonset.yaml")).spec;
    const installers = original.template;
    const rollouts = canonicalDuringRollout(original).template;
    const recorded = (template: unknown) =>
        templateOfRevisionData({
            spec: { template: { $patch: "replace", ...JSON.parse(JSON.stringify(template)) } },
        });
    const revisions = [
        { name: "kube-proxy-5499867df", hash: "5499867df", revision: 1, template: recorded(installers) },
        { name: "kube-proxy-6c8b7f9d4", hash: "6c8b7f9d4", revision: 2, template: recorded(rollouts) },
    ];

    it("finds a revision by the template it records, whatever its key order and null fields", () => {
        const reordered = JSON.parse(JSON.stringify(installers), (_k, v: unknown) =>
            v && typeof v === "object" && !Array.isArray(v)
                ? Object.fromEntries(Object.entries(v as object).reverse())
                : v,
        );
        const withNull = { ...JSON.parse(JSON.stringify(installers)), metadata: { creationTimestamp: null } };
        assert.equal(revisionOfTemplate(revisions, reordered)?.name, "kube-proxy-5499867df");
        assert.equal(revisionOfTemplate(revisions, rollouts)?.name, "kube-proxy-6c8b7f9d4");
        assert.equal(
            revisionOfTemplate(revisions, { ...withNull, metadata: { ...withNull.metadata, ...installers?.metadata } })
                ?.name,
            "kube-proxy-5499867df",
        );
        assert.equal(revisionOfTemplate(revisions, { spec: { containers: [] } }), undefined);
        assert.equal(revisionOfTemplate(revisions, undefined), undefined);
    });

    it("templates that differ only in a number or a flag are different revisions", () => {
        const template = (seconds: number, hostNetwork: boolean) => ({
            spec: { terminationGracePeriodSeconds: seconds, hostNetwork },
        });
        const byValue = [
            { name: "grace-30", revision: 1, template: template(30, true) },
            { name: "grace-60", revision: 2, template: template(60, true) },
            { name: "no-host-network", revision: 3, template: template(60, false) },
        ];
        assert.equal(revisionOfTemplate(byValue, template(30, true))?.name, "grace-30");
        assert.equal(revisionOfTemplate(byValue, template(60, true))?.name, "grace-60");
        assert.equal(revisionOfTemplate(byValue, template(60, false))?.name, "no-host-network");
    });

    it("a revision without data, or data without spec, records no template", () => {
        assert.equal(templateOfRevisionData(undefined), undefined);
        assert.equal(templateOfRevisionData({}), undefined);
        assert.deepEqual(templateOfRevisionData({ spec: { template: { a: 1 } } }), { a: 1 });
        const nullTemplate = {
            name: "null",
            revision: 9,
            template: templateOfRevisionData({ spec: { template: null } }),
        };
        assert.equal(revisionOfTemplate([nullTemplate], { a: 1 }), undefined, "a null template matches no template");
    });

    it("the newest of several revisions that record the same template", () => {
        const twice = [...revisions, { ...revisions[0], name: "kube-proxy-dup", revision: 3 }];
        assert.equal(revisionOfTemplate(twice, installers)?.name, "kube-proxy-dup");
    });

    it("relabels the current revision (the rollout's shape) with the installer's revision's hash, keeping its own to put back", () => {
        assert.deepEqual(handBackRevision(revisions, rollouts, installers), {
            restoreHash: "5499867df",
            relabel: { name: "kube-proxy-6c8b7f9d4", from: "6c8b7f9d4", to: "5499867df" },
        });
    });

    it("a revision relabelled already (a run that died in the hand-back) is not relabelled again", () => {
        const relabelled = [revisions[0], { ...revisions[1], hash: "5499867df" }];
        assert.deepEqual(handBackRevision(relabelled, rollouts, installers), {
            restoreHash: "5499867df",
        });
    });

    it("nothing to arrange when the installer's revision is gone (revisionHistoryLimit: 0), the current one is not found, or the DaemonSet is not in the rollout's shape", () => {
        assert.deepEqual(handBackRevision([revisions[1]], rollouts, installers), {});
        assert.deepEqual(handBackRevision([revisions[0]], rollouts, installers), {});
        assert.deepEqual(handBackRevision(revisions, installers, installers), {});
    });

    it("a current revision with no hash label keeps its name as its own hash (the controller labels such a revision with its name)", () => {
        assert.deepEqual(handBackRevision([revisions[0], { ...revisions[1], hash: undefined }], rollouts, installers), {
            restoreHash: "5499867df",
            relabel: { name: "kube-proxy-6c8b7f9d4", from: "kube-proxy-6c8b7f9d4", to: "5499867df" },
        });
    });
});
