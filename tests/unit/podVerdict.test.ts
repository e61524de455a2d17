// components/core/kubeProxyPods.ts podVerdict: the one rule of a node's kube-proxy being as it should
// (the wait for a node's kube-proxy and the finish's check of each node apply it).
import assert from "node:assert/strict";
import { podVerdict, type KubeProxyPod, type PodVerdict } from "../../components/core/kubeProxyPods.js";

const OWNER = "kube-proxy-abc";
const pod = (more: Partial<KubeProxyPod> = {}): KubeProxyPod => ({
    name: "kp-1",
    node: "n1",
    owner: OWNER,
    phase: "Running",
    ready: true,
    restarts: 0,
    deleting: false,
    ...more,
});

describe("podVerdict: a node's kube-proxy pods for one DaemonSet", () => {
    const running = pod();
    const table: [string, KubeProxyPod[], PodVerdict][] = [
        ["one Running, Ready pod of the DaemonSet", [running], { kind: "running", pod: running }],
        ["no pod", [], { kind: "waiting", detail: "0 old and 0 new kube-proxy pod(s) on the node" }],
        [
            "a pod of another DaemonSet beside the new one",
            [pod({ name: "old", owner: "kube-proxy" }), running],
            { kind: "waiting", detail: "1 old and 1 new kube-proxy pod(s) on the node" },
        ],
        [
            "a pod without an owner",
            [pod({ owner: undefined })],
            { kind: "waiting", detail: "1 old and 0 new kube-proxy pod(s) on the node" },
        ],
        [
            "the new pod being deleted",
            [pod({ deleting: true })],
            { kind: "waiting", detail: "1 old and 0 new kube-proxy pod(s) on the node" },
        ],
        [
            "two pods of the DaemonSet",
            [running, pod({ name: "kp-2" })],
            { kind: "waiting", detail: "0 old and 2 new kube-proxy pod(s) on the node" },
        ],
        [
            "a crash-looping pod",
            [pod({ problem: "CrashLoopBackOff" })],
            { kind: "failing", pod: pod({ problem: "CrashLoopBackOff" }) },
        ],
        ["a restarted pod, Ready again", [pod({ restarts: 1 })], { kind: "failing", pod: pod({ restarts: 1 }) }],
        [
            "a Failed pod",
            [pod({ phase: "Failed", ready: false })],
            { kind: "failing", pod: pod({ phase: "Failed", ready: false }) },
        ],
        [
            "a Pending pod",
            [pod({ phase: "Pending", ready: false })],
            { kind: "waiting", detail: "pod kp-1 is Pending, not ready" },
        ],
        [
            "a Running pod not yet Ready",
            [pod({ ready: false })],
            { kind: "waiting", detail: "pod kp-1 is Running, not ready" },
        ],
        [
            "a Ready pod not Running",
            [pod({ phase: "Succeeded" })],
            { kind: "waiting", detail: "pod kp-1 is Succeeded" },
        ],
    ];
    for (const [what, pods, verdict] of table) {
        it(`${what}: ${verdict.kind}`, () => {
            assert.deepEqual(podVerdict(pods, OWNER, false), verdict);
        });
    }
});

describe("podVerdict: the hold placement wants no kube-proxy on the node", () => {
    it("no pod: gone", () => {
        assert.deepEqual(podVerdict([], OWNER, true), { kind: "gone" });
    });
    it("any pod, even a settled one of the DaemonSet: waiting, counting them", () => {
        assert.deepEqual(podVerdict([pod(), pod({ name: "x", owner: "kube-proxy" })], OWNER, true), {
            kind: "waiting",
            detail: "2 kube-proxy pod(s) still on the node",
        });
    });
});
