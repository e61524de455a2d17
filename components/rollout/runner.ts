// The rollout: pools in order, nodes in batches of maxUnavailable, each node moved, verified and
// released, or rolled back; the finish verifies every node, writes the installer's ConfigMap and
// hands the nodes back to the installer's DaemonSet in batches, checked.
//
// The rollout's state lives in the cluster, written before each action (see NodeMove), so a run
// that dies at any instant converges on the next run: every node verified on the target, or
// stopped with every node back on a configuration it was verified on and nothing left cordoned
// that the rollout cordoned. One run per cluster at a time (a Lease).
export type { Clock } from "./clock.js";
export type { Log, NodeOutcome, Context } from "./context.js";
export { defaultHolder, resolveTarget, currentPlan, originOf, configurationMode } from "./context.js";
export { RolloutFailure, RolloutRefused, RolloutBusy, RolloutInterrupted, LeaseLost } from "./errors.js";
export { serviceProbeEnv, verifyNode } from "./checks.js";
export { runPools } from "./pools.js";
export { finish } from "./finish.js";
