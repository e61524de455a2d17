// The cluster, as the rest of the tool reads and writes it. All API I/O goes through here.
import * as http from "node:http";
import * as https from "node:https";
import * as k8s from "../libraries/kubernetesClient.js";
import { nodeFacts, type NodeFacts } from "../core/nodes.js";
import type { NodeJson } from "./nodeJson.js";
import { parseKubeVersion, type KubeVersion } from "../core/versions.js";
import { decodeNodeListPage, decodeStatus, isProtobuf, NODE_LIST_ACCEPT, type NodeListPage } from "./nodeProtobuf.js";
import { ServerRecovery, withRetries } from "./retry.js";
import {
    DEFAULT_REQUEST_TIMEOUT_SECONDS,
    isApiTimeout,
    requestTimeoutFromEnvironment,
    timedHttp,
    TimedWatch,
} from "./timeouts.js";

import type { ClusterAccess } from "./access.js";
import { loadKubeConfig, Unreachable, WAIT_NOTICE_MS } from "./kubeconfig.js";

export type { ClusterAccess };

export {
    clusterIdentity,
    clusterName,
    kubeconfigFromSetting,
    loadKubeConfig,
    noKubeconfig,
    normalizeServer,
    Unreachable,
    WAIT_NOTICE_MS,
} from "./kubeconfig.js";

/** What client-node's errors carry (any of it may be missing). */
interface ApiErrorShape {
    code?: unknown;
    statusCode?: unknown;
    response?: { statusCode?: unknown };
    body?: unknown;
    message?: unknown;
}

/** The HTTP status of a failed API call (client-node's `code`), if it has one. */
export function apiStatus(e: unknown): number | undefined {
    const err = (e ?? {}) as ApiErrorShape;
    const code = err.code ?? err.statusCode ?? err.response?.statusCode;
    return typeof code === "number" ? code : undefined;
}

/** An API error as one line, never with credentials: status, reason and the server's message. */
export function apiErrorMessage(e: unknown): string {
    const err = (e ?? {}) as ApiErrorShape;
    const code = err.code ?? err.statusCode ?? err.response?.statusCode;
    let body: unknown = err.body;
    if (typeof body === "string") {
        try {
            body = JSON.parse(body);
        } catch {
            /* keep the text */
        }
    }
    const server = (typeof body === "object" && body !== null ? body : {}) as { message?: unknown; reason?: unknown };
    const msg = server.message ?? err.message ?? String(e);
    const text = (typeof msg === "string" ? msg : JSON.stringify(msg)).split("\n")[0];
    const reason = typeof server.reason === "string" ? server.reason : "";
    return typeof code === "number" || typeof code === "string"
        ? `${code} ${reason}: ${text}`.replace(/ +:/, ":")
        : text;
}

/**
 * The error for a watch the server refused (a client-node watch's error says only "Forbidden"):
 * what was watched, where, and the permission it takes. `path` is the watch's collection, e.g.
 * /apis/apps/v1/namespaces/kube-system/daemonsets.
 */
export function watchRefused(path: string, e: unknown): Error {
    const m = /(?:\/namespaces\/([^/]+))?\/([^/]+)$/.exec(path);
    const [, namespace, resource] = m ?? [undefined, undefined, path];
    const where = namespace ? `in namespace ${namespace}` : "in every namespace";
    // a watch's error is its HTTP status alone: 403 and "Forbidden"
    const refusal = `${apiStatus(e) ?? ""} ${e instanceof Error ? e.message : String(e)}`.trim();
    return Object.assign(
        new Error(
            `watching ${resource} ${where} was refused (${refusal}): the identity that runs rollouts needs "watch" on ${resource} ${where} (rbac/kube-proxy-mode.yaml, docs/rbac.md)`,
        ),
        { code: apiStatus(e) },
    );
}

/**
 * An API client whose errors read as one line naming what the server refused (for a 403:
 * `403 Forbidden: nodes "n1" is forbidden: User "..." cannot patch resource "nodes" ...`), instead
 * of client-node's "HTTP-Code: 403 Message: Unknown API Status Code! Body: ... Headers: ...".
 * The error keeps its code and body, so callers still tell a 404 or a 409 apart.
 */
