// From the current configuration and the desired settings to the new configuration text:
// plan the edits (each with its reason), apply them to the YAML document without touching
// anything this tool does not own, then check the result and explain it.
import { createTwoFilesPatch } from "../libraries/diff.js";
import * as YAML from "../libraries/yaml.js";
import {
    effectiveMode,
    getPath,
    isZeroValue,
    parseKubeProxyConfiguration,
    type CurrentConfig,
    type KubeProxyConfiguration,
} from "./config.js";
import { IPVS_ONLY_SETTINGS, MODE_SETTINGS, PER_MODE_SETTINGS } from "./facts.js";
import { checkConfiguration } from "./rules.js";
import type { Change, DesiredSettings, Finding, ProxyMode } from "./types.js";
import { parseKubeVersion, type KubeVersion } from "./versions.js";

function same(a: unknown, b: unknown): boolean {
    return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

/**
 * The edits that take `current` to what `desired` asks, with a reason for each, plus
 * findings about conflicts the edits could not settle. Pure: plain data in, data out.
 */
// The memory of a move out of ipvs: each ipvs-only value it resets is kept in a comment beside
// the reset value, in the configuration itself, so a move back to ipvs (a rollback) restores it.
const MEMORY = (value: unknown) =>
    `kube-proxy-mode: was ${JSON.stringify(value)} in ipvs mode, restored on a move back to ipvs`;
const MEMORY_PATTERN = /(?:^|;\s*)kube-proxy-mode: was (.*) in ipvs mode, restored on a move back to ipvs$/;

/** The ipvs-only values an earlier move out of ipvs reset, read back from their comments. */
export function rememberedIpvsSettings(text: string): Record<string, unknown> {
    const doc = YAML.parseDocument(text);
    const out: Record<string, unknown> = {};
    for (const path of Object.keys(IPVS_ONLY_SETTINGS)) {
        const node = doc.getIn(path.split("."), true) as YAML.Node | undefined;
        const m = typeof node?.comment === "string" ? MEMORY_PATTERN.exec(node.comment.trim()) : null;
        if (!m) continue;
        try {
            out[path] = JSON.parse(m[1]);
        } catch {
            // a comment edited by hand into something else is not a memory
        }
    }
    return out;
}

/** Records an edit of one dotted path when the value differs from the current one. */
type SetEdit = (path: string, value: unknown, reason: string, remember?: string | null) => void;

/** The edits the user asked for by name: the mode, feature gates, NodePort addresses, conntrack. */
function requestedChanges(current: KubeProxyConfiguration, desired: DesiredSettings, set: SetEdit): void {
    const to = desired.mode;
    if (current.mode !== to) {
        set(
            "mode",
            to,
            typeof current.mode === "string" && current.mode !== ""
                ? `move kube-proxy from ${current.mode} to ${to} mode`
                : `pin the mode: an empty mode runs ${effectiveMode(current)} today and follows upstream's default when it changes`,
        );
    }
    for (const [name, value] of Object.entries(desired.featureGates ?? {})) {
        set(`featureGates.${name}`, value, `feature gate ${name} requested`);
    }
    if (desired.nodePortAddresses !== undefined) {
        set("nodePortAddresses", desired.nodePortAddresses, "NodePort addresses requested");
    }
    if (desired.conntrack?.tcpBeLiberal !== undefined) {
        set("conntrack.tcpBeLiberal", desired.conntrack.tcpBeLiberal, "conntrack.tcpBeLiberal requested");
    }
}

/**
 * kube-proxy reads the per-mode settings from the active mode's block: non-default values are
 * carried over, or they silently revert to the defaults; a value already in the new block wins.
 */
function carriedSettings(current: KubeProxyConfiguration, from: ProxyMode, to: ProxyMode, set: SetEdit): Finding[] {
    const findings: Finding[] = [];
    for (const setting of PER_MODE_SETTINGS) {
        const src = MODE_SETTINGS[from][setting];
        const dst = MODE_SETTINGS[to][setting];
        if (src === dst) continue;
        const value = getPath(current, src);
        if (isZeroValue(value)) continue;
        const existing = getPath(current, dst);
        if (same(existing, value)) continue;
        if (!isZeroValue(existing)) {
            findings.push({
                severity: "warning",
                code: "carry.conflict",
                field: dst,
                message: `${src} is ${JSON.stringify(value)} but ${dst}, which ${to} mode reads, is already ${JSON.stringify(existing)}; keeping ${dst}`,
                fix: `set ${dst} to the value you want ${to} mode to use`,
            });
            continue;
        }
        set(
            dst,
            value,
            `carried from ${src}: ${to} mode reads ${dst}, so without this ${setting} would revert to its default`,
        );
    }
    return findings;
}

/** Outside ipvs the ipvs-only settings are reset, their values remembered in a comment; a move back restores them. */
function ipvsOnlySettings(
    current: KubeProxyConfiguration,
    from: ProxyMode,
    to: ProxyMode,
    remembered: Record<string, unknown>,
    set: SetEdit,
): void {
    if (to !== "ipvs") {
        for (const [path, { zero, why }] of Object.entries(IPVS_ONLY_SETTINGS)) {
            const value = getPath(current, path);
            if (isZeroValue(value)) continue;
            set(
                path,
                zero,
                `dead configuration outside ipvs mode: ${why} (the value is kept in a comment beside it, and restored on a move back to ipvs)`,
                MEMORY(value),
            );
        }
    } else if (from !== "ipvs") {
        for (const [path, value] of Object.entries(remembered)) {
            if (!(path in IPVS_ONLY_SETTINGS) || !isZeroValue(getPath(current, path))) continue;
            set(
                path,
                value,
                `restored: ${path} was ${JSON.stringify(value)} before this cluster left ipvs mode (kept in a comment beside it)`,
                null,
            );
        }
    }
}

/**
 * The edits that take `current` to what `desired` asks. `remembered` holds the ipvs-only values
 * an earlier move out of ipvs reset (rememberedIpvsSettings); a move back to ipvs restores them.
 */
export function planConfigChanges(
    current: KubeProxyConfiguration,
    desired: DesiredSettings,
    remembered: Record<string, unknown> = {},
): { changes: Change[]; findings: Finding[] } {
    const changes: Change[] = [];
    const set: SetEdit = (path, value, reason, remember) => {
        const was = getPath(current, path);
        if (!same(was, value))
            changes.push({
                path,
                from: was ?? null,
                to: value,
                reason,
                ...(remember !== undefined ? { remember } : {}),
            });
    };
    const from = effectiveMode(current);
    const to = desired.mode;
    requestedChanges(current, desired, set);
    const findings = from !== to ? carriedSettings(current, from, to, set) : [];
    ipvsOnlySettings(current, from, to, remembered, set);
    return { changes, findings };
}

/** A mapping entry's key as text (a scalar's value, or the key itself). */
function keyOf(pair: YAML.Pair): string {
    return String(YAML.isScalar(pair.key) ? pair.key.value : pair.key);
}

function isSortedMap(map: YAML.YAMLMap): boolean {
    const keys = map.items.map((p) => keyOf(p));
    return keys.every((k, i) => i === 0 || keys[i - 1] <= k);
}

/** Sets one dotted path in a YAML document, keeping comments, order and styles elsewhere. */
function setInDocument(doc: YAML.Document, path: string, value: unknown, remember?: string | null): void {
    const parts = path.split(".");
    let map = doc.contents as YAML.YAMLMap;
    for (const part of parts.slice(0, -1)) {
        let pair = map.items.find((p) => keyOf(p) === part);
        if (!pair) {
            pair = doc.createPair(part, new YAML.YAMLMap());
            insertPair(map, pair);
        }
        if (!YAML.isMap(pair.value)) {
            const fresh = new YAML.YAMLMap();
            if (YAML.isScalar(pair.value)) fresh.comment = pair.value.comment;
            pair.value = fresh;
        }
        map = pair.value as YAML.YAMLMap;
        if (map.flow && map.items.length === 0) map.flow = false; // `featureGates: {}` becomes a block
    }
    const leaf = parts[parts.length - 1];
    const node = doc.createNode(value) as YAML.Node;
    const pair = map.items.find((p) => keyOf(p) === leaf);
    if (pair) {
        const old = pair.value as YAML.Node | null;
        if (old && (YAML.isScalar(old) || YAML.isCollection(old))) {
            node.comment = old.comment;
            node.commentBefore = old.commentBefore;
        }
        pair.value = node;
    } else {
        insertPair(map, doc.createPair(leaf, node));
    }
    if (remember !== undefined) node.comment = withMemory(node.comment, remember);
}

/** A value's comment with the memory set (a string) or taken out (null); the user's own words stay. */
function withMemory(comment: string | null | undefined, remember: string | null): string | undefined {
    const own = (comment ?? "").trim().replace(MEMORY_PATTERN, "").trim();
    const text = [own, remember ?? ""].filter((t) => t !== "").join("; ");
    return text === "" ? undefined : ` ${text}`;
}

function insertPair(map: YAML.YAMLMap, pair: YAML.Pair): void {
    if (isSortedMap(map)) {
        const key = keyOf(pair);
        const at = map.items.findIndex((p) => keyOf(p) > key);
        if (at >= 0) {
            map.items.splice(at, 0, pair);
            return;
        }
    }
    map.items.push(pair);
}

/** Go's YAML writer (kubeadm) does not indent list items under their key; follow the text's own style. */
function indentsSequences(text: string): boolean {
    const lines = text.split("\n");
    for (let i = 0; i + 1 < lines.length; i++) {
        const key = /^(\s*)[^\s#-][^:]*:\s*$/.exec(lines[i]);
        const item = /^(\s*)- /.exec(lines[i + 1]);
        if (key && item) return item[1].length > key[1].length;
    }
    return false;
}

/** Applies planned edits to the configuration text. Editing what is already so changes nothing. */
export function applyChanges(text: string, changes: readonly Change[]): string {
    if (changes.length === 0) return text;
    const doc = YAML.parseDocument(text);
    for (const c of changes) setInDocument(doc, c.path, c.to, c.remember);
    const out = doc.toString({ lineWidth: 0, minContentWidth: 0, indentSeq: indentsSequences(text) });
    // a ConfigMap value written with |- has no final newline: keep the text's own ending
    return text.endsWith("\n") ? out : out.replace(/\n+$/, "");
}

export interface Rendered {
    /** the new KubeProxyConfiguration text */
    config: string;
    /** a unified diff of the configuration text */
    diff: string;
    changes: Change[];
    findings: Finding[];
    before: KubeProxyConfiguration;
    after: KubeProxyConfiguration;
    version?: KubeVersion;
}

/** A unified diff between two configuration texts, empty when they are the same. */
export function explainDiff(before: string, after: string, name = "config.conf"): string {
    if (before === after) return "";
    return createTwoFilesPatch(`a/${name}`, `b/${name}`, before, after, undefined, undefined, { context: 3 });
}

/**
 * The whole engine for one configuration: plan, apply, check, explain.
 * `version` overrides desired.kubernetesVersion (for example, the cluster's own).
 */
export function renderConfiguration(current: CurrentConfig, desired: DesiredSettings, version?: KubeVersion): Rendered {
    const v = version ?? (desired.kubernetesVersion ? parseKubeVersion(desired.kubernetesVersion) : undefined);
    const planned = planConfigChanges(current.config, desired, rememberedIpvsSettings(current.text));
    const config = applyChanges(current.text, planned.changes);
    const after = parseKubeProxyConfiguration(config, "the rendered configuration");
    const findings = [
        ...planned.findings,
        ...checkConfiguration({ desired, version: v, current: current.config, result: after }),
    ];
    const name = current.source.kind === "ConfigMap" ? current.source.key : "config.conf";
    return {
        config,
        diff: explainDiff(current.text, config, name),
        changes: planned.changes,
        findings,
        before: current.config,
        after,
        version: v,
    };
}
