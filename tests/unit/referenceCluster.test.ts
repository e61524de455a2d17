// scripts/referenceCluster.ts: the kwok nodes' lease duration grows with the node count; kwok's
// pod-delete stage finalizes a pod once; a kwok that exits while the cluster starts is started again.
import assert from "node:assert/strict";
import * as YAML from "yaml";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
    clusterLog,
    type ClusterState,
    logEnding,
    nodeLeaseSeconds,
    oneDeletePerPod,
    reviveDaemon,
} from "../../scripts/referenceCluster.js";

describe("the reference cluster's SIMULATED (kwok) node leases", () => {
    it("are kubelet's 40 s up to 1,000 nodes, then 40 ms per node with the node lifecycle controller's grace period raised by kubelet's ratio", () => {
        assert.deepEqual(nodeLeaseSeconds(6), { lease: 40 });
        assert.deepEqual(nodeLeaseSeconds(1000), { lease: 40 });
        assert.deepEqual(nodeLeaseSeconds(5000), { lease: 200, grace: 250 });
    });
});

describe("the reference cluster's SIMULATED (kwok) pod-delete stage", () => {
    // the shape of kwok v0.8.0's kustomize/stage/pod/fast/pod-delete.yaml
    const shipped = [
        "apiVersion: kwok.x-k8s.io/v1alpha1",
        "kind: Stage",
        "metadata:",
        "  name: pod-delete",
        "spec:",
        "  resourceRef:",
        "    apiGroup: v1",
        "    kind: Pod",
        "  selector:",
        "    matchExpressions:",
        "    - key: '.metadata.deletionTimestamp'",
        "      operator: 'Exists'",
        "  next:",
        "    delete: true",
    ].join("\n");

    it("matches a pod being deleted only while its grace period is not yet 0, so kwok's own DELETE does not trigger a second one", () => {
        const stage = YAML.parse(oneDeletePerPod(shipped)) as {
            spec: { selector: { matchExpressions: unknown[] }; next: unknown };
        };
        assert.deepEqual(stage.spec.selector.matchExpressions, [
            { key: ".metadata.deletionTimestamp", operator: "Exists" },
            { key: ".metadata.deletionGracePeriodSeconds | tostring", operator: "NotIn", values: ["0"] },
        ]);
        assert.deepEqual(stage.spec.next, { delete: true }, "what the stage does is unchanged");
    });

    it("refuses a stage of another shape (a kwok upgrade) instead of writing it unchanged", () => {
        assert.throws(() => oneDeletePerPod(shipped.replace("delete: true", "delete: false")), /pod-delete stage/);
        assert.throws(
            () => oneDeletePerPod(shipped.replace("name: pod-delete", "name: pod-ready")),
            /pod-delete stage/,
        );
    });
});

describe("the reference cluster's daemons (kwok, a SIMULATED kubelet) that exit while it starts", () => {
    const dir = mkdtempSync(join(tmpdir(), "kpm-revive-"));
    mkdirSync(join(dir, "logs"));
    const lines: string[] = [];
    const log = (l: string) => lines.push(l);
    // a daemon that panics at once, as kwok 0.8.0 did in CI, with the panic above a long stack
    const panics = {
        bin: "sh",
        args: [
            "-c",
            'echo "panic: assignment to entry in nil map"; for i in $(seq 40); do echo "  frame $i"; done; exit 2',
        ],
    };
    const state = { name: "t", dir, pids: {}, daemons: { kwok: panics } } as unknown as ClusterState;
    after(() => rmSync(dir, { recursive: true, force: true }));

    async function gone(pid: number): Promise<void> {
        for (
            let i = 0;
            i < 100 && existsSync(`/proc/${pid}`) && !/ Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
            i++
        )
            await new Promise((r) => setTimeout(r, 50));
    }

    it("are started again with their own arguments, the log naming the panic, and at the third exit the error names it", async () => {
        const first = spawn("true");
        await new Promise((r) => first.on("exit", r));
        state.pids.kwok = first.pid!;
        const restarts = { count: 0 };
        reviveDaemon(state, "kwok", log, restarts);
        assert.equal(restarts.count, 1);
        assert.notEqual(state.pids.kwok, first.pid);
        await gone(state.pids.kwok);
        reviveDaemon(state, "kwok", log, restarts);
        assert.equal(restarts.count, 2);
        await gone(state.pids.kwok);
        assert.throws(
            () => reviveDaemon(state, "kwok", log, restarts),
            /kwok exited 3 times; the last: panic: assignment to entry in nil map/,
        );
        assert.match(lines[1], /^kwok exited \(panic: assignment to entry in nil map\); starting it again \(2 of 2\)$/);
    });

    it("are left alone while they run", () => {
        const running = spawn("sleep", ["30"]);
        try {
            const alive = { ...state, pids: { kwok: running.pid! } } as ClusterState;
            const restarts = { count: 0 };
            reviveDaemon(alive, "kwok", log, restarts);
            assert.equal(restarts.count, 0);
            assert.equal(alive.pids.kwok, running.pid);
        } finally {
            running.kill();
        }
    });

    it("show a log's first panic above its last lines when the stack pushed it out of them", () => {
        const text = ["starting", "panic: boom", ...Array.from({ length: 30 }, (_, i) => `  frame ${i}`)].join("\n");
        const ending = logEnding(text, 15).split("\n");
        assert.deepEqual(ending.slice(0, 2), ["panic: boom", "..."]);
        assert.equal(ending.length, 17);
        assert.equal(logEnding("a\nb", 15), "a\nb");
    });
});

describe("the reference cluster's own lines", () => {
    it("are one log's (clusterUp's default, addKwokNode's, the CLI's): each line on stderr, marked [cluster]", () => {
        const written: string[] = [];
        const write = process.stderr.write.bind(process.stderr);
        process.stderr.write = ((chunk: string) => written.push(chunk) > 0) as unknown as typeof process.stderr.write;
        try {
            clusterLog("kwok exited (panic: x); starting it again (1 of 2)");
        } finally {
            process.stderr.write = write;
        }
        assert.deepEqual(written, ["[cluster] kwok exited (panic: x); starting it again (1 of 2)\n"]);
    });
});
