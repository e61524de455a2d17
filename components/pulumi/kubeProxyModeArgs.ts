// KubeProxyMode's inputs as a program declares them (each field's default and meaning in its TSDoc),
// and how the component reads the cluster. Types only: decide.ts and kubeProxyMode.ts both use them.
import type * as pulumi from "@pulumi/pulumi";
import type { Flavor } from "../core/facts.js";
import type { ClusterSnapshot } from "../core/migration.js";
import type { ProxyMode } from "../core/types.js";
import type { ClusterAccess } from "../cluster/access.js";
import type { Names } from "../rollout/cluster.js";

export interface HookInput {
    /** names the hook in logs and errors; unique among `verify.hooks` (required) */
    name: pulumi.Input<string>;
    /** argv of the hook, run without a shell; NODE, POOL, MODE and KUBECONFIG (the rollout's own cluster) are in its environment (required) */
    command: pulumi.Input<pulumi.Input<string>[]>;
    /**
     * how long the hook may run, a duration such as "30s" or "5m"
     * @default "5m"
     */
    timeout?: pulumi.Input<string>;
    /**
     * extra environment of the hook
     * @default {}
     */
    env?: pulumi.Input<Record<string, pulumi.Input<string>>>;
}

export interface VerifyInput {
    /**
     * run the built-in node checks (a probe pod per node: the mode kube-proxy chose, leftovers, rule sync, a Service connection)
     * @default true
     */
    nodeChecks?: pulumi.Input<boolean>;
    /**
     * probe image: any image with sh (the host's tools run via chroot /host)
     * @default "busybox:1.36@sha256:73aaf090f3d85aa34ee199857f03fa3a95c8ede2ffd4cc2cdb5b94e566b11662" (busybox 1.36, pinned by digest)
     */
    image?: pulumi.Input<string>;
    /**
     * priority class of the probe pods
     * @default none (the cluster's default priority)
     */
    priorityClassName?: pulumi.Input<string>;
    /**
     * Service ("namespace/name") each node must reach through its ClusterIP
     * @default "default/kubernetes"
     */
    service?: pulumi.Input<string>;
    /**
     * a last rule sync older than this fails the node; a duration longer than 0
     * @default "5m"
     */
    maxSyncAge?: pulumi.Input<string>;
    /**
     * how long a new kube-proxy may take to run and settle on a node; a duration longer than 0
     * @default "3m"
     */
    podTimeout?: pulumi.Input<string>;
    /**
     * a node's first sync in its new mode may take this many times its old mode's mean full sync
     * (read from its kube-proxy before the move); a pool's firstSyncTimeout wins; at least 1
     * @default 20
     */
    firstSyncFactor?: pulumi.Input<number>;
    /**
     * the first sync's deadline is never shorter than this; a duration longer than 0
     * @default "2m"
     */
    firstSyncMin?: pulumi.Input<string>;
    /**
     * kube-proxy using no CPU this long before its first sync fails the node; a duration longer than 0
     * @default "60s"
     */
    firstSyncStall?: pulumi.Input<string>;
    /**
     * commands run per node after the built-in checks; non-zero fails the node
     * @default []
     */
    hooks?: pulumi.Input<pulumi.Input<HookInput>[]>;
}

export interface PoolInput {
    /** the pool's name: lower-case letters, digits and '-'; a plain string, not an Output (it names the pool's step) (required) */
    name: string;
    /** label selector of the pool's nodes, e.g. "pool=canary" (required) */
    nodeSelector: pulumi.Input<string>;
    /**
     * nodes of this pool moved at once
     * @default 1
     */
    maxUnavailable?: pulumi.Input<number>;
    /**
     * wait after the pool before the next one, a duration such as "10m"
     * @default "0s"
     */
    soak?: pulumi.Input<string>;
    /**
     * evict the node's pods (respecting PodDisruptionBudgets) before moving it: true, or
     * { force, deleteEmptyDirData } as kubectl drain's --force and --delete-emptydir-data (pods
     * without a controller, and pods with emptyDir volumes, are refused without them)
     * @default false
     */
    drain?: pulumi.Input<boolean | { force?: pulumi.Input<boolean>; deleteEmptyDirData?: pulumi.Input<boolean> }>;
    /**
     * give up draining a node after this long; "0" waits for ever (as kubectl)
     * @default "5m"
     */
    drainTimeout?: pulumi.Input<string>;
    /**
     * how long a node's first sync in the new mode may take, a duration such as "15m"
     * @default from the node's old-mode sync (verify.firstSyncFactor, at least verify.firstSyncMin)
     */
    firstSyncTimeout?: pulumi.Input<string>;
    /** ipvs -> iptables without drain: accept each node's gap in Service routing */
    allowUnroutedNode?: pulumi.Input<boolean>;
}

