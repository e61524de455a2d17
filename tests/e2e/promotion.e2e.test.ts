// Environments in order, end to end: three stacks (dev -> staging -> prod) of the config-driven
// program in ONE Pulumi project with a file backend, so StackReferences resolve, each stack on its
// own reference cluster. prod's preview must refuse while staging has not finished, has verified
// its nodes by hooks only, is too fresh or finished another target, and pass after.
//
// kwok nodes run no process: the built-in node checks cannot run, every stack sets
// verify.nodeChecks: false, and the nodes are verified by a hook (which is exactly the case the
// gate refuses until prod accepts hooks as verification).
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { LocalWorkspace, type Stack } from "@pulumi/pulumi/automation";
import type { ClusterState } from "../../scripts/referenceCluster.js";
import { parseCurrentConfig } from "../../components/core/config.js";
import { formatDuration } from "../../components/core/duration.js";
import { renderConfiguration } from "../../components/core/render.js";
import { parseKubeVersion } from "../../components/core/versions.js";
import { CLI, ROOT, runAsync, type CliRun } from "../helpers.js";
import {
    clients,
    projectDir,
    setKubeconfig,
    setStackConfig,
    startCluster,
    stopCluster,
    workspace,
    type Workspace,
} from "./support.js";

const KWOK = "(kwok nodes: built-in node checks not run)";
const PROJECT = "kube-proxy-mode";
const ENVS = ["dev", "staging", "prod"] as const;
type Env = (typeof ENVS)[number];
const fq = (stack: Env) => `organization/${PROJECT}/${stack}`;
const POOLS = [
    { name: "canary", nodeSelector: "pool=canary", maxUnavailable: 1 },
    { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 1 },
];
const HOOK = join(ROOT, "tests", "e2e", "hooks", "check-nodeport.js");
const hook = (failOn = "") => ({
    name: "ingress-nodeport",
    command: [process.execPath, HOOK],
    env: { FAIL_ON_NODE: failOn },
});
const TARGET = {
    mode: "nftables",
    nodePortAddresses: ["0.0.0.0/0"],
    pools: POOLS,
    verify: { nodeChecks: false, hooks: [hook()] },
};
// long enough that prod's two refused previews (about 3 s each here, alone) are judged inside the
// soak with room for CI's parallel load
const PROD_SOAK_SECONDS = 75;
const SOAK = formatDuration(PROD_SOAK_SECONDS);

export interface Environments {
    dir: string;
    envVars: Record<string, string>;
    stacks: Record<Env, Stack>;
    setConfig(env: Env, values: Record<string, unknown>): Promise<void>;
    dispose(): void;
}

/** One project directory running the root program, a file backend beside it, one stack per environment. */
export async function environments(
    clusters: Record<Env, ClusterState>,
    config: Record<Env, Record<string, unknown>>,
): Promise<Environments> {
    const { dir, envVars, pulumiCommand } = await projectDir("kpm-e2e-envs-");
    const stacks = {} as Record<Env, Stack>;
    for (const env of ENVS) {
        stacks[env] = await LocalWorkspace.createOrSelectStack(
            { stackName: env, workDir: dir },
            { workDir: dir, envVars, pulumiCommand },
        );
    }
    const e: Environments = {
        dir,
        envVars,
        stacks,
        setConfig: (env, values) => setStackConfig(stacks[env], values),
        dispose() {
            rmSync(dir, { recursive: true, force: true });
        },
    };
    for (const env of ENVS) {
        await setKubeconfig(stacks[env], clusters[env]);
        await e.setConfig(env, config[env]);
    }
    return e;
}

/** The CLI as a user runs it, in the project directory, with the workspace's backend settings. */
function promote(envs: Environments, args: string[]): Promise<CliRun> {
    return runAsync(process.execPath, [CLI, "promote", ...args], { cwd: envs.dir, env: envs.envVars });
}

