// The bench's fleet phase (issue #42): `npm run bench -- --phases fleet [--fleet-clusters N]`.
//
// N reference clusters with SIMULATED (kwok) nodes (pools canary 1 and workers 1, on ipvs), one
// Pulumi project (file backend) with a stack per cluster, each moving to nftables with
// verify.nodeChecks false and the e2e's NodePort hook (tests/e2e/hooks/check-nodeport.js: kwok
// nodes have no host for the built-in checks).
//   Run 1: `kube-proxy-mode promote --stacks p1,...,pN --yes --json`, the stacks one by one: its
//          wall time and each stack's duration.
//   Run 2: on a second set of fresh clusters (same shapes; the first set stopped before), stacks
//          f1..fN by `kube-proxy-mode fleet up --json`, ONE wave of the N stacks, maxParallel N, on
//          the embedded Temporal dev server: the wall time, the server's start (read from the
//          timing of the CLI's stderr lines), the wave's wall time (first startedAt to last endedAt),
//          the slowest stack, and per stack the engine's overhead: its activity (endedAt -
//          startedAt) minus its own `pulumi up` (the stack's latest update in its history; the
//          engine records whole seconds).
// Before any cluster starts it waits (up to 15 min) while another e2e run is found, and records
// whether the machine was busy. Every cluster and the embedded server are stopped, also on failure.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { LocalWorkspace, type Stack } from "@pulumi/pulumi/automation";
import type { FleetStatus } from "../components/fleet/contract.js";
import { readRecord, stateFiles } from "../components/fleet/serverState.js";
import { markdownTable } from "./markdownTable.js";
import { clusterDown, clusterUp, ROOT, type ClusterState } from "./referenceCluster.js";
import { projectDir, scratchDir, setKubeconfig, setStackConfig, toolchain } from "../tests/e2e/support.js";

const CLI = join(ROOT, "bin", "kube-proxy-mode");
const HOOK = join(ROOT, "tests", "e2e", "hooks", "check-nodeport.js");
const E2E = "dist/tests/e2e";

export interface FleetStackFigures {
    stack: string;
    /** the fleet's activity: endedAt - startedAt */
    activitySeconds: number;
    /** the stack's own `pulumi up`, from its update history (whole seconds) */
    pulumiUpSeconds: number;
    /** activity minus pulumi up: what the engine (worker, activity, Automation API) adds */
    overheadSeconds: number;
    state: string;
}

