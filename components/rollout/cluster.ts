// The seam between the rollout's logic and the cluster: everything the runner reads or writes,
// and nothing more. KubeProxyCluster (components/cluster/kubeProxy.ts) implements it against
// the API server; the unit tests implement it in memory and inject faults behind it.
import type { CurrentConfig } from "../core/config.js";
import type { NodeState } from "../core/plan.js";
import type { DrainOptions } from "../core/drain.js";
import type { NodeSyncs, SyncBaseline } from "../core/firstSync.js";
import type { Access, AccessReview } from "../core/rbac.js";

import type { Names } from "../core/facts.js";
import type { KubeProxyPod } from "../core/kubeProxyPods.js";

export type { Names };
// the pod rule lives in core; its names are the seam's too
export type { KubeProxyPod, PodVerdict } from "../core/kubeProxyPods.js";
export { podVerdict } from "../core/kubeProxyPods.js";

/** The installer's kube-proxy as it stands: its configuration, and whether a rollout has its DaemonSet. */
export interface Installation {
    names: Names;
    current: CurrentConfig;
    /** true while a rollout has the installer's DaemonSet in its rollout shape */
    inRollout: boolean;
}

/** How a wait for a node's kube-proxy ends. */
export interface WaitOptions {
    /**
     * The finish's hand-back: a settled pod the restore of the installer's DaemonSet would not find
     * of the revision it records (one started without the hash prepareHandBack arranged) is
     * labelled so that it is, and writes nothing to it then (the restore labels any pod it finds
     * otherwise); that write's answer, the pod as the API server holds it, confirms the wait in
     * place of a read of the node's pods. A pod that needs no label is confirmed by the read.
     */
    labelForRestore?: boolean;
}

/**
 * The rollout's memory of one node's move, written on the node before each action, so a run
 * that dies at any instant leaves enough for the next one to finish or undo the move.
 */
export interface NodeMove {
    /** the placement the node moves to: a configuration hash, or null for the installer's DaemonSet (the finish's hand-back) */
    to: string | null;
    /**
     * where the node ran, verified, before this move: a configuration hash, or null for the
     * installer's DaemonSet. The rollback target; never `to`.
     */
    from: string | null;
    phase: MovePhase;
    /** the origin's mean sync, read before the restart: a resumed move's first-sync deadline */
    baseline?: SyncBaseline;
    /**
     * the bridge table (core/bridge.ts) this move may have left on the node: written before the
     * copy is made, cleared only after its delete is confirmed, so every path can delete it
     */
    bridge?: string;
}

/**
 * started: memory written, nothing on the node changed yet (it may be cordoned or draining; a
 * move with no drain and no ipvs cleanup skips this phase: its first write is already switching) ·
 * switching: kube-proxy is being restarted on `to` (or held off the node to clean ipvs state)
 * and checked · rolling-back: the move failed and the node is being put back on `from`.
 */
export type MovePhase = "started" | "switching" | "rolling-back";

/** What one write of a node's rollout state changes; a part left out is left as it is. */
export interface NodeChange {
    /** the move memory; null clears it */
    move?: NodeMove | null;
    /** a configuration hash, MARKS.holdValue (no kube-proxy) or null (the installer's DaemonSet) */
    placement?: string | null;
    /** verified on `hash` now, how (MARKS.checksBuiltIn / checksHooksOnly); hash null: verified on nothing */
    verified?: { hash: string | null; checks: string };
    /** lifts the rollout's cordon */
    uncordon?: true;
    /** the node's measured syncs, whole (MARKS.syncAnnotation) */
    syncs?: NodeSyncs;
}

/** A node as the runner sees it: the planner's view plus the rollout's memory. */
export interface RolloutNode extends NodeState {
    /** the move in progress, if a run left one */
    move?: NodeMove;
    /** when the node was verified on `verified` (ISO 8601) */
    verifiedAt?: string;
    /** how it was verified (MARKS.checksBuiltIn / checksHooksOnly) */
    checks?: string;
    unschedulable: boolean;
    /** true when the rollout cordoned it (and so must release it) */
    cordonedByRollout: boolean;
}

/** Who holds the cluster's rollout lease. */
export interface LeaseHolder {
    holder: string;
    /** when it last renewed (ISO 8601) */
    renewedAt: string;
    durationSeconds: number;
}

/**
 * What asking for the lease came to: taken, with when this process took the renewal time it wrote
 * (`writtenAt`, on its performance.now() clock: the lease lasts at least its duration from then),
 * or refused, with who holds it.
 */
export type LeaseClaim = { acquired: true; writtenAt: number } | { acquired: false; current: LeaseHolder };

export interface ProbeRun {
    image: string;
    /** await-sync samples the node's kube-proxy until `onLine` stops it (or its timeout) */
    action: "probe" | "cleanup" | "await-sync" | "bridge" | "unbridge";
    env: Record<string, string>;
    timeoutSeconds: number;
    /** the probe pod's priority class (verify.priorityClassName); none by default */
    priorityClassName?: string;
    /** the lease holder of the run that asks (kept on the pod, for the next run's sweep); none for a command without the lease */
    run?: string;
    /** each line of the pod's output as it comes, while the pod runs; returning true deletes the pod and returns */
    onLine?: (line: string) => boolean;
}

/** A verify hook as it runs (spec.ts's Hook, parsed: the seam's own type, free of the schema library's). */
export interface HookCommand {
    /** names it in the log and the failure */
    name: string;
    /** argv, run without a shell */
    command: string[];
    /** how long it may run */
    timeoutSeconds: number;
    /** its own environment, beside NODE, POOL, MODE and KUBECONFIG */
    env?: Record<string, string>;
}

