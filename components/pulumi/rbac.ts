// The RBAC kube-proxy-mode needs, as Pulumi resources, for users who manage RBAC with Pulumi.
// Rendered from the same data as the shipped rbac/kube-proxy-mode.yaml (components/core/rbac.ts).
import * as pulumi from "@pulumi/pulumi";
import * as k8s from "@pulumi/kubernetes";
import { rbacObjects, type RbacOptions } from "../core/rbac.js";

export interface KubeProxyModeRbac {
    clusterRole: k8s.rbac.v1.ClusterRole;
    clusterRoleBinding: k8s.rbac.v1.ClusterRoleBinding;
    role: k8s.rbac.v1.Role;
    roleBinding: k8s.rbac.v1.RoleBinding;
}

/**
 * Creates the ClusterRole, Role and their bindings for the ServiceAccount that runs rollouts.
 * The Role lets it create privileged pods with hostPath / in kube-system: that is
 * cluster-admin-equivalent, so bind it to that identity only.
 */
export function kubeProxyModeRbac(
    name: string,
    args: RbacOptions & { serviceAccount: { name: string; namespace: string } },
    opts?: pulumi.CustomResourceOptions,
): KubeProxyModeRbac {
    const [cr, crb, role, rb] = rbacObjects(args);
    const strip = ({ apiVersion: _a, kind: _k, ...rest }: Record<string, any>): any => rest;
    return {
        clusterRole: new k8s.rbac.v1.ClusterRole(`${name}-clusterrole`, strip(cr), opts),
        clusterRoleBinding: new k8s.rbac.v1.ClusterRoleBinding(`${name}-clusterrolebinding`, strip(crb), opts),
        role: new k8s.rbac.v1.Role(`${name}-role`, strip(role), opts),
        roleBinding: new k8s.rbac.v1.RoleBinding(`${name}-rolebinding`, strip(rb), opts),
    };
}
