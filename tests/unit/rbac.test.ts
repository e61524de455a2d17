// Least privilege has one source: the shipped manifest, the Pulumi helper and docs/rbac.md's table
// all come from components/core/rbac.ts; and that source grants what the tool calls, no more.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import * as YAML from "yaml";
import {
    accessFindings,
    describeAccess,
    DEFAULT_RBAC_NAMES,
    PERMISSIONS,
    permissionsFor,
    permissionTable,
    type PolicyRule,
    rbacObjects,
    renderRbacManifest,
    rolloutAccesses,
} from "../../components/core/rbac.js";
import { ROLLOUT_OWNER } from "../../components/core/plan.js";
import { ROOT } from "../helpers.js";

describe("RBAC: one source for the manifest, the helper and docs/rbac.md", () => {
    it("rbac/kube-proxy-mode.yaml is exactly what components/core/rbac.ts renders, and says it is cluster-admin-equivalent", () => {
        const shipped = readFileSync(join(ROOT, "rbac", "kube-proxy-mode.yaml"), "utf8");
        assert.equal(
            shipped,
            renderRbacManifest(),
            "regenerate: node -e 'process.stdout.write(require(\"./dist/components/core/rbac.js\").renderRbacManifest())' > rbac/kube-proxy-mode.yaml",
        );
        assert.match(shipped, /cluster-admin-equivalent/);
        assert.deepEqual(
            YAML.parseAllDocuments(shipped).map((d) => d.toJS().kind),
            ["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"],
        );
    });
    it("package.json ships the rbac folder", () => {
        assert.ok(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).files.includes("rbac"));
    });
    it("docs/rbac.md's permission table is the generated one: a header and one row per permission", () => {
        const table = permissionTable();
        assert.ok(
            readFileSync(join(ROOT, "docs", "rbac.md"), "utf8").includes(table),
            "docs/rbac.md must contain permissionTable() verbatim",
        );
        const lines = table.split("\n");
        assert.deepEqual(lines.slice(0, 2), ["| resource | where | verbs | why |", "| --- | --- | --- | --- |"]);
        assert.equal(lines.length, PERMISSIONS.length + 2);
    });
    it("another installation's names change only the named rules: every other grant and reason is the shipped one", () => {
        // the component's preflight and a custom Role come from permissionsFor, the shipped manifest from PERMISSIONS
        const custom = permissionsFor({ configMaps: ["kp-settings"], daemonSets: ["kp"] });
        const shippedNames: Record<string, string[]> = {
            "kp-settings": DEFAULT_RBAC_NAMES.configMaps,
            kp: DEFAULT_RBAC_NAMES.daemonSets,
        };
        const renamed = custom.map((p) =>
            p.rule.resourceNames && shippedNames[p.rule.resourceNames[0]]
                ? { ...p, rule: { ...p.rule, resourceNames: shippedNames[p.rule.resourceNames[0]] } }
                : p,
        );
        assert.deepEqual(renamed, PERMISSIONS);
        assert.notDeepEqual(custom, PERMISSIONS);
    });
    it("kubeProxyModeRbac creates the same objects, bound to the given ServiceAccount", async () => {
        const created: { type: string; inputs: any }[] = [];
        await pulumi.runtime.setMocks(
            {
                newResource: (a) => (
                    created.push({ type: a.type, inputs: a.inputs }),
                    { id: `${a.name}-id`, state: a.inputs }
                ),
                call: () => ({}),
            },
            "p",
            "s",
            false,
        );
        const { kubeProxyModeRbac } = await import("../../components/pulumi/rbac.js");
        const sa = { name: "rollouts", namespace: "ops" };
        const r = kubeProxyModeRbac("kpm", { serviceAccount: sa });
        await new Promise<void>((res) => r.roleBinding.urn.apply(() => res()));
        await new Promise((res) => setTimeout(res, 50));
        const want = rbacObjects({ serviceAccount: sa });
        const typeOf = (kind: string) => `kubernetes:rbac.authorization.k8s.io/v1:${kind}`;
        assert.deepEqual(created.map((c) => c.type).sort(), want.map((o) => typeOf(o.kind)).sort());
        for (const o of want) {
            const { apiVersion: _a, kind: _k, ...body } = o;
            const got = { ...created.find((c) => c.type === typeOf(o.kind))!.inputs };
            delete got.apiVersion;
            delete got.kind;
            assert.deepEqual(got, body, o.kind);
        }
        assert.deepEqual(created.find((c) => c.type === typeOf("ClusterRoleBinding"))!.inputs.subjects, [
            { kind: "ServiceAccount", name: "rollouts", namespace: "ops" },
        ]);
    });
    it("grants exactly the calls the tool makes: pods/eviction everywhere, pods create only in kube-system, endpointslices list only (the preview counts endpoints)", () => {
        const [cr, , role] = rbacObjects();
        const verbs = (rules: any[], res: string) =>
            rules
                .filter((r) => r.resources.includes(res))
                .flatMap((r) => r.verbs)
                .sort();
        assert.deepEqual(verbs(cr.rules, "pods/eviction"), ["create"]);
        assert.deepEqual(verbs(cr.rules, "pods"), ["list", "watch"]);
        assert.deepEqual(verbs(role.rules, "pods"), ["create", "delete", "get", "patch"]);
        // the finish's waits watch the installer's DaemonSet (without it they poll every 5 s); the
        // rollout's DaemonSets go with their owner ConfigMap, so no DaemonSet is ever deleted
        assert.deepEqual(verbs(role.rules, "daemonsets"), ["create", "get", "list", "update", "watch"]);
        assert.deepEqual(verbs([...cr.rules, ...role.rules], "endpointslices"), ["list"]);
        assert.ok(!JSON.stringify([cr, role]).includes('"*"'), "no wildcard");
    });
});

