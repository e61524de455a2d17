// How long the tool waits for the API server. One that accepts the connection and never answers
// (a black-holed network, a hung load balancer) would otherwise hold a command, a preview or a
// rollout mid-node for ever. One setting decides every wait here: the request timeout,
// KPM_API_TIMEOUT_SECONDS (default 15 s; a rollout's is at most a third of its lease, see
// requestTimeoutForLease).
// - A request: from its start to the last byte of its answer (connect, TLS, headers and body).
// - A watch: its start as a request; then the server is asked to end it after WATCH_WINDOWS
//   request timeouts (timeoutSeconds, and bookmarks meanwhile), and the watch is restarted; a watch
//   over which nothing (an event, a bookmark, its end) came for one request timeout longer is
//   taken for dead, abandoned and started again (podCache.ts, changes.ts Changes).
// A request that timed out is not tried again: the server did not answer in many times the time
// an answer takes, and the error says so, naming the server and the timeout.
import * as k8s from "../libraries/kubernetesClient.js";

export const DEFAULT_REQUEST_TIMEOUT_SECONDS = 15;

/** How many request timeouts a watch lasts before the server is asked to end it. */
export const WATCH_WINDOWS = 4;

/** KPM_API_TIMEOUT_SECONDS as seconds; undefined when it is not set. */
export function requestTimeoutFromEnvironment(value = process.env.KPM_API_TIMEOUT_SECONDS): number | undefined {
    if (value === undefined || value === "") return undefined;
    const seconds = Number(value);
    if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 86_400)
        throw new Error(
            `KPM_API_TIMEOUT_SECONDS ${JSON.stringify(value)} must be a number of seconds, more than 0 (default ${DEFAULT_REQUEST_TIMEOUT_SECONDS})`,
        );
    return seconds;
}

/**
 * The request timeout of a rollout that holds a lease of `leaseSeconds`: at most a third of it.
 * The run sends no write later than two thirds of the lease after its last renewal (its renew
 * deadline), so every write it sent is answered or abandoned before the lease, as last renewed,
 * could be taken over. KPM_API_TIMEOUT_SECONDS longer than that is refused, naming both.
 */
export function requestTimeoutForLease(leaseSeconds: number, value = process.env.KPM_API_TIMEOUT_SECONDS): number {
    const asked = requestTimeoutFromEnvironment(value);
    const most = leaseSeconds / 3;
    if (asked === undefined) return Math.min(DEFAULT_REQUEST_TIMEOUT_SECONDS, most);
    if (asked > most)
        throw new Error(
            `KPM_API_TIMEOUT_SECONDS ${asked} is longer than a third of the rollout lease (${leaseSeconds}s): a write sent just before the run's renew deadline could still be in flight when another run may take over; ` +
                `set KPM_API_TIMEOUT_SECONDS to at most ${formatSeconds(most * 1000)} or KPM_LEASE_SECONDS to at least ${Math.ceil(asked * 3)}`,
        );
    return asked;
}

/** A timeout as the messages write it: "15s", "0.3s". */
export function formatSeconds(ms: number): string {
    return `${Number((ms / 1000).toFixed(1))}s`;
}

/** The watch's windows for a request timeout: when the server ends it, and when silence means a dead connection. */
export function watchWindows(requestMs: number): { serverSeconds: number; idleMs: number } {
    const serverSeconds = Math.max(1, Math.ceil((WATCH_WINDOWS * requestMs) / 1000));
    return { serverSeconds, idleMs: serverSeconds * 1000 + requestMs };
}

/** The API server did not answer in time: names the server, the request and the timeout. */
export class ApiTimeout extends Error {
    readonly timedOut = true;
    constructor(
        readonly server: string,
        readonly timeoutMs: number,
        what: string,
        /** a request not answered in time, or a watch that went silent */
        readonly kind: "request" | "watch" = "request",
    ) {
        super(
            kind === "request"
                ? `the API server ${server} did not answer ${what} within ${formatSeconds(timeoutMs)} (request timeout, KPM_API_TIMEOUT_SECONDS)`
                : `the API server ${server} sent nothing on the watch ${what} for ${formatSeconds(timeoutMs)} (no event, bookmark or end of the watch): the watch is taken for dead`,
        );
        this.name = "ApiTimeout";
    }
}

export function isApiTimeout(e: unknown): e is ApiTimeout {
    return (e as { timedOut?: unknown } | undefined)?.timedOut === true && e instanceof Error;
}

