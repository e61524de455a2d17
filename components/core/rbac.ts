// The permissions kube-proxy-mode uses, as data: one source for the shipped manifest
// (rbac/kube-proxy-mode.yaml), the Pulumi helper (components/pulumi/rbac.ts) and docs/rbac.md.
// Pure.
//
// WARNING: "create pods in kube-system" with a privileged container and hostPath: / (the probe
// pod) is cluster-admin-equivalent: whoever holds this Role can run anything as root on any node
// and read every credential there. Bind it only to the identity that runs rollouts.
import * as YAML from "../libraries/yaml.js";
import { FLAVORS } from "./facts.js";
import { LEASE_NAME, ROLLOUT_OWNER } from "./plan.js";
import type { Finding } from "./types.js";

export interface PolicyRule {
    apiGroups: string[];
    resources: string[];
    verbs: string[];
    resourceNames?: string[];
}

/** One rule and why the tool needs it (docs/rbac.md's table is this list). */
export interface Permission {
    rule: PolicyRule;
    scope: "cluster" | "kube-system";
    why: string;
    /** needed only when a pool drains, or only when alerts are on (the preview checks those); otherwise by every rollout */
    only?: "drain" | "alerts";
}

/** The objects the rollout writes by name: kube-proxy's installation (configurable per target) and the rollout's own. */
export interface RbacNames {
    /** the installer's ConfigMaps the finish writes (target.configMap) */
    configMaps: string[];
    /** the installer's DaemonSets the rollout reshapes and restores (target.daemonSet) */
    daemonSets: string[];
}

/** The shipped manifest's names: those of every installer flavor the tool knows (kubeadm's and EKS's). */
export const DEFAULT_RBAC_NAMES: RbacNames = {
    configMaps: [...new Set(Object.values(FLAVORS).map((f) => f.configMap))],
    daemonSets: [...new Set(Object.values(FLAVORS).map((f) => f.daemonSet))],
};

/**
 * Every permission, for kube-proxy's objects named `names`. A verb on objects whose names are
 * known is granted on those names only (resourceNames); the rest say in `why` why they are wide.
 */
