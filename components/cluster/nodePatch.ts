// The rollout's writes to a node, as patches. A write that depends on the node as read (a cordon
// decides whether the node is already cordoned and by whom, and rewrites its taints; an uncordon
// rewrites its taints) is a JSON Patch (RFC 6902) whose `test` operations hold exactly those
// parts as read: the server applies it only if they are unchanged, and answers 422 otherwise. A
// write nobody's change can spoil (the move memory, the verification, the placement label) is a
// JSON merge patch. Pure: the cluster client sends what these build.
//
// Why not a compare-and-swap on the node's resourceVersion: every write to the node changes it,
// the kubelet's own status reports included (at least every 5 minutes; kwok's heartbeats too), so
// a cordon built from the pool's list conflicted whenever its batch came later than that. At 5,000
// kwok nodes, 1.1 node patches per node were refused with 409, each costing a read and the patch
// again. The tests below compare only what the patch depends on, so a heartbeat does not fail them.
import type { NodeChange } from "../rollout/cluster.js";
import { MARKS } from "../core/plan.js";
import { taintsWhenCordoned, type Taint } from "../core/nodes.js";
import type { NodeJson } from "./nodeJson.js";

/** The rollout's annotations and label on a node: the only ones its patches write. */
const ANNOTATIONS = [
    MARKS.moveAnnotation,
    MARKS.verifiedAnnotation,
    MARKS.checksAnnotation,
    MARKS.cordonedAnnotation,
    MARKS.syncAnnotation,
] as const;
const LABELS = [MARKS.configLabel] as const;

/**
 * What a patch made against the node as read needs of it: the cordon, the taints, and which of the
 * rollout's own annotations and label it carries (with their values). null: the node has no
 * annotations (labels) at all, so a key cannot be added below them. The client keeps this much of
 * each node it has seen (a list, a read, the answer to its own patch), a few hundred bytes.
 */
export interface NodeAsSeen {
    unschedulable: boolean;
    taints?: Taint[];
    annotations: Record<string, string> | null;
    labels: Record<string, string> | null;
}

/**
 * A taint's time as the API server writes it in JSON (RFC 3339 to the second, UTC), so that a
 * `test` of the taints as read compares equal: client-node's model turns it into a Date, whose own
 * JSON has milliseconds, and a node list read in protobuf has it in seconds (nodeProtobuf.ts).
 */
export function apiTime(t: Date | string): string {
    return typeof t === "string" ? t : t.toISOString().replace(/\.\d{3}Z$/, "Z");
}

function only(keys: readonly string[], all: Record<string, string> | undefined): Record<string, string> | null {
    if (!all) return null;
    const out: Record<string, string> = {};
    for (const k of keys) if (all[k] !== undefined) out[k] = all[k];
    return out;
}

/** What patchAsRead needs of a node (plain JSON from a list, or client-node's model from a read or a patch's answer). */
export function asSeen(n: NodeJson): NodeAsSeen {
    return {
        unschedulable: n.spec?.unschedulable === true,
        taints: n.spec?.taints?.map((t) => ({
            key: t.key,
            ...(t.value ? { value: t.value } : {}),
            effect: t.effect,
            ...(t.timeAdded ? { timeAdded: apiTime(t.timeAdded) } : {}),
        })),
        annotations: only(ANNOTATIONS, n.metadata?.annotations),
        labels: only(LABELS, n.metadata?.labels),
    };
}

/** The rollout's annotations and label a change writes (null removes one). */
function marksOf(change: NodeChange & { cordon?: true }): {
    annotations: Record<string, string | null>;
    labels: Record<string, string | null>;
} {
    const annotations: Record<string, string | null> = {};
    if (change.move !== undefined)
        annotations[MARKS.moveAnnotation] = change.move === null ? null : JSON.stringify(change.move);
    if (change.verified) {
        const { hash, checks } = change.verified;
        annotations[MARKS.verifiedAnnotation] = hash === null ? null : `${hash}@${new Date().toISOString()}`;
        annotations[MARKS.checksAnnotation] = hash === null ? null : checks;
    }
    if (change.syncs) annotations[MARKS.syncAnnotation] = JSON.stringify(change.syncs);
    if (change.cordon) annotations[MARKS.cordonedAnnotation] = MARKS.managedByValue;
    if (change.uncordon) annotations[MARKS.cordonedAnnotation] = null;
    return { annotations, labels: change.placement !== undefined ? { [MARKS.configLabel]: change.placement } : {} };
}

