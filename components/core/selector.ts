// Kubernetes label selectors as strings ("pool=canary", "env in (a,b),!legacy"), matched
// locally so a node list from a file and one from the API select the same nodes.
import { isDnsSubdomain } from "./names.js";
import { InputError } from "./types.js";

type Requirement =
    | { op: "=" | "!="; key: string; value: string }
    | { op: "in" | "notin"; key: string; values: string[] }
    | { op: "exists" | "!exists"; key: string };

export interface Selector {
    text: string;
    requirements: Requirement[];
}

// As apimachinery validates them: a key is an optional DNS-1123 subdomain prefix and "/", then a
// name of at most 63 characters; a value is at most 63 characters, possibly empty.
const NAME = /^[a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?$/;
const VALUE = /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?)?$/;

function isKey(key: string): boolean {
    const slash = key.indexOf("/");
    const name = key.slice(slash + 1);
    return (slash < 0 || (slash > 0 && isDnsSubdomain(key.slice(0, slash)))) && name.length <= 63 && NAME.test(name);
}

function splitTopLevel(text: string): string[] {
    const parts: string[] = [];
    let depth = 0;
    let cur = "";
    for (const ch of text) {
        if (ch === "(") depth++;
        if (ch === ")") depth--;
        if (ch === "," && depth === 0) {
            parts.push(cur);
            cur = "";
        } else cur += ch;
    }
    parts.push(cur);
    const trimmed = parts.map((p) => p.trim());
    // the API refuses an empty requirement ("a=b," or ","); only a wholly empty selector selects everything
    return trimmed.length === 1 && trimmed[0] === "" ? [] : trimmed;
}

export function parseSelector(text: string, field = "nodeSelector"): Selector {
    const requirements: Requirement[] = [];
    const check = (key: string, values: string[], part: string) => {
        if (!isKey(key))
            throw new InputError(`${field}: "${part}" has an invalid label key ${JSON.stringify(key)}`, field);
        for (const v of values)
            if (v.length > 63 || !VALUE.test(v))
                throw new InputError(
                    `${field}: "${part}" has an invalid label value ${JSON.stringify(v)} (at most 63 letters, digits, '-', '_' and '.')`,
                    field,
                );
    };
    for (const part of splitTopLevel(text)) {
        let m: RegExpExecArray | null;
        if (part === "")
            throw new InputError(
                `${field}: ${JSON.stringify(text)} has an empty requirement (a trailing or doubled comma); remove it`,
                field,
            );
        if ((m = /^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(part))) {
            if (m[3].trim() === "")
                throw new InputError(`${field}: "${part}" lists no value: ${m[2]} needs at least one`, field);
            const values = m[3].split(",").map((v) => v.trim());
            check(m[1], values, part);
            requirements.push({ op: m[2] as "in" | "notin", key: m[1], values });
        } else if ((m = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(part))) {
            check(m[1], [m[3]], part);
            requirements.push({ op: m[2] === "!=" ? "!=" : "=", key: m[1], value: m[3] });
        } else if ((m = /^!\s*(\S+)$/.exec(part))) {
            check(m[1], [], part);
            requirements.push({ op: "!exists", key: m[1] });
        } else if (isKey(part)) {
            requirements.push({ op: "exists", key: part });
        } else {
            throw new InputError(
                `${field}: cannot read "${part}" as a label selector requirement (use key=value, key!=value, key in (a,b), key, !key)`,
                field,
            );
        }
    }
    return { text, requirements };
}

export function matchesSelector(selector: Selector, labels: Record<string, string> | undefined): boolean {
    const l = labels ?? {};
    return selector.requirements.every((r) => {
        const has = Object.prototype.hasOwnProperty.call(l, r.key);
        switch (r.op) {
            case "=":
                return has && l[r.key] === r.value;
            case "!=":
                return !has || l[r.key] !== r.value;
            case "in":
                return has && r.values.includes(l[r.key]);
            case "notin":
                return !has || !r.values.includes(l[r.key]);
            case "exists":
                return has;
            case "!exists":
                return !has;
        }
    });
}