export interface TargetInput {
    /**
     * how the cluster installs kube-proxy: "kubeadm" or "eks"
     * @default "kubeadm"
     */
    flavor?: pulumi.Input<Flavor>;
    /**
     * namespace of kube-proxy
     * @default "kube-system"
     */
    namespace?: pulumi.Input<string>;
    /**
     * the installer's ConfigMap
     * @default "kube-proxy" (kubeadm), "kube-proxy-config" (eks)
     */
    configMap?: pulumi.Input<string>;
    /**
     * the ConfigMap key holding the configuration
     * @default "config.conf" (kubeadm), "config" (eks)
     */
    key?: pulumi.Input<string>;
    /**
     * the installer's DaemonSet
     * @default "kube-proxy"
     */
    daemonSet?: pulumi.Input<string>;
    /**
     * label selector of kube-proxy's pods
     * @default "k8s-app=kube-proxy"
     */
    podSelector?: pulumi.Input<string>;
}

export interface AlertsInput {
    /**
     * create the PrometheusRule; a plain boolean, not an Output (whether the rule exists is part of the resource graph)
     * @default true (once `alerts` is given)
     */
    enabled?: boolean;
    /**
     * namespace of the PrometheusRule
     * @default kube-proxy's namespace (target.namespace)
     */
    namespace?: pulumi.Input<string>;
    /**
     * metadata.name of the PrometheusRule
     * @default "kube-proxy-mode"
     */
    name?: pulumi.Input<string>;
    /**
     * labels on the PrometheusRule: what your Prometheus's ruleSelector matches (e.g. release: kube-prometheus-stack)
     * @default {}
     */
    labels?: pulumi.Input<Record<string, pulumi.Input<string>>>;
    /**
     * labels added to every alert (Alertmanager routing)
     * @default {}
     */
    alertLabels?: pulumi.Input<Record<string, pulumi.Input<string>>>;
    /**
     * the series label naming the node in your kube-proxy scrape
     * @default "node"
     */
    nodeLabel?: pulumi.Input<string>;
}

export interface PromotionInput {
    /** the stack that must have finished this target first: "<org>/<project>/<stack>" (required) */
    after: pulumi.Input<string>;
    /** how long it must have held the target, e.g. "24h" ("0s": finished is enough) (required) */
    minSoak: pulumi.Input<string>;
    /**
     * refuse an upstream whose nodes were verified by hooks only (verify.nodeChecks: false)
     * @default true
     */
    requireNodeChecks?: pulumi.Input<boolean>;
}

export interface EksAddonInput {
    /**
     * the kube-proxy add-on's configurationValues as given to AWS (JSON or YAML text, e.g. the
     * `configurationValues` of your aws.eks.Addon); they must set mode to the target mode
     * @default none
     */
    configurationValues?: pulumi.Input<string>;
    /**
     * go on without the add-on's values: an add-on update with resolveConflicts OVERWRITE may
     * rewrite kube-proxy-config and move every node, unchecked (a warning in the preview)
     * @default false
     */
    acknowledgeOverwrite?: pulumi.Input<boolean>;
}

