// nodePortAddresses entries: CIDRs or, from 1.37 (KEP-6032), the keywords primary, localhost, all.
import * as ipaddr from "../libraries/ipaddr.js";

export type NodePortEntry =
    | { kind: "keyword"; keyword: "primary" | "localhost" | "all" }
    | { kind: "cidr"; family: "ipv4" | "ipv6"; cidr: string }
    | { kind: "invalid"; reason: string; suggestion?: string };

// Go's net.ParseCIDR (kube-proxy validates with it): IPv4 = four "."-separated decimal octets 0-255, no leading zero; IPv6 = 1-4 hex digits per group, one "::" at most, an optional dotted-quad tail, no "%zone"; then "/" and a decimal prefix length <= 32 or 128.
// ipaddr.js also reads "10", "10.1", "0x0a000000" and "010" (as octal; kube-proxy's sloppy copy retries leading zeros as decimal): refused here before it parses.
const OCTET = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;
const HEX_GROUP = /^[0-9A-Fa-f]{1,4}$/;

type Address = { family: "ipv4" | "ipv6" } | { why: string; suggestion?: string };

/** An IPv4 address as Go reads it; one with a leading zero gets its decimal form as the fix. */
function ipv4(text: string): Address {
    const octets = text.split(".");
    if (octets.length === 4 && octets.every((o) => OCTET.test(o))) return { family: "ipv4" };
    if (octets.length === 4 && octets.every((o) => /^\d+$/.test(o) && Number(o) <= 255))
        return {
            why: "an octet has a leading zero, which kube-proxy reads as decimal and other tools as octal",
            suggestion: octets.map((o) => String(Number(o))).join("."),
        };
    return { why: "an IPv4 address is four decimal octets 0-255, e.g. 10.0.0.0" };
}

function ipv6(text: string): Address {
    const zone = text.indexOf("%");
    if (zone >= 0)
        return {
            why: `a CIDR has no zone (${text.slice(zone)}); kube-proxy refuses it`,
            suggestion: text.slice(0, zone),
        };
    // a dotted-quad tail stands for the last two groups
    let hex = text;
    let tailGroups = 0;
    if (text.includes(".")) {
        const colon = text.lastIndexOf(":");
        const tail = ipv4(text.slice(colon + 1));
        if (!("family" in tail))
            return tail.suggestion
                ? { why: tail.why, suggestion: `${text.slice(0, colon + 1)}${tail.suggestion}` }
                : { why: "not an IPv6 address: its dotted tail must be four decimal octets" };
        hex = text.slice(0, colon + 1);
        if (!hex.endsWith("::")) hex = hex.slice(0, -1);
        tailGroups = 2;
    }
    const halves = hex.split("::");
    const parts = halves.map((h) => (h === "" ? [] : h.split(":")));
    const ok =
        halves.length <= 2 &&
        parts.every((p) => p.every((g) => HEX_GROUP.test(g))) &&
        (halves.length === 2 ? parts.flat().length + tailGroups < 8 : parts.flat().length + tailGroups === 8);
    return ok ? { family: "ipv6" } : { why: "not an IPv6 address: 8 groups of 1-4 hex digits, or fewer with one ::" };
}

function address(text: string): Address {
    return text.includes(":") ? ipv6(text) : ipv4(text);
}

function notRead(entry: string, why: string, suggestion?: string): NodePortEntry {
    return {
        kind: "invalid",
        reason: `${JSON.stringify(entry)} is not a CIDR kube-proxy reads: ${why}`,
        ...(suggestion ? { suggestion } : {}),
    };
}

export function classifyNodePortAddress(entry: string): NodePortEntry {
    const e = entry;
    if (e === "primary" || e === "localhost" || e === "all") return { kind: "keyword", keyword: e };
    if (/\s/.test(e))
        return notRead(entry, "it has a space, and kube-proxy reads the entry as written", e.trim() || undefined);
    const slash = e.indexOf("/");
    if (slash >= 0) {
        const addr = address(e.slice(0, slash));
        const prefix = e.slice(slash + 1);
        if (!("family" in addr))
            return notRead(entry, addr.why, addr.suggestion ? `${addr.suggestion}/${prefix}` : undefined);
        const bits = addr.family === "ipv4" ? 32 : 128;
        if (!/^\d+$/.test(prefix) || Number(prefix) > bits)
            return notRead(entry, `the prefix length must be a whole number from 0 to ${bits}`);
        const [parsed] = ipaddr.parseCIDR(e);
        return { kind: "cidr", family: parsed.kind(), cidr: e };
    }
    if ("family" in address(e))
        return {
            kind: "invalid",
            reason: `${JSON.stringify(entry)} is an address, not a CIDR`,
            suggestion: `${e}/${ipaddr.parse(e).kind() === "ipv4" ? 32 : 128}`,
        };
    return { kind: "invalid", reason: `${JSON.stringify(entry)} is neither a CIDR nor one of primary, localhost, all` };
}