/** What the Kubernetes RBAC authorizer answers for these rules (a rule with resourceNames allows only those names). */
function allows(rules: PolicyRule[], verb: string, group: string, resource: string, name?: string): boolean {
    return rules.some(
        (r) =>
            r.apiGroups.includes(group) &&
            r.resources.includes(resource) &&
            r.verbs.includes(verb) &&
            (!r.resourceNames || (name !== undefined && r.resourceNames.includes(name))),
    );
}

describe("the Role names the objects it may write in kube-system", () => {
    const [, , role] = rbacObjects();
    it("updates the rollout's Lease only, never the control plane's leader-election Leases", () => {
        assert.ok(allows(role.rules, "update", "coordination.k8s.io", "leases", "kube-proxy-mode"));
        for (const lease of ["kube-scheduler", "kube-controller-manager", "cilium-operator-resource-lock"])
            assert.ok(!allows(role.rules, "update", "coordination.k8s.io", "leases", lease), lease);
        assert.ok(allows(role.rules, "create", "coordination.k8s.io", "leases"), "create cannot name the object");
    });
    it("updates the installer's kube-proxy DaemonSet only, and deletes no DaemonSet (a CNI's, a CSI driver's)", () => {
        assert.ok(allows(role.rules, "update", "apps", "daemonsets", "kube-proxy"));
        for (const ds of ["calico-node", "aws-node", "ebs-csi-node", "kube-proxy-6c8b7f9d4"]) {
            assert.ok(!allows(role.rules, "update", "apps", "daemonsets", ds), `update ${ds}`);
            assert.ok(!allows(role.rules, "delete", "apps", "daemonsets", ds), `delete ${ds}`);
        }
    });
    it("patches the installer's ConfigMap only (kubeadm's or EKS's) and deletes only the rollout objects' owner", () => {
        assert.ok(allows(role.rules, "patch", "", "configmaps", "kube-proxy"));
        assert.ok(allows(role.rules, "patch", "", "configmaps", "kube-proxy-config"));
        assert.ok(allows(role.rules, "delete", "", "configmaps", ROLLOUT_OWNER));
        for (const cm of ["coredns", "aws-auth", "kubeadm-config", "kube-proxy-6c8b7f9d4"]) {
            assert.ok(!allows(role.rules, "patch", "", "configmaps", cm), `patch ${cm}`);
            assert.ok(!allows(role.rules, "delete", "", "configmaps", cm), `delete ${cm}`);
        }
    });
    it("a Role for a target with other names (target.configMap, target.daemonSet) names those and no others", () => {
        const [, , custom] = rbacObjects({ target: { configMap: "kp-settings", daemonSet: "kp" } });
        assert.ok(allows(custom.rules, "patch", "", "configmaps", "kp-settings"));
        assert.ok(allows(custom.rules, "update", "apps", "daemonsets", "kp"));
        assert.ok(!allows(custom.rules, "patch", "", "configmaps", "kube-proxy"));
        assert.ok(!allows(custom.rules, "update", "apps", "daemonsets", "kube-proxy"));
    });
    it("named objects: the Role and its binding in the given namespace, each binding naming its own role", () => {
        const [cr, crb, role, rb] = rbacObjects({ name: "rollouts", namespace: "kp-ns" });
        assert.deepEqual(cr.metadata, { name: "rollouts", labels: { "app.kubernetes.io/name": "kube-proxy-mode" } });
        assert.deepEqual(crb.roleRef, { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "rollouts" });
        assert.deepEqual([role.metadata.name, role.metadata.namespace], ["rollouts", "kp-ns"]);
        assert.deepEqual([rb.metadata.name, rb.metadata.namespace], ["rollouts", "kp-ns"]);
        assert.deepEqual(rb.roleRef, { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "rollouts" });
        assert.deepEqual(rb.subjects, [{ kind: "ServiceAccount", name: "kube-proxy-mode", namespace: "kube-system" }]);
    });
    it("each wide write in kube-system says why no name can narrow it", () => {
        for (const p of PERMISSIONS.filter((x) => x.scope === "kube-system" && !x.rule.resourceNames)) {
            const writes = p.rule.verbs.filter((v) => !["get", "list", "watch"].includes(v));
            if (writes.length)
                assert.match(
                    p.why,
                    /Wide: |cannot be limited by name/,
                    `${p.rule.resources.join(",")} ${writes.join(",")}`,
                );
        }
    });
});