async function configMode(c: ClusterState): Promise<string> {
    const cm = await clients(c).core.readNamespacedConfigMap({ name: "kube-proxy", namespace: "kube-system" });
    return /^mode: (\S*)$/m.exec(cm.data!["config.conf"])?.[1] ?? "";
}

describe("@e2e promotion gates: dev -> staging -> prod on three reference clusters " + KWOK, function () {
    this.timeout(600_000);
    let clusters: Partial<Record<Env, ClusterState>> = {};
    let envs: Environments | undefined;
    const lines: string[] = [];
    const onOutput = (s: string) => lines.push(s);

    afterEach(async function () {
        if (this.currentTest?.state === "failed")
            process.stderr.write(`--- pulumi output of the failed test ---\n${lines.join("").slice(-8000)}\n`);
        envs?.dispose();
        envs = undefined;
        await Promise.all(Object.values(clusters).map((c) => stopCluster(c)));
        clusters = {};
    });

    /** The preview's refusal, as the user reads it. */
    async function refused(stack: Stack, upstream: Env = "staging"): Promise<string> {
        let message = "";
        await assert.rejects(stack.preview({ onOutput }), (e: Error) => {
            message = e.message;
            return true;
        });
        assert.match(
            message,
            new RegExp(`promotion gate refused: organization/kube-proxy-mode/${upstream} is not ready to be followed`),
            message.slice(-3000),
        );
        return message;
    }

    it(
        "prod's preview refuses while staging is unfinished, verified by hooks only, too fresh or on another target, and passes after " +
            KWOK,
        async () => {
            const started = Date.now();
            const mark = (what: string) =>
                process.stderr.write(`      [${Math.round((Date.now() - started) / 1000)}s] ${what}\n`);
            const [dev, staging, prod] = await Promise.all(
                ENVS.map(() =>
                    startCluster({
                        nodes: "kwok",
                        pools: [
                            ["canary", 1],
                            ["workers", 1],
                        ],
                    }),
                ),
            );
            clusters = { dev, staging, prod };
            envs = await environments(clusters as Record<Env, ClusterState>, {
                dev: TARGET,
                staging: { ...TARGET, promotion: { after: fq("dev"), minSoak: "0s", requireNodeChecks: false } },
                prod: { ...TARGET, promotion: { after: fq("staging"), minSoak: SOAK } },
            });
            const { stacks } = envs;

            // 1. nothing has run: staging has no record
            mark("step 1");
            let msg = await refused(stacks.prod);
            assert.match(
                msg,
                /organization\/kube-proxy-mode\/staging has no promotion record: it has not finished a kube-proxy-mode rollout \(run pulumi up there first/,
            );
            assert.equal(await configMode(prod), "ipvs", "a refused preview changes nothing");

            // 2. dev finishes; its record says what it verified and how
            mark("step 2");
            const devStarted = Date.now();
            await stacks.dev.up({ onOutput });
            const devRecord = (await stacks.dev.outputs()).promotion?.value;
            assert.equal(devRecord.mode, "nftables");
            assert.equal(devRecord.nodesTotal, 2);
            assert.equal(devRecord.nodesVerified, 2, "both nodes verified on the target (by the hook)");
            assert.equal(devRecord.nodesChecked, 0, "the built-in checks did not run on kwok");
            const devFinished = Date.parse(devRecord.finishedAt);
            assert.ok(
                devStarted <= devFinished && devFinished <= Date.now(),
                `finishedAt ${devRecord.finishedAt} is this run's`,
            );

            // 3. staging's rollout fails at its second pool: unfinished, no record, prod refuses
            mark("step 3");
            await envs.setConfig("staging", { verify: { nodeChecks: false, hooks: [hook("workers-1")] } });
            await assert.rejects(stacks.staging.up({ onOutput }), /workers-1/);
            assert.equal(
                (await stacks.staging.outputs()).promotion?.value,
                undefined,
                "a failed rollout records no promotion",
            );
            msg = await refused(stacks.prod);
            assert.match(msg, /staging has no promotion record/);

            // 4. staging finishes; prod, asking for another target of the same mode, refuses and names
            //    everything missing at once: the same target, verification by the node checks, the soak
            mark("step 4");
            await envs.setConfig("staging", { verify: { nodeChecks: false, hooks: [hook()] } });
            await stacks.staging.up({ onOutput });
            const stagingRecord = (await stacks.staging.outputs()).promotion?.value;
            assert.equal(stagingRecord.nodesVerified, 2);
            assert.equal(
                stagingRecord.targetHash,
                devRecord.targetHash,
                "the same target as dev, rendered on another cluster",
            );
            await envs.setConfig("prod", { nodePortAddresses: ["primary"] });
            msg = await refused(stacks.prod);
            assert.match(
                msg,
                /staging finished a different target \(nftables, target \w+\) than this stack renders \(nftables, target \w+\): nodePortAddresses: \["0\.0\.0\.0\/0"\] there, \["primary"\] here/,
            );
            assert.match(
                msg,
                /staging verified 2 of 2 node\(s\) with hooks only \(verify\.nodeChecks: false there\).*promotion\.requireNodeChecks: false/,
            );
            assert.match(
                msg,
                new RegExp(
                    `has held it for (\\d+m)?\\d+s; promotion\\.minSoak is ${SOAK}: (\\d+m)?\\d+s left \\(retry after `,
                ),
            );
            assert.equal(await configMode(prod), "ipvs");
            process.stderr.write(
                `      prod's refusal:\n${/promotion gate refused:[\s\S]*?(?=\n\s*\n|$)/.exec(msg)?.[0].replace(/^/gm, "        ")}\n`,
            );

            // 5. prod accepts hooks as verification, waits out the soak, and moves
            mark("step 5");
            await envs.setConfig("prod", {
                nodePortAddresses: ["0.0.0.0/0"],
                promotion: { after: fq("staging"), minSoak: SOAK, requireNodeChecks: false },
            });
            const ready = Date.parse(stagingRecord.finishedAt) + PROD_SOAK_SECONDS * 1000;
            msg = await refused(stacks.prod);
            assert.doesNotMatch(msg, /hooks only/, "accepted now");
            assert.match(msg, new RegExp(`promotion\\.minSoak is ${SOAK}`));
            await new Promise((r) => setTimeout(r, Math.max(0, ready - Date.now() + 1000)));
            lines.length = 0;
            const preview = await stacks.prod.preview({ onOutput });
            assert.match(
                preview.stdout + preview.stderr,
                new RegExp(
                    String.raw`promotion gate open: organization\/kube-proxy-mode\/staging finished nftables .* verified 2\/2 node\(s\), held for (\d+m)?\d+s \(minSoak ${SOAK}\)`,
                ),
            );
            assert.equal(await configMode(prod), "ipvs", "preview changes nothing");
            await stacks.prod.up({ onOutput });
            assert.equal(await configMode(prod), "nftables");
            assert.equal((await stacks.prod.outputs()).promotion?.value?.nodesVerified, 2);
            process.stderr.write(`      (promotion chain took ${Math.round((Date.now() - started) / 1000)}s)\n`);
        },
    );

    it(
        "kube-proxy-mode promote previews every stack, then applies them in order and stops at the first refusal, with one summary " +
            KWOK,
        async () => {
            const [dev, staging, prod] = await Promise.all(
                ENVS.map(() =>
                    startCluster({
                        nodes: "kwok",
                        pools: [
                            ["canary", 1],
                            ["workers", 1],
                        ],
                    }),
                ),
            );
            clusters = { dev, staging, prod };
            // staging must let dev soak an hour: promote applies dev, is refused at staging, and stops
            envs = await environments(clusters as Record<Env, ClusterState>, {
                dev: TARGET,
                staging: { ...TARGET, promotion: { after: fq("dev"), minSoak: "1h", requireNodeChecks: false } },
                prod: { ...TARGET, promotion: { after: fq("staging"), minSoak: "0s", requireNodeChecks: false } },
            });

            // without --yes: previews only; the gates that wait for an earlier stack are not failures
            const preview = await promote(envs, ["--stacks", "dev,staging,prod"]);
            lines.push(preview.stderr);
            assert.equal(preview.code, 0, preview.stderr.slice(-3000));
            process.stderr.write(`      promote (preview only):\n${preview.stdout.replace(/^/gm, "        ")}\n`);
            const table = preview.stdout.split("\n");
            assert.match(table[0], /^STACK\s+CLUSTER\s+FROM -> TO\s+NODES VERIFIED\s+DURATION\s+RESULT$/);
            assert.match(
                table[1],
                /^dev\s+\S+ \(https:\/\/127\.0\.0\.1:\d+\)\s+ipvs \(\w+\) -> nftables \(\w+\)\s+-\s+\S+\s+previewed$/,
            );
            assert.match(
                table[2],
                /^staging\s+.*waits for upstream: its gate waits for organization\/kube-proxy-mode\/dev, which moves first$/,
            );
            assert.match(
                table[3],
                /^prod\s+.*waits for upstream: its gate waits for organization\/kube-proxy-mode\/staging, which moves first$/,
            );
            assert.match(preview.stderr, /promote: preview only; pass --yes to apply the stacks in this order/);
            for (const c of [dev, staging, prod])
                assert.equal(await configMode(c), "ipvs", "preview only changes nothing");

            // --yes: dev moves; staging's gate refuses (dev has not held it for 1h): stop, prod is not run
            const run = await promote(envs, ["--stacks", "dev,staging,prod", "--yes", "--json"]);
            lines.push(run.stderr);
            assert.equal(run.code, 1, run.stderr.slice(-3000));
            process.stderr.write(`      promote --yes --json:\n${run.stdout.replace(/^/gm, "        ")}\n`);
            const summary = JSON.parse(run.stdout);
            assert.equal(summary.ok, false);
            assert.deepEqual(
                summary.stacks.map((r: any) => [r.stack, r.result]),
                [
                    ["dev", "applied"],
                    ["staging", "refused by gate"],
                    ["prod", "not run"],
                ],
            );
            const [d, st, p] = summary.stacks;
            assert.match(d.cluster, /\(https:\/\/127\.0\.0\.1:\d+\)$/);
            assert.match(d.from, /^ipvs \(\w+\)$/);
            assert.match(d.to, /^nftables \(\w+\)$/);
            assert.equal(d.nodesVerified, "2/2 (2 by hooks only)");
            assert.ok(d.durationSeconds > 0);
            assert.equal(
                st.detail,
                /promotion gate refused:[^\n]*?minSoak is 1h[^\n]*?\)/.exec(st.detail)?.[0],
                "the refusal, without the program's stack trace",
            );
            assert.match(
                st.detail,
                /^promotion gate refused: organization\/kube-proxy-mode\/dev is not ready to be followed: - .*promotion\.minSoak is 1h: 59m\d*s? left/,
            );
            assert.equal(p.detail, "stopped at staging");
            assert.equal(p.durationSeconds, null);
            assert.match(run.stderr, /\[dev\] up[\s\S]*\[staging\] up/, "dev before staging");
            assert.doesNotMatch(run.stderr, /\[prod\] up/, "prod is not run after the refusal");
            assert.equal(await configMode(dev), "nftables");
            assert.equal(await configMode(staging), "ipvs", "staging did not move");
            assert.equal(await configMode(prod), "ipvs", "prod did not move");
        },
    );

    it(
        "a configuration written by hand is not a verified rollout: the stack after it refuses, naming the unverified nodes " +
            KWOK,
        async () => {
            const [dev, staging] = await Promise.all(
                ["dev", "staging"].map(() =>
                    startCluster({
                        nodes: "kwok",
                        pools: [
                            ["canary", 1],
                            ["workers", 1],
                        ],
                    }),
                ),
            );
            clusters = { dev, staging };
            // someone writes dev's target into its ConfigMap by hand, before dev's stack ever runs
            const { core } = clients(dev);
            const cm = await core.readNamespacedConfigMap({ name: "kube-proxy", namespace: "kube-system" });
            const current = parseCurrentConfig(
                JSON.stringify({
                    apiVersion: "v1",
                    kind: "ConfigMap",
                    metadata: { name: "kube-proxy", namespace: "kube-system" },
                    data: cm.data,
                }),
            );
            const byHand = renderConfiguration(
                current,
                { mode: "nftables", nodePortAddresses: ["0.0.0.0/0"] },
                parseKubeVersion("1.37"),
            ).config;
            await core.replaceNamespacedConfigMap({
                name: "kube-proxy",
                namespace: "kube-system",
                body: { ...cm, data: { ...cm.data, "config.conf": byHand } },
            });
            envs = await environments(
                { dev, staging, prod: staging },
                {
                    dev: TARGET,
                    staging: { ...TARGET, promotion: { after: fq("dev"), minSoak: "0s", requireNodeChecks: false } },
                    prod: TARGET,
                },
            );
            // dev's stack finds its target already in place: nothing moves, nothing is verified
            await envs.stacks.dev.up({ onOutput });
            assert.match(lines.join(""), /every node already runs nftables/);
            const record = (await envs.stacks.dev.outputs()).promotion?.value;
            assert.deepEqual(
                [record.nodesVerified, record.nodesTotal, record.unverified],
                [0, 2, ["canary-1", "workers-1"]],
            );
            const msg = await refused(envs.stacks.staging, "dev");
            assert.match(
                msg,
                /organization\/kube-proxy-mode\/dev verified 0 of 2 node\(s\) on configuration \w+ \(not verified: canary-1, workers-1\); every node must be verified by its rollout \(a configuration written by hand is not\)/,
            );
            assert.equal(await configMode(staging), "ipvs", "staging did not move");
        },
    );

    it(
        "update plans: a ConfigMap edited after the reviewed preview makes up --plan refuse, and nothing moves " + KWOK,
        async () => {
            const c = await startCluster({
                nodes: "kwok",
                pools: [
                    ["canary", 1],
                    ["workers", 1],
                ],
            });
            clusters = { dev: c };
            let ws: Workspace | undefined;
            try {
                ws = await workspace(c, TARGET);
                const plan = join(ws.dir, "plan.json");
                await ws.stack.preview({ plan, onOutput });
                // after the review, someone changes the installer's configuration by hand
                const { core } = clients(c);
                const cm = await core.readNamespacedConfigMap({ name: "kube-proxy", namespace: "kube-system" });
                const edited = cm.data!["config.conf"].replace(/^( {2}minSyncPeriod: )5s$/m, "$17s");
                assert.notEqual(edited, cm.data!["config.conf"], "the fixture has ipvs.minSyncPeriod: 5s");
                await core.replaceNamespacedConfigMap({
                    name: "kube-proxy",
                    namespace: "kube-system",
                    body: { ...cm, data: { ...cm.data, "config.conf": edited } },
                });
                await assert.rejects(ws.stack.up({ plan, onOutput }), (e: Error) => {
                    assert.match(e.message, /violates plan/);
                    process.stderr.write(
                        `      up --plan refused:\n${e.message
                            .split("\n")
                            .filter((l) => /violates plan|error:/.test(l))
                            .slice(0, 4)
                            .join("\n")
                            .replace(/^/gm, "        ")}\n`,
                    );
                    return true;
                });
                assert.equal(await configMode(c), "ipvs");
                const nodes = (await core.listNode()).items;
                assert.ok(
                    nodes.every((n) => !n.metadata!.labels?.["kube-proxy-mode.io/config"] && !n.spec?.unschedulable),
                    "no node was touched",
                );
            } finally {
                ws?.dispose();
            }
        },
    );
});
