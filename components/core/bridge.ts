// The bridge: a copy of nftables mode's tables under a name kube-proxy does not own, left
// routing while a node moves to iptables mode (whose start-up deletes nftables mode's tables
// before its own first sync) and deleted right after that sync. The copy's nat base chains run
// one priority after kube-proxy's, so kube-proxy's rules win wherever both translate. Pure: the
// awk programs run in the probe pod, the judgement here. See docs/performance.md for the figures.
import { KUBE_PROXY_OBJECTS } from "./kubeProxyObjects.js";

/** The copy's table name, in each family kube-proxy's nftables mode uses. */
export const BRIDGE_TABLE = "kpm-bridge";

/** `ip kpm-bridge`, `ip6 kpm-bridge` as `nft list tables` prints them (without "table "). */
export const BRIDGE_NFT_TABLES: readonly string[] = KUBE_PROXY_OBJECTS.nftablesTable.families.map(
    (f) => `${f} ${BRIDGE_TABLE}`,
);

/**
 * awk over `nft list table <family> kube-proxy`: the same ruleset as table `kpm-bridge`, each nat
 * base chain's priority one later, derived from what is listed (a name, a name with an offset,
 * or a number), so a later kube-proxy's priorities are followed rather than assumed. Holds no
 * single quote.
 */
export function bridgeCopyAwk(): string {
    const from = KUBE_PROXY_OBJECTS.nftablesTable.name;
    return `
NR == 1 { sub(/ ${from} \\{$/, " ${BRIDGE_TABLE} {") }
/type nat hook [a-z]+ priority [^;]+;/ {
  match($0, /priority [^;]+;/); p = substr($0, RSTART + 9, RLENGTH - 10)
  if (p ~ /^-?[0-9]+$/) q = p + 1
  else if (p ~ /^[a-z]+$/) q = p " + 1"
  else if (p ~ /^[a-z]+ [-+] [0-9]+$/) { split(p, w, " "); o = (w[2] == "+" ? w[3] : -w[3]) + 1; q = (o == 0 ? w[1] : (o > 0 ? w[1] " + " o : w[1] " - " (-o))) }
  else q = p
  $0 = substr($0, 1, RSTART - 1) "priority " q ";" substr($0, RSTART + RLENGTH)
}
{ print }`;
}

/** awk over `nft list table`: "nat <family> <table> <chain> <hook> <priority>" per nat base chain (awk -v f= -v t=). */
export function natChainsAwk(): string {
    return `
/^[ \\t]*chain / { c = $2 }
/type nat hook [a-z]+ priority [^;]+;/ {
  match($0, /hook [a-z]+/); h = substr($0, RSTART + 5, RLENGTH - 5)
  match($0, /priority [^;]+;/); print "nat " f " " t " " c " " h " " substr($0, RSTART + 9, RLENGTH - 10)
}`;
}

/** nft's named priorities of the ip, ip6 and inet families. */
const NAMED_PRIORITY: Record<string, number> = {
    raw: -300,
    mangle: -150,
    dstnat: -100,
    filter: 0,
    security: 50,
    srcnat: 100,
};

/** A priority as nft prints it (`dstnat`, `dstnat + 1`, `-99`) as a number; undefined when unknown. */
export function priorityValue(text: string): number | undefined {
    const t = text.trim();
    if (/^-?\d+$/.test(t)) return Number(t);
    const m = /^([a-z]+)(?:\s*([-+])\s*(\d+))?$/.exec(t);
    if (!m || !(m[1] in NAMED_PRIORITY)) return undefined;
    return NAMED_PRIORITY[m[1]] + (m[2] ? (m[2] === "+" ? 1 : -1) * Number(m[3]) : 0);
}

/** What one bridge or unbridge run of the probe reported. */
export interface BridgeReport {
    /** families whose kube-proxy table was copied */
    copied: string[];
    /** families with no kube-proxy table to copy */
    none: string[];
    /** families whose earlier copy was deleted */
    deleted: string[];
    /** bridge tables on the node at the end (`ip kpm-bridge`) */
    present: string[];
    /** nat base chains: family, table, chain, hook, priority text */
    natChains: { family: string; table: string; chain: string; hook: string; priority: string }[];
    errors: string[];
    missingNft: boolean;
    complete: boolean;
}