export function permissionsFor(names: RbacNames): Permission[] {
    return [
        {
            scope: "cluster",
            rule: { apiGroups: [""], resources: ["nodes"], verbs: ["get", "list", "patch"] },
            why: "read kernels and labels; cordon, label, annotate (any node a pool may select)",
        },
        {
            scope: "cluster",
            rule: { apiGroups: [""], resources: ["pods"], verbs: ["list", "watch"] },
            why: "drain: the pods on a node (every namespace), watched while they leave",
        },
        {
            scope: "cluster",
            rule: { apiGroups: [""], resources: ["pods/eviction"], verbs: ["create"] },
            why: "drain through the Eviction API (PodDisruptionBudgets hold)",
            only: "drain",
        },
        {
            scope: "cluster",
            rule: { apiGroups: ["policy"], resources: ["poddisruptionbudgets"], verbs: ["list"] },
            why: "name the PodDisruptionBudget that blocks an eviction",
            only: "drain",
        },
        {
            scope: "cluster",
            rule: { apiGroups: [""], resources: ["services"], verbs: ["get", "list"] },
            why: "NodePort findings (list); verify.service's ClusterIP (get)",
        },
        {
            scope: "cluster",
            rule: { apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["list"] },
            why: "count the endpoints kube-proxy programs: the preview's estimate of each node's first sync",
        },
        {
            scope: "cluster",
            rule: {
                apiGroups: ["apiextensions.k8s.io"],
                resources: ["customresourcedefinitions"],
                verbs: ["get"],
                resourceNames: ["prometheusrules.monitoring.coreos.com"],
            },
            why: "only with alerts: whether the PrometheusRule CRD exists",
            only: "alerts",
        },
        {
            scope: "kube-system",
            rule: { apiGroups: [""], resources: ["pods"], verbs: ["create", "get", "patch", "delete"] },
            why: "run the probe pods (privileged, hostPath /: cluster-admin-equivalent) and delete them, and those a dead run left; label kube-proxy's pods as of the installer's revision when the finish restores its DaemonSet. Wide: pod names are generated (create cannot be limited by name at all); listed and watched through the cluster-wide rule",
        },
        {
            scope: "kube-system",
            rule: { apiGroups: [""], resources: ["pods/log"], verbs: ["get"] },
            why: "kube-proxy's start-up log, the probe's output (pod names are generated)",
        },
        {
            scope: "kube-system",
            rule: { apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "create"] },
            why: "read kube-proxy's; create the rollout's ConfigMaps and their owner. Wide: create cannot be limited by name; the rollout's ConfigMaps are named by configuration hash",
        },
        {
            scope: "kube-system",
            rule: { apiGroups: [""], resources: ["configmaps"], verbs: ["patch"], resourceNames: names.configMaps },
            why: "the canonical update of the installer's ConfigMap (target.configMap)",
        },
        {
            scope: "kube-system",
            rule: { apiGroups: [""], resources: ["configmaps"], verbs: ["delete"], resourceNames: [ROLLOUT_OWNER] },
            why: "the finish deletes the owner of the rollout's ConfigMaps and DaemonSets; the garbage collector removes them",
        },
        {
            scope: "kube-system",
            rule: {
                apiGroups: ["apps"],
                resources: ["daemonsets"],
                verbs: ["get", "list", "watch", "create"],
            },
            why: "create the rollout's DaemonSets; read the installer's, its controller watched while it records the revision and rolls. Wide: create cannot be limited by name; the rollout's DaemonSets are named by configuration hash and listed by label",
        },
        {
            scope: "kube-system",
            rule: {
                apiGroups: ["apps"],
                resources: ["daemonsets"],
                verbs: ["update"],
                resourceNames: names.daemonSets,
            },
            why: "the installer's DaemonSet (target.daemonSet): its spec saved and put in the rollout's shape, restored by the finish",
        },
        {
            scope: "kube-system",
            rule: { apiGroups: ["apps"], resources: ["controllerrevisions"], verbs: ["list", "patch"] },
            why: "the installer DaemonSet's revisions: the hash the hand-back's pods start with, its current revision when the finish restores its spec. Wide: revisions are named by the DaemonSet controller's hash",
        },
        {
            scope: "kube-system",
            rule: { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create"] },
            why: "create the rollout's Lease (create cannot be limited by name)",
        },
        {
            scope: "kube-system",
            rule: {
                apiGroups: ["coordination.k8s.io"],
                resources: ["leases"],
                verbs: ["get", "update"],
                resourceNames: [LEASE_NAME],
            },
            why: "one rollout per cluster at a time (the Lease); no other Lease, such as the control plane's leader elections",
        },
    ];
}

/** The permissions of the shipped manifest (DEFAULT_RBAC_NAMES). */
export const PERMISSIONS: Permission[] = permissionsFor(DEFAULT_RBAC_NAMES);

/** One access a rollout needs, as a SelfSubjectAccessReview asks it. */
export interface Access {
    verb: string;
    group: string;
    resource: string;
    subresource?: string;
    /** absent: cluster-wide (a cluster-scoped resource, or a namespaced one in every namespace) */
    namespace?: string;
    name?: string;
}

/**
 * Every access a rollout needs before it moves anything, one per verb and resource, for kube-proxy
 * in `namespace`: the drain's only when a pool drains; never the alerts' (the preview checks the
 * PrometheusRule CRD itself).
 */
