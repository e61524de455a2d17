// The cluster, as the rest of the tool reads and writes it. All API I/O goes through here.
import * as k8s from "@kubernetes/client-node";
import { nodeFacts, type NodeFacts } from "../core/nodes.js";
import { parseKubeVersion, type KubeVersion } from "../core/versions.js";
import { withRetries } from "./retry.js";

export interface ClusterAccess {
    /** path to a kubeconfig file; default: $KUBECONFIG or ~/.kube/config */
    kubeconfig?: string;
    /** kubeconfig content (for example a Pulumi secret); wins over the path */
    kubeconfigContent?: string;
    context?: string;
}

export function loadKubeConfig(access: ClusterAccess = {}): k8s.KubeConfig {
    const kc = new k8s.KubeConfig();
    if (access.kubeconfigContent) kc.loadFromString(access.kubeconfigContent);
    else if (access.kubeconfig) kc.loadFromFile(access.kubeconfig);
    else kc.loadFromDefault();
    if (access.context) kc.setCurrentContext(access.context);
    if (!kc.getCurrentCluster()) throw new Error("the kubeconfig names no current cluster: pass --kubeconfig or --context");
    return kc;
}

/** Which cluster a kubeconfig points at, for summaries: "<cluster name> (<server>)". */
export function clusterName(kc: k8s.KubeConfig): string | undefined {
    const c = kc.getCurrentCluster();
    return c ? `${c.name} (${c.server})` : undefined;
}

/** An API error as one line, never with credentials: status, reason and the server's message. */
export function apiErrorMessage(e: unknown): string {
    const anyE = e as any;
    const code = anyE?.code ?? anyE?.statusCode ?? anyE?.response?.statusCode;
    let body = anyE?.body;
    if (typeof body === "string") {
        try {
            body = JSON.parse(body);
        } catch {
            /* keep the text */
        }
    }
    const msg = body?.message ?? anyE?.message ?? String(e);
    return code ? `${code} ${body?.reason ?? ""}: ${String(msg).split("\n")[0]}`.replace(/ +:/, ":") : String(msg).split("\n")[0];
}

export class Cluster {
    readonly core: k8s.CoreV1Api;
    readonly apps: k8s.AppsV1Api;
    readonly policy: k8s.PolicyV1Api;
    readonly version: k8s.VersionApi;

    /** hears of every retried API call (the rollout logs them) */
    onRetry?: (call: string, attempt: number, e: unknown, delayMs: number) => void;

    constructor(readonly kc: k8s.KubeConfig) {
        this.core = this.api(k8s.CoreV1Api);
        this.apps = this.api(k8s.AppsV1Api);
        this.policy = this.api(k8s.PolicyV1Api);
        this.version = this.api(k8s.VersionApi);
    }

    /** An API client whose calls ride out blips (429, 5xx, a broken connection): see retry.ts. */
    protected api<T extends k8s.ApiType>(kind: new (config: k8s.Configuration) => T): T {
        return withRetries(this.kc.makeApiClient(kind), (call, attempt, e, delay) => this.onRetry?.(call, attempt, e, delay));
    }

    static connect(access: ClusterAccess = {}): Cluster {
        return new Cluster(loadKubeConfig(access));
    }

    async serverVersion(): Promise<KubeVersion> {
        const info = await this.version.getCode();
        const v = parseKubeVersion(info.gitVersion) ?? parseKubeVersion(`${info.major}.${String(info.minor).replace(/\D+$/, "")}`);
        if (!v) throw new Error(`the API server reports an unreadable version ${JSON.stringify(info.gitVersion)}`);
        return v;
    }

    async nodes(): Promise<NodeFacts[]> {
        const list = await this.core.listNode();
        return list.items.map(nodeFacts);
    }
}
