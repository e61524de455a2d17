// A TCP proxy on 127.0.0.1 in front of the reference cluster's real kube-apiserver, with a switch
// that black-holes it: while on, nothing is forwarded either way, every connection stays open, and
// new connections are accepted and never answered (a black-holed network, a hung load balancer).
// What a client sends meanwhile is held, as a network holds the segments its sender keeps
// retransmitting: when the switch goes off, the held bytes of every connection still open are
// delivered (counted in `lateBytes`), and those of a connection its client closed are dropped,
// as they die with the sender's socket. TLS passes through untouched (the API server's
// certificate names 127.0.0.1, so a kubeconfig pointing at the proxy verifies it as it is).
import { connect, createServer, type AddressInfo, type Server, type Socket } from "node:net";

interface Pipe {
    client: Socket;
    upstream?: Socket;
    /** bytes held while black-holed: from the client, and from the API server */
    toServer: Buffer[];
    toClient: Buffer[];
}

export class BlackHoleProxy {
    private server?: Server;
    private readonly pipes = new Set<Pipe>();
    private holed = false;
    /** bytes a client sent during a black hole that reached the API server once it ended */
    lateBytes = 0;
    /** connections accepted, and accepted while black-holed */
    accepted = 0;
    acceptedInHole = 0;

    constructor(private readonly target: { host: string; port: number }) {}

    get url(): string {
        return `https://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
    }

    /** connections open now (each a client's socket) */
    get open(): number {
        return this.pipes.size;
    }

    async start(): Promise<void> {
        this.server = createServer((client) => this.accept(client));
        await new Promise<void>((r) => this.server!.listen(0, "127.0.0.1", r));
    }

    /** Black-holes the proxy (true) or lets it forward again, delivering what it held (false). */
    blackHole(on: boolean): void {
        this.holed = on;
        if (on) return;
        for (const p of this.pipes) {
            if (!p.upstream) this.connectUpstream(p);
            for (const b of p.toServer.splice(0)) {
                this.lateBytes += b.length;
                if (!p.upstream!.destroyed) p.upstream!.write(b);
            }
            for (const b of p.toClient.splice(0)) p.client.write(b);
            if (p.upstream!.destroyed) p.client.end();
        }
    }

    async close(): Promise<void> {
        for (const p of this.pipes) {
            p.client.destroy();
            p.upstream?.destroy();
        }
        await new Promise((r) => this.server?.close(r));
    }

    private accept(client: Socket): void {
        const p: Pipe = { client, toServer: [], toClient: [] };
        this.pipes.add(p);
        this.accepted++;
        if (this.holed) this.acceptedInHole++;
        else this.connectUpstream(p);
        client.on("data", (b: Buffer) => {
            if (this.holed || !p.upstream) p.toServer.push(b);
            else p.upstream.write(b);
        });
        client.on("error", () => undefined);
        client.on("close", () => {
            // what it sent into the black hole dies with it
            p.toServer.length = 0;
            p.upstream?.destroy();
            this.pipes.delete(p);
        });
    }

    private connectUpstream(p: Pipe): void {
        const upstream = connect(this.target.port, this.target.host);
        p.upstream = upstream;
        upstream.on("data", (b: Buffer) => {
            if (this.holed) p.toClient.push(b);
            else p.client.write(b);
        });
        upstream.on("error", () => p.client.destroy());
        upstream.on("close", () => {
            // an answer still held is the client's to get when the hole ends; until then it stays open
            if (!this.holed) p.client.end();
        });
    }
}
