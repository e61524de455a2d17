// The pure core: validate -> plan -> render, no I/O.
export * from "./types.js";
export * from "./versions.js";
export * from "./facts.js";
export * from "./config.js";
export * from "./settings.js";
export * from "./nodePortAddresses.js";
export * from "./featureGates.js";
export * from "./rules.js";
export * from "./render.js";
export * from "./selector.js";
export * from "./nodes.js";
export * from "./duration.js";
export * from "./plan.js";
export * from "./probe.js";
export * from "./migration.js";
export * from "./daemonset.js";
