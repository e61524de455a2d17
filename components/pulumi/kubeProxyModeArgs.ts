// KubeProxyMode's inputs as a program declares them, and how the component reads the cluster. Each
// TSDoc's first paragraph is the input's zod .describe() text (tests/unit/tsdoc.test.ts checks it).
// Types only: decide.ts and kubeProxyMode.ts both use them.
import type * as pulumi from "@pulumi/pulumi";
import type { Flavor } from "../core/facts.js";
import type { ClusterSnapshot } from "../core/migration.js";
import type { ProxyMode } from "../core/types.js";
import type { ClusterAccess } from "../cluster/access.js";
import type { Names } from "../rollout/cluster.js";

export interface HookInput {
    /** Names the hook in logs and errors; unique among verify.hooks. */
    name: pulumi.Input<string>;
    /**
     * argv of the hook, run without a shell; NODE, POOL, MODE and KUBECONFIG (the rollout's own cluster)
     * are in its environment.
     */
    command: pulumi.Input<pulumi.Input<string>[]>;
    /**
     * How long the hook may run, a duration such as "30s"; a hook that outlives it fails the node.
     * @default "300s"
     */
    timeout?: pulumi.Input<string>;
    /**
     * Extra environment of the hook.
     * @default none
     */
    env?: pulumi.Input<Record<string, pulumi.Input<string>>>;
}

export interface VerifyInput {
    /**
     * Run the built-in node checks: a probe pod per node checks the mode kube-proxy chose, leftovers, rule
     * sync and a Service connection (needs nodes that run pods).
     * @default true
     */
    nodeChecks?: pulumi.Input<boolean>;
    /**
     * Probe image: any image with sh (the host's tools run via chroot /host); the default is busybox 1.36
     * pinned by digest.
     * @default "busybox:1.36@sha256:73aaf090f3d85aa34ee199857f03fa3a95c8ede2ffd4cc2cdb5b94e566b11662" (busybox 1.36, pinned by digest)
     */
    image?: pulumi.Input<string>;
    /**
     * Priority class of the probe pods.
     * @default none (the cluster's default priority)
     */
    priorityClassName?: pulumi.Input<string>;
    /**
     * Service ("namespace/name") each node must reach through its ClusterIP.
     * @default "default/kubernetes"
     */
    service?: pulumi.Input<string>;
    /**
     * A last rule sync older than this fails the node; a duration longer than 0.
     * @default "5m"
     */
    maxSyncAge?: pulumi.Input<string>;
    /**
     * How long a new kube-proxy may take to run and settle on a node; a duration longer than 0.
     * @default "3m"
     */
    podTimeout?: pulumi.Input<string>;
    /**
     * A node's first sync in its new mode may take this many times its old mode's mean full sync (read
     * from its kube-proxy before the move); a pool's firstSyncTimeout wins; at least 1.
     * @default 20
     */
    firstSyncFactor?: pulumi.Input<number>;
    /**
     * The first sync's deadline is never shorter than this; a duration longer than 0.
     * @default "120s"
     */
    firstSyncMin?: pulumi.Input<string>;
    /**
     * kube-proxy using no CPU this long before its first sync fails the node; a duration longer than 0.
     * @default "60s"
     */
    firstSyncStall?: pulumi.Input<string>;
    /**
     * Commands run per node after the built-in checks; a non-zero exit fails the node.
     * @default []
     */
    hooks?: pulumi.Input<pulumi.Input<HookInput>[]>;
}

