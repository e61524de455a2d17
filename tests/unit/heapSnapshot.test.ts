// The bench's --heap figures (scripts/heapSnapshot.ts), on a real heap snapshot of this process
// and on real child processes.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeHeapSnapshot } from "node:v8";
import { heapSnapshotOptions, snapshotsIn, writesHeapSnapshots } from "../../scripts/heapSnapshot.js";

describe("the bench's runner heap snapshots (--heap)", function () {
    this.timeout(60_000);

    it("reads a snapshot's live heap: 20 MB of strings this process holds are counted, and the total stays under the heap V8 has", () => {
        const dir = mkdtempSync(join(tmpdir(), "kpm-heap-"));
        try {
            const strings = Array.from({ length: 200_000 }, (_, i) => `node-${i}-`.padEnd(100, "x"));
            writeHeapSnapshot(join(dir, "a.heapsnapshot"));
            const [{ file, bytes }] = snapshotsIn(dir);
            assert.equal(file, "a.heapsnapshot");
            assert.ok(bytes > 20e6, `the held strings (200,000 of 100 characters) are counted: ${bytes} bytes`);
            assert.ok(bytes < process.memoryUsage().heapTotal, `${bytes} bytes is more than V8's whole heap`);
            assert.equal(strings.length, 200_000);
        } finally {
            rmSync(dir, { recursive: true, force: true });
        }
    });

    it("sends its signal only to a process started with its options (SIGUSR2 ends any other Node.js process)", async () => {
        const start = (nodeOptions: string) =>
            spawn(process.execPath, ["-e", "setTimeout(() => {}, 10000)"], {
                env: { ...process.env, NODE_OPTIONS: nodeOptions },
                stdio: "ignore",
            });
        const withOptions = start(heapSnapshotOptions(tmpdir()));
        const without = start("");
        try {
            await new Promise((r) => setTimeout(r, 300));
            assert.equal(writesHeapSnapshots(withOptions.pid!), true);
            assert.equal(writesHeapSnapshots(without.pid!), false);
            assert.equal(writesHeapSnapshots(2 ** 30), false, "no such process");
        } finally {
            withOptions.kill();
            without.kill();
        }
    });
});