export function readableErrors<T extends object>(api: T): T {
    return new Proxy(api, {
        get(target, prop, receiver) {
            const v = Reflect.get(target, prop, receiver);
            if (typeof v !== "function") return v;
            return (...args: unknown[]) => {
                const r = v.apply(target, args);
                return r instanceof Promise
                    ? r.catch((e: unknown) => {
                          if (
                              e &&
                              typeof e === "object" &&
                              (e as ApiErrorShape).code !== undefined &&
                              (e as ApiErrorShape).body !== undefined
                          ) {
                              const line = apiErrorMessage(e);
                              try {
                                  (e as Error).message = line;
                              } catch {
                                  /* a frozen error keeps its text */
                              }
                          }
                          throw e;
                      })
                    : r;
            };
        },
    });
}

/**
 * Nodes per page of a node list. Read in protobuf, a whole list of 5,000 kwok nodes took 350-700 ms
 * in pages of 500 against 400-990 ms in pages of 200, for 5 MB more peak memory; in JSON (a server
 * without protobuf) pages of 500 cost 30-50 MB more than pages of 200, at the same speed.
 */
export const NODE_PAGE = 500;

/**
 * Node and pod lists as the server sends them, decoded and nothing more; every other call keeps the
 * client's model classes, which would copy every listed object once more.
 * - Node lists (read by `Cluster.eachNode`): protobuf when the server answers in it
 *   (nodeProtobuf.ts), else JSON.parse of the body. A list of 5,000 kwok nodes is about 20 MB of
 *   JSON: at 5,000 nodes, reading the cluster for a preview took 0.77-0.93 s with the models and
 *   0.46-0.54 s without, and the preview program's peak memory fell from 297 to 252-256 MB.
 * - Pod lists: JSON.parse of the body. A page of 500 of the reference cluster's kube-proxy pods is
 *   3.2 MB of JSON, read in a median 150 ms through the models against 78 ms plain (2026-12-05),
 *   and a run lists every kube-proxy pod several times (each step's watch starts from one, the
 *   restore and the final check read one each). The pods a watch delivers are plain JSON too, so
 *   everything that reads a pod here reads the same shape: the model's fields, with times as the
 *   API's strings (only their presence is read).
 * The plain page travels where the library's type says V1NodeList or V1PodList; its readers take it
 * as NodeListPage or PodListPage.
 */
class PlainLists extends k8s.CoreV1ApiResponseProcessor {
    override async listNodeWithHttpInfo(response: k8s.ResponseContext): Promise<k8s.HttpInfo<k8s.V1NodeList>> {
        const protobuf = isProtobuf(response.headers["content-type"]);
        if (!succeeded(response))
            return super.listNodeWithHttpInfo(protobuf ? await asJsonRefusal(response) : response);
        const page: NodeListPage = protobuf
            ? decodeNodeListPage(await response.body.binary())
            : (JSON.parse(await response.body.text()) as NodeListPage);
        return new k8s.HttpInfo(response.httpStatusCode, response.headers, response.body, page as never);
    }

    override async listNamespacedPodWithHttpInfo(response: k8s.ResponseContext): Promise<k8s.HttpInfo<k8s.V1PodList>> {
        if (!succeeded(response)) return super.listNamespacedPodWithHttpInfo(response);
        const page = JSON.parse(await response.body.text()) as PodListPage;
        return new k8s.HttpInfo(response.httpStatusCode, response.headers, response.body, page as never);
    }
}

const succeeded = (response: k8s.ResponseContext) => response.httpStatusCode >= 200 && response.httpStatusCode <= 299;

/** One page of a pod list as the server's JSON has it (its list metadata says `continue`, not the model's `_continue`). */
export interface PodListPage {
    items: k8s.V1Pod[];
    metadata?: { resourceVersion?: string; continue?: string };
}

/**
 * A refusal the server wrote in protobuf, as the same refusal in JSON: the client library reads a
 * refusal's Status (reason, message) from JSON only, and every error of this tool names them.
 */
