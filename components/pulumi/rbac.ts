// The RBAC kube-proxy-mode needs, as Pulumi resources, for users who manage RBAC with Pulumi.
// Rendered from the same data as the shipped rbac/kube-proxy-mode.yaml (components/core/rbac.ts).
import * as pulumi from "@pulumi/pulumi";
import * as k8s from "@pulumi/kubernetes";
import { rbacObjects, type RbacBinding, type RbacOptions, type RbacRole } from "../core/rbac.js";

export interface KubeProxyModeRbac {
    clusterRole: k8s.rbac.v1.ClusterRole;
    clusterRoleBinding: k8s.rbac.v1.ClusterRoleBinding;
    role: k8s.rbac.v1.Role;
    roleBinding: k8s.rbac.v1.RoleBinding;
}

/**
 * Creates the ClusterRole, Role and their bindings for the ServiceAccount that runs rollouts
 * (with `target`, the Role names that target's ConfigMap and DaemonSet).
 * The Role lets it create privileged pods with hostPath / in kube-system: that is
 * cluster-admin-equivalent, so bind it to that identity only.
 */
export function kubeProxyModeRbac(
    name: string,
    args: RbacOptions & { serviceAccount: { name: string; namespace: string } },
    opts?: pulumi.CustomResourceOptions,
): KubeProxyModeRbac {
    const [cr, crb, r, rb] = rbacObjects(args);
    // the resource classes set apiVersion and kind themselves
    const role = ({ metadata, rules }: RbacRole) => ({ metadata, rules });
    const binding = ({ metadata, roleRef, subjects }: RbacBinding) => ({
        metadata,
        roleRef,
        subjects,
    });
    return {
        clusterRole: new k8s.rbac.v1.ClusterRole(`${name}-clusterrole`, role(cr), opts),
        clusterRoleBinding: new k8s.rbac.v1.ClusterRoleBinding(`${name}-clusterrolebinding`, binding(crb), opts),
        role: new k8s.rbac.v1.Role(`${name}-role`, role(r), opts),
        roleBinding: new k8s.rbac.v1.RoleBinding(`${name}-rolebinding`, binding(rb), opts),
    };
}
