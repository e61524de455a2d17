// Real nodes for the reference cluster: each node is a network namespace joined to a bridge on
// the host by a veth pair, with its own address, routes, iptables, nftables and ipsets. A
// backend namespace serves HTTP behind a Service. Every command is argv, never a shell string.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface RealNetwork {
    /** cluster index: the third octet of 10.213.<index>.0/24 */
    index: number;
    bridge: string;
    gateway: string;
    backend: { netns: string; ip: string; port: number };
    nodes: { name: string; netns: string; ip: string; veth: string }[];
}

function ip(...args: string[]): string {
    return execFileSync("ip", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

function tryIp(...args: string[]): void {
    try {
        ip(...args);
    } catch {
        /* already gone */
    }
}

/** Whether this machine lets us make network namespaces (root, iproute2, nftables). */
export function realNodesSupported(): { ok: boolean; why?: string } {
    if (process.getuid?.() !== 0) return { ok: false, why: "real nodes need root (network namespaces, nftables)" };
    for (const tool of ["ip", "nft", "iptables", "ipset", "curl"]) {
        const found = (process.env.PATH ?? "").split(":").some((d) => d && existsSync(join(d, tool)));
        if (!found)
            return {
                ok: false,
                why: `${tool} is not installed (scripts/toolchain.sh installs nftables iptables ipset iproute2 conntrack curl)`,
            };
    }
    // probe pods run as a kubelet runs them (nodeAgent.ts): unshare for their mount namespace, and
    // Debian's busybox-static STANDING IN for the probe image
    if (!existsSync("/bin/busybox"))
        return {
            ok: false,
            why: "/bin/busybox is not installed (Debian's busybox-static, in scripts/toolchain.versions APT_PACKAGES; it stands in for the probe image)",
        };
    if (!(process.env.PATH ?? "").split(":").some((d) => d && existsSync(join(d, "unshare"))))
        return { ok: false, why: "unshare (util-linux) is not installed" };
    return { ok: true };
}

/** A cluster index no other running cluster uses (their state files say which they took). */
export function freeIndex(clustersDir: string): number {
    const used = new Set<number>();
    if (existsSync(clustersDir)) {
        for (const d of readdirSync(clustersDir)) {
            const f = join(clustersDir, d, "state.json");
            if (existsSync(f)) {
                const s = JSON.parse(readFileSync(f, "utf8"));
                if (s.network?.index) used.add(s.network.index);
            }
        }
    }
    const existing = ip("-o", "link", "show").match(/kpm(\d+)br/g) ?? [];
    for (const e of existing) used.add(Number(/\d+/.exec(e)![0]));
    for (let i = 1; i < 250; i++) if (!used.has(i)) return i;
    throw new Error("no free reference-cluster network index (250 clusters?)");
}

export function planNetwork(index: number, nodeNames: string[]): RealNetwork {
    const prefix = `10.213.${index}`;
    return {
        index,
        bridge: `kpm${index}br`,
        gateway: `${prefix}.1`,
        backend: { netns: `kpm${index}-backend`, ip: `${prefix}.5`, port: 8080 },
        nodes: nodeNames.map((name, i) => ({
            name,
            netns: `kpm${index}-${name}`,
            ip: `${prefix}.${10 + i}`,
            veth: `kpm${index}v${i}`,
        })),
    };
}

function addHost(net: RealNetwork, netns: string, addr: string, veth: string): void {
    ip("netns", "add", netns);
    ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns);
    ip("link", "set", veth, "master", net.bridge, "up");
    ip("-n", netns, "addr", "add", `${addr}/24`, "dev", "eth0");
    ip("-n", netns, "link", "set", "eth0", "up");
    ip("-n", netns, "link", "set", "lo", "up");
    ip("-n", netns, "route", "add", "default", "via", net.gateway);
}

export function createNetwork(net: RealNetwork): void {
    ip("link", "add", net.bridge, "type", "bridge");
    ip("addr", "add", `${net.gateway}/24`, "dev", net.bridge);
    ip("link", "set", net.bridge, "up");
    addHost(net, net.backend.netns, net.backend.ip, `kpm${net.index}vb`);
    for (const n of net.nodes) addHost(net, n.netns, n.ip, n.veth);
}

export function destroyNetwork(net: RealNetwork): void {
    for (const n of net.nodes) {
        tryIp("netns", "del", n.netns);
        tryIp("link", "del", n.veth);
    }
    tryIp("netns", "del", net.backend.netns);
    tryIp("link", "del", `kpm${net.index}vb`);
    tryIp("link", "del", net.bridge);
}
