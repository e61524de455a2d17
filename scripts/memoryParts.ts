// The rollout runner's memory that grows with the cluster, measured alone: its RSS after loading,
// after reading every node as a pool's step does (and keeping them, as the step does), and after
// starting the informer of kube-proxy's pods that its waits read (one list and one watch). Each
// figure is taken after a full garbage collection; the peaks are sampled every 5 ms. Set beside
// the runner's peak in `npm run bench` (docs/performance.md), it tells what grows with the nodes from
// what does not:
//
//   node --expose-gc dist/scripts/memoryParts.js --kubeconfig FILE
//
// It loads what the runner loads and nothing more (no bench, no reference-cluster code), so its
// first figure is comparable with the runner's own.
import { parseArgs } from "node:util";
import { loadKubeConfig } from "../components/cluster/client.js";
import { KubeProxyCluster } from "../components/cluster/kubeProxy.js";
import { namesFor } from "../components/core/facts.js";

async function main(): Promise<void> {
    const { values } = parseArgs({ options: { kubeconfig: { type: "string" } } });
    if (!values.kubeconfig) throw new Error("--kubeconfig FILE: the cluster's kubeconfig");
    const gc = (globalThis as { gc?: () => void }).gc;
    if (!gc) throw new Error("run it with node --expose-gc: each figure is taken after a full garbage collection");
    const cluster = new KubeProxyCluster(loadKubeConfig({ kubeconfig: values.kubeconfig }), namesFor("kubeadm"));
    const rss = () => process.memoryUsage().rss;
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, rss())), 5);
    const settled = () => (gc(), rss());
    const mb = (bytes: number) => Math.round(bytes / 1e6);
    try {
        await cluster.installation(); // the client loaded and connected: what every run has
        const loaded = settled();
        peak = loaded;
        const nodes = await cluster.nodes();
        const nodeListPeak = peak;
        const withNodes = settled();
        // the informer the waits read, started as a wait starts it: a wait for a node that does
        // not exist, which times out (any other failure is the script's)
        await cluster.waitForKubeProxy("kube-proxy-mode-no-such-node", null, 1, { settleSeconds: 0 }).then(
            () => {
                throw new Error("a wait for a node that does not exist passed");
            },
            (e: unknown) => {
                if (!/did not settle/.test((e as Error).message)) throw e;
            },
        );
        const withPods = settled();
        console.log(
            JSON.stringify({
                nodes: nodes.length,
                loadedMB: mb(loaded),
                nodeListPeakMB: mb(nodeListPeak),
                withNodesMB: mb(withNodes),
                withPodInformerMB: mb(withPods),
                peakMB: mb(peak),
            }),
        );
    } finally {
        clearInterval(sampler);
        cluster.close();
    }
}

main().catch((e: unknown) => {
    console.error((e as Error).message);
    process.exit(1);
});
