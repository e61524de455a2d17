// A fleet in waves, end to end: five stacks of the config-driven program in ONE Pulumi project (a
// file backend beside it), each on its own reference cluster, moved by `kube-proxy-mode fleet up`
// on the real Temporal dev server (the toolchain's `temporal`) with a worker in the CLI, in three
// waves: canary (dev), staging (two stacks at once) and prod (two at once).
//
// kwok nodes run no process: the built-in node checks cannot run, every stack sets
// verify.nodeChecks: false and its nodes are verified by a hook, which also fails a stack on demand.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LocalWorkspace, type Stack } from "@pulumi/pulumi/automation";
import { freePort, type ClusterState } from "../../scripts/referenceCluster.js";
import { anyResourceChanged } from "../../components/automation/stacks.js";
import type { FleetStatus } from "../../components/fleet/contract.js";
import { parseEvents, type Released } from "../../components/rollout/events.js";
import { CLI, ROOT, runAsync, type CliRun } from "../helpers.js";
import {
    clients,
    projectDir,
    scratchDir,
    setKubeconfig,
    setStackConfig,
    startCluster,
    stopCluster,
    toolchain,
} from "./support.js";

const KWOK = "(SIMULATED kwok nodes: built-in node checks not run)";
const STACKS = ["dev", "stg-a", "stg-b", "prod-a", "prod-b"] as const;
type Name = (typeof STACKS)[number];
const HOOK = join(ROOT, "tests", "e2e", "hooks", "check-nodeport.js");
const target = (mode: string, failOn = "") => ({
    mode,
    nodePortAddresses: ["0.0.0.0/0"],
    pools: [
        { name: "canary", nodeSelector: "pool=canary", maxUnavailable: 1 },
        { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 1 },
    ],
    verify: {
        nodeChecks: false,
        hooks: [{ name: "ingress-nodeport", command: [process.execPath, HOOK], env: { FAIL_ON_NODE: failOn } }],
    },
});
const SOAK_SECONDS = 3;
/** prod-a's own gate: stg-b finished and held for longer than the fleet's staging soak (kwok: hooks verify) */
const GATE = { after: "organization/kube-proxy-mode/stg-b", minSoak: "20s", requireNodeChecks: false };

async function configMode(c: ClusterState): Promise<string> {
    const cm = await clients(c).core.readNamespacedConfigMap({ name: "kube-proxy", namespace: "kube-system" });
    return /^mode: (\S*)$/m.exec(cm.data!["config.conf"])?.[1] ?? "";
}

/** Per stack, its updates (`changing`: only those that changed something; a stack moved twice has two). */
async function updates(stacks: Record<Name, Stack>, changing = false): Promise<Record<Name, number>> {
    const out = {} as Record<Name, number>;
    for (const n of STACKS)
        out[n] = (await stacks[n].history()).filter(
            (h) => h.kind === "update" && (!changing || anyResourceChanged(h.resourceChanges)),
        ).length;
    return out;
}

