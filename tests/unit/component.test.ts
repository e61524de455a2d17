// The KubeProxyMode component under Pulumi's mocks, with preview on and off. The cluster is a
// fixture snapshot; the real API server and engine are exercised by the end-to-end tests.
import assert from "node:assert/strict";
import * as pulumi from "@pulumi/pulumi";
import type { ClusterSnapshot } from "../../components/core/migration.js";
import type { NodeState } from "../../components/core/plan.js";
import { clusterSnapshot, nodeState as node } from "./snapshots.js";
import { ambientKubeconfigFor } from "../helpers.js";

// how Pulumi marks a secret value in resource inputs
const SECRET_SIG = "4dabf18193072939515e22adb298388d";
const SECRET_VALUE = "1b47061264138c4ac30d75fd1eb44270";
const plain = (v: any) => (v && v[SECRET_SIG] === SECRET_VALUE ? v.value : v);

interface Registered {
    type: string;
    name: string;
    inputs: any;
    dependsOn: string[];
}

function snapshot(
    nodes: NodeState[] = [node("c1", "canary"), node("w1", "workers"), node("w2", "workers")],
): ClusterSnapshot {
    return clusterSnapshot(nodes, {
        services: [{ namespace: "shop", name: "web", type: "NodePort", nodePorts: [30080] }],
    });
}

const POOLS = [
    { name: "canary", nodeSelector: "pool=canary", maxUnavailable: 1, soak: "10m" },
    { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2, drain: true },
];

async function run(
    preview: boolean,
    args: Record<string, any>,
    snap: ClusterSnapshot = snapshot(),
    reads: string[] = [],
) {
    const registered: Registered[] = [];
    await pulumi.runtime.setMocks(
        {
            newResource: (a) => {
                registered.push({ type: a.type, name: a.name, inputs: a.inputs, dependsOn: [] });
                return {
                    id: preview ? undefined : `${a.name}-id`,
                    state: { ...a.inputs, stdout: preview ? undefined : "finished" },
                };
            },
            call: () => ({}),
        },
        "project",
        "stack",
        preview,
    );
    const deps = new Map<string, string[]>();
    const capture: pulumi.ResourceTransformation = (t) => {
        const d = t.opts.dependsOn as any;
        deps.set(
            t.name,
            (Array.isArray(d) ? d : d ? [d] : []).map((r: any) => r.__name ?? ""),
        );
        return undefined;
    };
    // load after the mocks are set
    const { KubeProxyMode } = await import("../../components/pulumi/kubeProxyMode.js");
    const logs: string[] = [];
    // what the reviewer sees as diagnostics on the component in `pulumi preview`
    (pulumi.log as any).info = (m: string) => logs.push(`info: ${m}`);
    (pulumi.log as any).warn = (m: string) => logs.push(`warning: ${m}`);
    const kp = new KubeProxyMode(
        "kube-proxy",
        { mode: "nftables", pools: POOLS, nodePortAddresses: ["0.0.0.0/0"], ...args } as any,
        {
            transformations: [capture],
            snapshotReader: async (access, _flavor, _names, rollout) => {
                reads.push(
                    `${access.kubeconfigContent ? "with-kubeconfig" : "ambient"}${rollout.drain ? ", drain asked" : ""}`,
                );
                return snap;
            },
        },
    );
    // an Output's promise rejects when its apply threw, which is how a refused change fails a preview
    const value = <T>(o: pulumi.Output<T>) => (o as any).promise() as Promise<T>;
    const [plan, diff, findings] = await Promise.all([value(kp.plan), value(kp.configDiff), value(kp.findings)]);
    // let registrations settle
    await new Promise((r) => setTimeout(r, 50));
    for (const r of registered) r.dependsOn = deps.get(r.name) ?? [];
    return { kp, plan, diff, findings, registered, logs };
}

function captureUnhandled(): { errors: Error[]; stop: () => void } {
    const errors: Error[] = [];
    const onErr = (e: Error) => errors.push(e);
    process.on("unhandledRejection", onErr);
    return { errors, stop: () => process.off("unhandledRejection", onErr) };
}

