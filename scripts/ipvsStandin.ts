// SIMULATED: the ipvs-mode stand-in. This machine's kernel has no IPVS, so a real kube-proxy
// cannot run in ipvs mode here. For pods whose configuration says ipvs, the node agent runs this
// instead, in the node's network namespace. It lays down the state an ipvs node really has --
// KUBE-* ipsets and iptables chains, an interface named kube-ipvs0 holding every ClusterIP as
// /32, the strictARP sysctls -- removes nftables-mode tables as ipvs mode does at start, and
// answers /proxyMode with "ipvs" and a sync timestamp on /metrics at 127.0.0.1:10249. It does
// not program Service traffic (that needs IPVS). It is the one simulated piece.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import * as k8s from "@kubernetes/client-node";
import * as YAML from "yaml";

const configPath = process.argv[2];
const config = YAML.parse(readFileSync(configPath, "utf8"));
const log = (l: string) => process.stdout.write(`${new Date().toISOString()} ${l}\n`);

function run(cmd: string, args: string[], input?: string): void {
    try {
        execFileSync(cmd, args, { input, stdio: ["pipe", "ignore", "pipe"] });
    } catch (e) {
        // execFileSync's error carries the command's stderr
        const stderr: unknown = typeof e === "object" && e !== null && "stderr" in e ? e.stderr : undefined;
        log(`${cmd} ${args.join(" ")}: ${String(stderr ?? e).trim()}`);
    }
}

log(
    "kube-proxy-mode ipvs stand-in (SIMULATED: IPVS is not in this kernel; this process lays down ipvs-mode node state, it does not program traffic)",
);
log("Using ipvs Proxier (simulated by the kube-proxy-mode stand-in)");

// ipvs mode removes nftables mode's tables at start
for (const family of ["ip", "ip6"]) {
    try {
        execFileSync("nft", ["list", "table", family, "kube-proxy"], { stdio: "ignore" });
        run("nft", ["delete", "table", family, "kube-proxy"]);
        log(`removed nftables table ${family} kube-proxy`);
    } catch {
        /* no such table */
    }
}
if (config?.ipvs?.strictARP) {
    run("sysctl", ["-w", "net.ipv4.conf.all.arp_ignore=1"]);
    run("sysctl", ["-w", "net.ipv4.conf.all.arp_announce=2"]);
}
run("ip", ["link", "add", "kube-ipvs0", "type", "bridge"]);
for (const [name, type] of [
    ["KUBE-CLUSTER-IP", "hash:ip,port"],
    ["KUBE-LOOP-BACK", "hash:ip,port,ip"],
    ["KUBE-NODE-PORT-TCP", "bitmap:port range 0-65535"],
] as const) {
    run("ipset", ["create", name, ...type.split(" "), "-exist"]);
}
run(
    "iptables-restore",
    ["--noflush"],
    [
        "*nat",
        ":KUBE-SERVICES - [0:0]",
        ":KUBE-POSTROUTING - [0:0]",
        ":KUBE-NODE-PORT - [0:0]",
        ":KUBE-LOAD-BALANCER - [0:0]",
        ":KUBE-MARK-MASQ - [0:0]",
        "-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT",
        "-A OUTPUT -j KUBE-SERVICES",
        "COMMIT",
        "*filter",
        ":KUBE-FORWARD - [0:0]",
        ":KUBE-NODE-PORT - [0:0]",
        ":KUBE-PROXY-FIREWALL - [0:0]",
        ":KUBE-SOURCE-RANGES-FIREWALL - [0:0]",
        ":KUBE-IPVS-FILTER - [0:0]",
        "COMMIT",
        "",
    ].join("\n"),
);

let lastSync = 0;
async function sync(): Promise<void> {
    // the pod's kubeconfig, as kube-proxy reads it (client-node does not follow tokenFile itself)
    const raw = YAML.parse(readFileSync(config.clientConnection.kubeconfig, "utf8"));
    const cluster = raw.clusters[0].cluster;
    const user = raw.users[0].user;
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
        clusters: [
            {
                name: "c",
                server: cluster.server,
                caFile: cluster["certificate-authority"],
                tlsServerName: cluster["tls-server-name"],
                skipTLSVerify: false,
            },
        ],
        users: [{ name: "u", token: user.tokenFile ? readFileSync(user.tokenFile, "utf8").trim() : user.token }],
        contexts: [{ name: "x", cluster: "c", user: "u" }],
        currentContext: "x",
    });
    const services = await kc.makeApiClient(k8s.CoreV1Api).listServiceForAllNamespaces();
    for (const s of services.items) {
        const ip = s.spec?.clusterIP;
        if (!ip || ip === "None" || ip.includes(":")) continue;
        run("ip", ["addr", "replace", `${ip}/32`, "dev", "kube-ipvs0"]);
        for (const p of s.spec?.ports ?? [])
            run("ipset", [
                "add",
                "KUBE-CLUSTER-IP",
                `${ip},${(p.protocol ?? "TCP").toLowerCase()}:${p.port}`,
                "-exist",
            ]);
    }
    lastSync = Date.now() / 1000;
}

createServer((req, res) => {
    if (req.url === "/proxyMode") return res.end("ipvs");
    if (req.url === "/metrics") {
        res.setHeader("content-type", "text/plain");
        return res.end(`kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} ${lastSync}\n`);
    }
    res.statusCode = 404;
    res.end();
}).listen(10249, "127.0.0.1");
createServer((_req, res) => res.end("ok")).listen(10256, "0.0.0.0");

const loop = () =>
    sync().then(
        () => undefined,
        (e) => log(`sync failed: ${(e as Error).message}`),
    );
void loop();
setInterval(() => void loop(), 15_000);
process.on("SIGTERM", () => process.exit(0));
