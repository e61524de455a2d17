// End to end on the reference cluster: a real etcd, API server, controller manager and
// scheduler, the real Pulumi engine and the kube-proxy-mode program, kwok for kubelets.
// kwok nodes run no process, so the built-in node checks (the mode the process chose, leftovers,
// sync health, a Service connection) CANNOT run here: these tests turn them off and say so in
// their names. What they test is everything the API shows: order, limits, isolation, rollback,
// resume, the installer's shape. Real nodes are tests/e2e/nodes.e2e.test.ts.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { ClusterState } from "../../scripts/referenceCluster.js";
import { MARKS } from "../../components/core/plan.js";
import { KUBE_PROXY_MODE_TYPE } from "../../components/core/types.js";
import { formatEvent, parseEvents } from "../../components/rollout/events.js";
import { ROOT } from "../helpers.js";
import type { EngineEvent } from "@pulumi/pulumi/automation";
import {
    clients,
    leastPrivilegeKubeconfig,
    nodeSpecsAndLabels,
    resourceVersions,
    startCluster,
    stopCluster,
    watchCordons,
    workspace,
    type Workspace,
} from "./support.js";

const KWOK = "(kwok nodes: built-in node checks not run)";
const NFT = { mode: "nftables", nodePortAddresses: ["0.0.0.0/0"] };

function kubeSystem(rv: Record<string, string>): Record<string, string> {
    return Object.fromEntries(Object.entries(rv).filter(([k]) => !k.startsWith("Node ")));
}

/** What `up` did to each rollout step (command:local:Command): resource name -> its ops in order (same, update, create-replacement, replace...). */
function stepOps(): { onEvent: (e: EngineEvent) => void; ops: Record<string, string> } {
    const ops: Record<string, string> = {};
    return {
        ops,
        onEvent: (e) => {
            const m = e.resOutputsEvent?.metadata;
            if (m && m.type === "command:local:Command") {
                const name = m.urn.split("::").pop()!;
                ops[name] = ops[name] ? `${ops[name]},${m.op}` : m.op;
            }
        },
    };
}

