// Faults injected into running rollouts on the reference cluster (real etcd and API server): the
// rollout process killed at phase boundaries of a node and during a soak, a signal mid-node, the
// API server killed and restarted mid-batch, a node joining late, two rollouts at once, a
// kube-proxy pod replaced during a soak. Each test asserts the end state: every node's placement
// and verification, no node cordoned by the rollout, the installer's DaemonSet spec byte for byte,
// the Lease free.
//
// The rollout runs as `pulumi up` runs it: the project's CLI, `kube-proxy-mode rollout`, one
// process per pool step and the finish. Most tests run on kwok nodes, which run no process, so the
// built-in node checks CANNOT run there (verify.nodeChecks: false); the per-node check is a hook
// the test steers (tests/e2e/hooks/fault-hook.js: fail a node, or take time to leave a window to
// kill the run in). The test named REAL_NODES runs the SIGKILL sweep, the black hole and the API
// server restart on real nodes (network namespaces running the real kube-proxy) with every built-in check on, the
// steered hook after them, and asserts each node's data plane after every recovery.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { parse, stringify } from "yaml";
import { configHash, MARKS } from "../../components/core/plan.js";
import { addKwokNode, restartDaemon, type ClusterState } from "../../scripts/referenceCluster.js";
import { CLI, ROOT, runAsync } from "../helpers.js";
import { LocalWorkspace } from "@pulumi/pulumi/automation";
import { realNodesSupported } from "../../scripts/realNodes.js";
import { BlackHoleProxy } from "./blackHoleProxy.js";
import {
    assertDataPlane,
    BUILT_IN_CHECKS,
    clients,
    leastPrivilegeKubeconfig,
    proxiesAnswer,
    startCluster,
    stopCluster,
    watchedCli,
    workspace,
} from "./support.js";

const KWOK = "(kwok nodes: built-in node checks not run; the check is a steerable hook)";
const REAL_NODES = "(REAL nodes: the real kube-proxy in network namespaces, every built-in check on)";
const LEASE_SECONDS = 4;

interface Run {
    code: number | null;
    out: string;
    killed: boolean;
}

