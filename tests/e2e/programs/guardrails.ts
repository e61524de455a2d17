// The stack the guard-rail e2e test previews with the policy pack: config `case` picks what it
// declares, each a thing a team might write. Nothing here is ever applied (preview only).
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import * as path from "node:path";
import * as YAML from "yaml";
import { KubeProxyMode } from "../../../components/pulumi/kubeProxyMode.js";

const config = new pulumi.Config("guardrails");
const kubeconfig = config.requireSecret("kubeconfig");
const which = config.require("case");
const provider = new k8s.Provider("cluster", { kubeconfig });

const kpc = (fields: Record<string, unknown>) =>
    YAML.stringify({
        apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
        kind: "KubeProxyConfiguration",
        clusterCIDR: "10.244.0.0/16",
        ...fields,
    });
const kubeProxyPatch = (name: string, fields: Record<string, unknown>, on: k8s.Provider = provider) =>
    new k8s.core.v1.ConfigMapPatch(
        name,
        { metadata: { name: "kube-proxy", namespace: "kube-system" }, data: { "config.conf": kpc(fields) } },
        { provider: on },
    );
const upgradeKubeProxy = (tag: string) =>
    new k8s.apps.v1.DaemonSetPatch(
        "kube-proxy-upgrade",
        {
            metadata: { name: "kube-proxy", namespace: "kube-system" },
            spec: {
                template: {
                    spec: { containers: [{ name: "kube-proxy", image: `registry.k8s.io/kube-proxy:${tag}` }] },
                },
            },
        },
        { provider },
    );
const component = () =>
    new KubeProxyMode(
        "kube-proxy",
        {
            mode: "nftables",
            nodePortAddresses: ["0.0.0.0/0"],
            pools: [
                { name: "canary", nodeSelector: "pool=canary", maxUnavailable: 1 },
                { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 1 },
            ],
            verify: { nodeChecks: false },
            kubeconfig,
        },
        { provider },
    );

switch (which) {
    case "unpinned-and-misspelt":
        // kubeadm's default (mode ""), and a second configuration with a misspelt gate
        kubeProxyPatch("unpinned", { mode: "" });
        new k8s.core.v1.ConfigMap(
            "gate-typo",
            {
                metadata: { name: "kube-proxy-next", namespace: "default" },
                data: { "config.conf": kpc({ mode: "nftables", featureGates: { NFTablesProxyMod: true } }) },
            },
            { provider },
        );
        break;
    case "pinned":
        kubeProxyPatch("pinned", { mode: "nftables", featureGates: { NFTablesProxyMode: true } });
        break;
    case "upgrade-keeping-ipvs":
        // kube-proxy upgraded to 1.40 in the same change, the configuration still on ipvs
        upgradeKubeProxy("v1.40.0");
        kubeProxyPatch("still-ipvs", { mode: "ipvs" });
        break;
    case "upgrade-keeping-ipvs-gated":
        upgradeKubeProxy("v1.40.0");
        kubeProxyPatch("still-ipvs", { mode: "ipvs", featureGates: { KubeProxyIPVS: true } });
        break;
    case "component":
        component();
        break;
    case "component-and-by-hand":
        component();
        kubeProxyPatch("by-hand", { mode: "iptables" });
        break;
    case "component-and-other-cluster":
        // a stack managing two clusters: the hand-written patch is for the second one
        component();
        kubeProxyPatch(
            "other-cluster",
            { mode: "iptables" },
            new k8s.Provider("other", { kubeconfig: config.requireSecret("otherKubeconfig") }),
        );
        break;
    case "component-and-second-provider":
        // a second provider with the same kubeconfig: another Pulumi provider, the same cluster
        component();
        kubeProxyPatch("second-provider", { mode: "iptables" }, new k8s.Provider("second", { kubeconfig }));
        break;
    case "helm-chart-unpinned":
    case "helm-chart-pinned":
        // kube-proxy's configuration shipped in a chart: Helm v4 Charts register what they render
        new k8s.helm.v4.Chart(
            "kube-proxy-chart",
            {
                chart: path.join(__dirname, "..", "..", "..", "..", "tests", "e2e", "programs", "charts", "kube-proxy"),
                values: { mode: which === "helm-chart-pinned" ? "nftables" : "" },
            },
            { provider },
        );
        break;
    default:
        throw new Error(`guardrails:case ${JSON.stringify(which)} is not a case of this program`);
}
