// API calls that ride out blips: a call that fails with 429 (API priority and fairness), a 5xx,
// or a broken connection (the API server restarting) is tried again with exponential backoff and
// jitter, for at most RETRY.budgetMs in all. So is a 401 or 403 shortly after the server was
// unreachable (see ServerRecovery). Anything else fails at once, a request that timed out too
// (timeouts.ts: the server did not answer within the request timeout).
import { isApiTimeout } from "./timeouts.js";

function budgetFromEnvironment(value: string | undefined): number {
    if (value === undefined || value === "") return 60_000;
    const seconds = Number(value);
    if (!Number.isFinite(seconds) || seconds < 0)
        throw new Error(`KPM_API_RETRY_SECONDS ${JSON.stringify(value)} must be a number of seconds, 0 or more`);
    return seconds * 1000;
}

export const RETRY = {
    attempts: 10,
    firstDelayMs: 250,
    maxDelayMs: 8000,
    /** the total time one call may spend retrying (KPM_API_RETRY_SECONDS; 0 turns retries off) */
    budgetMs: budgetFromEnvironment(process.env.KPM_API_RETRY_SECONDS),
    /** how long after the API server was last unreachable a 401 or 403 is taken for its warm-up */
    recoveryMs: 60_000,
};

/**
 * What the calls to one API server have seen of it. A restarted kube-apiserver answers requests
 * before its authorizer has loaded the cluster's RBAC bindings, and for that moment refuses, with
 * a 403 (or a 401 while its authenticator warms), what it allows a second later. Believing that
 * refusal fails a node mid-move and then its rollback. So for RETRY.recoveryMs after any call
 * found the server unreachable, a 401 or 403 is tried again like a 503; at any other time it is
 * a real refusal and fails at once.
 */
export class ServerRecovery {
    private unreachableAt = Number.NEGATIVE_INFINITY;
    constructor(private readonly now: () => number = Date.now) {}
    /** Hears of a failed call or watch: one that got no answer (or none in time) starts the warm-up window. */
    saw(e: unknown): void {
        if (isUnreachable(e) || isApiTimeout(e)) this.unreachableAt = this.now();
    }
    get recovering(): boolean {
        return this.now() - this.unreachableAt <= RETRY.recoveryMs;
    }
    /** Whether `e` is a real refusal: a 401 or 403 outside the warm-up window. */
    refuses(e: unknown): boolean {
        return isRefusalStatus(statusOf(e as ApiFailure | undefined)) && !this.recovering;
    }
}

const CONNECTION_CODES = new Set([
    "ECONNRESET",
    "ECONNREFUSED",
    "ETIMEDOUT",
    "EPIPE",
    "EAI_AGAIN",
    "EHOSTUNREACH",
    "ENETUNREACH",
    "UND_ERR_SOCKET",
    "UND_ERR_CONNECT_TIMEOUT",
]);

type ApiFailure = {
    code?: unknown;
    statusCode?: unknown;
    errno?: unknown;
    cause?: { code?: unknown };
    message?: unknown;
    type?: unknown;
};

/** 401 or 403: the server refused the caller, or what it asked. */
function isRefusalStatus(status: number | undefined): boolean {
    return status === 401 || status === 403;
}

function statusOf(err: ApiFailure | undefined): number | undefined {
    return typeof err?.code === "number" ? err.code : typeof err?.statusCode === "number" ? err.statusCode : undefined;
}

/** Whether a call failed with no answer from the server: a refused, reset or timed-out connection. */
export function isUnreachable(e: unknown): boolean {
    const err = e as ApiFailure | undefined;
    if (statusOf(err) !== undefined) return false;
    const code = String(err?.code ?? err?.cause?.code ?? err?.errno ?? ""); // eslint-disable-line @typescript-eslint/no-base-to-string -- a code is a string or a number
    if (CONNECTION_CODES.has(code)) return true;
    const message = typeof err?.message === "string" ? err.message : "";
    return (
        /socket hang up|ECONNRESET|ECONNREFUSED|network timeout|fetch failed|other side closed/i.test(message) ||
        err?.type === "system"
    );
}

/**
 * Whether a failed call may succeed if tried again. An eviction's 429 is a PodDisruptionBudget
 * speaking, not the server being busy: the drain handles it. A 401 or 403 may, only while the
 * server is recovering from being unreachable (see ServerRecovery).
 */
export function isTransient(e: unknown, call: string, recovering = false): boolean {
    const status = statusOf(e as ApiFailure | undefined);
    if (status === undefined) return isUnreachable(e);
    if (status === 429) return call !== "createNamespacedPodEviction";
    if (isRefusalStatus(status)) return recovering;
    return status >= 500 && status !== 501;
}

export type Sleeper = (ms: number) => Promise<void>;
const realSleep: Sleeper = (ms) => new Promise((r) => setTimeout(r, ms));

/** Runs `fn`, trying again on transient failures (see isTransient); `onRetry` hears of each. */
export async function retrying<T>(
    call: string,
    fn: () => Promise<T>,
    opts: {
        sleep?: Sleeper;
        random?: () => number;
        onRetry?: (attempt: number, e: unknown, delayMs: number) => void;
        /** what the calls to this server have seen of it, shared by all of them */
        server?: ServerRecovery;
        /** called before each attempt; what it throws ends the call (a write the run may no longer send) */
        fence?: () => void;
    } = {},
): Promise<T> {
    const sleep = opts.sleep ?? realSleep;
    const random = opts.random ?? Math.random;
    let spent = 0;
    for (let attempt = 1; ; attempt++) {
        opts.fence?.();
        try {
            return await fn();
        } catch (e) {
            const delay = Math.round(
                Math.min(RETRY.maxDelayMs, RETRY.firstDelayMs * 2 ** (attempt - 1)) * (0.5 + random() / 2),
            );
            opts.server?.saw(e);
            const transient = isTransient(e, call, opts.server?.recovering);
            if (attempt >= RETRY.attempts || spent + delay > RETRY.budgetMs || !transient) throw e;
            opts.onRetry?.(attempt, e, delay);
            spent += delay;
            await sleep(delay);
        }
    }
}

/**
 * Whether an API client method writes to the cluster, as the rollout's lease fences it: creates,
 * patches, replaces and deletes, except the Lease's own (a compare-and-swap on its holder, which
 * must still reach the server to renew or release it) and the access reviews (questions, not writes).
 */
export function isClusterWrite(call: string): boolean {
    return /^(create|patch|replace|delete)/.test(call) && !/Lease$|Review$/.test(call);
}

/**
 * The same API client, every method of which retries transient failures; `fence`, when given, is
 * called before each attempt of every write (isClusterWrite), and what it throws ends the call.
 */
export function withRetries<T extends object>(
    api: T,
    onRetry?: (call: string, attempt: number, e: unknown, delayMs: number) => void,
    server?: ServerRecovery,
    fence?: () => void,
): T {
    return new Proxy(api, {
        get(target, prop, receiver) {
            const value = Reflect.get(target, prop, receiver);
            if (typeof value !== "function" || typeof prop !== "string") return value;
            const fenced = fence && isClusterWrite(prop) ? fence : undefined;
            return (...args: unknown[]) =>
                retrying(prop, () => (value as (...a: unknown[]) => Promise<unknown>).apply(target, args), {
                    onRetry: (a, e, d) => onRetry?.(prop, a, e, d),
                    server,
                    fence: fenced,
                });
        },
    });
}
