// The subcommands that act on a cluster, each in its own file: rollout, status, verify, cleanup.
export { failureDocument, ROLLOUT_FLAGS, ROLLOUT_HELP, rolloutCommand } from "./rollout.js";
export { STATUS_FLAGS, STATUS_HELP, statusCommand } from "./status.js";
export { CLEANUP_FLAGS, CLEANUP_HELP, cleanupCommand, VERIFY_FLAGS, VERIFY_HELP, verifyCommand } from "./node.js";