export interface PoolInput {
    /**
     * The pool's name: lower-case letters, digits and '-' (at most 42); a plain string, not an Output (it
     * names the pool's step).
     */
    name: string;
    /** Label selector of the pool's nodes, e.g. "pool=canary". */
    nodeSelector: pulumi.Input<string>;
    /**
     * Nodes of this pool moved at once.
     * @default 1
     */
    maxUnavailable?: pulumi.Input<number>;
    /**
     * Wait after the pool before the next one, a duration such as "10m".
     * @default "0s"
     */
    soak?: pulumi.Input<string>;
    /**
     * Evict the node's pods (respecting PodDisruptionBudgets) before moving it: true, or { force,
     * deleteEmptyDirData } as kubectl drain's flags (pods without a controller, and pods with emptyDir
     * volumes, are refused without them).
     * @default false
     */
    drain?: pulumi.Input<
        | boolean
        | {
              /**
               * Also evict pods without a controller (kubectl drain --force).
               * @default false
               */
              force?: pulumi.Input<boolean>;
              /**
               * Also evict pods with emptyDir volumes, whose data is lost (kubectl drain --delete-emptydir-data).
               * @default false
               */
              deleteEmptyDirData?: pulumi.Input<boolean>;
          }
    >;
    /**
     * Give up draining a node after this long; "0" waits for ever (as kubectl).
     * @default "300s"
     */
    drainTimeout?: pulumi.Input<string>;
    /**
     * How long a node's first sync in the new mode may take, a duration such as "15m".
     * @default from the node's old-mode sync (verify.firstSyncFactor, at least verify.firstSyncMin)
     */
    firstSyncTimeout?: pulumi.Input<string>;
    /**
     * ipvs -> iptables without drain leaves each node without Service routing for a while: true accepts
     * that gap.
     * @default false
     */
    allowUnroutedNode?: pulumi.Input<boolean>;
}

export interface TargetInput {
    /**
     * How the cluster installs kube-proxy: "kubeadm" (kube-system/kube-proxy, key config.conf) or "eks"
     * (kube-system/kube-proxy-config, key config).
     * @default "kubeadm"
     */
    flavor?: pulumi.Input<Flavor>;
    /**
     * Namespace of kube-proxy.
     * @default "kube-system"
     */
    namespace?: pulumi.Input<string>;
    /**
     * The installer's ConfigMap.
     * @default "kube-proxy" (kubeadm), "kube-proxy-config" (eks)
     */
    configMap?: pulumi.Input<string>;
    /**
     * The ConfigMap key holding the configuration.
     * @default "config.conf" (kubeadm), "config" (eks)
     */
    key?: pulumi.Input<string>;
    /**
     * The installer's DaemonSet.
     * @default "kube-proxy"
     */
    daemonSet?: pulumi.Input<string>;
    /**
     * Label selector of kube-proxy's pods, as the API parses one.
     * @default "k8s-app=kube-proxy"
     */
    podSelector?: pulumi.Input<string>;
}

export interface AlertsInput {
    /**
     * Create the PrometheusRule; a plain boolean, not an Output (whether the rule exists is part of the
     * resource graph).
     * @default true (once `alerts` is given)
     */
    enabled?: boolean;
    /**
     * Namespace of the PrometheusRule.
     * @default kube-proxy's namespace (target.namespace)
     */
    namespace?: pulumi.Input<string>;
    /**
     * metadata.name of the PrometheusRule.
     * @default "kube-proxy-mode"
     */
    name?: pulumi.Input<string>;
    /**
     * Labels on the PrometheusRule: what your Prometheus's ruleSelector matches (kube-prometheus-stack:
     * release: <helm release name>).
     * @default {}
     */
    labels?: pulumi.Input<Record<string, pulumi.Input<string>>>;
    /**
     * Labels added to every alert (Alertmanager routing: team, severity overrides).
     * @default {}
     */
    alertLabels?: pulumi.Input<Record<string, pulumi.Input<string>>>;
    /**
     * The series label naming the node in your kube-proxy scrape (set it by relabelling).
     * @default "node"
     */
    nodeLabel?: pulumi.Input<string>;
}

export interface PromotionInput {
    /**
     * The stack that must have finished this target first: "<org>/<project>/<stack>" (file backend:
     * "organization/<project>/<stack>").
     */
    after: pulumi.Input<string>;
    /** How long the upstream must have held the target, e.g. "24h" ("0s": finished is enough). */
    minSoak: pulumi.Input<string>;
    /**
     * Refuse an upstream whose nodes were verified by hooks only (verify.nodeChecks: false).
     * @default true
     */
    requireNodeChecks?: pulumi.Input<boolean>;
}

