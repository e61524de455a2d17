// Who made the API requests of a measured window, from kube-apiserver's audit log (JSON lines,
// one event per request: the reference cluster's policy keeps only the ResponseComplete stage).
// The bench's apiserver_request_total counts every client together; the audit log tells the
// tool's own requests from the cluster's reaction to them (the DaemonSet controller, the
// scheduler, the garbage collector, kwok's SIMULATED kubelets).

/** The audit policy the reference cluster starts kube-apiserver with when asked to audit. */
export const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
  # the nodes' heartbeats: the cluster's own traffic, left out as the bench's counter leaves it out
  - level: None
    resources: [{ group: coordination.k8s.io, resources: ["leases"] }]
  - level: Metadata
`;

/** The parts of an audit event the count reads. */
interface AuditEvent {
    stage?: string;
    verb?: string;
    requestURI?: string;
    userAgent?: string;
    user?: { username?: string };
    objectRef?: { resource?: string; subresource?: string };
    responseStatus?: { code?: number };
    requestReceivedTimestamp?: string;
}

/**
 * A client's name from its user agent: the program, and for kube-controller-manager and
 * kube-scheduler the controller that made the request (client-go appends it to the agent:
 * `kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/abc1234/daemon-set-controller`; an
 * unstamped build says `$Format` for the commit).
 * Without an agent, the user's name.
 */
export function clientOf(userAgent: string | undefined, username: string | undefined): string {
    if (!userAgent) return `user ${username ?? "unknown"}`;
    const program = userAgent.split("/")[0].split(" ")[0];
    const controller = /\) kubernetes\/[^/ ]+\/(.+)$/.exec(userAgent)?.[1];
    return controller ? `${program} ${controller}` : program;
}

/**
 * `verb resource[/subresource]`, as the bench's counter names a kind (the path for a
 * non-resource request), with the answer's code when it was an error: kwok deletes each pod a
 * second time and is answered 404, a request a real kubelet does not make.
 */
function kindOf(e: AuditEvent): string {
    const r = e.objectRef;
    const code = e.responseStatus?.code;
    const failed = code !== undefined && code >= 400 ? ` (${code})` : "";
    if (!r?.resource) return `${e.verb ?? "?"} ${(e.requestURI ?? "?").split("?")[0]}${failed}`;
    return `${e.verb ?? "?"} ${r.resource}${r.subresource ? `/${r.subresource}` : ""}${failed}`;
}

/**
 * The requests received in [from, to], per client and kind, from the audit log's lines (lines
 * that are not events, and events of other stages, are skipped).
 */
export function requestsByClient(lines: Iterable<string>, from: Date, to: Date): Map<string, Map<string, number>> {
    const out = new Map<string, Map<string, number>>();
    for (const line of lines) {
        if (!line.startsWith("{")) continue;
        let e: AuditEvent;
        try {
            e = JSON.parse(line) as AuditEvent;
        } catch {
            continue;
        }
        if (e.stage !== "ResponseComplete" && e.stage !== "Panic") continue;
        const at = Date.parse(e.requestReceivedTimestamp ?? "");
        if (!(at >= from.getTime() && at <= to.getTime())) continue;
        const client = clientOf(e.userAgent, e.user?.username);
        const kinds = out.get(client) ?? new Map<string, number>();
        const kind = kindOf(e);
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
        out.set(client, kinds);
    }
    return out;
}

/**
 * Per client, its requests per node moved (to 0.1) and its kinds, the largest client first: the
 * table the bench prints and keeps in `--json`.
 */
export function perNodeByClient(
    byClient: Map<string, Map<string, number>>,
    nodes: number,
): { client: string; perNode: number; kinds: Record<string, number> }[] {
    const round = (v: number) => Math.round((v / nodes) * 10) / 10;
    return [...byClient.entries()]
        .map(([client, kinds]) => {
            const sorted = [...kinds.entries()].sort((a, b) => b[1] - a[1]);
            return {
                client,
                perNode: round(sorted.reduce((s, [, v]) => s + v, 0)),
                kinds: Object.fromEntries(sorted.map(([k, v]) => [k, round(v)])),
            };
        })
        .sort((a, b) => b.perNode - a.perNode);
}