/** A request as its timeout's error names it: the method and the path, without the query (selectors, tokens of a list). */
function requestName(method: string, url: string): string {
    try {
        return `${method} ${new URL(url).pathname}`;
    } catch {
        return method;
    }
}

/**
 * The API client's HTTP layer with the request timeout: each request gets its own abort signal,
 * fired when the whole answer (headers and body) has not arrived within `timeoutMs()`; the error
 * is then an ApiTimeout. `inner` is the client library's own (node-fetch with the request's agent).
 */
export function timedHttp(
    server: string,
    timeoutMs: () => number,
    inner: k8s.HttpLibrary = k8s.createConfiguration().httpApi,
): k8s.HttpLibrary {
    return k8s.wrapHttpLibrary({
        async send(request) {
            const ms = timeoutMs();
            const controller = new AbortController();
            let late = false;
            const timer = setTimeout(() => {
                late = true;
                controller.abort();
            }, ms);
            timer.unref?.();
            const asTimeout = (e: unknown) =>
                late ? new ApiTimeout(server, ms, requestName(request.getHttpMethod(), request.getUrl())) : e;
            request.setSignal(controller.signal);
            let response: k8s.ResponseContext;
            try {
                response = await inner.send(request).toPromise();
            } catch (e) {
                clearTimeout(timer);
                throw asTimeout(e);
            }
            // the body is read later by the API class: the timer runs until it has been read
            const settle = <T>(read: Promise<T>): Promise<T> =>
                read.then(
                    (v) => {
                        clearTimeout(timer);
                        return v;
                    },
                    (e: unknown) => {
                        clearTimeout(timer);
                        throw asTimeout(e);
                    },
                );
            const body = response.body;
            return new k8s.ResponseContext(response.httpStatusCode, response.headers, {
                text: () => settle(body.text()),
                binary: () => settle(body.binary()),
            });
        },
    });
}

/** What a watch is, to those who start one (client-node's Watch, and TimedWatch). */
export interface Watcher {
    watch(
        path: string,
        queryParams: Record<string, unknown>,
        callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
        done: (err: unknown) => void,
    ): Promise<{ abort(): void }>;
}

/**
 * client-node's Watch with the request timeout: its start (up to the answer's headers) is a
 * request like any other (node-fetch's own timeout, which the library's Watch passes on from the
 * kubeconfig's fetch options); the server ends it after the watch window (timeoutSeconds) and
 * sends bookmarks, so one that delivered nothing for a window and a request timeout more is dead:
 * it is aborted, and `done` gets an ApiTimeout (the informer or the waiter starts it again).
 */
export class TimedWatch implements Watcher {
    constructor(
        private readonly kc: k8s.KubeConfig,
        private readonly timeoutMs: () => number,
    ) {}

    async watch(
        path: string,
        queryParams: Record<string, unknown>,
        callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
        done: (err: unknown) => void,
    ): Promise<{ abort(): void }> {
        const ms = this.timeoutMs();
        const { serverSeconds, idleMs } = watchWindows(ms);
        const kc = this.kc;
        const server = kc.getCurrentCluster()?.server ?? "(no server)";
        // the library's Watch reads only these two of its kubeconfig
        const timed = {
            getCurrentCluster: () => kc.getCurrentCluster(),
            applyToFetchOptions: async (opts: object) => ({ ...(await kc.applyToFetchOptions(opts)), timeout: ms }),
        } as unknown as k8s.KubeConfig;
        let ended = false;
        let silent: ApiTimeout | undefined;
        let idle: NodeJS.Timeout | undefined;
        const end = (err: unknown) => {
            if (ended) return;
            ended = true;
            clearTimeout(idle);
            const startTimedOut = (err as { type?: unknown } | null)?.type === "request-timeout";
            done(silent ?? (startTimedOut ? new ApiTimeout(server, ms, `GET ${path} (a watch's start)`) : err));
        };
        const arm = () => {
            if (ended) return;
            clearTimeout(idle);
            idle = setTimeout(() => {
                silent = new ApiTimeout(server, idleMs, `of ${path}`, "watch");
                request.abort();
                end(null);
            }, idleMs);
        };
        // the timer armed here fires long after this assignment
        const request = await new k8s.Watch(timed).watch(
            path,
            { ...queryParams, allowWatchBookmarks: true, timeoutSeconds: serverSeconds },
            (phase, obj, raw) => {
                arm();
                callback(phase, obj, raw);
            },
            end,
        );
        arm();
        return {
            abort: () => {
                clearTimeout(idle);
                request.abort();
            },
        };
    }
}