export function rolloutAccesses(opts: {
    namespace: string;
    configMap: string;
    daemonSet: string;
    drain: boolean;
}): Access[] {
    const permissions = permissionsFor({ configMaps: [opts.configMap], daemonSets: [opts.daemonSet] });
    return permissions
        .filter((p) => p.only === undefined || (p.only === "drain" && opts.drain))
        .flatMap((p) =>
            p.rule.apiGroups.flatMap((group) =>
                p.rule.resources.flatMap((r) => {
                    const [resource, subresource] = r.split("/");
                    return p.rule.verbs.flatMap((verb) =>
                        (p.rule.resourceNames ?? [undefined]).map((name): Access => ({
                            verb,
                            group,
                            resource,
                            ...(subresource ? { subresource } : {}),
                            ...(p.scope === "kube-system" ? { namespace: opts.namespace } : {}),
                            ...(name ? { name } : {}),
                        })),
                    );
                }),
            ),
        );
}

/** An access in words: `watch daemonsets.apps in kube-system`, `create pods/eviction cluster-wide`. */
export function describeAccess(a: Access): string {
    const what = `${a.resource}${a.subresource ? `/${a.subresource}` : ""}${a.group ? `.${a.group}` : ""}`;
    return `${a.verb} ${what}${a.name ? ` ${a.name}` : ""} ${a.namespace ? `in ${a.namespace}` : "cluster-wide"}`;
}

/** The accesses the cluster denies, and to whom when it says (a SelfSubjectReview). */
export interface AccessReview {
    user?: string;
    denied: Access[];
}

/** What the cluster answered when asked for the rollout's accesses, or why it would not say. */
export type AccessAnswer = AccessReview | { unanswered: string };

/** Where the missing permissions come from: the one fix both the preview and the runner name. */
export const GRANT_ACCESS = "grant them: rbac/kube-proxy-mode.yaml, or the kubeProxyModeRbac helper (docs/rbac.md)";

/** `the identity X is denied N permission(s) the rollout needs: a; b` */
export function deniedAccessText(who: string, answer: AccessReview): string {
    return (
        `${who}${answer.user ? ` (${answer.user})` : ""} is denied ${answer.denied.length} permission(s) the rollout needs: ` +
        answer.denied.map(describeAccess).join("; ")
    );
}

/**
 * The preview's word on the rollout's permissions, asked with the kubeconfig the steps run with:
 * a warning naming each access denied (`pulumi up` would refuse before changing anything), a note
 * when the cluster would not answer, nothing when every access is granted. A warning, not a
 * refusal: a preview may run with narrower credentials than the run that applies it.
 */
export function accessFindings(answer: AccessAnswer | undefined): Finding[] {
    if (!answer) return [];
    if ("unanswered" in answer)
        return [
            {
                severity: "info",
                code: "access.unchecked",
                field: "kubeconfig",
                message: `could not check the rollout's permissions in advance (${answer.unanswered}); pulumi up asks again before it changes anything`,
            },
        ];
    if (!answer.denied.length) return [];
    return [
        {
            severity: "warning",
            code: "access.denied",
            field: "kubeconfig",
            message: `${deniedAccessText("the identity this kubeconfig authenticates as", answer)}. pulumi up with it refuses before changing anything`,
            fix: GRANT_ACCESS,
        },
    ];
}

export interface RbacOptions {
    /** name of the ClusterRole, Role and bindings (default kube-proxy-mode) */
    name?: string;
    /** where kube-proxy lives (default kube-system) */
    namespace?: string;
    /** the identity that runs rollouts (default ServiceAccount kube-system/kube-proxy-mode) */
    serviceAccount?: { name: string; namespace: string };
    /**
     * kube-proxy's ConfigMap and DaemonSet the rollout writes (the component's target.configMap and
     * target.daemonSet): the Role names only these (default: every known flavor's, kubeadm's and EKS's)
     */
    target?: { configMap: string; daemonSet: string };
}

interface RbacMetadata {
    name: string;
    namespace?: string;
    labels: Record<string, string>;
}

/** A ClusterRole or Role, as the manifest and the Pulumi helper write it. */
export interface RbacRole {
    apiVersion: "rbac.authorization.k8s.io/v1";
    kind: "ClusterRole" | "Role";
    metadata: RbacMetadata;
    rules: PolicyRule[];
}