export interface FleetBenchResult {
    clusters: number;
    nodesPerCluster: number;
    nodes: "SIMULATED kwok";
    /** another e2e run was found before the clusters started (and waited for), or during the runs */
    busy: { waitedSeconds: number; e2eAtStart: boolean; e2eDuring: boolean; loadAvgAtStart: number };
    promote: {
        wallSeconds: number;
        ok: boolean;
        stacks: { stack: string; durationSeconds: number | null; pulumiUpSeconds: number | null; result: string }[];
    };
    fleet: {
        wallSeconds: number;
        /** the CLI's "starting the embedded Temporal server" line to its "web UI" line (server ready, workflow started) */
        serverStartSeconds: number | null;
        phase: string;
        /** the wave's preview of all its stacks: its "previewing" event to its first stack's start */
        previewSeconds: number | null;
        waveWallSeconds: number;
        slowestStack: string;
        slowestStackSeconds: number;
        /** the wave's wall time minus its slowest stack's activity */
        waveOverSlowestSeconds: number;
        stacks: FleetStackFigures[];
    };
    status: FleetStatus;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function e2eRunning(): boolean {
    try {
        return execFileSync("pgrep", ["-f", E2E], { encoding: "utf8" }).trim() !== "";
    } catch {
        return false; // pgrep exits 1 when nothing matches
    }
}

/** Waits (polling every 30 s, up to 15 min) while an e2e run is found; how long it waited and whether one was found. */
async function waitForIdle(progress: (l: string) => void): Promise<{ waitedSeconds: number; found: boolean }> {
    const began = Date.now();
    let found = false;
    while (e2eRunning() && Date.now() - began < 15 * 60_000) {
        found = true;
        progress(`fleet: an e2e run is on the machine (pgrep -f ${E2E}); waiting 30 s`);
        await sleep(30_000);
    }
    if (found && e2eRunning()) progress("fleet: still busy after 15 min; measuring anyway (the doc says so)");
    return { waitedSeconds: Math.round((Date.now() - began) / 1000), found };
}

/** A run of the CLI: its exit code, stdout, and each stderr line with its time (ms since the run's start). */
interface TimedRun {
    code: number | null;
    stdout: string;
    lines: { t: number; text: string }[];
    seconds: number;
}

const children = new Set<ChildProcess>();

function timedCli(args: string[], cwd: string, env: Record<string, string>, progress: (l: string) => void) {
    return new Promise<TimedRun>((resolve, reject) => {
        const began = performance.now();
        const child = spawn(process.execPath, [CLI, ...args], {
            cwd,
            env: { ...process.env, ...env },
            stdio: ["ignore", "pipe", "pipe"],
        });
        children.add(child);
        let stdout = "";
        let partial = "";
        const lines: TimedRun["lines"] = [];
        child.stdout.on("data", (d) => (stdout += d));
        child.stderr.on("data", (d: Buffer) => {
            const parts = (partial + d.toString()).split("\n");
            partial = parts.pop()!;
            for (const text of parts) {
                lines.push({ t: performance.now() - began, text });
                if (/^fleet: |^\[[^\]]+\] (preview|up)/.test(text)) progress(text);
            }
        });
        child.on("error", reject);
        child.on("close", (code) => {
            children.delete(child);
            if (partial) lines.push({ t: performance.now() - began, text: partial });
            resolve({ code, stdout, lines, seconds: (performance.now() - began) / 1000 });
        });
    });
}

/** The stack's config: to nftables, two pools of one node, the hook instead of the built-in checks. */
const target = {
    mode: "nftables",
    nodePortAddresses: ["0.0.0.0/0"],
    pools: [
        { name: "canary", nodeSelector: "pool=canary", maxUnavailable: 1 },
        { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 1 },
    ],
    verify: { nodeChecks: false, hooks: [{ name: "ingress-nodeport", command: [process.execPath, HOOK] }] },
};

/** The seconds of the stack's latest update, from its history (null when it has none). */
async function pulumiUpSeconds(stack: Stack): Promise<number | null> {
    const last = (await stack.history()).find((h) => h.kind === "update" && h.endTime);
    return last ? (new Date(last.endTime!).getTime() - new Date(last.startTime).getTime()) / 1000 : null;
}

