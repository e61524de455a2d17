// Which cluster a command talks to: the kubeconfig from kubectl's places or the one given, the
// server it names, and why that server could not be reached, in words that name it.
import { readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import * as k8s from "../libraries/kubernetesClient.js";
import { defaultKubeconfigSources, settleCredentials } from "./credentials.js";
import type { ClusterAccess } from "./access.js";

/** A kubeconfig loaded as kubectl would (the content, the file, or its places), its credentials settled. */

export function loadKubeConfig(access: ClusterAccess = {}): k8s.KubeConfig {
    const kc = new k8s.KubeConfig();
    if (access.kubeconfigContent === "")
        throw new Error(
            "the kubeconfig is empty: pass the kubeconfig's content, or leave it out for the ambient kubeconfig",
        );
    if (access.kubeconfigContent) kc.loadFromString(access.kubeconfigContent);
    else if (access.kubeconfig) kc.loadFromFile(access.kubeconfig);
    else kc.loadFromDefault();
    // tokens trimmed and checked, every credential known to the redactor, before any request
    settleCredentials(
        kc,
        access.kubeconfigContent
            ? [{ text: access.kubeconfigContent, dir: process.cwd() }]
            : access.kubeconfig
              ? [{ text: readFileSync(access.kubeconfig, "utf8"), dir: dirname(resolve(access.kubeconfig)) }]
              : defaultKubeconfigSources(),
    );
    if (access.context) {
        if (!kc.getContextObject(access.context)) {
            throw new Error(
                `the kubeconfig has no context ${JSON.stringify(access.context)}; it has ${
                    kc
                        .getContexts()
                        .map((c) => JSON.stringify(c.name))
                        .join(", ") || "none"
                }`,
            );
        }
        kc.setCurrentContext(access.context);
    }
    if (!kc.getCurrentCluster())
        throw new Error("the kubeconfig names no current cluster: pass --kubeconfig or --context");
    return kc;
}

/**
 * Why there is no ambient kubeconfig in kubectl's places (KUBECONFIG, ~/.kube/config, a pod's
 * service account), or undefined when there is one. Without one the client library falls back to
 * http://localhost:8080, whose only error is that plain HTTP is not allowed.
 */
export function noKubeconfig(env: NodeJS.ProcessEnv = process.env): string | undefined {
    const exists = (path: string) => {
        try {
            return statSync(path).isFile();
        } catch {
            return false;
        }
    };
    const files = (env.KUBECONFIG ?? "").split(delimiter).filter(Boolean);
    if (files.length)
        return files.some(exists) ? undefined : `KUBECONFIG names ${files.join(", ")}, none of which exists`;
    const home = env.HOME ?? homedir();
    const file = join(home, ".kube", "config");
    if (exists(file)) return undefined;
    // in a pod, the library reads its service account instead
    if (exists(SERVICE_ACCOUNT_TOKEN)) return undefined;
    return `KUBECONFIG is not set and ${file} does not exist`;
}

const SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/**
 * The identity of the cluster a kubeconfig (with its context applied) points at: the API server's
 * URL and the context's name. Never a credential: this is what the preview prints and the rollout
 * step records, and what the CLI compares before it acts.
 */
export function clusterIdentity(kc: k8s.KubeConfig): { server: string; context: string } {
    const c = kc.getCurrentCluster();
    if (!c) throw new Error("the kubeconfig names no current cluster: pass --kubeconfig or --context");
    return { server: normalizeServer(c.server), context: kc.getCurrentContext() };
}

/** An API server URL as compared: lower-case scheme and host, no trailing slash. */
export function normalizeServer(server: string): string {
    try {
        const u = new URL(server);
        return `${u.protocol}//${u.host}${u.pathname.replace(/\/+$/, "")}`;
    } catch {
        return server.replace(/\/+$/, "");
    }
}

/**
 * Reads the value of a `kubernetes:kubeconfig` stack setting as Pulumi's Kubernetes provider does:
 * either a kubeconfig's content or the path of a kubeconfig file ("~" is the home directory).
 */
export function kubeconfigFromSetting(value: string): string {
    const t = value.trim();
    if (t.startsWith("{") || /^(apiVersion|kind|clusters|contexts|current-context|users|preferences)\s*:/m.test(t))
        return value;
    const path = t.startsWith("~/") ? `${homedir()}${t.slice(1)}` : t;
    try {
        return readFileSync(path, "utf8");
    } catch (e) {
        throw new Error(
            `kubernetes:kubeconfig names the file ${path}, which cannot be read (${(e as NodeJS.ErrnoException).code ?? "unreadable"})`,
        );
    }
}

/** Which cluster a kubeconfig points at, for summaries: "<cluster name> (<server>)". */
export function clusterName(kc: k8s.KubeConfig): string | undefined {
    const c = kc.getCurrentCluster();
    return c ? `${c.name} (${c.server})` : undefined;
}

/** How often a command waiting for the API server's first answer says so. */
export const WAIT_NOTICE_MS = 5000;

/** What a connection's failure code means, as the messages say it. */
const CONNECTION_FAILURES: Record<string, string> = {
    ECONNREFUSED: "connection refused",
    ENOTFOUND: "no such host",
    EAI_AGAIN: "the host name cannot be resolved now",
    EHOSTUNREACH: "no route to host",
    ENETUNREACH: "network unreachable",
    ECONNRESET: "connection reset",
    ETIMEDOUT: "connection timed out",
};

/** The API server could not be reached at all (no HTTP answer): names the server and why. */
export class Unreachable extends Error {
    constructor(
        readonly server: string,
        cause: unknown,
    ) {
        const err = (cause ?? {}) as { code?: unknown; errno?: unknown; cause?: { code?: unknown }; message?: unknown };
        const code = String(err.code ?? err.cause?.code ?? err.errno ?? ""); // eslint-disable-line @typescript-eslint/no-base-to-string -- a code is a string or a number
        const known =
            CONNECTION_FAILURES[code] ??
            Object.entries(CONNECTION_FAILURES).find(([c]) => String(err.message).includes(c))?.[1];
        const why = known ?? (typeof err.message === "string" ? err.message.split("\n")[0] : String(cause));
        super(`cannot reach the API server ${server} (${why})`);
        this.name = "Unreachable";
    }
}
