// A Node as the API server sends it, in the fields this tool reads: what a list decodes to
// (client.ts, nodeProtobuf.ts) and what a patch is built from (nodePatch.ts).
import type { NodeObject, Taint } from "../core/nodes.js";

/** A node as the API server sends it (JSON), with what this tool reads of it. */
export interface NodeJson extends NodeObject {
    metadata?: NodeObject["metadata"] & { annotations?: Record<string, string>; resourceVersion?: string };
    spec?: NodeObject["spec"] & { taints?: Taint[] };
}