async function asJsonRefusal(response: k8s.ResponseContext): Promise<k8s.ResponseContext> {
    const bytes = await response.body.binary();
    let status: Record<string, unknown>;
    try {
        status = decodeStatus(bytes);
    } catch (e) {
        status = { kind: "Status", status: "Failure", code: response.httpStatusCode, message: (e as Error).message };
    }
    const json = Buffer.from(JSON.stringify(status));
    return new k8s.ResponseContext(
        response.httpStatusCode,
        { ...response.headers, "content-type": "application/json" },
        new k8s.SelfDecodingBody(Promise.resolve(json)),
    );
}

/** Asks for an answer in protobuf, or JSON from a server that has no protobuf (NODE_LIST_ACCEPT). */
const askProtobuf: k8s.Middleware = {
    pre: (ctx) => {
        ctx.setHeaderParam("Accept", NODE_LIST_ACCEPT);
        return Promise.resolve(ctx);
    },
    post: (response) => Promise.resolve(response),
};

/** The list API: the client's CoreV1Api reading node and pod lists as plain data (PlainLists). */
class PlainListApi extends k8s.CoreV1Api {
    constructor(config: k8s.Configuration) {
        super(config, undefined, new PlainLists());
    }
}

export class Cluster {
    readonly core: k8s.CoreV1Api;
    /** lists nodes as plain data (protobuf or JSON): read only through eachNode, which knows the page's real shape */
    private readonly nodeLists: k8s.CoreV1Api;
    /** lists pods as plain JSON (PlainLists): the pages a list of many pods reads */
    protected readonly podLists: k8s.CoreV1Api;
    readonly apps: k8s.AppsV1Api;
    readonly policy: k8s.PolicyV1Api;
    readonly version: k8s.VersionApi;
    /** EndpointSlices: the preview counts their endpoints */
    readonly discovery: k8s.DiscoveryV1Api;

    /** hears of every retried API call (the rollout logs them) */
    onRetry?: (call: string, attempt: number, e: unknown, delayMs: number) => void;

    /** what this cluster's calls (and watches) have seen of its API server, so a restart's warm-up 403s are ridden out */
    protected readonly server = new ServerRecovery();

    /** called before each attempt of every write (see fenceWrites); throws when the run may no longer write */
    private writeFence?: () => void;

    /** Every write from now on (each attempt of it) first calls `check`, which throws to refuse it. */
    fenceWrites(check: () => void): void {
        this.writeFence = check;
    }

    /**
     * How long each request may take, from its start to the last byte of its answer, and what a
     * watch's windows are made of (timeouts.ts): KPM_API_TIMEOUT_SECONDS, else 15 s. A rollout
     * sets it from its lease (requestTimeoutForLease). Read at each request.
     */
    requestTimeoutMs = (requestTimeoutFromEnvironment() ?? DEFAULT_REQUEST_TIMEOUT_SECONDS) * 1000;

    constructor(readonly kc: k8s.KubeConfig) {
        this.core = this.api(k8s.CoreV1Api);
        this.nodeLists = this.api(PlainListApi, [askProtobuf]);
        this.podLists = this.api(PlainListApi);
        this.apps = this.api(k8s.AppsV1Api);
        this.policy = this.api(k8s.PolicyV1Api);
        this.version = this.api(k8s.VersionApi);
        this.discovery = this.api(k8s.DiscoveryV1Api);
    }

    /**
     * An API client whose calls ride out blips (429, 5xx, a broken connection, a restart's warm-up):
     * see retry.ts; and whose every request has the request timeout (timeouts.ts). Every client of
     * this cluster is made here.
     */
    protected api<T extends k8s.ApiType>(
        kind: new (config: k8s.Configuration) => T,
        middleware: k8s.Middleware[] = [],
    ): T {
        const client = new kind(
            k8s.createConfiguration({
                baseServer: new k8s.ServerConfiguration(this.kc.getCurrentCluster()!.server, {}),
                authMethods: { default: this.kc },
                promiseMiddleware: [this.keepAlive, ...middleware],
                httpApi: timedHttp(this.kc.getCurrentCluster()!.server, () => this.requestTimeoutMs),
            }),
        );
        return readableErrors(
            withRetries(
                client,
                (call, attempt, e, delay) => this.onRetry?.(call, attempt, e, delay),
                this.server,
                () => this.writeFence?.(),
            ),
        );
    }

