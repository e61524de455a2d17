// kube-apiserver's apiserver_request_total, scraped from /metrics with a kubeconfig's own
// credentials and summed by a key of the caller's (the bench: verb and resource; the e2e test of
// the SIMULATED kubelet: the status code of pod DELETEs).
import { request, type RequestOptions } from "node:https";
import type * as k8s from "@kubernetes/client-node";

/** One apiserver_request_total series' labels (verb, resource, subresource, code, ...). */
export type RequestLabels = Record<string, string>;

/** The requests the API server has answered, summed by `keyOf` (undefined leaves a series out). */
export async function apiRequestTotals(
    kc: k8s.KubeConfig,
    keyOf: (labels: RequestLabels) => string | undefined,
): Promise<Map<string, number>> {
    const options: RequestOptions = {};
    await kc.applyToHTTPSOptions(options);
    const body = await new Promise<string>((resolve, reject) => {
        const req = request(new URL("/metrics", kc.getCurrentCluster()!.server), options, (res) => {
            let text = "";
            res.setEncoding("utf8");
            res.on("data", (d) => (text += d));
            res.on("end", () =>
                res.statusCode === 200 ? resolve(text) : reject(new Error(`GET /metrics: HTTP ${res.statusCode}`)),
            );
        });
        req.on("error", reject);
        req.end();
    });
    const totals = new Map<string, number>();
    for (const line of body.split("\n")) {
        if (!line.startsWith("apiserver_request_total{")) continue;
        const labels: RequestLabels = {};
        for (const [, name, value] of line.matchAll(/[{,]([a-z_]+)="([^"]*)"/g)) labels[name] = value;
        const key = keyOf(labels);
        if (key !== undefined) totals.set(key, (totals.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1)));
    }
    return totals;
}

/**
 * The nodes' status heartbeats: counted by kind, but not as requests of the move. kwok's
 * node-heartbeat stage patches each node's status on its own timer (600 s, plus up to 610 s of
 * jitter) whatever the rollout does, so a 15-s sample of the background rarely holds one, and an
 * up that runs past the timer counted them against the move (2026-12-05: none in two 16-minute ups
 * of 5,000 nodes, 1.3 per node in a 23-minute one). The rollout never writes a node's status.
 */
export const HEARTBEATS: ReadonlySet<string> = new Set(["PATCH nodes/status"]);

/** The requests of totals keyed "VERB resource[/subresource]" that count as the move's: all but the HEARTBEATS. */
export function countedRequests(totals: Map<string, number>): number {
    let sum = 0;
    for (const [kind, n] of totals) if (!HEARTBEATS.has(kind)) sum += n;
    return sum;
}