export function parseBridgeOutput(text: string): BridgeReport {
    const r: BridgeReport = {
        copied: [],
        none: [],
        deleted: [],
        present: [],
        natChains: [],
        errors: [],
        missingNft: false,
        complete: false,
    };
    for (const raw of text.split("\n")) {
        const l = raw.trim();
        let m: RegExpExecArray | null;
        if ((m = /^(copied|none|deleted) (ip6?)\b/.exec(l))) r[m[1] as "copied" | "none" | "deleted"].push(m[2]);
        else if ((m = /^present (ip6? \S+)$/.exec(l))) r.present.push(m[1]);
        else if ((m = /^nat (\S+) (\S+) (\S+) (\S+) (.+)$/.exec(l)))
            r.natChains.push({ family: m[1], table: m[2], chain: m[3], hook: m[4], priority: m[5] });
        else if (l.startsWith("error ")) r.errors.push(l.slice("error ".length));
        else if (l === "missing nft") r.missingNft = true;
        else if (l === "### kpm:end") r.complete = true;
    }
    return r;
}

export interface BridgeVerdict {
    ok: boolean;
    /** families bridged (copy made and checked) */
    families: string[];
    detail: string;
}

/** Each nat base chain of kube-proxy's table has its twin in the copy, one priority later. */
function priorityProblems(r: BridgeReport, family: string): string[] {
    const from = KUBE_PROXY_OBJECTS.nftablesTable.name;
    const chains = r.natChains.filter((c) => c.family === family);
    const problems: string[] = [];
    for (const orig of chains.filter((c) => c.table === from)) {
        const copy = chains.find((c) => c.table === BRIDGE_TABLE && c.chain === orig.chain);
        const want = priorityValue(orig.priority);
        const got = copy ? priorityValue(copy.priority) : undefined;
        if (!copy) problems.push(`${family} ${BRIDGE_TABLE} has no nat chain ${orig.chain}`);
        else if (want === undefined || got !== want + 1)
            problems.push(
                `${family} ${BRIDGE_TABLE} chain ${orig.chain} has priority ${copy.priority}, expected one after kube-proxy's ${orig.priority}`,
            );
    }
    return problems;
}

/**
 * The copy's check: the run completed without errors and every copied family's nat chains run
 * one priority after kube-proxy's. Nothing to copy (no nftables table, or no nft on the node) is
 * a pass with no family bridged: the move goes on as it would without a bridge.
 */
export function judgeBridgeCopy(r: BridgeReport): BridgeVerdict {
    if (!r.complete || r.errors.length)
        return {
            ok: false,
            families: [],
            detail: `the bridge could not be made: ${r.errors.join("; ") || "the probe's output is incomplete"}`,
        };
    if (r.missingNft) return { ok: true, families: [], detail: "nft is not on the node: no bridge" };
    if (r.copied.length === 0)
        return { ok: true, families: [], detail: "no nftables table of kube-proxy to bridge with" };
    const problems = r.copied.flatMap((f) => priorityProblems(r, f));
    if (problems.length)
        return { ok: false, families: r.copied, detail: `the bridge is wrong: ${problems.join("; ")}` };
    const chains = r.natChains.filter((c) => c.table === BRIDGE_TABLE).length;
    return {
        ok: true,
        families: r.copied,
        detail: `bridge ${r.copied.map((f) => `${f} ${BRIDGE_TABLE}`).join(", ")} routes until iptables mode's first sync (${chains} nat chain(s) one priority after kube-proxy's)`,
    };
}

/** The delete's check: no bridge table is left on the node. */
export function judgeBridgeRemoval(r: BridgeReport): BridgeVerdict {
    if (!r.complete || r.errors.length || r.present.length)
        return {
            ok: false,
            families: [],
            detail: `the bridge could not be removed${r.present.length ? ` (still there: ${r.present.join(", ")})` : ""}: ${r.errors.join("; ") || (r.complete ? "nft delete left it" : "the probe's output is incomplete")}`,
        };
    return {
        ok: true,
        families: r.deleted,
        detail: r.deleted.length
            ? `bridge ${r.deleted.map((f) => `${f} ${BRIDGE_TABLE}`).join(", ")} removed`
            : "no bridge was on the node",
    };
}
