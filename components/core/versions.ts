// Kubernetes and kernel version parsing. Every version rule compares through here.
import * as semver from "../libraries/semver.js";

/** A Kubernetes release as the rules see it: major.minor (patch is kept for display). */
export interface KubeVersion {
    major: number;
    minor: number;
    patch: number;
    /** "1.37" */
    release: string;
    /** what the user or the server said */
    raw: string;
}

const KUBE_VERSION = /^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+].*)?$/;

/** Parses "1.37", "v1.37.2", "1.37.2-eks-4a1b2c", "v1.37.0+k3s1"; undefined when it is none of those. */
export function parseKubeVersion(raw: string): KubeVersion | undefined {
    const m = KUBE_VERSION.exec(raw.trim());
    if (!m) return undefined;
    const major = Number(m[1]);
    const minor = Number(m[2]);
    const patch = m[3] === undefined ? 0 : Number(m[3]);
    return { major, minor, patch, release: `${major}.${minor}`, raw };
}

/** a >= "1.40" */
export function atLeast(v: KubeVersion, release: string): boolean {
    return semver.gte(`${v.major}.${v.minor}.0`, `${release}.0`);
}

export interface KernelVersion {
    major: number;
    minor: number;
    patch: number;
    raw: string;
}

// Kernel strings as nodes report them: "5.14.0-427.13.1.el9_4.x86_64", "6.8.0-51-generic",
// "5.10.205-195.807.amzn2.x86_64", "4.18.0-553.el8_10.x86_64", "6.1.0-28-cloud-amd64",
// "5.15.153.1-microsoft-standard-WSL2", "6.6". Anything else is not a kernel version.
const KERNEL_VERSION = /^(\d+)\.(\d+)(?:\.(\d+))?(?:[.\-+_~][0-9A-Za-z._+~-]*)?$/;

export function parseKernelVersion(raw: string | undefined | null): KernelVersion | undefined {
    if (typeof raw !== "string") return undefined;
    const m = KERNEL_VERSION.exec(raw.trim());
    if (!m) return undefined;
    return { major: Number(m[1]), minor: Number(m[2]), patch: m[3] === undefined ? 0 : Number(m[3]), raw };
}

/** kernel >= "5.13" */
export function kernelAtLeast(k: KernelVersion, release: string): boolean {
    return semver.gte(`${k.major}.${k.minor}.${k.patch}`, semver.coerce(release)!.version);
}
