// nodePortAddresses entries: CIDRs or, from 1.37 (KEP-6032), the keywords primary, localhost, all.
import * as ipaddr from "../libraries/ipaddr.js";

export type NodePortEntry =
    | { kind: "keyword"; keyword: "primary" | "localhost" | "all" }
    | { kind: "cidr"; family: "ipv4" | "ipv6"; cidr: string }
    | { kind: "invalid"; reason: string; suggestion?: string };

export function classifyNodePortAddress(entry: string): NodePortEntry {
    const e = entry.trim();
    if (e === "primary" || e === "localhost" || e === "all") return { kind: "keyword", keyword: e };
    if (e.includes("/")) {
        try {
            const [addr] = ipaddr.parseCIDR(e);
            return { kind: "cidr", family: addr.kind(), cidr: e };
        } catch {
            return { kind: "invalid", reason: `${JSON.stringify(entry)} is not a valid IPv4 or IPv6 CIDR` };
        }
    }
    if (ipaddr.isValid(e)) {
        const a = ipaddr.parse(e);
        return {
            kind: "invalid",
            reason: `${JSON.stringify(entry)} is an address, not a CIDR`,
            suggestion: `${e}/${a.kind() === "ipv4" ? 32 : 128}`,
        };
    }
    return { kind: "invalid", reason: `${JSON.stringify(entry)} is neither a CIDR nor one of primary, localhost, all` };
}
