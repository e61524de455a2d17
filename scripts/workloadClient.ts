// A node's workload during a move, run inside the node's network namespace (`ip netns exec`):
//   node dist/scripts/workloadClient.js <service ip> <port> [<node ip> <node port>]
// opens a new connection to the Service every 50 ms (20 a second: connect, GET /, the backend's
// answer within 1 s, else failed), with a node address and port also one to the Service's NodePort
// on the node's own address at the same rate (recorded apart), and holds one long-lived connection (GET /stream: the backend
// writes a line every 100 ms; opened again 500 ms after a failure, or after 2 s without an answer,
// until it first carries data, never after).
// On SIGTERM it prints what it saw as one JSON line (a ClientRecord, scripts/workload.ts) and exits.
import { connect, type Socket } from "node:net";
import type { Attempt, ClientRecord } from "./workload.js";

const [host, portText, nodeHost, nodePortText] = process.argv.slice(2);
const port = Number(portText);
const nodePort = nodePortText === undefined ? undefined : Number(nodePortText);
if (!host || !Number.isInteger(port) || (nodePort !== undefined && (!nodeHost || !Number.isInteger(nodePort)))) {
    process.stderr.write("usage: workloadClient.js <service ip> <port> [<node ip> <node port>]\n");
    process.exit(2);
}

const ATTEMPT_EVERY_MS = 50;
const ATTEMPT_TIMEOUT_MS = 1000;
const record: ClientRecord = {
    startedAt: Date.now(),
    stoppedAt: 0,
    attempts: [],
    stream: { openedAt: null, closedAt: null, lastDataAt: null, longestStallMs: 0 },
    ...(nodePort !== undefined ? { nodePortAttempts: [], nodePortTarget: `${nodeHost}:${nodePort}` } : {}),
};

function attempt(list: Attempt[], host: string, port: number): void {
    const a: Attempt = { t: Date.now(), ok: false };
    list.push(a);
    const socket = connect({ host, port });
    let answer = "";
    const done = () => {
        clearTimeout(timer);
        socket.destroy();
    };
    const timer = setTimeout(done, ATTEMPT_TIMEOUT_MS);
    socket.on("connect", () => socket.write("GET / HTTP/1.1\r\nHost: backend\r\nConnection: close\r\n\r\n"));
    socket.on("data", (d) => {
        answer += d.toString("latin1");
        if (/^HTTP\/1\.1 200 /.test(answer)) {
            a.ok = true;
            done();
        }
    });
    socket.on("error", done);
    socket.on("close", done);
}

let stream: Socket | undefined;
let lastData = 0;
function openStream(): void {
    const socket = connect({ host, port });
    stream = socket;
    // not answering within 2 s: try again with a fresh connection. A SYN sent while no rule routed
    // the ClusterIP leaves a conntrack entry without NAT, and its retransmissions keep that binding
    // after the rules arrive, so the attempt would hang until the kernel gives up (minutes)
    const patience = setTimeout(() => {
        if (record.stream.openedAt === null) socket.destroy(new Error("no answer within 2 s"));
    }, 2000);
    socket.on("close", () => clearTimeout(patience));
    socket.on("connect", () => {
        record.stream.localAddress = socket.localAddress;
        socket.write("GET /stream HTTP/1.1\r\nHost: backend\r\n\r\n");
    });
    socket.on("data", () => {
        const now = Date.now();
        if (record.stream.openedAt === null) record.stream.openedAt = now;
        else record.stream.longestStallMs = Math.max(record.stream.longestStallMs, now - lastData);
        lastData = now;
        record.stream.lastDataAt = now;
    });
    const ended = (why: string) => {
        if (stream !== socket) return;
        stream = undefined;
        if (record.stream.openedAt === null) {
            record.stream.why = why;
            setTimeout(openStream, 500);
        } else if (record.stream.closedAt === null) {
            record.stream.closedAt = Date.now();
            record.stream.why = why;
        }
    };
    socket.on("error", (e) => ended((e as NodeJS.ErrnoException).code ?? e.message));
    socket.on("close", () => ended("closed by the peer"));
}

const ticker = setInterval(() => {
    attempt(record.attempts, host, port);
    if (nodePort !== undefined) attempt(record.nodePortAttempts!, nodeHost, nodePort);
}, ATTEMPT_EVERY_MS);
openStream();
process.on("SIGTERM", () => {
    clearInterval(ticker);
    record.stoppedAt = Date.now();
    if (stream && record.stream.openedAt !== null)
        record.stream.longestStallMs = Math.max(record.stream.longestStallMs, record.stoppedAt - lastData);
    process.stdout.write(JSON.stringify(record) + "\n", () => process.exit(0));
});