describe("KubeProxyMode component (Pulumi mocks)", () => {
    ambientKubeconfigFor();

    for (const preview of [true, false]) {
        describe(preview ? "preview" : "up", () => {
            it("shows the configuration diff and the plan: pools in order, batches of maxUnavailable", async () => {
                const { plan, diff, logs } = await run(preview, {});
                const shown = logs.join("\n");
                assert.match(shown, /^info: kube-proxy configuration .* -> nftables/m);
                assert.match(shown, /^\+mode: nftables/m, "the diff is shown as a diagnostic");
                assert.match(
                    shown,
                    /1\. pool canary \(pool=canary\): 1 node\(s\), max 1 at a time in 1 batch, soak 600s after/,
                );
                assert.match(
                    shown,
                    /2\. pool workers \(pool=workers\): 2 node\(s\), max 2 at a time in 1 batch, drain first/,
                );
                assert.match(shown, /^warning: nodePortAddresses: 127\.0\.0\.1:<nodePort> .*shop\/web \(30080\)/m);
                assert.match(diff, /-mode: ipvs/);
                assert.match(diff, /\+mode: nftables/);
                assert.deepEqual(
                    plan.pools.map((p) => p.name),
                    ["canary", "workers"],
                );
                assert.deepEqual(plan.pools[0].batches, ["c1"]);
                assert.deepEqual(plan.pools[1].batches, ["w1 w2"]);
                assert.equal(plan.pools[1].nodes, 2);
                assert.equal(plan.pools[0].soakSeconds, 600);
                assert.equal(plan.pools[1].drain, true);
            });

            it("registers one rollout step per pool calling the project's CLI without a shell, then the finish, then the ConfigMap", async () => {
                const { registered } = await run(preview, {});
                const types = registered
                    .filter((r) => r.type !== "pulumi:providers:kubernetes")
                    .map((r) => `${r.type} ${r.name}`);
                assert.deepEqual(types, [
                    "kube-proxy-mode:index:KubeProxyMode kube-proxy",
                    "command:local:Command kube-proxy-pool-canary",
                    "command:local:Command kube-proxy-pool-workers",
                    "command:local:Command kube-proxy-finish",
                    "kubernetes:core/v1:ConfigMapPatch kube-proxy-canonical-config",
                ]);
                const canary = registered.find((r) => r.name === "kube-proxy-pool-canary")!;
                // node and the CLI are found when the step runs; the command is a constant, the pool's arguments are in the environment
                assert.equal(canary.inputs.create, "rollout");
                assert.equal(canary.inputs.interpreter[0], "node");
                assert.deepEqual(JSON.parse(plain(canary.inputs.environment).KPM_STEP_ARGS), [
                    "--json",
                    "--pool=canary",
                ]);
                const spec = JSON.parse(plain(canary.inputs.environment).KPM_ROLLOUT_SPEC);
                assert.equal(spec.target.mode, "nftables");
                // the step's spec keeps durations as written, as 0.1.0 stored them (the CLI parses them into seconds)
                assert.equal(spec.pools[0].soak, "10m");
                assert.deepEqual([spec.verify.maxSyncAge, spec.verify.podTimeout], ["5m", "3m"]);
                assert.deepEqual(
                    spec.pools.map((p: any) => p.name),
                    ["canary", "workers"],
                );
                const cm = registered.find((r) => r.type === "kubernetes:core/v1:ConfigMapPatch")!;
                assert.match(cm.inputs.data["config.conf"], /^mode: nftables/m);
            });

            it("chains the steps in pool order, the finish after every pool (it verifies, then writes the ConfigMap), the ConfigMapPatch after the finish", async () => {
                const { registered } = await run(preview, {});
                const dep = (n: string) => registered.find((r) => r.name === n)!.dependsOn;
                assert.deepEqual(dep("kube-proxy-pool-canary"), []);
                assert.deepEqual(dep("kube-proxy-pool-workers"), ["kube-proxy-pool-canary"]);
                assert.deepEqual(dep("kube-proxy-finish"), ["kube-proxy-pool-canary", "kube-proxy-pool-workers"]);
                assert.deepEqual(dep("kube-proxy-canonical-config"), ["kube-proxy-finish"]);
            });

            it("keeps the kubeconfig secret and out of every plain input", async () => {
                const reads: string[] = [];
                const { registered } = await run(
                    preview,
                    {
                        kubeconfig:
                            "apiVersion: v1\nkind: Config\nclusters: [{ name: c, cluster: { server: 'https://c:6443' } }]\nusers: [{ name: u, user: { token: SECRET-MARKER } }]\ncontexts: [{ name: c, context: { cluster: c, user: u } }]\ncurrent-context: c\n",
                    },
                    snapshot(),
                    reads,
                );
                assert.deepEqual(reads, ["with-kubeconfig, drain asked"]);
                const canary = registered.find((r) => r.name === "kube-proxy-pool-canary")!;
                const env = canary.inputs.environment;
                assert.equal(
                    env[SECRET_SIG],
                    SECRET_VALUE,
                    "the Command's environment (holding the kubeconfig) must be a Pulumi secret",
                );
                assert.equal(env.value.KPM_KUBECONFIG.includes("SECRET-MARKER"), true);
                assert.ok(!env.value.KPM_ROLLOUT_SPEC.includes("SECRET-MARKER"));
                assert.ok(!JSON.stringify(canary.inputs.triggers ?? []).includes("SECRET-MARKER"));
                assert.ok(!JSON.stringify([canary.inputs.create, canary.inputs.interpreter]).includes("SECRET-MARKER"));
            });
        });
    }

    describe("invalid arguments fail with a message that names the field", () => {
        const cases: [string, Record<string, any>, RegExp, ClusterSnapshot?][] = [
            ["an empty mode", { mode: "" }, /mode is required/],
            ["an unknown mode", { mode: "nft" }, /not a kube-proxy mode/],
            [
                "an unknown feature gate",
                { featureGates: { NFTablesProxyMod: true } },
                /featureGates\.NFTablesProxyMod: .*did you mean NFTablesProxyMode/,
            ],
            [
                "a bad nodePortAddresses entry",
                { nodePortAddresses: ["10.0.0.1"] },
                /nodePortAddresses\[0\].*10\.0\.0\.1/,
            ],
            [
                "overlapping pools",
                {
                    pools: [
                        { name: "a", nodeSelector: "pool=workers" },
                        { name: "b", nodeSelector: "kubernetes.io/os=linux" },
                    ],
                },
                /selected by pool a and by pool b/,
            ],
            ["a node in no pool", { pools: [{ name: "canary", nodeSelector: "pool=canary" }] }, /in no pool: w1, w2/],
            [
                "a bad maxUnavailable",
                { pools: [{ name: "all", nodeSelector: "kubernetes.io/os=linux", maxUnavailable: 0 }] },
                /pools\[0\]\.maxUnavailable/,
            ],
            [
                "a bad soak",
                { pools: [{ name: "all", nodeSelector: "kubernetes.io/os=linux", soak: "ten minutes" }] },
                /pools\[0\]\.soak/,
            ],
            ["no pools", { pools: [] }, /pools must list at least one/],
            ["a bad onFailure", { onFailure: "retry" }, /onFailure "retry"/],
            ["a bad hook", { verify: { hooks: [{ name: "x", command: [] }] } }, /verify\.hooks\[0\]\.command/],
            [
                "a kernel older than 5.13 in a pool",
                {},
                /old-1: kernel 5\.10\.0 is older than 5\.13/,
                snapshot([node("c1", "canary"), node("w1", "workers"), node("old-1", "workers", "5.10.0")]),
            ],
        ];
        for (const [what, args, message, snap] of cases) {
            it(`${what}`, async () => {
                const watch = captureUnhandled();
                try {
                    await assert.rejects(
                        () => run(true, args, snap),
                        (e: Error) => {
                            assert.match(e.message, message);
                            return true;
                        },
                    );
                } finally {
                    watch.stop();
                }
            });
        }
        it("an explicit provider without the kubeconfig", async () => {
            await pulumi.runtime.setMocks(
                { newResource: (a) => ({ id: "id", state: a.inputs }), call: () => ({}) },
                "p",
                "s",
                true,
            );
            const k8s = await import("@pulumi/kubernetes");
            const { KubeProxyMode } = await import("../../components/pulumi/kubeProxyMode.js");
            const provider = new k8s.Provider("p", { kubeconfig: "x" });
            assert.throws(
                () => new KubeProxyMode("kp", { mode: "nftables", pools: POOLS }, { provider }),
                /kubeconfig is required with an explicit Kubernetes provider/,
            );
        });
    });

    it("registers its outputs once, every public Output among them", async () => {
        const calls: string[][] = [];
        const original = pulumi.ComponentResource.prototype["registerOutputs"];
        pulumi.ComponentResource.prototype["registerOutputs"] = function (
            this: pulumi.ComponentResource,
            outputs?: pulumi.Inputs | Promise<pulumi.Inputs> | pulumi.Output<pulumi.Inputs>,
        ) {
            // the SDK calls registerOutputs() itself after the constructor; with none given, and once
            // registered, that call does nothing
            if (this.constructor.name === "KubeProxyMode" && outputs !== undefined)
                calls.push(Object.keys(outputs).sort());
            return original.call(this, outputs);
        };
        try {
            const { kp } = await run(true, {});
            const publicOutputs = Object.entries(kp)
                .filter(([k, v]) => pulumi.Output.isInstance(v) && k !== "urn")
                .map(([k]) => k)
                .sort();
            assert.deepEqual(calls, [publicOutputs]);
        } finally {
            pulumi.ComponentResource.prototype["registerOutputs"] = original;
        }
    });

    it("warns in review, naming each access, when the kubeconfig's identity lacks a permission the rollout needs", async () => {
        const denied = {
            user: "ci-previewer",
            denied: [
                { verb: "create", group: "", resource: "pods", subresource: "eviction" },
                { verb: "watch", group: "apps", resource: "daemonsets", namespace: "kube-system" },
            ],
        };
        const { logs, findings } = await run(true, {}, { ...snapshot(), access: denied });
        assert.match(
            logs.join("\n"),
            /^warning: kubeconfig: the identity this kubeconfig authenticates as \(ci-previewer\) is denied 2 permission\(s\) the rollout needs: create pods\/eviction cluster-wide; watch daemonsets\.apps in kube-system\. pulumi up with it refuses before changing anything Fix: grant them: rbac\/kube-proxy-mode\.yaml/m,
        );
        assert.deepEqual(
            findings.filter((f) => f.code.startsWith("access.")).map((f) => [f.severity, f.code]),
            [["warning", "access.denied"]],
        );
        // every access granted: nothing said
        const granted = await run(true, {}, { ...snapshot(), access: { denied: [] } });
        assert.ok(!granted.findings.some((f) => f.code.startsWith("access.")));
    });

    it("reads the cluster through the snapshot reader only: preview has no way to write", async () => {
        const reads: string[] = [];
        await run(true, {}, snapshot(), reads);
        assert.deepEqual(reads, ["ambient, drain asked"]);
    });

    it("asks for the drain's permissions when a pool drains with options, and not when no pool drains", async () => {
        const asked = async (drain: unknown) => {
            const reads: string[] = [];
            const pools = [POOLS[0], { ...POOLS[1], drain }];
            await run(true, { pools }, snapshot(), reads);
            return reads;
        };
        assert.deepEqual(await asked({ force: true }), ["ambient, drain asked"]);
        assert.deepEqual(await asked({}), ["ambient, drain asked"], "drain: {} drains, as the runner reads it");
        assert.deepEqual(await asked(false), ["ambient"]);
    });
});
