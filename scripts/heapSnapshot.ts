// The bench's --heap: heap snapshots of the rollout's runner while `pulumi up` runs, to tell the
// memory the run holds (live objects, after a full garbage collection: what a snapshot records)
// from its RSS, which also counts the V8 heap grown by the run's allocation rate and not returned.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** NODE_OPTIONS that make a Node.js process write a heap snapshot into `dir` when sent SIGUSR2. */
export function heapSnapshotOptions(dir: string): string {
    return `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${dir}`;
}

/**
 * True when the process was started with heapSnapshotOptions (read from its environment): only
 * such a process may be sent SIGUSR2, which would end any other.
 */
export function writesHeapSnapshots(pid: number): boolean {
    try {
        return readFileSync(`/proc/${pid}/environ`, "utf8")
            .split("\0")
            .some((v) => v.startsWith("NODE_OPTIONS=") && v.includes("--heapsnapshot-signal=SIGUSR2"));
    } catch {
        return false;
    }
}

/** The live heap a snapshot records: the sum of its objects' own sizes, in bytes. */
export function liveHeapBytes(snapshot: string): number {
    const s = JSON.parse(snapshot) as { snapshot: { meta: { node_fields: string[] } }; nodes: number[] };
    const fields = s.snapshot.meta.node_fields;
    const self = fields.indexOf("self_size");
    if (self < 0) throw new Error("not a V8 heap snapshot: its nodes have no self_size");
    let total = 0;
    for (let i = self; i < s.nodes.length; i += fields.length) total += s.nodes[i];
    return total;
}

/** Every snapshot in `dir`: its file's name (it names the pid) and the live heap it records. */
export function snapshotsIn(dir: string): { file: string; bytes: number }[] {
    return readdirSync(dir)
        .filter((f) => f.endsWith(".heapsnapshot"))
        .sort()
        .map((file) => ({ file, bytes: liveHeapBytes(readFileSync(join(dir, file), "utf8")) }));
}