/** A ClusterRoleBinding or RoleBinding of the role to the identity that runs rollouts. */
export interface RbacBinding {
    apiVersion: "rbac.authorization.k8s.io/v1";
    kind: "ClusterRoleBinding" | "RoleBinding";
    metadata: RbacMetadata;
    roleRef: { apiGroup: "rbac.authorization.k8s.io"; kind: "ClusterRole" | "Role"; name: string };
    subjects: { kind: "ServiceAccount"; name: string; namespace: string }[];
}

/** The RBAC objects, in the order they are applied: ClusterRole, ClusterRoleBinding, Role, RoleBinding. */
export function rbacObjects(opts: RbacOptions = {}): [RbacRole, RbacBinding, RbacRole, RbacBinding] {
    const name = opts.name ?? "kube-proxy-mode";
    const namespace = opts.namespace ?? "kube-system";
    const sa = opts.serviceAccount ?? { name: "kube-proxy-mode", namespace: "kube-system" };
    const labels = { "app.kubernetes.io/name": "kube-proxy-mode" };
    const subjects: RbacBinding["subjects"] = [{ kind: "ServiceAccount", name: sa.name, namespace: sa.namespace }];
    const permissions = opts.target
        ? permissionsFor({ configMaps: [opts.target.configMap], daemonSets: [opts.target.daemonSet] })
        : PERMISSIONS;
    const rules = (scope: Permission["scope"]) =>
        permissions.filter((p) => p.scope === scope).map((p) => ({ ...p.rule }));
    return [
        {
            apiVersion: "rbac.authorization.k8s.io/v1",
            kind: "ClusterRole",
            metadata: { name, labels },
            rules: rules("cluster"),
        },
        {
            apiVersion: "rbac.authorization.k8s.io/v1",
            kind: "ClusterRoleBinding",
            metadata: { name, labels },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
            subjects,
        },
        {
            apiVersion: "rbac.authorization.k8s.io/v1",
            kind: "Role",
            metadata: { name, namespace, labels },
            rules: rules("kube-system"),
        },
        {
            apiVersion: "rbac.authorization.k8s.io/v1",
            kind: "RoleBinding",
            metadata: { name, namespace, labels },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
            subjects,
        },
    ];
}

export const RBAC_MANIFEST_HEADER = `# kube-proxy-mode: exactly the permissions the rollout and the CLI use (generated from
# components/core/rbac.ts; a unit test keeps this file and that source identical).
# WARNING: creating pods in kube-system with a privileged container and hostPath: / (the probe
# pod) is cluster-admin-equivalent: bind this only to the identity that runs rollouts.
# Not included: prometheusrules (monitoring.coreos.com) get/create/patch/delete in
# alerts.namespace, needed by the Pulumi provider's identity only when alerts are on.
`;

/** The shipped manifest's text (rbac/kube-proxy-mode.yaml). */
export function renderRbacManifest(opts: RbacOptions = {}): string {
    return (
        RBAC_MANIFEST_HEADER +
        rbacObjects(opts)
            .map((o) => YAML.stringify(o))
            .join("---\n")
    );
}

/** docs/rbac.md's permission table. */
export function permissionTable(): string {
    const rows = PERMISSIONS.map((p) => {
        const group = p.rule.apiGroups[0] ? ` (${p.rule.apiGroups[0]})` : "";
        const names = p.rule.resourceNames ? ` \`${p.rule.resourceNames.join(", ")}\`` : "";
        return `| ${p.rule.resources.join(", ")}${group} | ${p.scope === "cluster" ? "cluster-wide" : "kube-system"} | ${p.rule.verbs.join(", ")}${names} | ${p.why} |`;
    });
    return ["| resource | where | verbs | why |", "| --- | --- | --- | --- |", ...rows].join("\n");
}
