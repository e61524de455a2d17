// What the rules need to know about a node, and the per-node verdict for a mode.
import { IPVS_DEPRECATION_TEXT, NFTABLES } from "./facts.js";
import { isObject } from "./config.js";
import { conntrackFinding } from "./rules.js";
import { InputError, type Finding, type ProxyMode } from "./types.js";
import { kernelAtLeast, parseKernelVersion } from "./versions.js";

export interface NodeFacts {
    name: string;
    labels: Record<string, string>;
    kernelVersion?: string;
    osImage?: string;
    operatingSystem?: string;
    kubeProxyVersion?: string;
    unschedulable?: boolean;
}

/**
 * The fields of a Kubernetes Node object this tool reads (a structural subset of the API's Node,
 * so that client-node's typings stay out of the public declarations).
 */
export interface NodeObject {
    metadata?: { name?: string; labels?: Record<string, string> };
    spec?: { unschedulable?: boolean };
    status?: {
        nodeInfo?: { kernelVersion?: string; osImage?: string; operatingSystem?: string; kubeProxyVersion?: string };
    };
}

/** A node's taint, as the API has it. */
export interface Taint {
    key: string;
    value?: string;
    effect: string;
    timeAdded?: Date | string;
}

/**
 * The taint the node lifecycle controller keeps in step with `spec.unschedulable`
 * (kube-controller-manager adds it on a cordon and removes it on an uncordon, each time with a read
 * and a write of the node of its own).
 */
export const UNSCHEDULABLE_TAINT = { key: "node.kubernetes.io/unschedulable", effect: "NoSchedule" } as const;

/**
 * The node's taints once it is cordoned (`cordoned: true`) or uncordoned, written together with
 * the cordon so the controller finds nothing to do: `taints` with the unschedulable taint added or
 * removed, every other taint kept; undefined when the list is already right. The controller
 * matches the taint by key and effect, as this does.
 */
export function taintsWhenCordoned(taints: readonly Taint[] | undefined, cordoned: boolean): Taint[] | undefined {
    const list = taints ?? [];
    const isIt = (t: Taint) => t.key === UNSCHEDULABLE_TAINT.key && t.effect === UNSCHEDULABLE_TAINT.effect;
    const has = list.some(isIt);
    if (cordoned === has) return undefined;
    return cordoned ? [...list, { ...UNSCHEDULABLE_TAINT }] : list.filter((t) => !isIt(t));
}

/** From a Kubernetes Node object (as the API or `kubectl get nodes -o json` gives it). */
export function nodeFacts(node: NodeObject): NodeFacts {
    const info = node.status?.nodeInfo;
    const labels = node.metadata?.labels ?? {};
    return {
        name: String(node.metadata?.name ?? ""),
        labels: { ...labels },
        kernelVersion: info?.kernelVersion || undefined,
        osImage: info?.osImage || undefined,
        operatingSystem: info?.operatingSystem || labels["kubernetes.io/os"] || undefined,
        kubeProxyVersion: info?.kubeProxyVersion || undefined,
        unschedulable: node.spec?.unschedulable === true,
    };
}

/** Reads `kubectl get nodes -o json` output (a List), or a single Node. */
export function parseNodeList(text: string, what = "--nodes"): NodeFacts[] {
    let obj: unknown;
    if (text.trim() === "") throw new InputError(`${what} is empty: expected the output of kubectl get nodes -o json`);
    try {
        obj = JSON.parse(text);
    } catch (e) {
        throw new InputError(
            `${what} is not JSON (${(e as Error).message}): expected the output of kubectl get nodes -o json`,
        );
    }
    const list = isObject(obj) ? obj : {};
    const items: unknown[] | undefined =
        list.kind === "Node" ? [list] : Array.isArray(list.items) ? (list.items as unknown[]) : undefined;
    if (!items)
        throw new InputError(
            `${what} has kind ${JSON.stringify(list.kind ?? null)}: expected a NodeList (kubectl get nodes -o json)`,
        );
    // the JSON is a Node as kubectl prints it: read as one (every field read is optional)
    // the index counts every item, as in the file, not only the Nodes among them
    const nodes = items.map((i) =>
        !isObject(i) || i.kind === undefined || i.kind === "Node"
            ? nodeFacts((isObject(i) ? i : {}) as NodeObject)
            : null,
    );
    const nameless = nodes.findIndex((n) => n?.name === "");
    if (nameless >= 0) throw new InputError(`${what}: item ${nameless} has no metadata.name`);
    return nodes.filter((n) => n !== null);
}

