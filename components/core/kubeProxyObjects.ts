// Which node objects are kube-proxy's: one list (data/kube-proxy-objects.json, read from
// kube-proxy's own source, see its _comment) and the questions asked of it. The probe's cleanup
// script gets its patterns from here, and the probe's judgement uses the same functions, so the
// shell and the TypeScript never disagree about what is kube-proxy's. Pure.
import data from "./data/kube-proxy-objects.json";
import type { ProxyMode } from "./types.js";

export const KUBE_PROXY_OBJECTS = data;

type Table = "nat" | "filter" | "mangle";
const CHAINS = data.iptablesChains as Record<"iptables" | "ipvs", Partial<Record<Table, string[]>>>;
const HASHED = new RegExp(
    `^(${data.hashedChains.prefixes.map((p) => p.replace(/-/g, "\\-")).join("|")})[${data.hashedChains.hashAlphabet}]{${data.hashedChains.hashLength}}$`,
);

/** The modes whose kube-proxy creates chain `chain` in iptables table `table` (empty: not kube-proxy's). */
export function chainModes(table: string, chain: string): ProxyMode[] {
    if (data.notKubeProxys.includes(chain)) return [];
    const modes = (["iptables", "ipvs"] as const).filter((m) => CHAINS[m][table as Table]?.includes(chain));
    if (table === data.hashedChains.table && HASHED.test(chain)) return ["iptables"];
    return modes;
}

/** Whether a kube-proxy running `mode` leaves this chain to be removed (it is kube-proxy's, of another mode, and `mode` does not use it). No mode: every kube-proxy chain. */
export function chainIsLeftover(table: string, chain: string, mode?: ProxyMode): boolean {
    const modes = chainModes(table, chain);
    return modes.length > 0 && (mode === undefined || !modes.includes(mode));
}

/** kube-proxy's ipset names (ipvs mode), with the IPv6 variants. */
export const KUBE_PROXY_IPSETS: readonly string[] = [
    ...data.ipsets.names,
    ...data.ipsets.names.map((n) => n.replace(/^KUBE-/, data.ipsets.ipv6Prefix).slice(0, data.ipsets.maxLength)),
];

export function isKubeProxyIpset(name: string): boolean {
    return KUBE_PROXY_IPSETS.includes(name);
}

/** `ip kube-proxy`, `ip6 kube-proxy` as `nft list tables` prints them (without "table "). */
export const KUBE_PROXY_NFT_TABLES: readonly string[] = data.nftablesTable.families.map(
    (f) => `${f} ${data.nftablesTable.name}`,
);

/** ipvs-mode's dummy interface. */
export const DUMMY_INTERFACE = data.dummyInterface;

/**
 * The awk program the cleanup runs on `iptables-save` output (one family, one backend): it
 * prints the `iptables-restore --noflush` input that deletes exactly the leftover chains of
 * kube-proxy (flush, then -X) and, one by one, the rules of other chains that jump into them
 * (-D), and a report line per chain: "D <table> <chain>" removed, "N <table> <chain>" a KUBE-*
 * chain that is not kube-proxy's. Variable `mode` (awk -v): the mode kube-proxy runs now ("" =
 * none, remove all of kube-proxy's chains). Built from the data above; holds no single quote.
 */
export function cleanupAwkProgram(): string {
    const own: string[] = [];
    for (const m of ["iptables", "ipvs"] as const) {
        for (const [t, chains] of Object.entries(CHAINS[m]))
            for (const c of chains ?? []) own.push(`OWN["${t} ${c}"] = OWN["${t} ${c}"] " ${m}"`);
    }
    const alpha = `[${data.hashedChains.hashAlphabet}]`.repeat(data.hashedChains.hashLength); // no {n}: not every awk has intervals
    const hashed = `^(${data.hashedChains.prefixes.map((p) => p.slice(0, -1)).join("|")})-${alpha}$`;
    const not = data.notKubeProxys.map((c) => `NOT["${c}"] = 1`);
    return `
BEGIN { ${[...own, ...not].join("; ")} }
function modes(t, c) { if (c in NOT) return ""; if (t == "${data.hashedChains.table}" && c ~ /${hashed}/) return " ${data.hashedChains.mode}"; return OWN[t " " c] }
function leftover(t, c,   m) { m = modes(t, c); if (m == "") return 0; if (mode == "") return 1; return index(m " ", " " mode " ") == 0 }
/^\\*/ { t = substr($1, 2); if (!(t in SEEN)) { SEEN[t] = 1; T[nt++] = t } next }
/^:/ { c = substr($1, 2); if (leftover(t, c)) { GONE[t " " c] = 1; G[t, ng[t]++] = c } else if (c ~ /^KUBE-/ && !(c in NOT) && modes(t, c) == "") print "N " t " " c; next }
/^-A / { R[t, nr[t]++] = $0 }
END {
  for (i = 0; i < nt; i++) {
    t = T[i]; if (!ng[t]) continue
    print "R *" t
    for (j = 0; j < nr[t]; j++) {
      n = split(R[t, j], f, " "); if ((t " " f[2]) in GONE) continue
      for (k = 3; k < n; k++) if ((f[k] == "-j" || f[k] == "-g") && ((t " " f[k + 1]) in GONE)) { print "R -D" substr(R[t, j], 3); print "J " t " " f[2] " " f[k + 1]; break }
    }
    for (j = 0; j < ng[t]; j++) print "R :" G[t, j] " - [0:0]"
    for (j = 0; j < ng[t]; j++) { print "R -X " G[t, j]; print "D " t " " G[t, j] }
    print "R COMMIT"
  }
}`;
}