export interface KubeProxyModeArgs {
    /** the target mode: "iptables", "ipvs" or "nftables" (required; an unpinned mode follows upstream's default) */
    mode: pulumi.Input<ProxyMode>;
    /**
     * kube-proxy feature gates to set; unknown names fail unless allowUnknownFeatureGates
     * @default {} (the current configuration's gates are kept)
     */
    featureGates?: pulumi.Input<Record<string, pulumi.Input<boolean>>>;
    /**
     * addresses NodePorts answer on: CIDRs, "primary" or "localhost"
     * @default the current configuration's value
     */
    nodePortAddresses?: pulumi.Input<pulumi.Input<string>[]>;
    /**
     * conntrack settings; tcpBeLiberal: accept out-of-window TCP packets
     * @default the current configuration's value
     */
    conntrack?: pulumi.Input<{ tcpBeLiberal?: pulumi.Input<boolean> }>;
    /**
     * the cluster's release, e.g. "1.37"
     * @default detected from the API server
     */
    kubernetesVersion?: pulumi.Input<string>;
    /**
     * accept feature gates this release does not know
     * @default false
     */
    allowUnknownFeatureGates?: pulumi.Input<boolean>;
    /**
     * where kube-proxy's configuration and DaemonSet are (unknown fields are an error)
     * @default { flavor: "kubeadm" }
     */
    target?: pulumi.Input<TargetInput>;
    /**
     * rolled out in this order; every Linux node must be in exactly one. A plain array with plain
     * names (each pool is a step in the resource graph); its other fields may be Outputs. (required)
     */
    pools: PoolInput[];
    /**
     * how each node is verified
     * @default { nodeChecks: true, image: "busybox:1.36", service: "default/kubernetes", maxSyncAge: "5m", podTimeout: "3m", hooks: [] }
     */
    verify?: pulumi.Input<VerifyInput>;
    /**
     * what a failed node gets: "rollback-node" (back to its previous configuration, uncordoned) or "stop" (left as it is)
     * @default "rollback-node"
     */
    onFailure?: pulumi.Input<"rollback-node" | "stop">;
    /**
     * Kubeconfig content for the cluster (kept secret; never empty). Required with an explicit
     * k8s.Provider (pass the same kubeconfig): the component reads the cluster itself, and a
     * provider's kubeconfig cannot be read back. The preview, the Kubernetes provider, the rollout
     * steps and the hooks all use this one cluster and identity.
     * @default the stack's `kubernetes:kubeconfig` (content or path), else the ambient kubeconfig ($KUBECONFIG or ~/.kube/config)
     */
    kubeconfig?: pulumi.Input<string>;
    /**
     * the kubeconfig context to use
     * @default the stack's `kubernetes:context` when `kubeconfig` is not given, else the kubeconfig's current context
     */
    context?: pulumi.Input<string>;
    /**
     * a PrometheusRule with the alerts for the weeks after the migration; a plain object (its fields
     * other than `enabled` may be Outputs). The preview refuses when the cluster has no
     * PrometheusRule CRD (or reading it is refused): install the Prometheus Operator or set `enabled: false`
     * @default no PrometheusRule
     */
    alerts?: AlertsInput;
    /**
     * a promotion gate: refuse to move until the `after` stack finished the same target and held it for minSoak
     * @default no gate
     */
    promotion?: pulumi.Input<PromotionInput>;
    /**
     * How the EKS managed add-on "kube-proxy" is configured, when EKS manages kube-proxy (its
     * objects' field manager "eks"): the add-on's `configurationValues`, checked to set the target
     * mode, or `acknowledgeOverwrite: true`. The preview refuses such a cluster without it: an
     * add-on update with resolveConflicts OVERWRITE rewrites kube-proxy-config from values the
     * cluster cannot show (docs/eks.md).
     * @default none (refused where EKS manages kube-proxy as an add-on)
     */
    eksAddon?: pulumi.Input<EksAddonInput>;
}

/** For tests and embedding: how the component reads the cluster (default: the real API). */
export type SnapshotReader = (
    access: ClusterAccess,
    flavor: Flavor,
    names: Partial<Names>,
    rollout: { drain: boolean },
) => Promise<ClusterSnapshot>;
