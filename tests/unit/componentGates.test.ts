// KubeProxyMode's alerts and promotion gate under Pulumi's mocks: the PrometheusRule with its
// exact expressions and labels, the refusal without the CRD, the gate reading the upstream stack's
// record (a mocked StackReference), and the record the component exports after the finish.
import assert from "node:assert/strict";
import * as pulumi from "@pulumi/pulumi";
import { parseCurrentConfig } from "../../components/core/config.js";
import type { CrdPresence } from "../../components/core/alerts.js";
import type { ClusterSnapshot } from "../../components/core/migration.js";
import { promotionTarget, type PromotionRecord } from "../../components/core/promotion.js";
import { RefusalError } from "../../components/pulumi/refusal.js";
import { ambientKubeconfigFor, fixture } from "../helpers.js";
import { previewMocks } from "./mocks.js";
import { clusterSnapshot, nodeState as node } from "./snapshots.js";

function snapshot(crd?: CrdPresence, current = fixture("handwritten/ipvs-lc.yaml")): ClusterSnapshot {
    return clusterSnapshot([node("c1", "canary"), node("w1", "workers")], {
        current: parseCurrentConfig(current),
        prometheusRuleCrd: crd,
    });
}

const POOLS = [
    { name: "canary", nodeSelector: "pool=canary" },
    { name: "workers", nodeSelector: "pool=workers" },
];
const ARGS = { mode: "nftables", pools: POOLS, nodePortAddresses: ["0.0.0.0/0"] };

interface Run {
    kp: any;
    registered: { type: string; name: string; inputs: any }[];
    logs: string[];
    value<T>(o: pulumi.Output<T>): Promise<T>;
}

/** The component with mocks; `upstream` is the `promotion` output of the stack a StackReference reads. */
async function run(
    preview: boolean,
    args: Record<string, any>,
    snap: ClusterSnapshot,
    opts: { upstream?: unknown; finishResult?: unknown } = {},
): Promise<Run> {
    const registered: Run["registered"] = [];
    await pulumi.runtime.setMocks(
        {
            newResource: (a) => {
                registered.push({ type: a.type, name: a.name, inputs: a.inputs });
                if (a.type === "pulumi:pulumi:StackReference") {
                    return {
                        id: a.inputs.name,
                        state: {
                            name: a.inputs.name,
                            outputs: opts.upstream === undefined ? {} : { promotion: opts.upstream },
                            secretOutputNames: [],
                        },
                    };
                }
                const finish = a.name.endsWith("-finish") && !preview;
                return {
                    id: preview ? undefined : `${a.name}-id`,
                    // the finish's stdout: the CLI's --json document, whose verification holds when it finished
                    state: {
                        ...a.inputs,
                        ...(finish
                            ? {
                                  stdout: JSON.stringify({
                                      ok: true,
                                      nodes: [],
                                      verification:
                                          opts.finishResult === undefined
                                              ? undefined
                                              : {
                                                    ...(opts.finishResult as object),
                                                    finishedAt: "2026-03-01T10:00:00.000Z",
                                                },
                                  }),
                                  stderr: "",
                              }
                            : {}),
                    },
                };
            },
            call: () => ({}),
        },
        "project",
        "stack",
        preview,
    );
    const { KubeProxyMode } = await import("../../components/pulumi/kubeProxyMode.js");
    const logs: string[] = [];
    (pulumi.log as any).info = (m: string) => logs.push(`info: ${m}`);
    (pulumi.log as any).warn = (m: string) => logs.push(`warning: ${m}`);
    const kp = new KubeProxyMode("kube-proxy", { ...ARGS, ...args } as any, { snapshotReader: async () => snap });
    const value = <T>(o: pulumi.Output<T>) => (o as any).promise() as Promise<T>;
    await value(kp.plan);
    await value(kp.alerts);
    await new Promise((r) => setTimeout(r, 50));
    return { kp, registered, logs, value };
}

function captureUnhandled(): { stop: () => void } {
    const onErr = () => undefined;
    process.on("unhandledRejection", onErr);
    return { stop: () => process.off("unhandledRejection", onErr) };
}