describe("@e2e fleet: five stacks in three waves on the real Temporal dev server " + KWOK, function () {
    this.timeout(1_800_000);
    const clusters = {} as Record<Name, ClusterState>;
    const stacks = {} as Record<Name, Stack>;
    let dir = "";
    let env: Record<string, string> = {};
    let stateDir = "";
    let fleetFile = "";
    const children: ChildProcess[] = [];
    const fleet = (args: string[]): Promise<CliRun> =>
        runAsync(process.execPath, [CLI, "fleet", ...args], { cwd: dir, env });
    const statusOf = (r: CliRun): FleetStatus => {
        try {
            return JSON.parse(r.stdout) as FleetStatus;
        } catch {
            throw new Error(`fleet printed no JSON (exit ${r.code}):\n${r.stdout}\n${r.stderr.slice(-6000)}`);
        }
    };
    const stateOf = (s: FleetStatus) => Object.fromEntries(s.stacks.map((x) => [x.stack, x.state]));
    // the Temporal cluster of the last three tests: a dev server of its own, restarted by one
    let port = 0;
    let server: ChildProcess | undefined;
    const startServer = () => {
        const args = ["server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", String(port)];
        const p = spawn(join(toolchain(), "temporal"), [...args, "--db-filename", join(stateDir, "cluster.db")], {
            stdio: "ignore",
        });
        children.push(p);
        return p;
    };
    /** The CLI as a process of its own, killed with the suite if it is still running. */
    const spawnCli = (args: string[], extra: Record<string, string>) => {
        const child = spawn(process.execPath, [CLI, "fleet", ...args], {
            cwd: dir,
            env: { ...process.env, ...env, ...extra },
            stdio: "ignore",
        });
        children.push(child);
        return child;
    };
    const worker = (address: string, events: string) =>
        spawnCli(["worker", "--temporal-address", address], { KPM_EVENTS_FILE: events });
    /** After dev's up was cut off: the fleet finished on `mode`, dev retried, each of its nodes released once. */
    const assertResumed = async (r: CliRun, mode: string, events: string) => {
        assert.equal(r.code, 0, r.stderr.slice(-6000));
        const dev = statusOf(r).stacks.find((s) => s.stack === "dev")!;
        assert.ok(dev.attempts >= 2, `dev's up was retried after it was cut off (attempts: ${dev.attempts})`);
        for (const n of STACKS) assert.equal(await configMode(clusters[n]), mode, `${n}'s cluster moved`);
        // dev's nodes (the only stack running until dev ended) were each released by the move once
        assert.deepEqual(releasedPerNode(events, dev.endedAt!), { "canary-1": 1, "workers-1": 1 });
    };
    /** Polls `fleet status` until `ready` holds for its status; returns that status. */
    const until = async (args: string[], what: string, ready: (s: FleetStatus) => boolean) => {
        const deadline = Date.now() + 300_000;
        for (;;) {
            assert.ok(Date.now() < deadline, `never: ${what}`);
            const r = await fleet(["status", ...args, "--json"]);
            if (r.stdout.trim().startsWith("{") && ready(statusOf(r))) return statusOf(r);
            await new Promise((res) => setTimeout(res, 1000));
        }
    };
    /** Per node, how many times the events before `end` (ms) show it released by the move. */
    const releasedPerNode = (file: string, end: number) => {
        const released = parseEvents(readFileSync(file, "utf8")).filter(
            (e) => e.at <= end && e.type === "released" && e.step === "move",
        ) as Released[];
        const perNode: Record<string, number> = {};
        for (const e of released) perNode[e.node] = (perNode[e.node] ?? 0) + 1;
        return perNode;
    };

    before(async function () {
        const started = await Promise.all(
            STACKS.map(() =>
                startCluster({
                    nodes: "kwok",
                    pools: [
                        ["canary", 1],
                        ["workers", 1],
                    ],
                }),
            ),
        );
        STACKS.forEach((n, i) => (clusters[n] = started[i]));
        const project = await projectDir("kpm-e2e-fleet-");
        dir = project.dir;
        env = { ...project.envVars, KPM_TEMPORAL_BIN: join(toolchain(), "temporal") };
        for (const n of STACKS) {
            stacks[n] = await LocalWorkspace.createOrSelectStack(
                { stackName: n, workDir: dir },
                { workDir: dir, envVars: project.envVars, pulumiCommand: project.pulumiCommand },
            );
            await setKubeconfig(stacks[n], clusters[n]);
            // stg-b's hook fails on its worker node: its rollout fails and rolls that node back
            await setStackConfig(stacks[n], target("nftables", n === "stg-b" ? "workers-1" : ""));
        }
        stateDir = scratchDir("kpm-e2e-fleet-state-");
        fleetFile = join(dir, "fleet.yaml");
        writeFileSync(
            fleetFile,
            [
                "waves:",
                "  - name: canary",
                `    soak: ${SOAK_SECONDS}s`,
                "    stacks:",
                "      - { dir: ., stack: dev }",
                "  - name: staging",
                "    maxParallel: 2",
                `    soak: ${SOAK_SECONDS}s`,
                "    stacks:",
                "      - { dir: ., stack: stg-a }",
                "      - { dir: ., stack: stg-b }",
                "  - name: prod",
                "    maxParallel: 2",
                "    stacks:",
                "      - { dir: ., stack: prod-a }",
                "      - { dir: ., stack: prod-b }",
                "",
            ].join("\n"),
        );
    });

    after(async () => {
        for (const c of children) c.kill("SIGKILL");
        await Promise.all(Object.values(clusters).map((c) => stopCluster(c)));
        if (dir) rmSync(dir, { recursive: true, force: true });
        if (stateDir) rmSync(stateDir, { recursive: true, force: true });
    });

    it("a failed stack stops its wave and later waves never start; after the fix, retry and up finish the fleet in wave order, waiting for a stack's own gate's soak", async () => {
        const first = await fleet(["up", "--file", fleetFile, "--to", "nftables", "--state-dir", stateDir, "--json"]);
        assert.equal(first.code, 1, first.stderr.slice(-6000));
        let status = statusOf(first);
        assert.equal(status.phase, "stopped");
        assert.deepEqual(stateOf(status), {
            dev: "succeeded",
            "stg-a": "succeeded",
            "stg-b": "failed",
            "prod-a": "pending",
            "prod-b": "pending",
        });
        assert.match(first.stderr, /stg-b/);
        assert.match(first.stderr, /fleet retry/);
        for (const n of ["prod-a", "prod-b"] as const) {
            assert.equal(await configMode(clusters[n]), "ipvs", `${n} never started`);
            assert.equal((await stacks[n].history()).length, 0, `${n} was never updated`);
        }

        await setStackConfig(stacks["stg-b"], target("nftables"));
        // prod-a's own promotion gate asks for more soak after stg-b than the fleet's wave soak
        await setStackConfig(stacks["prod-a"], { ...target("nftables"), promotion: GATE });
        const retried = await fleet([
            "retry",
            "stg-b",
            "--file",
            fleetFile,
            "--to",
            "nftables",
            "--state-dir",
            stateDir,
        ]);
        assert.equal(retried.code, 0, retried.stderr);
        const second = await fleet(["up", "--file", fleetFile, "--to", "nftables", "--state-dir", stateDir, "--json"]);
        assert.equal(second.code, 0, second.stderr.slice(-6000));
        status = statusOf(second);
        assert.equal(status.phase, "done");
        for (const n of STACKS) {
            assert.equal(stateOf(status)[n], "succeeded", n);
            assert.equal(await configMode(clusters[n]), "nftables", `${n}'s cluster moved`);
        }
        // waves in order: a wave's first start is after the earlier wave's last end and its soak
        const by = (n: Name) => status.stacks.find((s) => s.stack === n)!;
        const ended = (ns: Name[]) => Math.max(...ns.map((n) => by(n).endedAt!));
        const began = (ns: Name[]) => Math.min(...ns.map((n) => by(n).startedAt!));
        assert.ok(began(["stg-a", "stg-b"]) >= ended(["dev"]) + SOAK_SECONDS * 1000, "staging after canary's soak");
        assert.ok(
            began(["prod-a", "prod-b"]) >= ended(["stg-a", "stg-b"]) + SOAK_SECONDS * 1000,
            "prod after staging's soak",
        );
        // prod-a's gate refused for stg-b's soak alone: the fleet waited and previewed it again
        const gate = status.events.find((e) => e.kind === "gate");
        assert.ok(gate?.until, status.events.map((e) => `${e.kind}: ${e.text}`).join("\n"));
        assert.equal(gate.stack, by("prod-a").key);
        assert.match(gate.text, /organization\/kube-proxy-mode\/stg-b .*minSoak is 20s/);
        const soaked = (await stacks["stg-b"].outputs()).promotion.value as { finishedAt: string };
        for (const n of ["prod-a", "prod-b"] as const)
            assert.ok(
                by(n).startedAt! >= Date.parse(soaked.finishedAt) + 20_000,
                `${n} started before stg-b had soaked 20 s (finished ${soaked.finishedAt})`,
            );
        // prod ran both stacks at once (maxParallel: 2)
        assert.ok(by("prod-b").startedAt! < by("prod-a").endedAt!, "prod-a and prod-b overlapped");
        // the docs' picture of a fleet's waves is drawn from this run (scripts/fleetChart.ts)
        if (process.env.KPM_FLEET_STATUS_OUT) writeFileSync(process.env.KPM_FLEET_STATUS_OUT, JSON.stringify(status));
        const text = status.events.map((e) => e.text).join("\n");
        assert.match(text, /retry/i, "the retry is in the fleet's history");
    });

    it("a second fleet up of the finished fleet changes nothing", async () => {
        const before = await updates(stacks);
        const again = await fleet(["up", "--file", fleetFile, "--to", "nftables", "--state-dir", stateDir, "--json"]);
        assert.equal(again.code, 0, again.stderr.slice(-6000));
        assert.equal(statusOf(again).phase, "done");
        assert.deepEqual(await updates(stacks), before, "no stack was updated again");
    });

    it("a worker SIGKILLed mid-stack: a new worker retries that stack and the fleet finishes, each node released once", async () => {
        port = await freePort();
        server = startServer();
        const address = `127.0.0.1:${port}`;
        const on = ["--file", fleetFile, "--to", "iptables", "--temporal-address", address];
        for (const n of STACKS) await setStackConfig(stacks[n], target("iptables"));
        const events = join(dir, "worker-events.jsonl");
        const first = worker(address, events);
        const up = runAsync(process.execPath, [CLI, "fleet", "up", ...on, "--json"], { cwd: dir, env });
        // the worker dies while dev's pulumi up runs (the canary wave: dev alone)
        const running = await until(on, "dev running", (st) => stateOf(st).dev === "running");
        // the memo lists only dev now; the worker answered status with every stack
        assert.deepEqual(running.stacks.map((s) => s.stack).sort(), [...STACKS].sort());
        assert.equal(running.stacksOmitted, undefined);
        await new Promise((r) => setTimeout(r, 3000));
        first.kill("SIGKILL");
        worker(address, events);
        await assertResumed(await up, "iptables", events);
    });

    it("the Temporal server SIGKILLed and restarted mid-wave: the fleet finishes, each stack updated once", async () => {
        const address = `127.0.0.1:${port}`;
        const on = ["--file", fleetFile, "--to", "nftables", "--temporal-address", address];
        for (const n of STACKS) await setStackConfig(stacks[n], target("nftables"));
        const before = await updates(stacks, true);
        worker(address, join(dir, "restart-events.jsonl"));
        const up = runAsync(process.execPath, [CLI, "fleet", "up", ...on, "--json"], { cwd: dir, env });
        await until(on, "a staging stack running", (st) =>
            ["stg-a", "stg-b"].some((n) => stateOf(st)[n] === "running"),
        );
        server!.kill("SIGKILL");
        await new Promise((r) => server!.once("exit", r));
        server = startServer();
        const r = await up;
        assert.equal(r.code, 0, r.stderr.slice(-6000));
        assert.equal(statusOf(r).phase, "done");
        for (const n of STACKS) assert.equal(await configMode(clusters[n]), "nftables", `${n}'s cluster moved`);
        const after = await updates(stacks, true);
        for (const n of STACKS) assert.equal(after[n] - before[n], 1, `${n} was updated once`);
    });

    it("fleet up SIGKILLed mid-stack (embedded server and worker): the rerun resumes it, each node released once", async () => {
        const on = ["--file", fleetFile, "--to", "iptables", "--state-dir", stateDir];
        for (const n of STACKS) await setStackConfig(stacks[n], target("iptables"));
        const events = join(dir, "cli-events.jsonl");
        const withEvents = { ...env, KPM_EVENTS_FILE: events };
        const killed = spawnCli(["up", ...on], withEvents);
        await until(on, "dev running", (st) => stateOf(st).dev === "running");
        await new Promise((r) => setTimeout(r, 3000));
        killed.kill("SIGKILL");
        const r = await runAsync(process.execPath, [CLI, "fleet", "up", ...on, "--json"], {
            cwd: dir,
            env: withEvents,
        });
        await assertResumed(r, "iptables", events);
    });
});
