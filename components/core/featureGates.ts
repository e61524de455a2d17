// The feature gates kube-proxy accepts, per release. kube-proxy's registry is the whole
// Kubernetes registry of its release; an unknown name, or a locked gate set against its
// lock, stops kube-proxy at start. Data: data/feature-gates.json (see scripts/feature-gates/).
import { closest, distance } from "../libraries/levenshtein.js";
import data from "./data/feature-gates.json";
import type { KubeVersion } from "./versions.js";

export interface GateSpec {
    default: boolean;
    /** ALPHA, BETA, GA or DEPRECATED as Kubernetes names them (kept as read, for a stage added later) */
    stage: string;
    locked: boolean;
}

interface GateData {
    versions: Record<
        string,
        { source: string; gates: Record<string, GateSpec>; dependencies?: Record<string, string[]> }
    >;
}

/**
 * A record of the data's own entries only: a user's gate name is looked up in it, and a name like
 * "constructor" or "__proto__" must not find Object.prototype's member (kube-proxy would refuse it).
 */
function ownEntries<T>(record: Record<string, T>): Record<string, T> {
    return Object.freeze(Object.assign(Object.create(null) as Record<string, T>, record));
}

const releases = ownEntries(
    Object.fromEntries(
        Object.entries((data as GateData).versions).map(([release, v]) => [
            release,
            { ...v, gates: ownEntries(v.gates), dependencies: ownEntries(v.dependencies ?? {}) },
        ]),
    ),
);

/** The releases the tool has gate lists for, oldest first. */
export function knownReleases(): string[] {
    return Object.keys(releases).sort((a, b) => Number(a.split(".")[1]) - Number(b.split(".")[1]));
}

export interface GateRegistry {
    /** the release whose list is used */
    release: string;
    /** true when the cluster's release is newer than any list the tool has */
    newerThanKnown: boolean;
    /** true when the cluster's release is older than any list the tool has */
    olderThanKnown: boolean;
    gates: Record<string, GateSpec>;
    /** gate -> the gates it needs enabled (from 1.35, kube-proxy refuses a setting that breaks one) */
    dependencies: Record<string, string[]>;
    source: string;
}

/** The gate list for a release; the nearest known release when the tool has none for it. */
export function gateRegistry(version: KubeVersion | undefined): GateRegistry {
    const known = knownReleases();
    const newest = known[known.length - 1];
    const oldest = known[0];
    let release = version?.release ?? newest;
    let newerThanKnown = version === undefined;
    let olderThanKnown = false;
    if (!(release in releases)) {
        const minor = version!.minor;
        const minorOf = (r: string) => Number(r.split(".")[1]);
        const below = known.filter((r) => minorOf(r) <= minor);
        if (minor > minorOf(newest)) newerThanKnown = true;
        if (below.length === 0) olderThanKnown = true;
        release = below.length ? below[below.length - 1] : oldest;
    }
    return {
        release,
        newerThanKnown,
        olderThanKnown,
        gates: releases[release].gates,
        dependencies: releases[release].dependencies,
        source: releases[release].source,
    };
}

/** The known gate name closest to a misspelt one, when it is close enough to be a typo. */
export function suggestGate(name: string, registry: GateRegistry): string | undefined {
    const names = Object.keys(registry.gates);
    if (names.length === 0) return undefined;
    const lower = name.toLowerCase();
    const exactCase = names.find((n) => n.toLowerCase() === lower);
    if (exactCase) return exactCase;
    const best = closest(name, names);
    return distance(name, best) <= Math.max(3, Math.floor(name.length / 4)) ? best : undefined;
}