export type Verdict = "ok" | "warn" | "fail" | "skip";

export interface NodeVerdict {
    node: string;
    kernel?: string;
    osImage?: string;
    verdict: Verdict;
    findings: Finding[];
}

/** What the kernel a Linux node reports says about running `mode` there. */
function kernelFindings(node: NodeFacts, mode: ProxyMode, opts: { tcpBeLiberal?: boolean }): Finding[] {
    const kernel = parseKernelVersion(node.kernelVersion);
    if (!kernel) {
        return [
            {
                severity: "error",
                code: "node.kernelUnknown",
                field: "status.nodeInfo.kernelVersion",
                nodes: [node.name],
                message: `${node.name}: kernel version ${node.kernelVersion === undefined ? "is missing" : `${JSON.stringify(node.kernelVersion)} cannot be read`}, so it cannot be shown to support ${mode} mode`,
                fix: "check the node's kubelet reports status.nodeInfo.kernelVersion, or leave the node out of the pool",
            },
        ];
    }
    if (mode === "ipvs")
        return [
            {
                severity: "warning",
                code: "ipvs.deprecated",
                field: "mode",
                nodes: [node.name],
                message: `${node.name}: ${IPVS_DEPRECATION_TEXT}`,
            },
        ];
    if (mode !== "nftables") return [];
    if (!kernelAtLeast(kernel, NFTABLES.minKernel)) {
        return [
            {
                severity: "error",
                code: "node.kernelTooOld",
                field: "status.nodeInfo.kernelVersion",
                nodes: [node.name],
                message: `${node.name}: kernel ${kernel.raw} is older than ${NFTABLES.minKernel}; kube-proxy would exit with "${NFTABLES.startupKernelError}"`,
                fix: `upgrade the node's kernel to ${NFTABLES.minKernel}+ (RHEL 9, Debian 12, Ubuntu 22.04+, Amazon Linux 2023), or use iptables mode for its pool`,
            },
        ];
    }
    const oldConntrack = !kernelAtLeast(kernel, NFTABLES.conntrackWorkaroundKernel);
    return conntrackFinding(mode, opts.tcpBeLiberal, oldConntrack, [node.name]).map((f) => ({
        ...f,
        message: `${node.name}: ${f.message}`,
    }));
}

/** Whether this node can run `mode`, judged by its kernel as the Node object reports it. */
export function nodeVerdict(node: NodeFacts, mode: ProxyMode, opts: { tcpBeLiberal?: boolean } = {}): NodeVerdict {
    const base = { node: node.name, kernel: node.kernelVersion, osImage: node.osImage };
    if (node.operatingSystem && node.operatingSystem !== "linux") {
        const message = `${node.name} runs ${node.operatingSystem}: Linux proxy modes do not apply`;
        return {
            ...base,
            verdict: "skip",
            findings: [{ severity: "info", code: "node.notLinux", field: "nodes", nodes: [node.name], message }],
        };
    }
    const findings = kernelFindings(node, mode, opts);
    const verdict: Verdict = findings.some((f) => f.severity === "error")
        ? "fail"
        : findings.some((f) => f.severity === "warning")
          ? "warn"
          : "ok";
    return { ...base, verdict, findings };
}

/**
 * Natural order of node names: runs of digits compare as numbers, so `workers-2` comes before
 * `workers-10`. Names equal as numbers (`n-01`, `n-1`) fall back to plain string order, so the
 * order is total and the same on every machine (no locale).
 */
export function compareNodeNames(a: string, b: string): number {
    const chunk = /(\d+)|(\D+)/g;
    const pa = a.match(chunk) ?? [];
    const pb = b.match(chunk) ?? [];
    for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
        const x = pa[i];
        const y = pb[i];
        if (x === y) continue;
        const xd = x.charCodeAt(0) >= 48 && x.charCodeAt(0) <= 57;
        const yd = y.charCodeAt(0) >= 48 && y.charCodeAt(0) <= 57;
        if (xd && yd) {
            // compare as numbers of any length: strip leading zeros, then longer is larger
            const xs = x.replace(/^0+/, "");
            const ys = y.replace(/^0+/, "");
            if (xs.length !== ys.length) return xs.length - ys.length;
            if (xs !== ys) return xs < ys ? -1 : 1;
            continue;
        }
        return x < y ? -1 : 1;
    }
    if (pa.length !== pb.length) return pa.length - pb.length;
    return a === b ? 0 : a < b ? -1 : 1;
}