/** N fresh clusters (SIMULATED kwok, canary 1 + workers 1, ipvs), pushed to `into` as they come (stopped by the caller). */
async function startClusters(n: number, set: string, into: ClusterState[], progress: (l: string) => void) {
    progress(`fleet: starting ${n} reference clusters (SIMULATED kwok nodes), set ${set}`);
    const began = performance.now();
    const settled = await Promise.allSettled(
        Array.from({ length: n }, async (_, i) => {
            const state = await clusterUp({
                name: `bench-${process.pid}-${set}${i + 1}`,
                nodes: "kwok",
                mode: "ipvs",
                pools: [
                    ["canary", 1],
                    ["workers", 1],
                ],
                log: () => undefined,
            });
            into.push(state);
        }),
    );
    const failed = settled.find((r) => r.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
    progress(`fleet: ${n} clusters up in ${((performance.now() - began) / 1000).toFixed(0)} s`);
    return [...into].sort((a, b) => a.name.localeCompare(b.name, undefined, { numeric: true }));
}

async function stopClusters(clusters: ClusterState[]) {
    await Promise.all(clusters.splice(0).map((c) => clusterDown(c.name).catch(() => undefined)));
}

/** The fleet phase: promote's walk, then one fleet wave on fresh clusters (see the top of this file). */
export async function fleetBench(n: number, progress: (l: string) => void): Promise<FleetBenchResult> {
    toolchain();
    const idle = await waitForIdle(progress);
    const busy = {
        waitedSeconds: idle.waitedSeconds,
        e2eAtStart: idle.found,
        e2eDuring: false,
        loadAvgAtStart: loadavg()[0],
    };
    const watch = setInterval(() => (busy.e2eDuring ||= e2eRunning()), 10_000);
    const project = await projectDir("kpm-bench-fleet-");
    const stateDir = scratchDir("kpm-bench-fleet-state-");
    const env = { ...project.envVars, KPM_TEMPORAL_BIN: join(toolchain(), "temporal") };
    const stackOf = async (name: string, cluster: ClusterState) => {
        const stack = await LocalWorkspace.createOrSelectStack(
            { stackName: name, workDir: project.dir },
            { workDir: project.dir, envVars: project.envVars, pulumiCommand: project.pulumiCommand },
        );
        await setKubeconfig(stack, cluster);
        await setStackConfig(stack, target);
        return stack;
    };
    const running: ClusterState[] = [];
    try {
        // run 1: promote walks p1..pN one by one
        const first = await startClusters(n, "p", running, progress);
        const promoted: Stack[] = [];
        for (let i = 0; i < n; i++) promoted.push(await stackOf(`p${i + 1}`, first[i]));
        const names = promoted.map((s) => s.name);
        progress(`fleet: run 1: promote --stacks ${names.join(",")} --yes`);
        const p = await timedCli(
            ["promote", "--stacks", names.join(","), "--yes", "--json"],
            project.dir,
            env,
            progress,
        );
        const promoteOut = JSON.parse(p.stdout) as {
            ok: boolean;
            stacks: { stack: string; durationSeconds: number | null; result: string }[];
        };
        const promote = {
            wallSeconds: p.seconds,
            ok: promoteOut.ok,
            stacks: await Promise.all(
                promoteOut.stacks.map(async (r, i) => ({
                    stack: r.stack,
                    durationSeconds: r.durationSeconds,
                    pulumiUpSeconds: await pulumiUpSeconds(promoted[i]),
                    result: r.result,
                })),
            ),
        };
        progress(`fleet: promote took ${p.seconds.toFixed(1)} s (exit ${p.code})`);
        await stopClusters(running);

        // run 2: one wave of f1..fN, maxParallel N, on fresh clusters
        const second = await startClusters(n, "f", running, progress);
        const fleetStacks: Stack[] = [];
        for (let i = 0; i < n; i++) fleetStacks.push(await stackOf(`f${i + 1}`, second[i]));
        const file = join(project.dir, "fleet.yaml");
        writeFileSync(
            file,
            ["waves:", "  - name: all", `    maxParallel: ${n}`, "    stacks:"]
                .concat(fleetStacks.map((s) => `      - { dir: ., stack: ${s.name} }`))
                .join("\n") + "\n",
        );
        progress(`fleet: run 2: fleet up, one wave of ${n}, maxParallel ${n} (embedded Temporal server)`);
        const f = await timedCli(
            ["fleet", "up", "--file", file, "--to", "nftables", "--state-dir", stateDir, "--json"],
            project.dir,
            env,
            progress,
        );
        let status: FleetStatus;
        try {
            status = JSON.parse(f.stdout) as FleetStatus;
        } catch {
            throw new Error(
                `fleet up printed no JSON (exit ${f.code}):\n${f.lines
                    .map((l) => l.text)
                    .join("\n")
                    .slice(-6000)}`,
            );
        }
        const at = (re: RegExp) => f.lines.find((l) => re.test(l.text))?.t;
        const serverFrom = at(/starting the embedded Temporal server/);
        const serverTo = at(/fleet: web UI:/);
        const stacks: FleetStackFigures[] = await Promise.all(
            status.stacks.map(async (s) => {
                const activitySeconds = ((s.endedAt ?? NaN) - (s.startedAt ?? NaN)) / 1000;
                const up = await pulumiUpSeconds(fleetStacks.find((x) => x.name === s.stack)!);
                return {
                    stack: s.stack,
                    activitySeconds,
                    pulumiUpSeconds: up ?? NaN,
                    overheadSeconds: activitySeconds - (up ?? NaN),
                    state: s.state,
                };
            }),
        );
        const started = status.stacks.map((s) => s.startedAt ?? NaN);
        const ended = status.stacks.map((s) => s.endedAt ?? NaN);
        const waveWallSeconds = (Math.max(...ended) - Math.min(...started)) / 1000;
        const previewing = status.events.find((e) => e.kind === "previewing");
        const previewSeconds = previewing ? (Math.min(...started) - previewing.at) / 1000 : null;
        const slowest = stacks.reduce((a, b) => (b.activitySeconds > a.activitySeconds ? b : a));
        progress(`fleet: fleet up took ${f.seconds.toFixed(1)} s (exit ${f.code}, ${status.phase})`);
        return {
            clusters: n,
            nodesPerCluster: 2,
            nodes: "SIMULATED kwok",
            busy,
            promote,
            fleet: {
                wallSeconds: f.seconds,
                serverStartSeconds:
                    serverFrom !== undefined && serverTo !== undefined ? (serverTo - serverFrom) / 1000 : null,
                phase: status.phase,
                previewSeconds,
                waveWallSeconds,
                slowestStack: slowest.stack,
                slowestStackSeconds: slowest.activitySeconds,
                waveOverSlowestSeconds: waveWallSeconds - slowest.activitySeconds,
                stacks,
            },
            status,
        };
    } finally {
        clearInterval(watch);
        for (const c of children) c.kill("SIGKILL");
        // the CLI stops its server when it ends; a CLI killed (above, or by a failure) leaves it running
        const record = readRecord(stateFiles(stateDir).record);
        if (record && !record.stopped)
            try {
                process.kill(record.pid, "SIGKILL");
            } catch {
                /* gone */
            }
        await stopClusters(running);
    }
}

const s1 = (x: number | null) => (x === null || Number.isNaN(x) ? "?" : x.toFixed(1));

/** The figures as tables, and the goal lines. */
export function fleetReport(r: FleetBenchResult): string {
    const f = r.fleet;
    const head = `Fleet: ${r.clusters} clusters of ${r.nodesPerCluster} ${r.nodes} nodes, ipvs -> nftables`;
    const runs = markdownTable(
        ["run", "wall s", "server start s", "wave's preview s", "wave wall s", "slowest stack s"],
        [
            [`promote, one by one`, s1(r.promote.wallSeconds), "-", "-", "-", "-"],
            [
                `fleet up, one wave, maxParallel ${r.clusters}`,
                s1(f.wallSeconds),
                s1(f.serverStartSeconds),
                s1(f.previewSeconds),
                s1(f.waveWallSeconds),
                `${s1(f.slowestStackSeconds)} (${f.slowestStack})`,
            ],
        ],
    );
    const perStack = markdownTable(
        ["stack", "promote s", "promote's pulumi up s", "fleet stack", "activity s", "pulumi up s", "overhead s"],
        r.promote.stacks.map((p, i) => {
            const q = f.stacks[i];
            return [
                p.stack,
                s1(p.durationSeconds),
                s1(p.pulumiUpSeconds),
                q?.stack ?? "",
                s1(q?.activitySeconds ?? null),
                s1(q?.pulumiUpSeconds ?? null),
                s1(q?.overheadSeconds ?? null),
            ];
        }),
    );
    const busy = r.busy.e2eDuring
        ? " (the machine was busy: another e2e run during the runs)"
        : r.busy.e2eAtStart
          ? ` (waited ${r.busy.waitedSeconds} s for another e2e run to end; none ran during the runs)`
          : "";
    return [
        head + busy,
        "",
        runs,
        "",
        perStack,
        "",
        `wave wall time vs its slowest stack: +${s1(f.waveOverSlowestSeconds)} s (goal: close to it when maxParallel covers the wave)` +
            `; with the wave's preview: +${s1(f.waveOverSlowestSeconds + (f.previewSeconds ?? NaN))} s`,
        `fleet vs promote: ${s1(f.wallSeconds)} s vs ${s1(r.promote.wallSeconds)} s`,
    ].join("\n");
}