describe("KubeProxyMode alerts (Pulumi mocks)", () => {
    ambientKubeconfigFor();

    for (const preview of [true, false]) {
        it(`${preview ? "preview" : "up"}: creates a PrometheusRule with the four alerts, their exact expressions and the user's labels`, async () => {
            const { registered, kp, value } = await run(
                preview,
                { alerts: { labels: { release: "kube-prometheus-stack" }, alertLabels: { team: "network" } } },
                snapshot("present"),
            );
            const rules = registered.filter((r) => r.type === "kubernetes:monitoring.coreos.com/v1:PrometheusRule");
            assert.equal(rules.length, 1);
            const rule = rules[0].inputs;
            assert.equal(rule.apiVersion, "monitoring.coreos.com/v1");
            assert.equal(rule.kind, "PrometheusRule");
            assert.equal(rule.metadata.name, "kube-proxy-mode");
            assert.equal(rule.metadata.namespace, "kube-system");
            assert.equal(rule.metadata.labels.release, "kube-prometheus-stack");
            const alerts = rule.spec.groups[0].rules;
            assert.deepEqual(
                alerts.map((a: any) => [a.alert, a.expr]),
                [
                    [
                        "KubeProxyNFTablesSyncFailing",
                        "sum by (node) (rate(kubeproxy_sync_proxy_rules_nftables_sync_failures_total[5m])) > 0",
                    ],
                    [
                        "KubeProxyNFTablesCleanupFailing",
                        "sum by (node) (rate(kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total[5m])) > 0",
                    ],
                    [
                        "KubeProxyRulesStale",
                        "time() - max by (node) (kubeproxy_sync_proxy_rules_last_timestamp_seconds) > 300",
                    ],
                    [
                        "KubeProxyStillOnIPVS",
                        "max by (node) (kubeproxy_sync_proxy_rules_last_timestamp_seconds) unless on (node) max by (node) (kubeproxy_sync_full_proxy_rules_duration_seconds_count)",
                    ],
                ],
            );
            for (const a of alerts) assert.equal(a.labels.team, "network");
            assert.deepEqual(await value(kp.alerts), {
                namespace: "kube-system",
                name: "kube-proxy-mode",
                alerts: alerts.map((a: any) => a.alert),
            });
            assert.deepEqual(
                ((await value(kp.findings)) as any[]).filter((f) => f.field === "alerts"),
                [],
            );
        });
    }

    for (const [crd, why, fix] of [
        [
            "absent",
            /the CustomResourceDefinition prometheusrules\.monitoring\.coreos\.com is not installed/,
            /install the Prometheus Operator/,
        ],
        [
            "unreadable",
            /cannot tell whether the CustomResourceDefinition .* exists/,
            /grant get on customresourcedefinitions/,
        ],
    ] as const) {
        it(`alerts asked for, the CRD ${crd}: the preview refuses on the field alerts, with the fix`, async () => {
            const watch = captureUnhandled();
            try {
                await assert.rejects(run(true, { alerts: {} }, snapshot(crd)), (e: unknown) => {
                    assert.ok(e instanceof RefusalError, `a RefusalError, not ${String(e)}`);
                    assert.equal(e.kind, "alerts");
                    assert.match(e.message, /alerts: the PrometheusRule kube-proxy-mode cannot be created/);
                    assert.match(e.message, why);
                    assert.match(e.message, fix);
                    assert.match(e.message, /alerts\.enabled: false/);
                    return true;
                });
            } finally {
                watch.stop();
            }
        });
    }

    it("the PrometheusRule is registered when the component is constructed, before the cluster is read (a preview with unknown inputs shows it)", async () => {
        const KubeProxyMode = await previewMocks();
        let read!: (s: ClusterSnapshot) => void;
        const reading = new Promise<ClusterSnapshot>((r) => (read = r));
        const kp = new KubeProxyMode("kube-proxy", { ...ARGS, alerts: {} } as any, { snapshotReader: () => reading });
        const children = [...((kp as any).__childResources as Set<any>)];
        const rule = children.find((c) => c.__pulumiType === "kubernetes:monitoring.coreos.com/v1:PrometheusRule");
        assert.ok(rule, `children: ${children.map((c) => c.__pulumiType).join(", ")}`);
        assert.equal(rule.__name, "kube-proxy-alerts");
        read(snapshot("present"));
        assert.equal(((await (kp.alerts as any).promise()) as { name: string }).name, "kube-proxy-mode");
    });

    it("alerts or alerts.enabled as an Output is refused when constructed, naming the field", async () => {
        const KubeProxyMode = await previewMocks();
        const make = (alerts: unknown) => () =>
            new KubeProxyMode("kube-proxy", { ...ARGS, alerts } as any, {
                snapshotReader: async () => snapshot("present"),
            });
        assert.throws(
            make(pulumi.output({})),
            (e: any) =>
                e instanceof pulumi.InputPropertyError &&
                e.propertyPath === "alerts" &&
                /pass a plain object/.test(e.message),
        );
        assert.throws(
            make({ enabled: pulumi.output(true) }),
            (e: any) =>
                e instanceof pulumi.InputPropertyError &&
                e.propertyPath === "alerts.enabled" &&
                /pass a plain boolean/.test(e.message),
        );
    });

    it("no alerts asked for: no PrometheusRule and no finding, with or without the CRD", async () => {
        for (const crd of ["present", "absent"] as const) {
            const { registered, kp, value } = await run(true, {}, snapshot(crd));
            assert.equal(registered.filter((r) => r.type.includes("PrometheusRule")).length, 0);
            assert.ok(!((await value(kp.findings)) as any[]).some((f) => f.field === "alerts"));
        }
    });

    it("a bad alerts option fails the preview naming the field", async () => {
        const watch = captureUnhandled();
        try {
            await assert.rejects(
                run(true, { alerts: { nodeLabel: "k8s-node" } }, snapshot("present")),
                /alerts\.nodeLabel: alerts\.nodeLabel must be a Prometheus label name/,
            );
        } finally {
            watch.stop();
        }
    });
});

