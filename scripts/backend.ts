// The reference cluster's backend: an HTTP server in its own network namespace, reached from
// the nodes through a Service's ClusterIP (a selectorless Service with an EndpointSlice).
// GET /stream answers slowly and never ends (a line every 100 ms): the long-lived connection the
// bench's workload phase holds through a move.
import { createServer } from "node:http";

const port = Number(process.argv[2] ?? 8080);
const name = process.argv[3] ?? "backend";
createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/plain" });
    if (req.url === "/stream") {
        const timer = setInterval(() => res.write(`${Date.now()}\n`), 100);
        res.on("close", () => clearInterval(timer));
        return;
    }
    res.end(`${name} answered ${req.method} ${req.url}\n`);
}).listen(port, "0.0.0.0", () => process.stdout.write(`${name} listening on :${port}\n`));