describe("the accesses a rollout asks for before it moves anything", () => {
    it("one per verb of every rule, kube-system's in kube-proxy's namespace; the drain's only when a pool drains; never the alerts'", () => {
        const names = { namespace: "kube-proxy-ns", configMap: "kp-settings", daemonSet: "kp" };
        const plain = rolloutAccesses({ ...names, drain: false }).map(describeAccess);
        const draining = rolloutAccesses({ ...names, drain: true }).map(describeAccess);
        assert.ok(plain.includes("watch daemonsets.apps in kube-proxy-ns"), plain.join("; "));
        // the narrowed rules are asked with the target's names, as the authorizer will judge the calls
        assert.ok(plain.includes("update daemonsets.apps kp in kube-proxy-ns"), plain.join("; "));
        assert.ok(plain.includes("patch configmaps kp-settings in kube-proxy-ns"));
        assert.ok(plain.includes(`delete configmaps ${ROLLOUT_OWNER} in kube-proxy-ns`));
        assert.ok(plain.includes("update leases.coordination.k8s.io kube-proxy-mode in kube-proxy-ns"));
        assert.ok(!plain.some((a) => /^(update|delete) daemonsets/.test(a) && !a.includes(" kp ")), plain.join("; "));
        assert.ok(plain.includes("patch nodes cluster-wide"));
        assert.ok(plain.includes("watch pods cluster-wide"));
        assert.ok(plain.includes("get pods/log in kube-proxy-ns"));
        assert.deepEqual(
            draining.filter((a) => !plain.includes(a)),
            ["create pods/eviction cluster-wide", "list poddisruptionbudgets.policy cluster-wide"],
        );
        assert.ok(!draining.some((a) => a.includes("customresourcedefinitions")), "the alerts' CRD is the preview's");
        const verbsInRules = PERMISSIONS.filter((p) => !p.only).reduce((n, p) => n + p.rule.verbs.length, 0);
        assert.equal(plain.length, verbsInRules);
    });

    it("in review: a warning naming each denied access and the fix, a note when the cluster would not answer, nothing when all are granted", () => {
        const [denied] = accessFindings({ user: "u", denied: [{ verb: "patch", group: "", resource: "nodes" }] });
        assert.equal(denied.severity, "warning");
        assert.equal(denied.field, "kubeconfig");
        assert.match(
            denied.message,
            /\(u\) is denied 1 permission\(s\) the rollout needs: patch nodes cluster-wide\. pulumi up with it refuses/,
        );
        assert.match(denied.fix ?? "", /rbac\/kube-proxy-mode\.yaml/);
        assert.deepEqual(
            accessFindings({ unanswered: "403 selfsubjectaccessreviews forbidden" }).map((f) => [f.severity, f.code]),
            [["info", "access.unchecked"]],
        );
        assert.deepEqual(accessFindings({ denied: [] }), []);
        assert.deepEqual(accessFindings(undefined), []);
    });

    it("the warning's code, and the note, say which kubeconfig and why the cluster would not answer; no user, no parentheses", () => {
        const [denied] = accessFindings({
            denied: [
                { verb: "update", group: "apps", resource: "daemonsets", namespace: "kube-system", name: "kube-proxy" },
                { verb: "create", group: "", resource: "pods", subresource: "eviction" },
            ],
        });
        assert.equal(denied.code, "access.denied");
        assert.match(
            denied.message,
            /^the identity this kubeconfig authenticates as is denied 2 permission\(s\) the rollout needs: update daemonsets\.apps kube-proxy in kube-system; create pods\/eviction cluster-wide\./,
        );
        const [note] = accessFindings({ unanswered: "403 selfsubjectaccessreviews forbidden" });
        assert.equal(note.field, "kubeconfig");
        assert.match(note.message, /\(403 selfsubjectaccessreviews forbidden\)/);
    });
});

describe("API errors name what the server refused", () => {
    it("a 403 from client-node reads as one line with the verb and the resource, keeping its code", async () => {
        const { readableErrors } = await import("../../components/cluster/client.js");
        const status = {
            kind: "Status",
            message:
                'nodes "n1" is forbidden: User "system:serviceaccount:kube-system:kube-proxy-mode" cannot patch resource "nodes" in API group "" at the cluster scope',
            reason: "Forbidden",
            code: 403,
        };
        // client-node's ApiException: code, body (the Status as text), and a message of several lines with the headers
        const api = readableErrors({
            patchNode: async () => {
                throw Object.assign(
                    new Error(
                        `HTTP-Code: 403\nMessage: Unknown API Status Code!\nBody: ${JSON.stringify(JSON.stringify(status))}\nHeaders: {"audit-id":"x"}`,
                    ),
                    { code: 403, body: JSON.stringify(status) },
                );
            },
        });
        await assert.rejects(api.patchNode(), (e: any) => {
            assert.equal(e.code, 403);
            assert.equal(e.message, `403 Forbidden: ${status.message}`);
            return true;
        });
    });
});