/** What a verify hook's run came to. */
export interface HookResult {
    ok: boolean;
    /** the hook's output for the log and the failure: redacted, its last lines, long lines cut (or why it failed) */
    output: string;
    /** on a failure: the same last lines, redacted, uncut (the --json result's `output`) */
    whole?: string;
    /** true when `signal` ended the hook */
    interrupted?: boolean;
}

/** Runs the user's verify hooks: the rollout's one way out to a process. */
export interface HookRunner {
    /**
     * Runs `hook` with `env` (NODE, POOL, MODE) on top of its own env, the kubeconfig `kubeconfig`
     * (its content; a private file named by KUBECONFIG while the hook runs) and never a shell;
     * `signal` ends it. Never throws: a failure is `ok: false` with why.
     */
    runHook(
        hook: HookCommand,
        env: Record<string, string>,
        kubeconfig: string | undefined,
        signal?: AbortSignal,
    ): Promise<HookResult>;
}

export interface RolloutCluster extends HookRunner {
    readonly names: Names;
    /** "name (server)" of the cluster, for records and messages */
    readonly identity: string | undefined;

    /**
     * The accesses of `wanted` the identity running the rollout is denied (SelfSubjectAccessReview
     * answers: the cluster's own authorizers decide), and who that identity is when the cluster
     * says (SelfSubjectReview); throws when it cannot ask.
     */
    deniedAccesses(wanted: Access[]): Promise<AccessReview>;
    installation(): Promise<Installation>;
    nodes(): Promise<RolloutNode[]>;
    /** the configuration text a placement (a configuration hash) runs */
    configurationOf(hash: string): Promise<string | undefined>;

    /** the installer's DaemonSet in its rollout shape, and the target's ConfigMap and DaemonSet exist. Idempotent. */
    prepare(target: { hash: string; config: string }, log: (l: string) => void): Promise<void>;
    /**
     * Records a node's move and cordons it, in one write (so the memory and the cordon exist
     * together or not at all); true when the rollout holds the cordon (it cordoned it now, or
     * earlier), false when someone else had cordoned it (then it is left cordoned at the end).
     * With `placement` (a move with nothing to do between its cordon and its restart) the same
     * write also places the node, so the restart starts with it; `move` is then in phase switching.
     */
    startMove(node: string, move: NodeMove, placement?: string | null): Promise<boolean>;
    /** One write of a node's rollout state: only the parts given change. */
    writeNode(node: string, change: NodeChange): Promise<void>;
    /** evicts what kubectl drain would, with its rules and the pool's drain options (core/drain.ts); timeoutSeconds 0 = no limit */
    drain(node: string, timeoutSeconds: number, log: (l: string) => void, options?: DrainOptions): Promise<void>;

    /** kube-proxy's pods on one node; without a node, on every node (one request) */
    kubeProxyPods(node?: string): Promise<KubeProxyPod[]>;
    podLog(name: string, previous?: boolean): Promise<string>;
    /** until the node runs exactly one settled kube-proxy of `placement`'s DaemonSet (none for hold): podVerdict's rule */
    waitForKubeProxy(
        node: string,
        placement: string | null,
        timeoutSeconds: number,
        options?: WaitOptions,
    ): Promise<KubeProxyPod | undefined>;
    runProbe(node: string, run: ProbeRun): Promise<{ output: string; succeeded: boolean }>;
    /**
     * Under the lease, at a run's start: deletes the probe pods a dead run left (core/probePods.ts
     * probePodsToSweep decides: another holder's, or past their stale-after time), naming each.
     */
    sweepProbePods(holder: string, log: (line: string) => void): Promise<void>;
    /** every Service's ClusterIPs, external IPs and load-balancer IPs (an IPVS virtual server on one is kube-proxy's) */
    serviceAddresses(): Promise<string[]>;
    /** ClusterIP and first port of a Service, undefined when it has none */
    serviceEndpoint(namespace: string, name: string): Promise<{ ip: string; port: number } | undefined>;

    writeCanonicalConfig(config: string): Promise<void>;
    /**
     * Before the hand-back: the pods the installer's DaemonSet starts from now carry the revision
     * hash the restore will count current, where the cluster allows (they then need no label
     * write; the hand-back's wait labels any pod that does not)
     */
    prepareHandBack(log: (l: string) => void): Promise<void>;
    /** the installer's DaemonSet back to its saved spec; the rollout's objects deleted */
    restoreInstallation(log: (l: string) => void): Promise<void>;
    waitForDaemonSetRollout(timeoutSeconds: number, log: (l: string) => void): Promise<void>;

    /**
     * Takes the cluster's rollout lease, or returns who holds it. A lease that looks expired by this
     * machine's clock is watched for its duration first (`log` says so), since its holder's clock may
     * differ; `signal` ends that watch at once, leaving the lease as it is (not acquired).
     */
    acquireLease(
        holder: string,
        durationSeconds: number,
        log?: (line: string) => void,
        signal?: AbortSignal,
    ): Promise<LeaseClaim>;
    /** false when the lease is no longer ours */
    renewLease(holder: string): Promise<boolean>;
    releaseLease(holder: string): Promise<void>;
    /**
     * From now on every write of the run (not the lease's own calls, which are compare-and-swaps on
     * the holder) first calls `check`, which throws when the run may no longer write; a write being
     * retried calls it again before each attempt.
     */
    fenceWrites(check: () => void): void;
    /** Lets go of what the client holds open for the run (its watches); the run calls it at its end. */
    close(): void;
}