describe("KubeProxyMode promotion gate (Pulumi mocks)", () => {
    ambientKubeconfigFor();

    const UPSTREAM = "organization/kube-proxy-mode/staging";
    // what this component renders from the fixture: the upstream must have finished the same target
    async function ownTarget() {
        const { kp, value } = await run(true, {}, snapshot());
        return { ...promotionTarget(await value(kp.config)), configHash: await value(kp.configHash) };
    }
    const record = (
        t: { targetHash: string; target: Record<string, unknown> },
        over: Partial<PromotionRecord> = {},
    ): PromotionRecord => ({
        targetHash: t.targetHash,
        target: t.target,
        configHash: "0123456789",
        mode: "nftables",
        finishedAt: new Date(Date.now() - 2 * 3600_000).toISOString(),
        nodesVerified: 3,
        nodesChecked: 3,
        nodesTotal: 3,
        unverified: [],
        ...over,
    });

    async function refused(upstream: unknown, promotion: Record<string, unknown>, message: RegExp) {
        const watch = captureUnhandled();
        try {
            await assert.rejects(run(true, { promotion }, snapshot(), { upstream }), (e: Error) => {
                assert.ok(e instanceof RefusalError, `a RefusalError (a ResourceError), not ${e.constructor.name}`);
                assert.equal(e.kind, "promotion");
                assert.equal(e.resource?.constructor.name, "KubeProxyMode", "shown against the component");
                assert.match(
                    e.message,
                    /KubeProxyMode kube-proxy: promotion gate refused: organization\/kube-proxy-mode\/staging is not ready to be followed/,
                );
                assert.match(e.message, message);
                return true;
            });
        } finally {
            watch.stop();
        }
    }

    it("reads the upstream through a StackReference named by promotion.after", async () => {
        const t = await ownTarget();
        const { registered } = await run(true, { promotion: { after: UPSTREAM, minSoak: "1h" } }, snapshot(), {
            upstream: record(t),
        });
        const ref = registered.find((r) => r.type === "pulumi:pulumi:StackReference");
        assert.equal(ref?.inputs.name, UPSTREAM);
    });
    it("opens when the upstream finished the same target, verified every node and held it for minSoak; says so in the preview", async () => {
        const t = await ownTarget();
        const { logs } = await run(true, { promotion: { after: UPSTREAM, minSoak: "1h" } }, snapshot(), {
            upstream: record(t),
        });
        assert.ok(
            logs.some((l) =>
                /^info: promotion gate open: organization\/kube-proxy-mode\/staging finished nftables .* verified 3\/3 node\(s\), held for 2h/.test(
                    l,
                ),
            ),
            logs.join("\n"),
        );
    });
    it("refuses while the upstream has not finished (no record)", async () => {
        await refused(
            undefined,
            { after: UPSTREAM, minSoak: "1h" },
            /has no promotion record: it has not finished a kube-proxy-mode rollout/,
        );
    });
    it("refuses while the upstream is unverified", async () => {
        const t = await ownTarget();
        await refused(
            record(t, { nodesVerified: 2, nodesChecked: 2, unverified: ["w3"] }),
            { after: UPSTREAM, minSoak: "1h" },
            /verified 2 of 3 node\(s\) .*not verified: w3/,
        );
    });
    it("refuses while the upstream is too fresh", async () => {
        const t = await ownTarget();
        await refused(
            record(t),
            { after: UPSTREAM, minSoak: "24h" },
            /has held it for 2h; promotion\.minSoak is 24h: 22h left/,
        );
    });
    it("refuses an upstream that finished another target of the same mode", async () => {
        const other = promotionTarget(
            "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: nftables\n",
        );
        await refused(
            record(other),
            { after: UPSTREAM, minSoak: "1h" },
            /finished a different target \(nftables, target \w+\) than this stack renders \(nftables, target \w+\): .*nodePortAddresses: \(unset\) there, \["0\.0\.0\.0\/0"\] here/,
        );
    });
    it("a bad promotion option fails naming the field", async () => {
        const watch = captureUnhandled();
        try {
            await assert.rejects(
                run(true, { promotion: { after: "staging", minSoak: "1h" } }, snapshot()),
                /promotion\.after must be a fully qualified stack name/,
            );
        } finally {
            watch.stop();
        }
    });
    it("does not consult the upstream when this cluster already runs the target (nothing moves)", async () => {
        const { kp, value } = await run(true, {}, snapshot());
        const done: string = await value(kp.config);
        const { logs } = await run(true, { promotion: { after: UPSTREAM, minSoak: "24h" } }, snapshot(undefined, done));
        assert.ok(
            logs.some((l) => /promotion gate open: this cluster already runs its target/.test(l)),
            logs.join("\n"),
        );
    });

    it("exports the promotion record from the finish step's verification, for the stacks after it", async () => {
        const t = await ownTarget();
        const finishResult = {
            configHash: t.configHash,
            mode: "nftables",
            nodesVerified: 2,
            nodesChecked: 2,
            nodesTotal: 2,
            unverified: [],
            cluster: "ref (https://127.0.0.1:6443)",
        };
        const { kp, value } = await run(false, {}, snapshot(), { finishResult });
        assert.deepEqual(await value(kp.promotion), {
            ...finishResult,
            targetHash: t.targetHash,
            target: t.target,
            finishedAt: "2026-03-01T10:00:00.000Z",
        });
    });
    it("exports what this run changes: the cluster, from and to, how many nodes move", async () => {
        const { kp, value } = await run(true, {}, { ...snapshot(), cluster: "ref (https://127.0.0.1:6443)" });
        const change: any = await value(kp.change);
        assert.equal(change.cluster, "ref (https://127.0.0.1:6443)");
        assert.equal(change.from.mode, "ipvs");
        assert.deepEqual(change.to, { mode: "nftables", configHash: await value(kp.configHash) });
        assert.equal(change.moving, 2);
    });
    it("exports no record while the finish has not completed on this configuration", async () => {
        const { kp, value } = await run(false, {}, snapshot(), { finishResult: null });
        assert.equal(await value(kp.promotion), undefined);
        const stale = await run(false, {}, snapshot(), {
            finishResult: {
                configHash: "another0000",
                mode: "nftables",
                nodesVerified: 2,
                nodesChecked: 2,
                nodesTotal: 2,
                unverified: [],
            },
        });
        assert.equal(await stale.value(stale.kp.promotion), undefined);
    });
});
