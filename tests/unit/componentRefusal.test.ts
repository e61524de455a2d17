// KubeProxyMode's refusals under Pulumi's mocks: every refusal is a ResourceError against the
// component (Pulumi shows it on the resource, without a stack trace), its text survives the SDK's
// serializer (which prefixes an error's message with `error serializing property "<k>"` when a
// resource input awaits the rejected decision), it carries the refused findings as data, and no
// rollout step is registered.
import assert from "node:assert/strict";
import { inspect } from "node:util";
import * as pulumi from "@pulumi/pulumi";
import type { ClusterSnapshot } from "../../components/core/migration.js";
import type { RefusalError } from "../../components/pulumi/refusal.js";
import { clusterSnapshot, nodeState as node } from "./snapshots.js";
import { ambientKubeconfigFor, withEnvironment } from "../helpers.js";

const POOLS = [
    { name: "canary", nodeSelector: "pool=canary" },
    { name: "workers", nodeSelector: "pool=workers" },
];
const ARGS = { mode: "nftables", pools: POOLS, nodePortAddresses: ["0.0.0.0/0"] };
const HEALTHY = clusterSnapshot([node("c1", "canary"), node("w1", "workers")]);

interface Refused {
    kp: pulumi.ComponentResource;
    /** what the decision's Outputs rejected with */
    error: unknown;
    /** every unhandled rejection of the run: what the engine's language host reports */
    unhandled: unknown[];
    /** types of the resources registered with the (mocked) engine */
    registered: string[];
}

/** Mocks the engine (`up` unless preview); returns the types of the resources it registers, as they come. */
async function mockEngine(preview: boolean): Promise<string[]> {
    const registered: string[] = [];
    await pulumi.runtime.setMocks(
        {
            newResource: (a) => {
                registered.push(a.type);
                return { id: `${a.name}-id`, state: { ...a.inputs, stdout: "", stderr: "" } };
            },
            call: () => ({}),
        },
        "project",
        "stack",
        preview,
    );
    return registered;
}

/** Runs the component with `up` (unless preview) mocks and collects how it failed. */
async function refuse(
    args: Record<string, unknown>,
    snap: ClusterSnapshot = HEALTHY,
    preview = false,
): Promise<Refused> {
    const registered = await mockEngine(preview);
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on("unhandledRejection", onUnhandled);
    try {
        const { KubeProxyMode } = await import("../../components/pulumi/kubeProxyMode.js");
        (pulumi.log as unknown as { info: () => void }).info = () => undefined;
        const kp = new KubeProxyMode("kube-proxy", { ...ARGS, ...args } as never, { snapshotReader: async () => snap });
        const error = await (kp.plan as unknown as { promise(): Promise<unknown> }).promise().then(
            () => assert.fail("the decision was not refused"),
            (e: unknown) => e,
        );
        // let the steps' registrations (whose inputs await the decision) fail and be reported
        await new Promise((r) => setTimeout(r, 100));
        return { kp, error, unhandled, registered };
    } finally {
        process.off("unhandledRejection", onUnhandled);
    }
}

/** What the Node.js language host logs for an unhandled error (cmd/run/run.js): the text, and the resource it is attached to. */
function asTheEngineShowsIt(e: unknown): { text: string; resource: pulumi.Resource | undefined } {
    assert.ok(pulumi.ResourceError.isInstance(e), `a ResourceError, not ${(e as Error)?.constructor?.name}`);
    assert.equal(e.hideStack, true, "hideStack: the engine shows the message alone, without the stack trace");
    return { text: e.message, resource: e.resource };
}