describe("@e2e faults injected into a running rollout", function () {
    this.timeout(900_000);
    let cluster: ClusterState | undefined;
    let dir: string;
    let faultFile: string;
    let output: string[] = [];

    beforeEach(() => {
        dir = mkdtempSync(join(tmpdir(), "kpm-faults-"));
        faultFile = join(dir, "fault.json");
        steer({});
        output = [];
    });
    afterEach(async function () {
        if (this.currentTest?.state === "failed")
            process.stderr.write(`--- rollout output of the failed test ---\n${output.join("\n").slice(-8000)}\n`);
        rmSync(dir, { recursive: true, force: true });
        await stopCluster(cluster);
        cluster = undefined;
    });

    function steer(control: { fail?: string[]; sleepMs?: number }): void {
        writeFileSync(faultFile, JSON.stringify(control));
    }

    /** The per-node check the tests steer (fail a node, or take time), as a verify hook. */
    function steeredHook() {
        return {
            name: "steered",
            command: [process.execPath, join(ROOT, "tests", "e2e", "hooks", "fault-hook.js")],
            env: { FAULT_FILE: faultFile },
        };
    }

    /** A cluster of kwok nodes: canary=1 and workers=n. */
    function startKwok(workers = 2): Promise<ClusterState> {
        return startCluster({
            nodes: "kwok",
            pools: [
                ["canary", 1],
                ["workers", workers],
            ],
        });
    }

    /** The rollout spec `pulumi up` would hand the CLI: the cluster's configuration moved to nftables. */
    async function writeSpec(
        c: ClusterState,
        pools: unknown[],
        extra: Record<string, unknown> = {},
    ): Promise<{ file: string; hash: string; config: string }> {
        const { core } = clients(c);
        const cm = await core.readNamespacedConfigMap({ name: "kube-proxy", namespace: "kube-system" });
        const current = join(dir, "current.json");
        writeFileSync(current, JSON.stringify({ ...cm, kind: "ConfigMap", apiVersion: "v1" }));
        const rendered = await runAsync(process.execPath, [
            CLI,
            "render",
            "--current",
            current,
            "--mode",
            "nftables",
            "--node-port-addresses",
            "0.0.0.0/0",
            "--json",
        ]);
        assert.equal(rendered.code, 0, rendered.stderr);
        // given a ConfigMap, render prints a ConfigMap; the configuration alone is --json's config
        const text = (JSON.parse(rendered.stdout) as { config: string }).config;
        const config = text.endsWith("\n") ? text : `${text}\n`;
        const hash = configHash(config);
        const file = join(dir, `spec-${Object.keys(extra).join("-") || "plain"}.json`);
        const hook = steeredHook();
        writeFileSync(
            file,
            JSON.stringify({
                flavor: "kubeadm",
                target: { hash, mode: "nftables", config },
                pools,
                verify: { nodeChecks: false, hooks: [hook], podTimeout: "2m" },
                ...extra,
            }),
        );
        return { file, hash, config };
    }

    /** Runs `kube-proxy-mode rollout`; with `kill`, sends the signal when a line matches. */
    async function rollout(
        c: ClusterState,
        spec: string,
        args: string[],
        kill?: { on: RegExp; signal?: NodeJS.Signals; then?: () => Promise<void> | void },
        holder = "faults-e2e",
        leaseSeconds = LEASE_SECONDS,
        through?: { proxy: BlackHoleProxy; timeoutSeconds: number },
    ): Promise<Run> {
        // the rollout runs as the ServiceAccount bound to exactly the shipped role
        const kubeconfig = join(dir, "rollout-kubeconfig");
        const config = parse(await leastPrivilegeKubeconfig(c)) as { clusters: { cluster: { server: string } }[] };
        // through the black-hole proxy: the API server's certificate names 127.0.0.1, as the proxy's address does
        if (through) for (const cl of config.clusters) cl.cluster.server = through.proxy.url;
        writeFileSync(kubeconfig, stringify(config), { mode: 0o600 });
        const timeout: Record<string, string> = through
            ? { KPM_API_TIMEOUT_SECONDS: String(through.timeoutSeconds) }
            : {};
        const r = await watchedCli(
            ["rollout", "--spec", spec, "--kubeconfig", kubeconfig, ...args],
            // TMPDIR: a hook's kubeconfig left by a killed run stays in this test's directory
            { KPM_LEASE_SECONDS: String(leaseSeconds), KPM_HOLDER: holder, TMPDIR: dir, ...timeout },
            `${holder} ${args.join(" ")}`,
            output,
            kill && {
                line: kill.on,
                then: (child) => {
                    if (kill.signal) child.kill(kill.signal);
                    void kill.then?.();
                },
            },
        );
        return { code: r.code, out: r.out, killed: r.triggeredAt !== undefined };
    }

    /**
     * A run (a 30 s lease) during which the API server is down 3 s from when `node` runs on the
     * target: it meets the server down, retries, and ends well.
     */
    async function rolloutThroughRestart(c: ClusterState, spec: string, args: string[], node: string): Promise<Run> {
        const r = await rollout(
            c,
            spec,
            args,
            {
                on: new RegExp(`${node}: kube-proxy \\S* running on configuration`),
                then: () => restartDaemon(c, "kube-apiserver", 3000),
            },
            undefined,
            30,
        );
        assert.equal(r.code, 0, r.out);
        assert.match(
            r.out,
            /failed \(.*(ECONNREFUSED|ECONNRESET|socket hang up|fetch failed|5\d\d).*\); retrying in/,
            "the run met the API server down",
        );
        return r;
    }

    async function nodes(c: ClusterState) {
        const { core } = clients(c);
        return Object.fromEntries(
            (await core.listNode()).items.map((n) => {
                const a = n.metadata?.annotations ?? {};
                return [
                    n.metadata!.name!,
                    {
                        placement: n.metadata?.labels?.[MARKS.configLabel] ?? null,
                        verified: a[MARKS.verifiedAnnotation]?.split("@")[0],
                        move: a[MARKS.moveAnnotation],
                        cordoned: n.spec?.unschedulable === true,
                    },
                ];
            }),
        );
    }

    async function leaseHolder(c: ClusterState): Promise<string | undefined> {
        const { kc } = clients(c);
        const lease = await kc
            .makeApiClient(k8s.CoordinationV1Api)
            .readNamespacedLease({ name: "kube-proxy-mode", namespace: "kube-system" })
            .catch(() => undefined);
        return lease?.spec?.holderIdentity;
    }

    async function installerSpec(c: ClusterState): Promise<string> {
        const { apps } = clients(c);
        return JSON.stringify(
            (await apps.readNamespacedDaemonSet({ name: "kube-proxy", namespace: "kube-system" })).spec,
        );
    }

    const afterLease = () => new Promise((r) => setTimeout(r, (LEASE_SECONDS + 1) * 1000));

    /** What a finished rollout leaves: every node verified, on the installer's DaemonSet, nothing cordoned, the installer's shape. */
    async function assertFinished(c: ClusterState, hash: string, config: string, originalSpec: string): Promise<void> {
        for (const [name, n] of Object.entries(await nodes(c))) {
            assert.deepEqual(n, { placement: null, verified: hash, move: undefined, cordoned: false }, name);
        }
        const { core, apps } = clients(c);
        assert.equal(
            (await core.readNamespacedConfigMap({ name: "kube-proxy", namespace: "kube-system" })).data!["config.conf"],
            config,
        );
        assert.equal(await installerSpec(c), originalSpec, "the installer's DaemonSet spec, byte for byte");
        assert.deepEqual(
            (await apps.listNamespacedDaemonSet({ namespace: "kube-system" })).items.map((d) => d.metadata!.name),
            ["kube-proxy"],
        );
        assert.ok(!(await leaseHolder(c)), "the lease is free");
    }

    it(
        "F1/F4/F9: killed (SIGKILL) after cordon, after the label switch, after drain, during the checks and during a soak; a node joins late: every next run converges " +
            KWOK,
        async () => {
            cluster = await startCluster({ nodes: "kwok" });
            const c = cluster;
            const original = await installerSpec(c);
            const pools = [
                { name: "canary", nodeSelector: "pool=canary" },
                { name: "workers", nodeSelector: "pool=workers", drain: true, drainTimeout: "2m" },
                { name: "batch", nodeSelector: "pool=batch", maxUnavailable: 2, soak: "30s" },
            ];
            const { file, hash, config } = await writeSpec(c, pools);

            // after cordon: the canary pool does not drain, so the node's cordon, its move memory
            // (already switching) and its placement are one write: they exist together
            let r = await rollout(c, file, ["--pool", "canary"], { on: /canary-1: cordoned/, signal: "SIGKILL" });
            assert.ok(r.killed);
            let ns = await nodes(c);
            assert.equal(ns["canary-1"].cordoned, true);
            assert.match(ns["canary-1"].move ?? "", /"from":null,"phase":"switching"/);
            assert.equal(ns["canary-1"].placement, hash);
            // the dead run's lease is still held: a run now refuses, naming it; after it expires the next run converges
            r = await rollout(c, file, ["--pool", "canary"], undefined, "impatient-run");
            assert.equal(r.code, 1);
            assert.match(r.out, /another rollout holds this cluster: faults-e2e@/);
            await afterLease();
            r = await rollout(c, file, ["--pool", "canary"]);
            assert.equal(r.code, 0, r.out);
            ns = await nodes(c);
            assert.deepEqual(ns["canary-1"], { placement: hash, verified: hash, move: undefined, cordoned: false });

            // after the label switch, while the check runs; the check then fails: back to the recorded origin, not the target
            steer({ sleepMs: 4000 });
            r = await rollout(c, file, ["--pool", "workers"], {
                on: /workers-1: kube-proxy \S* running on configuration/,
                signal: "SIGKILL",
            });
            assert.ok(r.killed);
            ns = await nodes(c);
            assert.equal(ns["workers-1"].placement, hash);
            assert.match(ns["workers-1"].move ?? "", /"from":null,"phase":"switching"/);
            await afterLease();
            steer({ fail: ["workers-1"] });
            r = await rollout(c, file, ["--pool", "workers"]);
            assert.equal(r.code, 1);
            assert.match(
                r.out,
                /node workers-1 was rolled back to ipvs mode \(the installer's DaemonSet\) and uncordoned/,
            );
            ns = await nodes(c);
            assert.deepEqual(ns["workers-1"], {
                placement: null,
                verified: undefined,
                move: undefined,
                cordoned: false,
            });

            // after the drain, then during the checks (the hook sleeps 3 s). What follows the checks is
            // one write (verified, uncordoned, the move forgotten together), so "after the checks but
            // before verified" is the same state as this one; the unit suite kills after every write.
            steer({ sleepMs: 3000 });
            r = await rollout(c, file, ["--pool", "workers"], { on: /workers-1: drained/, signal: "SIGKILL" });
            assert.ok(r.killed);
            await afterLease();
            r = await rollout(c, file, ["--pool", "workers"], {
                on: /workers-2: kube-proxy \S* running on configuration/,
                signal: "SIGKILL",
            });
            assert.ok(r.killed);
            assert.match(r.out, /workers-1: resuming a move a previous run left in phase (started|switching)/);
            await afterLease();
            steer({});
            r = await rollout(c, file, ["--pool", "workers"]);
            assert.equal(r.code, 0, r.out);
            assert.match(r.out, /workers-2: resuming a move a previous run left in phase switching/);

            // during the soak: the next run waits only the remainder
            r = await rollout(c, file, ["--pool", "batch"], { on: /pool batch: soaking/, signal: "SIGKILL" });
            assert.ok(r.killed);
            await afterLease();
            const resumedAt = Date.now();
            r = await rollout(c, file, ["--pool", "batch"]);
            assert.equal(r.code, 0, r.out);
            assert.match(r.out, /pool batch: soaking \d+s \(the remainder of 30s that started/);
            assert.ok(Date.now() - resumedAt < 30_000, `the resumed soak took ${Date.now() - resumedAt} ms`);

            // a node joins the workers pool after its step: the finish moves and verifies it before writing the ConfigMap
            await addKwokNode(c, { name: "workers-9", pool: "workers", kernel: "6.8.0-51-generic" });
            r = await rollout(c, file, ["--finish"]);
            assert.equal(r.code, 0, r.out);
            assert.match(r.out, /finish: 1 node\(s\) are not verified .*workers-9 \(pool workers\); moving them now/);
            assert.match(
                r.out,
                /kube-proxy-mode\/result \{"configHash":"[0-9a-f]+","mode":"nftables","nodesVerified":7,"nodesChecked":0,"nodesTotal":7/,
            );
            await assertFinished(c, hash, config, original);
            // restoring the installer's spec restarted no node a third time: the pods the hand-back
            // started are the ones running, and the DaemonSet counts them as up to date
            const handedBack = Object.fromEntries(
                [...r.out.matchAll(/node (\S+): kube-proxy (\S+) running on the installer's DaemonSet/g)].map((m) => [
                    m[1],
                    m[2],
                ]),
            );
            assert.equal(Object.keys(handedBack).length, 7, r.out);
            const { core, apps } = clients(c);
            const running = (
                await core.listNamespacedPod({ namespace: "kube-system", labelSelector: "k8s-app=kube-proxy" })
            ).items.filter((p) => !p.metadata?.deletionTimestamp);
            assert.deepEqual(
                Object.fromEntries(running.map((p) => [p.spec!.nodeName!, p.metadata!.name!])),
                handedBack,
            );
            const restored = await apps.readNamespacedDaemonSet({ name: "kube-proxy", namespace: "kube-system" });
            const status = restored.status!;
            assert.equal(status.updatedNumberScheduled, status.desiredNumberScheduled);
            // before the hand-back the installer's current revision was relabelled with the hash of
            // its own revision, so the controller started every hand-back pod with the hash the
            // restore counts current: neither the hand-back nor the restore wrote to a pod
            const relabelled =
                /ControllerRevision kube-system\/(\S+): the pods the hand-back starts get hash (\w+)/.exec(r.out);
            assert.ok(relabelled, r.out);
            const [, relabelledRevision, installersHash] = relabelled;
            assert.match(
                r.out,
                /restored to the installer's spec \(7 running pod\(s\) kept: [^;]*; 0 of them labelled as of its revision now/,
            );
            const revisions = (await apps.listNamespacedControllerRevision({ namespace: "kube-system" })).items.filter(
                (cr) => cr.metadata!.ownerReferences?.some((o) => o.uid === restored.metadata!.uid),
            );
            const current = revisions.sort((x, y) => y.revision - x.revision)[0];
            assert.equal(current.metadata!.labels!["controller-revision-hash"], installersHash);
            assert.deepEqual(
                running.map((p) => p.metadata!.labels!["controller-revision-hash"]),
                running.map(() => installersHash),
            );
            const generation = restored.metadata!.annotations!["deprecated.daemonset.template.generation"];
            assert.ok(
                running.every((p) => p.metadata!.labels!["pod-template-generation"] !== generation),
                "no pod was labelled with the restored template generation",
            );
            // and the relabelled revision has its own hash back, the annotation that kept it gone
            const back = revisions.find((cr) => cr.metadata!.name === relabelledRevision)!;
            assert.equal(`kube-proxy-${back.metadata!.labels!["controller-revision-hash"]}`, relabelledRevision);
            assert.equal(back.metadata!.annotations?.["kube-proxy-mode.io/revision-hash"], undefined);
            assert.match(
                r.out,
                new RegExp(`ControllerRevision kube-system/${relabelledRevision}: its own hash \\w+ put back`),
            );
        },
    );

    it(
        "F1/F3/F5c on real nodes, iptables -> nftables: killed (SIGKILL) after the label switch, during the checks and during a rollback, a black hole between the run and the API server during a node's checks, and a 3 s API server restart during a node's checks: every next run converges, and after each recovery every node's /proxyMode is as placed and the Service answers from every node " +
            REAL_NODES,
        async () => {
            const supported = realNodesSupported();
            assert.ok(supported.ok, `real nodes are required for this test: ${supported.why}`);
            cluster = await startCluster({
                nodes: "real",
                mode: "iptables",
                pools: [
                    ["canary", 1],
                    ["workers", 2],
                ],
            });
            const c = cluster;
            await proxiesAnswer(c);
            await assertDataPlane(c, { "canary-1": "iptables", "workers-1": "iptables", "workers-2": "iptables" });
            const original = await installerSpec(c);
            const { file, hash, config } = await writeSpec(
                c,
                [
                    { name: "canary", nodeSelector: "pool=canary" },
                    { name: "workers", nodeSelector: "pool=workers" },
                ],
                // every built-in check, then the steered hook (a window to kill the run in, or a failure)
                { verify: { nodeChecks: true, service: "demo/backend", hooks: [steeredHook()], podTimeout: "2m" } },
            );
            const builtInChecksPassed = (out: string, node: string) => {
                for (const check of BUILT_IN_CHECKS)
                    assert.match(out, new RegExp(`node ${node}: ok ${check}:`), `${node}: built-in check ${check}`);
            };

            // after the label switch: the next run resumes the move and runs every check
            let r = await rollout(c, file, ["--pool", "canary"], {
                on: /canary-1: kube-proxy \S* running on configuration/,
                signal: "SIGKILL",
            });
            assert.ok(r.killed);
            let ns = await nodes(c);
            assert.equal(ns["canary-1"].placement, hash);
            assert.match(ns["canary-1"].move ?? "", /"phase":"switching"/);
            await afterLease();
            r = await rollout(c, file, ["--pool", "canary"]);
            assert.equal(r.code, 0, r.out);
            assert.match(r.out, /canary-1: resuming a move a previous run left in phase switching/);
            builtInChecksPassed(r.out, "canary-1");
            await assertDataPlane(c, { "canary-1": "nftables", "workers-1": "iptables", "workers-2": "iptables" });
            assert.deepEqual((await nodes(c))["canary-1"], {
                placement: hash,
                verified: hash,
                move: undefined,
                cordoned: false,
            });

            // during the checks: the built-in ones passed, the hook is running (it sleeps 3 s)
            steer({ sleepMs: 3000 });
            r = await rollout(c, file, ["--pool", "workers"], {
                on: /workers-1: ok connection:/,
                signal: "SIGKILL",
            });
            assert.ok(r.killed);
            builtInChecksPassed(r.out, "workers-1");
            ns = await nodes(c);
            assert.equal(ns["workers-1"].placement, hash);
            assert.equal(ns["workers-1"].cordoned, true);
            await afterLease();

            // the next run resumes workers-1, whose check now fails, and is killed while it rolls the node back
            steer({ fail: ["workers-1"] });
            r = await rollout(c, file, ["--pool", "workers"], {
                on: /workers-1: rolling back to the installer's DaemonSet/,
                signal: "SIGKILL",
            });
            assert.ok(r.killed);
            assert.match(r.out, /workers-1: resuming a move a previous run left in phase switching/);
            assert.match(r.out, /workers-1: FAILED hook steered/);
            await afterLease();

            // the next run resumes it again, the check fails again, and the rollback completes: the
            // node runs iptables again and the Service answers through its rules
            r = await rollout(c, file, ["--pool", "workers"]);
            assert.equal(r.code, 1, r.out);
            await assertDataPlane(c, { "canary-1": "nftables", "workers-1": "iptables", "workers-2": "iptables" });
            assert.match(
                r.out,
                /node workers-1 was rolled back to iptables mode \(the installer's DaemonSet\) and uncordoned/,
            );
            ns = await nodes(c);
            assert.deepEqual(ns["workers-1"], {
                placement: null,
                verified: undefined,
                move: undefined,
                cordoned: false,
            });
            assert.deepEqual(ns["workers-2"], {
                placement: null,
                verified: undefined,
                move: undefined,
                cordoned: false,
            });

            // F5c, a black hole between the run and the API server (a TCP proxy that stops forwarding,
            // tests/e2e/blackHoleProxy.ts; the nodes still reach the API server) while workers-1's hook
            // runs after its built-in checks: the run exits 1 naming the server and the timeout, and
            // leaves workers-1 mid-move and cordoned, its data plane working
            const proxy = new BlackHoleProxy({ host: "127.0.0.1", port: c.ports.apiserver });
            await proxy.start();
            try {
                steer({ sleepMs: 5000 });
                const through = { proxy, timeoutSeconds: 3 };
                r = await rollout(
                    c,
                    file,
                    ["--pool", "workers"],
                    { on: /workers-1: ok connection:/, then: () => proxy.blackHole(true) },
                    "black-holed",
                    12,
                    through,
                );
                assert.ok(r.killed);
                assert.equal(r.code, 1, r.out);
                assert.match(
                    r.out,
                    new RegExp(
                        `the API server ${proxy.url.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")} did not answer \\S+ \\S+ within 3s \\(request timeout`,
                    ),
                );
                ns = await nodes(c);
                assert.equal(ns["workers-1"].placement, hash);
                assert.equal(ns["workers-1"].cordoned, true);
                assert.match(ns["workers-1"].move ?? "", /"phase":"switching"/);
                await assertDataPlane(c, {
                    "canary-1": "nftables",
                    "workers-1": "nftables",
                    "workers-2": "iptables",
                });
                // the hole ends once the run's lease (12 s) has expired: nothing it sent into it arrives later
                const lease = await clients(c)
                    .kc.makeApiClient(k8s.CoordinationV1Api)
                    .readNamespacedLease({ name: "kube-proxy-mode", namespace: "kube-system" });
                const wait = new Date(lease.spec!.renewTime!).getTime() + 13_000 - Date.now();
                if (wait > 0) await new Promise((res) => setTimeout(res, wait));
                proxy.blackHole(false);
                assert.equal(proxy.lateBytes, 0, "bytes the black-holed run sent reached the API server");
            } finally {
                await proxy.close();
            }

            // the API server dies for 3 s while workers-1's built-in checks run (a 30 s lease: the run rides it out)
            steer({ sleepMs: 1000 });
            r = await rolloutThroughRestart(c, file, ["--pool", "workers"], "workers-1");
            assert.match(r.out, /workers-1: resuming a move a previous run left in phase switching/);
            builtInChecksPassed(r.out, "workers-1");
            builtInChecksPassed(r.out, "workers-2");
            await assertDataPlane(c, { "canary-1": "nftables", "workers-1": "nftables", "workers-2": "nftables" });

            // the finish hands every node back to the installer's DaemonSet, checked
            steer({});
            r = await rollout(c, file, ["--finish"]);
            assert.equal(r.code, 0, r.out);
            assert.match(
                r.out,
                /kube-proxy-mode\/result \{"configHash":"[0-9a-f]+","mode":"nftables","nodesVerified":3,"nodesChecked":3,"nodesTotal":3/,
            );
            await assertFinished(c, hash, config, original);
            await assertDataPlane(c, { "canary-1": "nftables", "workers-1": "nftables", "workers-2": "nftables" });
        },
    );

    it(
        "F2 through the engine: Ctrl-C of `pulumi up` mid-node lets the step in flight finish its pool, starts no later pool, frees the lease; the next up completes " +
            KWOK,
        async () => {
            cluster = await startKwok();
            const c = cluster;
            steer({ sleepMs: 2000 });
            const hook = steeredHook();
            const ws = await workspace(c, {
                mode: "nftables",
                nodePortAddresses: ["0.0.0.0/0"],
                pools: [
                    { name: "canary", nodeSelector: "pool=canary" },
                    { name: "workers", nodeSelector: "pool=workers" },
                ],
                verify: { nodeChecks: false, hooks: [hook] },
            });
            try {
                const env = { ...process.env, ...(ws.stack.workspace as LocalWorkspace).envVars };
                // a terminal's Ctrl-C reaches the pulumi process (the engine runs its plugins in process groups of their own)
                const up = await new Promise<Run>((resolve, reject) => {
                    const child = spawn(
                        "pulumi",
                        ["up", "--yes", "--skip-preview", "--stack", "e2e", "--non-interactive"],
                        { cwd: ws.dir, env, stdio: ["ignore", "pipe", "pipe"] },
                    );
                    let out = "";
                    let killed = false;
                    const take = (d: Buffer) => {
                        out += d.toString();
                        if (!killed && /canary-1: cordoned/.test(out)) {
                            killed = true;
                            child.kill("SIGINT");
                        }
                    };
                    child.stdout.on("data", take);
                    child.stderr.on("data", take);
                    child.on("error", reject);
                    child.on("close", (code) => resolve({ code, out, killed }));
                });
                output.push(up.out);
                assert.ok(up.killed);
                assert.notEqual(up.code, 0, "pulumi up exits non-zero");
                const ns = await nodes(c);
                // the node in hand finished: the command provider kills the step's launcher on the cancel, and the CLI, its parent gone, stops as on SIGINT
                assert.equal(ns["canary-1"].verified !== undefined || ns["canary-1"].placement === null, true);
                assert.equal(ns["canary-1"].cordoned, false);
                assert.equal(ns["workers-1"].placement, null, "no later pool started");
                assert.ok(Object.values(ns).every((n) => !n.cordoned && !n.move));
                assert.ok(!(await leaseHolder(c)), "the lease is free");
                steer({});
                await ws.stack.up({ onOutput: (l) => output.push(l) });
                const done = await nodes(c);
                assert.ok(
                    Object.values(done).every((n) => n.placement === null && n.verified !== undefined && !n.cordoned),
                    JSON.stringify(done),
                );
            } finally {
                ws.dispose();
            }
        },
    );

    it(
        "F4: a late node that cannot run the target (kernel 5.10): the finish refuses, naming it, and the installer's ConfigMap is unchanged " +
            KWOK,
        async () => {
            cluster = await startKwok();
            const c = cluster;
            const { file } = await writeSpec(c, [
                { name: "canary", nodeSelector: "pool=canary" },
                { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2 },
            ]);
            const { core } = clients(c);
            const before = (await core.readNamespacedConfigMap({ name: "kube-proxy", namespace: "kube-system" })).data![
                "config.conf"
            ];
            assert.equal((await rollout(c, file, [])).code, 0);
            await addKwokNode(c, { name: "workers-7", pool: "workers", kernel: "5.10.0-28-amd64" });
            const r = await rollout(c, file, ["--finish"]);
            assert.equal(r.code, 1);
            assert.match(r.out, /workers-7/);
            assert.match(r.out, /5\.10/);
            assert.equal(
                (await core.readNamespacedConfigMap({ name: "kube-proxy", namespace: "kube-system" })).data![
                    "config.conf"
                ],
                before,
            );
            const ns = await nodes(c);
            assert.equal(ns["workers-7"].placement, null);
            assert.ok(Object.values(ns).every((n) => !n.cordoned));
        },
    );

    it(
        "F2/F3/F5b: SIGINT mid-node rolls the node back and frees the lease; the API server out of reach past the renew deadline stops the run with no further write and the next run finishes the node; a 3 s API server restart mid-batch is ridden out " +
            KWOK,
        async () => {
            cluster = await startCluster({ nodes: "kwok" });
            const c = cluster;
            const original = await installerSpec(c);
            const { file, hash, config } = await writeSpec(c, [
                { name: "canary", nodeSelector: "pool=canary" },
                { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2 },
                { name: "batch", nodeSelector: "pool=batch" },
            ]);
            steer({ sleepMs: 3000 });
            let r = await rollout(c, file, ["--pool", "canary"], {
                on: /canary-1: kube-proxy \S* running on configuration/,
                signal: "SIGINT",
            });
            assert.ok(r.killed);
            assert.equal(r.code, 1);
            assert.match(r.out, /SIGINT received/);
            assert.match(r.out, /node canary-1 \(pool canary\) failed interrupted/);
            assert.match(r.out, /node canary-1 was rolled back to ipvs mode/);
            assert.ok(!(await leaseHolder(c)), "the lease is released at once");
            assert.deepEqual((await nodes(c))["canary-1"], {
                placement: null,
                verified: undefined,
                move: undefined,
                cordoned: false,
            });

            // F5b: while canary-1's check runs, the API server is out of reach for 8 s, longer than the
            // run's renew deadline (a 4 s lease: 2.7 s after its last renewal): the run stops without
            // another write, canary-1 keeps its move memory and cordon, and the lease is freed once
            // the server is back (its release is a compare-and-swap on the holder)
            steer({ sleepMs: 4000 });
            r = await rollout(c, file, ["--pool", "canary"], {
                on: /canary-1: kube-proxy \S* running on configuration/,
                then: () => restartDaemon(c, "kube-apiserver", 8000),
            });
            assert.equal(r.code, 1, r.out);
            assert.match(r.out, /the rollout lease was not renewed for [\d.]+s \(it lasts 4s/);
            assert.match(r.out, /node canary-1 is left as it is, mid-move and cordoned/);
            const left = (await nodes(c))["canary-1"];
            assert.deepEqual(
                { placement: left.placement, cordoned: left.cordoned, phase: JSON.parse(left.move ?? "{}").phase },
                { placement: hash, cordoned: true, phase: "switching" },
            );
            assert.ok(!(await leaseHolder(c)), "the lease is released once the server answers");

            // F3: the next run (a 30 s lease: it stops writing 20 s after its last renewal) finishes
            // canary-1's move; while workers-1 and workers-2 run their 1 s checks, the API server
            // dies for 3 s and comes back: their releases meet it down, and the run rides it out
            steer({ sleepMs: 1000 });
            r = await rolloutThroughRestart(c, file, [], "workers-2");
            assert.match(r.out, /canary-1: resuming a move a previous run left in phase switching/);
            steer({});
            r = await rollout(c, file, ["--finish"]);
            assert.equal(r.code, 0, r.out);
            await assertFinished(c, hash, config, original);
        },
    );

    it(
        "F5: a second rollout on the cluster refuses, naming the holder, and undoes nothing of the first " + KWOK,
        async () => {
            cluster = await startKwok();
            const c = cluster;
            const pools = [
                { name: "canary", nodeSelector: "pool=canary" },
                { name: "workers", nodeSelector: "pool=workers" },
            ];
            const first = await writeSpec(c, pools);
            const second = await writeSpec(c, pools, { onFailure: "stop" });
            steer({ sleepMs: 2000 });
            let secondRun: Promise<Run> | undefined;
            const firstRun = rollout(
                c,
                first.file,
                [],
                {
                    on: /canary-1: cordoned/,
                    then: () => void (secondRun = rollout(c, second.file, [], undefined, "stack prod")),
                },
                "stack dev",
            );
            const a = await firstRun;
            const b = await secondRun!;
            assert.equal(b.code, 1);
            assert.match(b.out, /another rollout holds this cluster: stack dev@\S+\/pid \d+/);
            assert.equal(a.code, 0, a.out);
            const ns = await nodes(c);
            for (const n of ["canary-1", "workers-1", "workers-2"])
                assert.deepEqual(
                    ns[n],
                    { placement: first.hash, verified: first.hash, move: undefined, cordoned: false },
                    n,
                );
        },
    );

    it(
        "F9: a kube-proxy pod replaced on a moved node during the soak fails the pool and rolls that node back " + KWOK,
        async () => {
            cluster = await startKwok(1);
            const c = cluster;
            const { file, hash } = await writeSpec(c, [
                { name: "canary", nodeSelector: "pool=canary", soak: "40s" },
                { name: "workers", nodeSelector: "pool=workers" },
            ]);
            const { core } = clients(c);
            const replacePod = async () => {
                const pods = await core.listNamespacedPod({
                    namespace: "kube-system",
                    labelSelector: `${MARKS.configLabel}=${hash}`,
                    fieldSelector: "spec.nodeName=canary-1",
                });
                for (const p of pods.items)
                    await core.deleteNamespacedPod({ name: p.metadata!.name!, namespace: "kube-system" });
            };
            const r = await rollout(c, file, [], { on: /pool canary: soaking/, then: replacePod });
            assert.equal(r.code, 1, r.out);
            assert.match(
                r.out,
                /node canary-1 \(pool canary\) failed soak: kube-proxy pod \S+ was replaced by \S+ during the soak/,
            );
            const ns = await nodes(c);
            assert.deepEqual(ns["canary-1"], {
                placement: null,
                verified: undefined,
                move: undefined,
                cordoned: false,
            });
            assert.equal(ns["workers-1"].placement, null, "the next pool did not move");
        },
    );
});