describe("@e2e KubeProxyMode on the reference cluster " + KWOK, function () {
    this.timeout(900_000);
    let cluster: ClusterState | undefined;
    let ws: Workspace | undefined;
    const lines: string[] = [];
    const onOutput = (s: string) => lines.push(s);

    beforeEach(() => {
        lines.length = 0;
    });
    afterEach(async function () {
        if (this.currentTest?.state === "failed")
            process.stderr.write(`--- pulumi output of the failed test ---\n${lines.join("").slice(-8000)}\n`);
        ws?.dispose();
        ws = undefined;
        await stopCluster(cluster);
        cluster = undefined;
    });

    async function canonical(c: ClusterState) {
        const { core, apps } = clients(c);
        const cm = await core.readNamespacedConfigMap({ name: "kube-proxy", namespace: "kube-system" });
        const ds = await apps.readNamespacedDaemonSet({ name: "kube-proxy", namespace: "kube-system" });
        const nodes = (await core.listNode()).items;
        const pods = (await core.listNamespacedPod({ namespace: "kube-system", labelSelector: "k8s-app=kube-proxy" }))
            .items;
        const dsList = (await apps.listNamespacedDaemonSet({ namespace: "kube-system" })).items.map(
            (d) => d.metadata!.name!,
        );
        return { config: cm.data!["config.conf"], ds, nodes, pods, dsList };
    }

    it("preview shows the configuration diff and the plan, and changes nothing in kube-system or on any Node", async () => {
        cluster = await startCluster();
        ws = await workspace(cluster, NFT);
        const before = await resourceVersions(cluster);
        const nodesBefore = await nodeSpecsAndLabels(cluster);
        const r = await ws.stack.preview({ diff: true, onOutput });
        // the Automation API hands the engine's diagnostics over on stderr
        const shown = r.stdout + r.stderr;
        assert.match(shown, /-mode: ipvs/);
        assert.match(shown, /\+mode: nftables/);
        assert.match(shown, /1\. pool canary \(pool=canary\): 1 node\(s\), max 1 at a time/);
        assert.match(shown, /2\. pool workers \(pool=workers\): 3 node\(s\), max 2 at a time/);
        assert.match(shown, /batch 1: workers-1, workers-2/);
        assert.match(shown, /3\. pool batch/);
        assert.match(r.stdout, /ConfigMapPatch/, "the canonical ConfigMap change is part of the preview");
        const after = await resourceVersions(cluster);
        assert.deepEqual(kubeSystem(after), kubeSystem(before), "preview must not write to kube-system");
        assert.deepEqual(await nodeSpecsAndLabels(cluster), nodesBefore, "preview must not touch a Node");
        const nodeRv = (rv: Record<string, string>) =>
            Object.fromEntries(Object.entries(rv).filter(([k]) => k.startsWith("Node ")));
        assert.deepEqual(nodeRv(after), nodeRv(before), "no Node's resourceVersion moved during preview");
    });

    it(
        "up moves pools in order, never more than maxUnavailable nodes of a pool cordoned, and leaves kubeadm's shape; each step's CLI appends the node events to KPM_EVENTS_FILE " +
            KWOK,
        async () => {
            cluster = await startCluster();
            ws = await workspace(cluster, NFT);
            // set for the engine: each step (a Command running the CLI through its launcher) inherits it
            const eventsFile = join(ws.dir, "rollout-events.jsonl");
            ws.stack.workspace.envVars.KPM_EVENTS_FILE = eventsFile;
            const original = await canonical(cluster);
            const watch = await watchCordons(cluster);
            try {
                await ws.stack.up({ onOutput });
            } finally {
                watch.stop();
            }
            assert.deepEqual(
                watch.poolOrder,
                ["canary", "workers", "batch"],
                `cordon order: ${watch.events.join(", ")}`,
            );
            assert.ok(
                watch.maxCordoned.canary <= 1 && watch.maxCordoned.workers <= 2 && watch.maxCordoned.batch <= 1,
                JSON.stringify(watch.maxCordoned),
            );
            assert.equal(watch.maxCordoned.workers, 2, "workers moved two at a time");
            const end = await canonical(cluster);
            assert.match(end.config, /^mode: nftables$/m, "the canonical ConfigMap holds the new configuration");
            assert.match(end.config, /^- 0\.0\.0\.0\/0$/m);
            assert.deepEqual(
                end.ds.spec!.template,
                original.ds.spec!.template,
                "the DaemonSet's pod template is kubeadm's again",
            );
            assert.deepEqual(end.ds.spec!.updateStrategy, original.ds.spec!.updateStrategy);
            assert.equal(end.ds.metadata!.annotations?.[MARKS.originalSpecAnnotation], undefined);
            assert.deepEqual(end.dsList, ["kube-proxy"], "no rollout DaemonSet is left");
            for (const n of end.nodes) {
                assert.equal(n.spec?.unschedulable, undefined, `${n.metadata!.name} is not cordoned`);
                assert.equal(
                    n.metadata!.labels?.[MARKS.configLabel],
                    undefined,
                    `${n.metadata!.name} runs the installer's DaemonSet`,
                );
            }
            assert.equal(end.pods.length, cluster.nodes.length);
            assert.ok(
                end.pods.every(
                    (p) => p.metadata!.ownerReferences?.[0]?.name === "kube-proxy" && p.status?.phase === "Running",
                ),
            );
            const out = lines.join("");
            assert.match(out, /pool canary node canary-1: moved; built-in node checks are off/);
            assert.match(out, /finished: every node runs nftables/);
            // the pool steps' and the finish's events, in one file: every node moved, then handed back
            const events = parseEvents(readFileSync(eventsFile, "utf8"));
            for (const n of cluster.nodes)
                for (const [step, released] of [
                    ["move", "released moved"],
                    ["hand-back", "released handed back"],
                ] as const) {
                    const mine = events.filter(
                        (e) => e.type !== "batch started" && e.node === n.name && e.step === step,
                    );
                    assert.deepEqual(
                        mine.map((e) => (e.type === "released" ? `released ${e.how}` : e.type)),
                        ["cordoned", "kube-proxy running", released],
                        `${n.name} ${step}: ${JSON.stringify(mine)}`,
                    );
                    assert.ok(
                        mine.every((e, i) => i === 0 || e.at >= mine[i - 1].at),
                        `${n.name} ${step}: in time order`,
                    );
                }
            assert.deepEqual(
                events.flatMap((e) => (e.type === "batch started" ? [`${e.step} ${e.pool} ${e.index}/${e.of}`] : [])),
                [
                    "move canary 1/1",
                    "move workers 1/2",
                    "move workers 2/2",
                    "move batch 1/2",
                    "move batch 2/2",
                    "hand-back canary 1/1",
                    "hand-back workers 1/2",
                    "hand-back workers 2/2",
                    "hand-back batch 1/2",
                    "hand-back batch 2/2",
                ],
            );
            // the file and the log tell the same: each event's line is in the up's output
            for (const e of events) assert.ok(out.includes(formatEvent(e)), `${formatEvent(e)} not in the output`);
        },
    );

    it(
        "isolation: a kube-proxy pod deleted on a node whose turn has not come returns on the old configuration " +
            KWOK,
        async () => {
            cluster = await startCluster();
            ws = await workspace(cluster, {
                ...NFT,
                pools: [
                    { name: "canary", nodeSelector: "pool=canary", soak: "20s" },
                    { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2 },
                    { name: "batch", nodeSelector: "pool=batch" },
                ],
            });
            const { core } = clients(cluster);
            const up = ws.stack.up({ onOutput });
            // wait for the canary to be done and soaking
            const until = Date.now() + 240_000;
            while (!lines.join("").includes("pool canary: soaking")) {
                if (Date.now() > until) throw new Error("the canary did not reach its soak");
                await new Promise((r) => setTimeout(r, 200));
            }
            const victim = "batch-1";
            const before = (
                await core.listNamespacedPod({
                    namespace: "kube-system",
                    labelSelector: "k8s-app=kube-proxy",
                    fieldSelector: `spec.nodeName=${victim}`,
                })
            ).items[0];
            await core.deleteNamespacedPod({
                name: before.metadata!.name!,
                namespace: "kube-system",
                gracePeriodSeconds: 0,
            });
            let replacement;
            for (let i = 0; i < 100; i++) {
                replacement = (
                    await core.listNamespacedPod({
                        namespace: "kube-system",
                        labelSelector: "k8s-app=kube-proxy",
                        fieldSelector: `spec.nodeName=${victim}`,
                    })
                ).items.find((p) => p.metadata!.name !== before.metadata!.name && !p.metadata!.deletionTimestamp);
                if (replacement) break;
                await new Promise((r) => setTimeout(r, 200));
            }
            assert.ok(replacement, "the DaemonSet recreated the pod");
            assert.equal(
                replacement.metadata!.ownerReferences![0].name,
                "kube-proxy",
                "it belongs to the installer's DaemonSet",
            );
            const volume = replacement.spec!.volumes!.find((v) => v.configMap)!;
            assert.equal(volume.configMap!.name, "kube-proxy", "it mounts the canonical ConfigMap");
            const cm = await core.readNamespacedConfigMap({ name: "kube-proxy", namespace: "kube-system" });
            assert.match(
                cm.data!["config.conf"],
                /^mode: ipvs$/m,
                "which still holds the old configuration while the rollout runs",
            );
            await up;
        },
    );

    it(
        "a failing hook on a node of the second pool stops the rollout, rolls that node back, and a fixed hook resumes without redoing the first pool " +
            KWOK,
        async () => {
            cluster = await startCluster();
            const hook = {
                name: "ingress-nodeport",
                command: [process.execPath, join(ROOT, "tests", "e2e", "hooks", "check-nodeport.js")],
                env: { FAIL_ON_NODE: "workers-2" },
            };
            ws = await workspace(cluster, { ...NFT, verify: { nodeChecks: false, hooks: [hook] } });
            const { core } = clients(cluster);
            await assert.rejects(ws.stack.up({ onOutput }), (e: Error) => {
                assert.match(e.message, /workers-2/);
                assert.match(e.message, /hook ingress-nodeport/);
                assert.match(e.message, /NodePort 30080 did not answer on workers-2/);
                return true;
            });
            const node = async (n: string) => core.readNode({ name: n });
            const w2 = await node("workers-2");
            assert.equal(w2.spec?.unschedulable, undefined, "workers-2 was uncordoned");
            assert.equal(
                w2.metadata!.labels?.[MARKS.configLabel],
                undefined,
                "workers-2 is back on the installer's DaemonSet",
            );
            assert.equal(w2.metadata!.annotations?.[MARKS.verifiedAnnotation], undefined);
            for (const b of ["batch-1", "batch-2"]) {
                const n = await node(b);
                assert.equal(n.metadata!.labels?.[MARKS.configLabel], undefined, `${b} (third pool) untouched`);
                assert.equal(n.spec?.unschedulable, undefined);
            }
            const canaryVerified = (await node("canary-1")).metadata!.annotations![MARKS.verifiedAnnotation];
            assert.ok(canaryVerified, "the canary was verified before the failure");
            const cm = await core.readNamespacedConfigMap({ name: "kube-proxy", namespace: "kube-system" });
            assert.match(cm.data!["config.conf"], /^mode: ipvs$/m, "the canonical ConfigMap did not change");

            lines.length = 0;
            await ws.setConfig({ verify: { nodeChecks: false, hooks: [{ ...hook, env: { FAIL_ON_NODE: "" } }] } });
            await ws.stack.up({ onOutput });
            const out = lines.join("");
            assert.match(out, /pool canary node canary-1: already verified on \w+, skipped/);
            // the pools' steps do not move it again (the finish then hands it back to the installer's DaemonSet)
            const steps = out.split(/ConfigMap kube-system\/kube-proxy: config.conf now holds/)[0];
            assert.doesNotMatch(steps, /pool canary node canary-1: cordoned/);
            assert.equal(
                (await node("canary-1")).metadata!.annotations![MARKS.verifiedAnnotation],
                canaryVerified,
                "the canary was not redone",
            );
            const done = await core.readNamespacedConfigMap({ name: "kube-proxy", namespace: "kube-system" });
            assert.match(done.data!["config.conf"], /^mode: nftables$/m);
        },
    );

    it(
        "steps as Commands (SIMULATED command plugin unless a real one is on PATH): a rotated kubeconfig re-runs no step; a new target replaces every step, which runs with the NEW kubeconfig " +
            KWOK,
        async () => {
            cluster = await startCluster({
                pools: [
                    ["canary", 1],
                    ["workers", 2],
                    ["batch", 1],
                ],
            });
            ws = await workspace(cluster, NFT);
            // the first credential: its own ServiceAccount, revoked below by deleting that account
            await ws.stack.setConfig("kube-proxy-mode:kubeconfig", {
                value: await leastPrivilegeKubeconfig(cluster, "kpm-e2e-first"),
                secret: true,
            });
            await ws.stack.up({ onOutput });
            const promotion = (await ws.stack.outputs()).promotion?.value;
            assert.ok(promotion?.finishedAt, "the first up recorded a promotion");

            // rotate: a new credential, the first one revoked (were it used again, the step would fail: 401)
            await ws.stack.setConfig("kube-proxy-mode:kubeconfig", {
                value: await leastPrivilegeKubeconfig(cluster),
                secret: true,
            });
            await clients(cluster).core.deleteNamespacedServiceAccount({
                name: "kpm-e2e-first",
                namespace: "kube-system",
            });
            const rotated = stepOps();
            lines.length = 0;
            await ws.stack.up({ onOutput, onEvent: rotated.onEvent });
            assert.deepEqual(
                rotated.ops,
                {
                    "kube-proxy-pool-canary": "same",
                    "kube-proxy-pool-workers": "same",
                    "kube-proxy-pool-batch": "same",
                    "kube-proxy-finish": "same",
                },
                "no step re-ran on a rotated kubeconfig",
            );
            assert.deepEqual(
                (await ws.stack.outputs()).promotion?.value,
                promotion,
                "the promotion record (and its finishedAt) is kept",
            );
            assert.doesNotMatch(lines.join(""), /cordoned/, "nothing moved");

            // a new target: every step's triggers change, so each is replaced and runs; with the stored
            // (revoked) kubeconfig it would fail: the replacement gets the new one
            await ws.setConfig({ nodePortAddresses: ["0.0.0.0/0", "::/0"] });
            const moved = stepOps();
            lines.length = 0;
            await ws.stack.up({ onOutput, onEvent: moved.onEvent });
            assert.deepEqual(Object.keys(moved.ops).sort(), [
                "kube-proxy-finish",
                "kube-proxy-pool-batch",
                "kube-proxy-pool-canary",
                "kube-proxy-pool-workers",
            ]);
            assert.ok(
                Object.values(moved.ops).every((op) => /replace/.test(op) && !/update|same/.test(op)),
                `every step replaced: ${JSON.stringify(moved.ops)}`,
            );
            assert.match(lines.join(""), /pool canary node canary-1: moved/);
            assert.match(
                (await canonical(cluster)).config,
                /^- ::\/0$/m,
                "the new target is in the canonical ConfigMap",
            );
            const after = (await ws.stack.outputs()).promotion?.value;
            assert.notEqual(after?.configHash, promotion.configHash, "the promotion record is the new target's");
        },
    );

    it("a node with kernel 5.10 in a targeted pool fails the preview, naming it, as one error on the KubeProxyMode component (no stack trace, no 'error serializing property'), and nothing changes", async () => {
        cluster = await startCluster({ nodeKernels: { "workers-3": "5.10.205-195.807.amzn2.x86_64" } });
        ws = await workspace(cluster, NFT);
        const before = kubeSystem(await resourceVersions(cluster));
        const nodesBefore = await nodeSpecsAndLabels(cluster);
        const errors: { urn: string; message: string }[] = [];
        const onEvent = (e: EngineEvent) => {
            const d = e.diagnosticEvent;
            if (d?.severity === "error") errors.push({ urn: d.urn ?? "", message: d.message });
        };
        const started = Date.now();
        await assert.rejects(ws.stack.preview({ onOutput, onEvent }), (e: Error) => {
            assert.match(e.message, /workers-3: kernel 5\.10\.205-195\.807\.amzn2\.x86_64 is older than 5\.13/);
            return true;
        });
        // a figure, not an assertion: how long the engine took to report the refusal
        process.stderr.write(
            `      refused preview: ${((Date.now() - started) / 1000).toFixed(1)} s; error diagnostics: ${JSON.stringify(errors, null, 1).replace(/\n/g, "\n      ")}\n`,
        );
        // the engine's diagnostics: the refusal once, against the component's URN, as its text alone
        const refusal = errors.filter((d) => /kernel 5\.10\.205/.test(d.message));
        assert.equal(refusal.length, 1, `one error diagnostic with the refusal: ${JSON.stringify(errors, null, 1)}`);
        assert.match(refusal[0].urn, new RegExp(`::${KUBE_PROXY_MODE_TYPE}::kube-proxy$`), "attached to the component");
        assert.match(refusal[0].message, /^KubeProxyMode kube-proxy: kube-proxy-mode refuses this change/);
        assert.doesNotMatch(refusal[0].message, /error serializing property/);
        assert.doesNotMatch(refusal[0].message, /\n\s+at /, "no stack frames");
        assert.deepEqual(kubeSystem(await resourceVersions(cluster)), before);
        assert.deepEqual(await nodeSpecsAndLabels(cluster), nodesBefore);
    });

    it(
        "rollback is two commands: set the mode back, up; every node returns to the old configuration, ipvs settings included " +
            KWOK,
        async () => {
            cluster = await startCluster();
            ws = await workspace(cluster, NFT);
            const original = await canonical(cluster);
            assert.match(original.config, /^ {2}scheduler: lc$/m, "the reference cluster starts with scheduler lc");
            await ws.stack.up({ onOutput });
            const moved = (await canonical(cluster)).config;
            assert.match(moved, /^mode: nftables$/m);
            assert.match(
                moved,
                /^ {2}strictARP: false # kube-proxy-mode: was true in ipvs mode, restored on a move back to ipvs$/m,
            );
            await ws.setConfig({ mode: "ipvs", nodePortAddresses: undefined });
            await ws.stack.up({ onOutput });
            const back = await canonical(cluster);
            assert.match(back.config, /^mode: ipvs$/m);
            assert.match(back.config, /^ {2}scheduler: lc\n/m, "the scheduler the move reset is back");
            assert.match(back.config, /^ {2}strictARP: true\n/m, "strictARP (MetalLB needs it in ipvs mode) is back");
            assert.deepEqual(back.ds.spec!.template, original.ds.spec!.template);
            assert.ok(back.nodes.every((n) => !n.metadata!.labels?.[MARKS.configLabel] && !n.spec?.unschedulable));
        },
    );

    it("pulumi preview --save-plan, then pulumi up --plan applies exactly that plan " + KWOK, async () => {
        cluster = await startCluster({
            pools: [
                ["canary", 1],
                ["workers", 2],
                ["batch", 1],
            ],
        });
        ws = await workspace(cluster, NFT);
        const plan = join(ws.dir, "plan.json");
        await ws.stack.preview({ plan, onOutput });
        await ws.stack.up({ plan, onOutput });
        assert.match((await canonical(cluster)).config, /^mode: nftables$/m);
    });

    it("deleting the stack leaves the cluster working, with no node cordoned " + KWOK, async () => {
        cluster = await startCluster({
            pools: [
                ["canary", 1],
                ["workers", 2],
                ["batch", 1],
            ],
        });
        ws = await workspace(cluster, NFT);
        await ws.stack.up({ onOutput });
        await ws.stack.destroy({ onOutput });
        const end = await canonical(cluster);
        assert.match(end.config, /^mode: nftables$/m, "the migration stays");
        assert.ok(end.nodes.every((n) => !n.spec?.unschedulable));
        assert.equal(end.pods.length, cluster.nodes.length);
        assert.ok(end.pods.every((p) => p.status?.phase === "Running"));
    });
});