describe("KubeProxyMode refusals are ResourceErrors against the component (Pulumi mocks)", () => {
    ambientKubeconfigFor();

    const cases: [string, Record<string, unknown>, RegExp, ClusterSnapshot?][] = [
        [
            "a kernel older than 5.13 in a pool (a migration refused)",
            {},
            /old-1: kernel 5\.10\.0 is older than 5\.13/,
            clusterSnapshot([node("c1", "canary"), node("w1", "workers"), node("old-1", "workers", "5.10.0")]),
        ],
        [
            "an unknown feature gate",
            { featureGates: { NFTablesProxyMod: true } },
            /featureGates\.NFTablesProxyMod: .*did you mean NFTablesProxyMode/,
        ],
        ["an invalid verify duration", { verify: { maxSyncAge: "banana" } }, /verify\.maxSyncAge/],
        ["an invalid onFailure", { onFailure: "retry" }, /onFailure "retry"/],
        ["an invalid alerts option", { alerts: { nodeLabel: "k8s-node" } }, /alerts\.nodeLabel/],
        ["a kubeconfig that cannot be read", { kubeconfig: "clusters: [" }, /cannot use kubeconfig/],
    ];
    for (const [what, args, reason, snap] of cases) {
        it(`${what}: the ResourceError's resource is the component, its text names the component and the reason, unchanged by the serializer, and no step is registered`, async () => {
            const r = await refuse(args, snap);
            const shown = asTheEngineShowsIt(r.error);
            assert.equal(shown.resource, r.kp, "attached to the KubeProxyMode component");
            assert.match(shown.text, /^KubeProxyMode kube-proxy: /);
            assert.match(shown.text, reason);
            assert.doesNotMatch(shown.text, /error serializing property/);
            assert.doesNotMatch(shown.text, /\n\s+at /, "no stack frames in the text");
            // the steps' inputs awaited the rejected decision: the serializer saw the same error
            assert.ok(r.unhandled.length > 0, "the failed registrations reported the refusal");
            for (const e of r.unhandled) assert.equal(e, r.error, "one error object: the engine shows it once");
            assert.deepEqual(
                r.registered.filter((t) => t.startsWith("command:")),
                [],
                "no rollout step registered on a refusal",
            );
        });
    }

    it("the text survives the SDK's serializer, which rewrites a plain Error's message when an input awaits it", async () => {
        const r = await refuse(
            {},
            clusterSnapshot([node("c1", "canary"), node("w1", "workers"), node("old-1", "workers", "5.10.0")]),
        );
        const before = (r.error as Error).message;
        // exactly what a step's registration does with the decision Output among its inputs
        await assert.rejects(
            pulumi.runtime.serializeProperties("step", {
                environment: r.kp.urn.apply(() => Promise.reject(r.error as Error)),
            }),
            (e: unknown) => e === r.error,
        );
        assert.equal((r.error as Error).message, before);
        assert.doesNotMatch(String(r.error), /error serializing property/);
    });

    it("inspected as the language host does for every unhandled error (util.inspect, colors), a refusal is its name, text, kind and fields, not the component's resource graph or the kubeconfig", async () => {
        const kubeconfig = "apiVersion: v1\nclusters: [{name: c, cluster: {server: https://10.9.8.7:6443}}]\nusers: [";
        for (const args of [{ kubeconfig }, { kubeconfig, verify: { maxSyncAge: "banana" } }]) {
            const r = await refuse(args);
            const refusal = r.error as RefusalError;
            for (const colors of [true, false]) {
                const text = inspect(refusal, { colors });
                assert.match(text, /RefusalError/);
                assert.ok(text.includes(refusal.message), text.slice(0, 2000));
                assert.ok(text.includes(refusal.kind), `kind ${refusal.kind}`);
                for (const field of refusal.fields) assert.ok(text.includes(field), `field ${field}`);
                assert.doesNotMatch(text, /ComponentResource|urn|__/, "nothing of the component's graph");
                assert.ok(!text.includes("10.9.8.7"), "the kubeconfig, a secret input, is not shown");
                assert.ok(text.length < 2_000, `${text.length} characters: ${text.slice(0, 2000)}`);
            }
        }
    });

    it("a refused migration carries its findings as data: code, field, the nodes", async () => {
        const r = await refuse(
            {},
            clusterSnapshot([node("c1", "canary"), node("w1", "workers"), node("old-1", "workers", "5.10.0")]),
        );
        const { RefusalError } = await import("../../components/pulumi/refusal.js");
        assert.ok(r.error instanceof RefusalError);
        const refusal: RefusalError = r.error;
        assert.equal(refusal.component, "kube-proxy");
        assert.equal(refusal.kind, "migration");
        const kernel = refusal.findings.find((f) => f.nodes?.includes("old-1"));
        assert.equal(kernel?.code, "node.kernelTooOld");
        assert.equal(kernel?.severity, "error");
        assert.match(kernel?.field ?? "", /pools|nodes/);
        assert.ok(refusal.fields.includes(kernel!.field), "the refused fields include the finding's");
    });

    it("an invalid input names its field as data, without findings", async () => {
        const r = await refuse({ verify: { maxSyncAge: "banana" } });
        const { RefusalError } = await import("../../components/pulumi/refusal.js");
        assert.ok(r.error instanceof RefusalError);
        assert.equal(r.error.kind, "input");
        assert.deepEqual(r.error.fields, ["verify.maxSyncAge"]);
        assert.deepEqual(r.error.findings, []);
    });

    it("the Kubernetes provider starts while the cluster is read, not after the decision", async () => {
        const registered = await mockEngine(true);
        const { KubeProxyMode } = await import("../../components/pulumi/kubeProxyMode.js");
        (pulumi.log as unknown as { info: () => void }).info = () => undefined;
        let read!: (s: ClusterSnapshot) => void;
        const reading = new Promise<ClusterSnapshot>((r) => (read = r));
        const kp = new KubeProxyMode("kube-proxy", ARGS as never, { snapshotReader: () => reading });
        await new Promise((r) => setTimeout(r, 100));
        assert.deepEqual(
            registered.filter((t) => t === "pulumi:providers:kubernetes"),
            ["pulumi:providers:kubernetes"],
            "registered (so started by the engine) before the read returned",
        );
        read(HEALTHY);
        await (kp.plan as unknown as { promise(): Promise<unknown> }).promise();
    });

    it("no kubeconfig given and none ambient: the preview refuses naming the kubeconfig input and the fix, not the client library's localhost:8080", async () => {
        // KUBECONFIG naming no file: the client library would fall back to http://localhost:8080
        const r = await withEnvironment({ KUBECONFIG: "/nonexistent/kubeconfig" }, () => refuse({}, HEALTHY, true));
        const { RefusalError } = await import("../../components/pulumi/refusal.js");
        assert.ok(r.error instanceof RefusalError);
        assert.equal(r.error.kind, "input");
        assert.deepEqual(r.error.fields, ["kubeconfig"]);
        const shown = asTheEngineShowsIt(r.error);
        assert.equal(shown.resource, r.kp, "attached to the KubeProxyMode component");
        assert.match(shown.text, /^KubeProxyMode kube-proxy: no kubeconfig: /);
        assert.match(shown.text, /KUBECONFIG names \/nonexistent\/kubeconfig, none of which exists/);
        assert.match(shown.text, /pass kubeconfig .*kubernetes:kubeconfig.*KUBECONFIG/);
        assert.doesNotMatch(shown.text, /localhost:8080|HTTP protocol|skipTLSVerify/);
    });

    it("a refused kubeconfig leaves the provider registered with no context, its inputs never rejected with the refusal", async () => {
        const r = await refuse({ kubeconfig: "clusters: [" });
        assert.match(asTheEngineShowsIt(r.error).text, /cannot use kubeconfig/);
        assert.ok(r.registered.includes("pulumi:providers:kubernetes"));
    });
});
