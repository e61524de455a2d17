// End to end against the REAL API server (kube-apiserver 1.37 of the reference cluster; the nodes
// are SIMULATED by kwok and play no part): kube-proxy's objects as the EKS managed add-on leaves
// them (tests/fixtures/eks/managed-addon, RECONSTRUCTED from EKS's published objects), written
// with Server-Side Apply under the field manager "eks" as EKS's add-on manager writes them, are
// told apart by the preview's cluster read (readSnapshot) from the same objects written as kubectl
// writes them. Each case in its own namespace (target.namespace), so kube-system is untouched.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as k8s from "@kubernetes/client-node";
import YAML from "yaml";
import { readSnapshot } from "../../components/cluster/snapshot.js";
import type { ClusterState } from "../../scripts/referenceCluster.js";
import { fixture } from "../helpers.js";
import { clients, startCluster, stopCluster } from "./support.js";

/** A fixture object as a client sends it: no server-set metadata, in `namespace`, scheduled nowhere. */
function asSent(path: string, namespace: string): k8s.KubernetesObject {
    const o = YAML.parse(fixture(path));
    const { name, labels, annotations } = o.metadata;
    const sent = { ...o, metadata: { name, namespace, labels, ...(annotations ? { annotations } : {}) } };
    // a DaemonSet of the fixture would put pods on the SIMULATED nodes: none match this selector
    if (o.kind === "DaemonSet") sent.spec.template.spec.nodeSelector = { "kube-proxy-mode.test/none": "none" };
    return sent;
}

describe("@e2e the EKS managed add-on, told by its objects' field manager on the real API server", function () {
    this.timeout(120_000);
    let cluster: ClusterState | undefined;
    let kc: k8s.KubeConfig;

    before(async () => {
        cluster = await startCluster({ nodes: "kwok", pools: [["workers", 2]] });
        ({ kc } = clients(cluster));
    });
    after(async () => stopCluster(cluster));

    async function write(namespace: string, fieldManager: string, apply: boolean): Promise<void> {
        await kc.makeApiClient(k8s.CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
        const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
        for (const path of ["eks/managed-addon/configmap.yaml", "eks/managed-addon/daemonset.yaml"]) {
            const o = asSent(path, namespace);
            if (apply)
                await objects.patch(o, undefined, undefined, fieldManager, true, k8s.PatchStrategy.ServerSideApply);
            else await objects.create(o, undefined, undefined, fieldManager);
        }
    }

    const access = () => ({ kubeconfigContent: readFileSync(cluster!.kubeconfig, "utf8") });

    it('applied with Server-Side Apply as field manager "eks": the snapshot names both objects as the add-on\'s', async () => {
        await write("eks-managed", "eks", true);
        const snapshot = await readSnapshot(access(), "eks", { namespace: "eks-managed" });
        assert.deepEqual(snapshot.eksAddon?.evidence, [
            'ConfigMap eks-managed/kube-proxy-config (field manager "eks", Apply; label eks.amazonaws.com/component=kube-proxy)',
            'DaemonSet eks-managed/kube-proxy (field manager "eks", Apply; label eks.amazonaws.com/component=kube-proxy)',
        ]);
        assert.equal(snapshot.current.config.mode, "ipvs", "the add-on's configuration is read as the current one");
    });

    it("the same objects created as kubectl creates them (the label, no field manager eks): no add-on", async () => {
        await write("eks-self-managed", "kubectl-create", false);
        const snapshot = await readSnapshot(access(), "eks", { namespace: "eks-self-managed" });
        assert.equal(snapshot.eksAddon, undefined);
    });
});
