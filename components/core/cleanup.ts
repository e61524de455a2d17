// The cleanup probe's report in a few lines at any cluster size: one line per kind of object and
// table with its count and first names (a node at 10,000 Services has tens of thousands of
// chains), errors and anything unrecognised line by line. Pure.
import { nameList } from "./text.js";

/** A kind of cleanup line: its pattern, and the group (what and where) and item (the name) it gives. */
const KINDS: { re: RegExp; group: (m: RegExpExecArray) => string; item: (m: RegExpExecArray) => string }[] = [
    {
        re: /^removed kube-proxy chain (\S+) \((\S+) table (\S+), (\S+) backend\)$/,
        group: (m) => `removed kube-proxy chains (${m[2]} table ${m[3]}, ${m[4]} backend)`,
        item: (m) => m[1],
    },
    {
        re: /^removed the rule of chain (\S+) jumping to (\S+) \((\S+) table (\S+), (\S+) backend\)$/,
        group: (m) => `removed rules jumping to them (${m[3]} table ${m[4]}, ${m[5]} backend)`,
        item: (m) => `${m[1]} -> ${m[2]}`,
    },
    {
        re: /^not ours, left alone: (\S+) chain (\S+) \(table (\S+), (\S+) backend\)$/,
        group: (m) => `not ours, left alone: ${m[1]} chains (table ${m[3]}, ${m[4]} backend)`,
        item: (m) => m[2],
    },
    { re: /^removed IPVS virtual server (.+)$/, group: () => "removed IPVS virtual servers", item: (m) => m[1] },
    {
        re: /^not ours, left alone: IPVS virtual server (.+)$/,
        group: () => "not ours, left alone: IPVS virtual servers",
        item: (m) => m[1],
    },
    { re: /^destroyed ipset (\S+)$/, group: () => "destroyed ipsets", item: (m) => m[1] },
    { re: /^not ours, left alone: ipset (\S+)$/, group: () => "not ours, left alone: ipsets", item: (m) => m[1] },
];

/**
 * The cleanup's output lines summarised: per group, `<group>: <count>: <first names>`, in the
 * order each group first appears; every other line (errors, tables, links) as it is.
 */
export function summarizeCleanup(lines: string[]): string[] {
    const groups = new Map<string, string[]>();
    const out: (string | { group: string })[] = [];
    for (const line of lines) {
        const kind = KINDS.map((k) => ({ k, m: k.re.exec(line) })).find((x) => x.m);
        if (!kind?.m) {
            out.push(line);
            continue;
        }
        const group = kind.k.group(kind.m);
        if (!groups.has(group)) {
            groups.set(group, []);
            out.push({ group });
        }
        groups.get(group)!.push(kind.k.item(kind.m));
    }
    return out.map((x) => {
        if (typeof x === "string") return x;
        const items = groups.get(x.group)!;
        return `${x.group}: ${items.length}: ${nameList(items, 3)}`;
    });
}
