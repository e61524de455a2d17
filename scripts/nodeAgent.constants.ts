// Shared with tests: the node label that leaves tools out of a real node's PATH.
/** node label: tools left out of that node's PATH, dot-separated (e.g. "nft"), to make a node that cannot run a mode */
export const WITHOUT_TOOLS_LABEL = "reference.kube-proxy-mode.io/without-tools";
