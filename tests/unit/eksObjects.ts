// kube-proxy's objects on EKS, for the add-on tests: the managed add-on's, RECONSTRUCTED from
// EKS's published objects (tests/fixtures/eks/managed-addon, see its README), and self-managed ones.
import YAML from "yaml";
import { fixture } from "../helpers.js";

export const ADDON_CONFIG_MAP = YAML.parse(fixture("eks/managed-addon/configmap.yaml"));
export const ADDON_DAEMON_SET = YAML.parse(fixture("eks/managed-addon/daemonset.yaml"));
/** EKS's self-managed kube-proxy-config: the same label, written with kubectl apply, no "eks" manager */
export const SELF_MANAGED_CONFIG_MAP = YAML.parse(fixture("eks/kube-proxy-config.yaml"));
/** the add-on's DaemonSet as a self-managed one would be: no field manager "eks" */
export const SELF_MANAGED_DAEMON_SET = {
    ...ADDON_DAEMON_SET,
    metadata: { ...ADDON_DAEMON_SET.metadata, managedFields: [ADDON_DAEMON_SET.metadata.managedFields[1]] },
};