    /** A watch of this cluster with the request timeout, restarted by its user when it goes silent (timeouts.ts). */
    watcher(): TimedWatch {
        return new TimedWatch(this.kc, () => this.requestTimeoutMs);
    }

    private sharedAgent?: http.Agent;

    /**
     * The client library makes a new agent, so a new TLS connection, for every call (a batch of 50
     * nodes makes about five calls per node). Every call of this cluster goes through
     * one keep-alive agent instead, made with the library's own TLS options (CA, client
     * certificate, server name) from its first call; credentials sent as headers (tokens, exec
     * plugins) are still set per call by the library. A proxy's agent is left as it is.
     */
    private readonly keepAlive: k8s.Middleware = {
        pre: (ctx) => {
            const agent = ctx.getAgent();
            if (agent?.constructor === https.Agent || agent?.constructor === http.Agent) {
                this.sharedAgent ??=
                    agent instanceof https.Agent
                        ? new https.Agent({ ...agent.options, keepAlive: true })
                        : new http.Agent({ keepAlive: true });
                ctx.setAgent(this.sharedAgent);
            }
            return Promise.resolve(ctx);
        },
        post: (response) => Promise.resolve(response),
    };

    /**
     * The first contact with the API server (GET /version, which every identity may read): not
     * retried, so a server that refuses connections or cannot be resolved fails in a moment
     * instead of after the retry budget, and one that does not answer fails after the request
     * timeout. `onWait` hears a line every WAIT_NOTICE_MS meanwhile. Any HTTP answer will do.
     */
    async reach(onWait: (line: string) => void): Promise<void> {
        const server = this.kc.getCurrentCluster()!.server;
        const api = new k8s.VersionApi(
            k8s.createConfiguration({
                baseServer: new k8s.ServerConfiguration(server, {}),
                authMethods: { default: this.kc },
                httpApi: timedHttp(server, () => this.requestTimeoutMs),
            }),
        );
        const started = Date.now();
        const notice = setInterval(
            () => onWait(`waiting for ${server}: no answer after ${Math.round((Date.now() - started) / 1000)}s`),
            WAIT_NOTICE_MS,
        );
        notice.unref();
        try {
            await api.getCode();
        } catch (e) {
            if (apiStatus(e) !== undefined) return;
            if (isApiTimeout(e)) throw e;
            throw new Unreachable(server, e);
        } finally {
            clearInterval(notice);
        }
    }

    static connect(access: ClusterAccess = {}): Cluster {
        return new Cluster(loadKubeConfig(access));
    }

    async serverVersion(): Promise<KubeVersion> {
        const info = await this.version.getCode();
        const v =
            parseKubeVersion(info.gitVersion) ??
            parseKubeVersion(`${info.major}.${String(info.minor).replace(/\D+$/, "")}`);
        if (!v) throw new Error(`the API server reports an unreadable version ${JSON.stringify(info.gitVersion)}`);
        return v;
    }

    /**
     * Every node of the cluster, reduced as each page arrives (`limit`/`continue`, one consistent
     * list): the whole NodeList is never held at once, so memory is the reduced records plus one page
     * of JSON (about 4 KB per kwok node, against the few hundred bytes a record keeps).
     */
    protected async eachNode<T>(reduce: (node: NodeJson) => T): Promise<T[]> {
        const out: T[] = [];
        let token: string | undefined;
        do {
            const page = (await this.nodeLists.listNode({
                limit: NODE_PAGE,
                _continue: token,
            })) as unknown as NodeListPage;
            for (const node of page.items) out.push(reduce(node));
            token = page.metadata?.continue || undefined;
        } while (token);
        return out;
    }

    async nodes(): Promise<NodeFacts[]> {
        return this.eachNode(nodeFacts);
    }
}