export interface EksAddonInput {
    /**
     * The kube-proxy add-on's configurationValues as given to AWS (JSON or YAML text, e.g. the
     * configurationValues of your aws.eks.Addon); they must set mode to the target mode.
     * @default none
     */
    configurationValues?: pulumi.Input<string>;
    /**
     * Go on without the add-on's values: an add-on update with resolveConflicts OVERWRITE may rewrite
     * kube-proxy-config and move every node, unchecked (a warning in the preview).
     * @default false
     */
    acknowledgeOverwrite?: pulumi.Input<boolean>;
}

export interface KubeProxyModeArgs {
    /** The target mode: "iptables", "ipvs" or "nftables" (an unpinned mode follows upstream's default). */
    mode: pulumi.Input<ProxyMode>;
    /**
     * kube-proxy feature gates to set; unknown names fail unless allowUnknownFeatureGates.
     * @default the current configuration's gates are kept
     */
    featureGates?: pulumi.Input<Record<string, pulumi.Input<boolean>>>;
    /**
     * Addresses NodePorts answer on: CIDRs, "primary" or "localhost".
     * @default the current configuration's value
     */
    nodePortAddresses?: pulumi.Input<pulumi.Input<string>[]>;
    /**
     * conntrack settings.
     * @default the current configuration's values
     */
    conntrack?: pulumi.Input<{
        /**
         * Accept out-of-window TCP packets.
         * @default the current configuration's value
         */
        tcpBeLiberal?: pulumi.Input<boolean>;
    }>;
    /**
     * The cluster's release, e.g. "1.37".
     * @default detected from the API server
     */
    kubernetesVersion?: pulumi.Input<string>;
    /**
     * Accept feature gates this release does not know.
     * @default false
     */
    allowUnknownFeatureGates?: pulumi.Input<boolean>;
    /**
     * Where kube-proxy's configuration and DaemonSet are; each field overrides the flavor's default
     * (unknown fields are an error).
     * @default { flavor: "kubeadm" }
     */
    target?: pulumi.Input<TargetInput>;
    /**
     * Rolled out in this order; every Linux node must be in exactly one. Each pool is a step in the
     * resource graph: the list and the pool names must be plain values, known at preview (the other fields
     * may be Outputs).
     */
    pools: PoolInput[];
    /**
     * How each node is verified.
     * @default each field's default, below (VerifyInput)
     */
    verify?: pulumi.Input<VerifyInput>;
    /**
     * What a failed node gets: "rollback-node" (back to its previous configuration, uncordoned) or "stop"
     * (left as it is).
     * @default "rollback-node"
     */
    onFailure?: pulumi.Input<"rollback-node" | "stop">;
    /**
     * Kubeconfig content for the cluster (kept secret; never empty). Required with an explicit
     * k8s.Provider (pass the same kubeconfig): the component reads the cluster itself. The preview, the
     * Kubernetes provider, the rollout steps and the hooks all use this one cluster.
     * @default the stack's `kubernetes:kubeconfig` (content or path), else the ambient kubeconfig ($KUBECONFIG or ~/.kube/config)
     */
    kubeconfig?: pulumi.Input<string>;
    /**
     * The kubeconfig context to use.
     * @default the stack's `kubernetes:context` when `kubeconfig` is not given, else the kubeconfig's current context
     */
    context?: pulumi.Input<string>;
    /**
     * A PrometheusRule with the alerts for the weeks after the migration; a plain object (its fields other
     * than enabled may be Outputs). The preview refuses without the PrometheusRule CRD: install the
     * Prometheus Operator or set enabled: false.
     * @default no PrometheusRule
     */
    alerts?: AlertsInput;
    /**
     * A promotion gate: refuse to move until the `after` stack finished the same target and held it for
     * minSoak.
     * @default no gate
     */
    promotion?: pulumi.Input<PromotionInput>;
    /**
     * How the EKS managed add-on "kube-proxy" is configured, when EKS manages kube-proxy: its
     * configurationValues (checked to set the target mode) or acknowledgeOverwrite: true. The preview
     * refuses such a cluster without it (docs/eks.md).
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
