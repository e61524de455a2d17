// The KubeProxyMode component's inputs under Pulumi's mocks: one cluster (the one reviewed), pools
// that the resource graph can be built from, every input validated at preview, and steps whose
// inputs hold no machine path.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import * as pulumi from "@pulumi/pulumi";
import { parseCurrentConfig } from "../../components/core/config.js";
import type { ClusterSnapshot } from "../../components/core/migration.js";
import { configHash } from "../../components/core/plan.js";
import { ambientKubeconfigFor, fixture, ROOT, runCli } from "../helpers.js";
import { clusterSnapshot, nodeState as node } from "./snapshots.js";
import { previewMocks } from "./mocks.js";

const SECRET_SIG = "4dabf18193072939515e22adb298388d";
const plain = (v: any) => (v && v[SECRET_SIG] ? v.value : v);

function snapshot(): ClusterSnapshot {
    return clusterSnapshot([node("c1", "canary"), node("w2", "workers"), node("w1", "workers")]);
}

const POOLS = [
    { name: "canary", nodeSelector: "pool=canary", maxUnavailable: 1 },
    { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2 },
];

/** A kubeconfig with two clusters; current-context is "a". Tokens are markers that must never leak. */
const TWO_CLUSTERS = `apiVersion: v1
kind: Config
clusters:
- name: a
  cluster: { server: "https://a.example:6443" }
- name: b
  cluster: { server: "https://b.example:6443/" }
users:
- name: u
  user: { token: TOKEN-MARKER }
contexts:
- name: a
  context: { cluster: a, user: u }
- name: b
  context: { cluster: b, user: u }
current-context: a
`;

interface Registered {
    type: string;
    name: string;
    inputs: any;
}

async function run(
    args: Record<string, any>,
    opts: { preview?: boolean; stackConfig?: Record<string, string>; extraOpts?: Record<string, any> } = {},
) {
    const preview = opts.preview ?? true;
    const registered: Registered[] = [];
    const reads: { kubeconfigContent?: string; context?: string }[] = [];
    await pulumi.runtime.setMocks(
        {
            newResource: (a) => {
                registered.push({ type: a.type, name: a.name, inputs: a.inputs });
                return { id: preview ? undefined : `${a.name}-id`, state: a.inputs };
            },
            call: () => ({}),
        },
        "project",
        "stack",
        preview,
    );
    for (const k of ["kubernetes:kubeconfig", "kubernetes:context"])
        pulumi.runtime.setConfig(k, opts.stackConfig?.[k] as any);
    const { KubeProxyMode } = await import("../../components/pulumi/kubeProxyMode.js");
    const logs: string[] = [];
    (pulumi.log as any).info = (m: string) => logs.push(`info: ${m}`);
    (pulumi.log as any).warn = (m: string) => logs.push(`warning: ${m}`);
    const kp = new KubeProxyMode(
        "kube-proxy",
        { mode: "nftables", pools: POOLS, nodePortAddresses: ["0.0.0.0/0"], ...args } as any,
        {
            snapshotReader: async (access) => {
                reads.push({ kubeconfigContent: access.kubeconfigContent, context: access.context });
                return snapshot();
            },
            ...opts.extraOpts,
        },
    );
    const value = <T>(o: pulumi.Output<T>) => (o as any).promise() as Promise<T>;
    const plan = await value(kp.plan);
    await new Promise((r) => setTimeout(r, 50));
    return { plan, registered, logs, reads };
}

/** Runs the component expecting it to fail; returns the message and what was registered meanwhile. */
async function refused(args: Record<string, any>): Promise<{ message: string; registered: Registered[] }> {
    const errors: unknown[] = [];
    const onErr = (e: unknown) => errors.push(e);
    process.on("unhandledRejection", onErr);
    const registered: Registered[] = [];
    try {
        await pulumi.runtime.setMocks(
            {
                newResource: (a) => {
                    registered.push({ type: a.type, name: a.name, inputs: a.inputs });
                    return { id: undefined, state: a.inputs };
                },
                call: () => ({}),
            },
            "project",
            "stack",
            true,
        );
        const { KubeProxyMode } = await import("../../components/pulumi/kubeProxyMode.js");
        (pulumi.log as any).info = () => undefined;
        (pulumi.log as any).warn = () => undefined;
        let message = "";
        try {
            const kp = new KubeProxyMode(
                "kube-proxy",
                { mode: "nftables", pools: POOLS, nodePortAddresses: ["0.0.0.0/0"], ...args } as any,
                { snapshotReader: async () => snapshot() },
            );
            await (kp.plan as any).promise();
        } catch (e) {
            message = (e as Error).message;
        }
        await new Promise((r) => setTimeout(r, 50));
        return { message, registered };
    } finally {
        process.off("unhandledRejection", onErr);
    }
}

