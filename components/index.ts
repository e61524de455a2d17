// kube-proxy-mode: move Kubernetes clusters between kube-proxy modes safely.
export * from "./core/index.js";
export { KubeProxyMode, KUBE_PROXY_MODE_TYPE } from "./pulumi/kubeProxyMode.js";
export type { KubeProxyModeArgs, KubeProxyModeOptions, PoolInput, VerifyInput, HookInput, TargetInput, SnapshotReader, AlertsInput, PromotionInput } from "./pulumi/kubeProxyMode.js";
export type { RolloutSpec, Hook, VerifySpec } from "./rollout/spec.js";
export { kubeProxyModeRbac, type KubeProxyModeRbac } from "./pulumi/rbac.js";
export { rbacObjects, renderRbacManifest, PERMISSIONS, type RbacOptions } from "./core/rbac.js";
