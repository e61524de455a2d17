// Go-style durations ("10m", "1h30m", "45s", "0"), as kube-proxy and users write them.
import { InputError } from "./types.js";

const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600 };

export function parseDuration(text: string, field: string): number {
    const t = text.trim();
    if (t === "0") return 0;
    const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
    let total = 0;
    let matched = 0;
    let m: RegExpExecArray | null;
    while ((m = re.exec(t))) {
        total += Number(m[1]) * UNIT_SECONDS[m[2]];
        matched = re.lastIndex;
    }
    if (t === "" || matched !== t.length) {
        throw new InputError(
            `${field}: ${JSON.stringify(text)} is not a duration; write it like 30s, 10m or 1h30m`,
            field,
        );
    }
    return total;
}

export function formatDuration(seconds: number): string {
    if (seconds === 0) return "0s";
    const h = Math.floor(seconds / 3600);
    const m = Math.floor((seconds % 3600) / 60);
    const s = Math.round(seconds % 60);
    return `${h ? `${h}h` : ""}${m ? `${m}m` : ""}${s || (!h && !m) ? `${s}s` : ""}`;
}
