// Kubernetes label selectors as strings ("pool=canary", "env in (a,b),!legacy"), matched
// locally so a node list from a file and one from the API select the same nodes.
import { InputError } from "./types.js";

type Requirement =
    | { op: "=" | "!="; key: string; value: string }
    | { op: "in" | "notin"; key: string; values: string[] }
    | { op: "exists" | "!exists"; key: string };

export interface Selector {
    text: string;
    requirements: Requirement[];
}

const KEY = /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?\/)?[a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?$/;
const VALUE = /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?)?$/;

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
    return parts.map((p) => p.trim()).filter((p) => p !== "");
}

export function parseSelector(text: string, field = "nodeSelector"): Selector {
    const requirements: Requirement[] = [];
    const check = (key: string, values: string[], part: string) => {
        if (!KEY.test(key))
            throw new InputError(`${field}: "${part}" has an invalid label key ${JSON.stringify(key)}`, field);
        for (const v of values)
            if (!VALUE.test(v))
                throw new InputError(`${field}: "${part}" has an invalid label value ${JSON.stringify(v)}`, field);
    };
    for (const part of splitTopLevel(text)) {
        let m: RegExpExecArray | null;
        if ((m = /^(\S+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(part))) {
            const values = m[3]
                .split(",")
                .map((v) => v.trim())
                .filter((v) => v !== "");
            check(m[1], values, part);
            requirements.push({ op: m[2] as "in" | "notin", key: m[1], values });
        } else if ((m = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(part))) {
            check(m[1], [m[3]], part);
            requirements.push({ op: m[2] === "!=" ? "!=" : "=", key: m[1], value: m[3] });
        } else if ((m = /^!\s*(\S+)$/.exec(part))) {
            check(m[1], [], part);
            requirements.push({ op: "!exists", key: m[1] });
        } else if (KEY.test(part)) {
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
