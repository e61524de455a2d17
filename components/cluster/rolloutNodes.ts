// The rollout's memory on each node (placement label, move, verification, syncs) and the
// cordon, read in one node list and written in one patch each, against the node as last seen.
import { parseNodeSyncs } from "../core/firstSync.js";
import { nodeFacts } from "../core/nodes.js";
import { MARKS } from "../core/plan.js";
import type { NodeChange, NodeMove, RolloutNode } from "../rollout/cluster.js";
import { apiStatus } from "./client.js";
import { JSON_PATCH, MERGE, type KubeProxyClient } from "./kubeProxyClient.js";
import { asSeen, marksPatch, patchAsRead, type NodeAsSeen, type PatchOperation } from "./nodePatch.js";

/** The move in progress, as startMove wrote it to the node's annotation; undefined when it is not ours. */
function parseMove(text: string | undefined): NodeMove | undefined {
    if (!text) return undefined;
    try {
        const m = JSON.parse(text);
        if (m && typeof m === "object" && "to" in m && "from" in m && typeof m.phase === "string") {
            const seconds = m.baseline?.seconds;
            const baseline =
                typeof seconds === "number" && Number.isFinite(seconds) && seconds >= 0
                    ? { seconds, metric: m.baseline.metric === "all" ? ("all" as const) : ("full" as const) }
                    : undefined;
            const bridge = typeof m.bridge === "string" && m.bridge !== "" ? { bridge: m.bridge as string } : {};
            return { to: m.to, from: m.from, phase: m.phase, ...(baseline ? { baseline } : {}), ...bridge };
        }
    } catch {
        /* not ours: ignored */
    }
    return undefined;
}

export class RolloutNodes {
    constructor(private readonly client: KubeProxyClient) {}

    /** Every node with the rollout's memory of it: placement, verification, the move in progress, cordon. */
    async list(): Promise<RolloutNode[]> {
        return this.client.eachNode((n) => {
            if (n.metadata?.name) this.seen.set(n.metadata.name, asSeen(n));
            const a = n.metadata?.annotations ?? {};
            const [verified, verifiedAt] = (a[MARKS.verifiedAnnotation] ?? "").split("@");
            return {
                ...nodeFacts(n),
                placement: n.metadata?.labels?.[MARKS.configLabel] ?? null,
                verified: verified || undefined,
                verifiedAt: verifiedAt || undefined,
                checks: a[MARKS.checksAnnotation],
                move: parseMove(a[MARKS.moveAnnotation]),
                syncs: parseNodeSyncs(a[MARKS.syncAnnotation]),
                unschedulable: n.spec?.unschedulable === true,
                cordonedByRollout:
                    n.spec?.unschedulable === true && a[MARKS.cordonedAnnotation] === MARKS.managedByValue,
            };
        });
    }

    /** each node as this client last saw it (see NodeAsSeen): the base of its next patch made against the node as read */
    private readonly seen = new Map<string, NodeAsSeen>();

    /**
     * The move's memory and the cordon (and the placement, when given) in one patch, made against
     * the node as read (see patchAsRead): a node someone cordons in between is read again, so a
     * cordon that is not the rollout's is never taken for its own.
     */
    async startMove(node: string, move: NodeMove, placement?: string | null): Promise<boolean> {
        let ours = false;
        await this.patchAsRead(node, (n) => {
            ours = !n.unschedulable || n.annotations?.[MARKS.cordonedAnnotation] === MARKS.managedByValue;
            return patchAsRead(
                {
                    move,
                    placement, // undefined: the placement label is left as it is
                    ...(n.unschedulable ? {} : { cordon: true }),
                },
                n,
            );
        });
        return ours;
    }

    /**
     * One patch of the node: the parts of `change` that are given, together. An uncordon is made
     * against the node as read, as the cordon was, since it rewrites the node's taints: a taint
     * someone adds in between is read again, never lost.
     */
    async write(node: string, change: NodeChange): Promise<void> {
        if (!change.uncordon) {
            this.seen.set(
                node,
                asSeen(await this.client.core.patchNode({ name: node, body: marksPatch(change) }, MERGE)),
            );
            return;
        }
        await this.patchAsRead(node, (n) => patchAsRead(change, n));
    }

    /**
     * A JSON Patch built from the node as this client last saw it (a list, a read, the answer to its
     * own last patch; read now if it has not seen it), whose tests hold what it depends on
     * (nodePatch.ts): when the server refuses it (422, a test failed: the node changed there), the
     * node is read and the patch built again, up to 5 times. So a node is patched without a read
     * unless what the patch depends on changed, and never from a stale view of it; a write of
     * something else (the kubelet's status) does not get in the way.
     */
    private async patchAsRead(node: string, build: (n: NodeAsSeen) => PatchOperation[]): Promise<void> {
        for (let attempt = 1; ; attempt++) {
            const n = (attempt === 1 ? this.seen.get(node) : undefined) ?? asSeen(await this.client.node(node));
            try {
                this.seen.set(
                    node,
                    asSeen(await this.client.core.patchNode({ name: node, body: build(n) }, JSON_PATCH)),
                );
                return;
            } catch (e) {
                if (apiStatus(e) !== 422 || attempt >= 5) throw e;
            }
        }
    }
}