/** The merge patch of a change that depends on nothing of the node: its marks only (no cordon, no uncordon). */
export function marksPatch(change: Omit<NodeChange, "uncordon">): {
    metadata: { annotations: Record<string, string | null>; labels?: Record<string, string | null> };
} {
    const { annotations, labels } = marksOf(change);
    return { metadata: { annotations, ...(Object.keys(labels).length ? { labels } : {}) } };
}

/** One operation of a JSON Patch (RFC 6902). */
export interface PatchOperation {
    op: "test" | "add" | "remove";
    path: string;
    value?: unknown;
}

/** A key as one step of a JSON Pointer (RFC 6901): `~` and `/` escaped. */
function pointer(...steps: string[]): string {
    return steps.map((s) => "/" + s.replace(/~/g, "~0").replace(/\//g, "~1")).join("");
}

/**
 * A `test` that the value at `path` is what was read, or that it is absent (`undefined`). The
 * Kubernetes API server's JSON Patch takes a test of `null` on a missing member as passing (and
 * fails it on any value); the e2e test nodePatch.e2e.test.ts holds the server to it. Were that to
 * change, such a test would fail every time and the patch would be refused, never applied blind.
 */
function testOf(path: string, value: unknown): PatchOperation {
    return { op: "test", path, value: value ?? null };
}

/**
 * The JSON Patch of a change made against the node as read (`read`), with the cordon when `cordon`:
 * first the tests of what it depends on (the cordon, the rollout's cordon mark, and the taints when
 * it rewrites them), then the writes. A cordon or an uncordon carries the node's taints with the
 * unschedulable taint added or removed (core/nodes.ts), so the node lifecycle controller has
 * nothing to write after it.
 */
export function patchAsRead(change: NodeChange & { cordon?: true }, read: NodeAsSeen): PatchOperation[] {
    const ops: PatchOperation[] = [testOf("/spec/unschedulable", read.unschedulable || undefined)];
    ops.push(
        read.annotations === null
            ? testOf("/metadata/annotations", undefined)
            : testOf(
                  pointer("metadata", "annotations", MARKS.cordonedAnnotation),
                  read.annotations[MARKS.cordonedAnnotation],
              ),
    );
    // an uncordon lifts the rollout's own cordon only, as the node is read: whatever the caller
    // believed (an answer lost on the way), a cordon someone else made is kept
    const uncordons = change.uncordon === true && read.annotations?.[MARKS.cordonedAnnotation] === MARKS.managedByValue;
    if (change.cordon || uncordons) {
        const taints = taintsWhenCordoned(read.taints, change.cordon === true);
        if (taints !== undefined)
            ops.push(
                testOf("/spec/taints", read.taints),
                taints.length
                    ? { op: "add", path: "/spec/taints", value: taints }
                    : { op: "remove", path: "/spec/taints" },
            );
        if (change.cordon && !read.unschedulable) ops.push({ op: "add", path: "/spec/unschedulable", value: true });
        if (uncordons && read.unschedulable) ops.push({ op: "remove", path: "/spec/unschedulable" });
    }
    const { annotations, labels } = marksOf(change);
    ops.push(...mapWrites("annotations", read.annotations, annotations));
    ops.push(...mapWrites("labels", read.labels, labels));
    // the tests first (each path once), then the writes: the server applies all or nothing anyway
    const tests = ops.filter(
        (o, i) => o.op === "test" && ops.findIndex((t) => t.op === "test" && t.path === o.path) === i,
    );
    return [...tests, ...ops.filter((o) => o.op !== "test")];
}

/**
 * The writes of some keys of a node's annotations (labels) as read: a value is set (`add` sets a
 * member whether or not it is there), null removes the key when it was read there, and when it was
 * not, a test that it still is not. A node with no such map as read gets the map whole, with a test
 * that it still has none.
 */
function mapWrites(
    map: "annotations" | "labels",
    asRead: Record<string, string> | null,
    values: Record<string, string | null>,
): PatchOperation[] {
    const entries = Object.entries(values);
    if (asRead === null) {
        const set = Object.fromEntries(entries.filter((e): e is [string, string] => e[1] !== null));
        if (!Object.keys(set).length) return [];
        return [testOf(`/metadata/${map}`, undefined), { op: "add", path: `/metadata/${map}`, value: set }];
    }
    return entries.flatMap(([k, v]): PatchOperation[] => {
        const path = pointer("metadata", map, k);
        if (v !== null) return [{ op: "add", path, value: v }];
        return [asRead[k] !== undefined ? { op: "remove", path } : testOf(path, undefined)];
    });
}