describe("KubeProxyMode inputs (Pulumi mocks)", () => {
    ambientKubeconfigFor();

    describe("pools given as an Output fail at construction with an InputPropertyError naming the field", () => {
        const cases: [string, () => Record<string, any>, RegExp, string][] = [
            [
                "pools as an Output",
                () => ({ pools: pulumi.output(POOLS) }),
                /pools: is an Output: .*resource graph/,
                "pools",
            ],
            [
                "a pool as an Output",
                () => ({ pools: [pulumi.output(POOLS[0]), POOLS[1]] }),
                /pools\[0\]: is an Output/,
                "pools[0]",
            ],
            [
                "a pool's name as an Output",
                () => ({ pools: [{ ...POOLS[0], name: pulumi.output("canary") }, POOLS[1]] }),
                /pools\[0\]\.name: is an Output: .*names its step/,
                "pools[0].name",
            ],
        ];
        for (const [what, args, message, field] of cases) {
            it(what, async () => {
                const errors: unknown[] = [];
                const onErr = (e: unknown) => errors.push(e);
                process.on("unhandledRejection", onErr);
                try {
                    const KubeProxyMode = await previewMocks();
                    let thrown: unknown;
                    try {
                        new KubeProxyMode(
                            "kube-proxy",
                            { mode: "nftables", nodePortAddresses: ["0.0.0.0/0"], ...args() } as any,
                            { snapshotReader: async () => snapshot() },
                        );
                    } catch (e) {
                        thrown = e;
                    }
                    assert.ok(thrown, "the constructor must throw");
                    assert.ok(pulumi.InputPropertyError.isInstance(thrown), "an InputPropertyError");
                    assert.equal(thrown.propertyPath, field);
                    assert.match((thrown as Error).message, message);
                } finally {
                    process.off("unhandledRejection", onErr);
                }
            });
        }
    });

    describe("every input is validated at preview, naming the field and the fix", () => {
        const cases: [string, Record<string, any>, RegExp][] = [
            [
                "verify.maxSyncAge: banana",
                { verify: { maxSyncAge: "banana" } },
                /verify\.maxSyncAge: "banana" is not a duration; write it like 30s/,
            ],
            ["verify.podTimeout: 0", { verify: { podTimeout: "0" } }, /verify\.podTimeout: "0" must be longer than 0/],
            [
                "verify.podTimeout: forever",
                { verify: { podTimeout: "forever" } },
                /verify\.podTimeout: "forever" is not a duration/,
            ],
            [
                'verify.hooks[].timeout: "5 minutes"',
                { verify: { hooks: [{ name: "h", command: ["true"], timeout: "5 minutes" }] } },
                /verify\.hooks\[0\]\.timeout: "5 minutes" is not a duration/,
            ],
            [
                'verify.image: ""',
                { verify: { image: "" } },
                /verify\.image: verify\.image must not be empty; e\.g\. busybox:1\.36/,
            ],
            [
                "duplicate hook names",
                {
                    verify: {
                        hooks: [
                            { name: "h", command: ["true"] },
                            { name: "h", command: ["false"] },
                        ],
                    },
                },
                /verify\.hooks\[1\]\.name: hook name "h" is used twice/,
            ],
            [
                'target.podSelector: ""',
                { target: { podSelector: "" } },
                /target\.podSelector: target\.podSelector must not be empty; e\.g\. k8s-app=kube-proxy/,
            ],
            [
                "a misspelt target.nmespace",
                { target: { nmespace: "kube-system" } },
                /target: unknown field\(s\) "nmespace": check the spelling/,
            ],
            [
                "a pool's drainTimeout: 10 minutes",
                { pools: [POOLS[0], { ...POOLS[1], drain: true, drainTimeout: "10 minutes" }] },
                /pools\[1\]\.drainTimeout: .*"10 minutes" is not a duration/,
            ],
            [
                "a pool's soak: soon",
                { pools: [{ ...POOLS[0], soak: "soon" }, POOLS[1]] },
                /pools\[0\]\.soak: .*"soon" is not a duration/,
            ],
            [
                "a misspelt pool field",
                { pools: [{ ...POOLS[0], maxUnavailible: 2 }, POOLS[1]] },
                /pools\[0\]: unknown field\(s\) "maxUnavailible"/,
            ],
            [
                "target.namespace spliced into API paths: kube-system/../default",
                { target: { namespace: "kube-system/../default" } },
                /target\.namespace: "kube-system\/\.\.\/default" is not a namespace name: a DNS-1123 label .*; e\.g\. kube-system/,
            ],
            [
                "target.podSelector with a trailing comma",
                { target: { podSelector: "k8s-app=kube-proxy," } },
                /target\.podSelector: "k8s-app=kube-proxy," has an empty requirement .*; e\.g\. k8s-app=kube-proxy/,
            ],
            [
                'a hook timeout past the timer\'s limit: "999999h"',
                { verify: { hooks: [{ name: "h", command: ["true"], timeout: "999999h" }] } },
                /verify\.hooks\[0\]\.timeout: "999999h" is longer than 596h31m23s, the longest wait this tool can keep/,
            ],
            [
                'a hook command [""]',
                { verify: { hooks: [{ name: "h", command: [""] }] } },
                /verify\.hooks\[0\]\.command\[0\]: the program is empty/,
            ],
            [
                "featureGates.constructor (an Object.prototype member, not a gate)",
                { kubernetesVersion: "1.37", featureGates: { constructor: true } },
                /featureGates\.constructor: constructor is not a feature gate of Kubernetes 1\.37/,
            ],
            [
                "nodePortAddresses: 10/8 (Go's parser refuses the short form)",
                { nodePortAddresses: ["10/8"] },
                /nodePortAddresses\[0\]: "10\/8" is not a CIDR kube-proxy reads: an IPv4 address is four decimal octets/,
            ],
            [
                "nodePortAddresses with a zone: fe80::1%eth0/64",
                { nodePortAddresses: ["fe80::1%eth0/64"] },
                /nodePortAddresses\[0\]: "fe80::1%eth0\/64" is not a CIDR kube-proxy reads: a CIDR has no zone/,
            ],
            ['kubeconfig: ""', { kubeconfig: "" }, /kubeconfig: is empty: pass the kubeconfig's content/],
            ['kubeconfig: "" as an Output', { kubeconfig: pulumi.output("") }, /kubeconfig: is empty/],
            [
                "a context the kubeconfig does not have",
                { kubeconfig: TWO_CLUSTERS, context: "c" },
                /cannot use kubeconfig: the kubeconfig has no context "c"; it has "a", "b"/,
            ],
        ];
        for (const [what, args, message] of cases) {
            it(what, async () => {
                const r = await refused(args);
                assert.match(r.message, message);
                assert.ok(!r.message.includes("TOKEN-MARKER"), "no credential in the message");
            });
        }
    });

    describe("one cluster: the preview, the provider, the steps and the hooks use the one reviewed", () => {
        it("context names the second cluster of a kubeconfig: the preview reads and prints it; the steps and the provider get it; the identity is in the triggers, never the token", async () => {
            const { registered, logs, reads } = await run(
                { kubeconfig: TWO_CLUSTERS, context: "b" },
                { preview: false },
            );
            assert.deepEqual(
                reads.map((r) => r.context),
                ["b"],
            );
            assert.match(
                logs.join("\n"),
                /^info: cluster https:\/\/b\.example:6443 \(context b, from kubeconfig\): the cluster this preview reviewed/m,
            );
            const step = registered.find((r) => r.name === "kube-proxy-pool-canary")!;
            const env = plain(step.inputs.environment);
            assert.equal(env.KPM_CONTEXT, "b");
            assert.deepEqual(JSON.parse(env.KPM_ROLLOUT_SPEC).cluster, {
                server: "https://b.example:6443",
                context: "b",
            });
            assert.equal(step.inputs.triggers[3], "https://b.example:6443");
            assert.ok(!JSON.stringify(step.inputs.triggers).includes("TOKEN-MARKER"));
            const provider = registered.find((r) => r.type === "pulumi:providers:kubernetes")!;
            assert.equal(provider.inputs.context, "b");
        });

        it("without kubeconfig, the stack's kubernetes:kubeconfig and kubernetes:context are used (preview, provider and steps)", async () => {
            const { registered, logs, reads } = await run(
                {},
                { preview: false, stackConfig: { "kubernetes:kubeconfig": TWO_CLUSTERS, "kubernetes:context": "b" } },
            );
            assert.equal(reads[0].context, "b");
            assert.ok(reads[0].kubeconfigContent?.includes("b.example"), "the preview read the stack's kubeconfig");
            assert.match(
                logs.join("\n"),
                /cluster https:\/\/b\.example:6443 \(context b, from the stack's kubernetes:kubeconfig\)/,
            );
            const env = plain(registered.find((r) => r.name === "kube-proxy-pool-canary")!.inputs.environment);
            assert.ok(env.KPM_KUBECONFIG.includes("b.example"), "the steps get the stack's kubeconfig");
            assert.equal(env.KPM_CONTEXT, "b");
            const provider = registered.find((r) => r.type === "pulumi:providers:kubernetes")!;
            assert.equal(provider.inputs.context, "b");
            assert.ok(plain(provider.inputs.kubeconfig).includes("b.example"));
        });
    });

    describe("stable steps", () => {
        it("a step's inputs hold no path of this machine; its triggers are the configuration, the pool's settings, a digest of its node set and the API server", async () => {
            const { registered, plan } = await run({ kubeconfig: TWO_CLUSTERS });
            const steps = registered.filter((r) => r.type === "command:local:Command");
            assert.equal(steps.length, 3);
            for (const s of steps) {
                const text = JSON.stringify({ ...s.inputs, environment: undefined, __provider: undefined });
                assert.ok(!text.includes(process.execPath), `${s.name}: node's path is in the inputs`);
                assert.ok(!text.includes(ROOT), `${s.name}: the checkout's path is in the inputs`);
            }
            const workers = steps.find((s) => s.name === "kube-proxy-pool-workers")!;
            assert.deepEqual(JSON.parse(plain(workers.inputs.environment).KPM_STEP_ARGS), ["--json", "--pool=workers"]);
            const digest = createHash("sha256").update("w1\nw2").digest("hex");
            assert.deepEqual(workers.inputs.triggers, [
                plan.target.hash,
                JSON.stringify(POOLS[1]),
                digest,
                "https://a.example:6443",
            ]);
            assert.deepEqual(plan.pools[1].batches, ["w1 w2"], "the plan output keeps the names");
        });

        it("a step's interpreter and command hold no path of this checkout or of node (no provider is serialized into the state)", async () => {
            const { registered } = await run({ kubeconfig: TWO_CLUSTERS });
            const step = registered.find((r) => r.type === "command:local:Command")!;
            assert.equal(step.inputs.__provider, undefined);
            const text = JSON.stringify([step.inputs.interpreter, step.inputs.create]);
            assert.ok(!text.includes(ROOT) && !text.includes(process.execPath), text.slice(0, 200));
        });
    });
});

describe("kube-proxy-mode rollout refuses a cluster other than the one reviewed", () => {
    const config = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: nftables\n";
    const spec = (server: string) => ({
        target: { hash: configHash(config), mode: "nftables", config },
        pools: [{ name: "all", nodeSelector: "kubernetes.io/os=linux" }],
        cluster: { server, context: "b" },
    });

    it("exit 2, naming both API servers, when the kubeconfig points elsewhere (no API call made)", () => {
        const r = runCli(["rollout", "--spec", "-"], {
            input: JSON.stringify(spec("https://b.example:6443")),
            env: { KPM_KUBECONFIG: TWO_CLUSTERS, KPM_CONTEXT: "a" },
        });
        assert.equal(r.code, 2, r.stderr);
        assert.match(
            r.stderr,
            /refusing to act: the kubeconfig points at the API server https:\/\/a\.example:6443 \(context a\), not https:\/\/b\.example:6443 \(context b\), the cluster the preview reviewed/,
        );
        assert.ok(!r.stderr.includes("TOKEN-MARKER"));
    });

    it("KPM_CONTEXT selects the context the preview reviewed", () => {
        // the right cluster: the CLI goes on to the API, which does not exist here (exit 1, not 2)
        const r = runCli(["rollout", "--spec", "-"], {
            input: JSON.stringify(spec("https://b.example:6443/")),
            env: { KPM_KUBECONFIG: TWO_CLUSTERS, KPM_CONTEXT: "b", KPM_API_RETRY_SECONDS: "0" },
        });
        assert.doesNotMatch(r.stderr, /refusing to act/);
        assert.equal(r.code, 1, r.stderr);
    });
});

describe("preview diagnostics are terminal-safe", () => {
    ambientKubeconfigFor();

    it("an escape sequence in the cluster's kube-proxy configuration is printed escaped in the preview's diff", async () => {
        const text = fixture("handwritten/ipvs-lc.yaml").replace(
            /^(\s*)mode: (.*)$/m,
            "$1mode: $2 # \u001b[2J set by hand",
        );
        assert.ok(text.includes("\u001b"), "the fixture has a mode line to carry the escape");
        const { logs } = await run(
            {},
            { extraOpts: { snapshotReader: async () => ({ ...snapshot(), current: parseCurrentConfig(text) }) } },
        );
        const all = logs.join("\n");
        assert.ok(all.includes("\\u001b[2J set by hand"), `the comment is shown, escaped:\n${all.slice(0, 2000)}`);
        assert.ok(!all.includes("\u001b"), "no raw escape character reaches the terminal");
    });
});
