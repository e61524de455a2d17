// What the tests against a SIMULATED API server (a small HTTP server on 127.0.0.1) share.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import * as k8s from "@kubernetes/client-node";
import { KubeProxyCluster } from "../../components/cluster/kubeProxy.js";
import { namesFor } from "../../components/core/facts.js";

/** The tool's cluster client pointed at a SIMULATED API server (plain HTTP, no credentials). */
export function clusterOn(server: string): KubeProxyCluster {
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
        clusters: [{ name: "sim", server, skipTLSVerify: true }],
        users: [{ name: "sim" }],
        contexts: [{ name: "sim", cluster: "sim", user: "sim" }],
        currentContext: "sim",
    });
    return new KubeProxyCluster(kc, namesFor("kubeadm"));
}

/** A SIMULATED API server listening on 127.0.0.1: its URL, and a close that ends every open stream. */
export interface SimulatedServer {
    url: string;
    close: () => Promise<void>;
}

/**
 * Starts a SIMULATED API server with this handler on a free port of 127.0.0.1. `close` destroys
 * the sockets of `streams` (the open watches), every kept-alive connection, then the server.
 */
export async function listenSimulated(
    handler: (req: IncomingMessage, res: ServerResponse) => void,
    streams: Iterable<ServerResponse> = [],
): Promise<SimulatedServer> {
    const server: Server = createServer(handler);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return {
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        close: async () => {
            for (const s of streams) s.socket?.destroy();
            server.closeAllConnections();
            await new Promise((r) => server.close(r));
        },
    };
}

/** Answers with this JSON body and status code, as the API server does. */
export function answer(res: ServerResponse, code: number, body: unknown): void {
    res.writeHead(code, { "content-type": "application/json" }).end(JSON.stringify(body));
}

/** The API server's Status object for a failed request. */
export function failure(code: number, reason?: string, message?: string): k8s.V1Status {
    return { kind: "Status", status: "Failure", code, ...(reason ? { reason } : {}), ...(message ? { message } : {}) };
}

/** Starts a watch's stream: headers sent, events written by the test, kept in `streams` until closed. */
export function openStream(res: ServerResponse, streams: Set<ServerResponse>): void {
    res.writeHead(200, { "content-type": "application/json" });
    res.flushHeaders();
    streams.add(res);
    res.on("close", () => streams.delete(res));
}

/** Reads a request's whole body, then hands it over as text ("" when there is none). */
export function withBody(req: IncomingMessage, then: (raw: string) => void): void {
    let raw = "";
    req.on("data", (c: Buffer) => (raw += c.toString()));
    req.on("end", () => then(raw));
}
