// kube-proxy as an EKS managed add-on: the preview reads the installer's objects from a SIMULATED
// API server serving the add-on's objects (tests/fixtures/eks/managed-addon, RECONSTRUCTED from
// EKS's published objects: see its README), tells the add-on by its field manager, and refuses
// unless the stack says how the add-on is configured (its configurationValues, carrying the
// target mode, or an explicit acknowledgement).
import assert from "node:assert/strict";
import * as pulumi from "@pulumi/pulumi";
import YAML from "yaml";
import type { Finding } from "../../components/core/types.js";
import type { RefusalError } from "../../components/pulumi/refusal.js";
import { answer, failure, listenSimulated, type SimulatedServer } from "./simulatedApi.js";
import { ADDON_CONFIG_MAP, ADDON_DAEMON_SET, SELF_MANAGED_CONFIG_MAP, SELF_MANAGED_DAEMON_SET } from "./eksObjects.js";

function linuxNode(name: string, pool: string) {
    return {
        metadata: { name, labels: { pool, "kubernetes.io/os": "linux" } },
        status: { nodeInfo: { kernelVersion: "6.8.0-1021-aws", operatingSystem: "linux" } },
    };
}

/** A SIMULATED API server with kube-proxy's installer objects, two Linux nodes, and every permission granted. */
async function simulatedEks(configMap: unknown, daemonSet: unknown): Promise<SimulatedServer> {
    return listenSimulated((req, res) => {
        const path = (req.url ?? "").split("?")[0];
        if (req.method === "POST" && path === "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
            return answer(res, 201, { kind: "SelfSubjectAccessReview", status: { allowed: true } });
        if (req.method !== "GET") return answer(res, 405, failure(405, "MethodNotAllowed"));
        if (path === "/version") return answer(res, 200, { major: "1", minor: "37", gitVersion: "v1.37.2-eks-4a1b2c" });
        if (path === "/apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy") return answer(res, 200, daemonSet);
        if (path === "/api/v1/namespaces/kube-system/configmaps/kube-proxy-config") return answer(res, 200, configMap);
        if (path === "/api/v1/nodes")
            return answer(res, 200, {
                kind: "NodeList",
                metadata: {},
                items: [
                    linuxNode("ip-10-0-1-10.ec2.internal", "canary"),
                    linuxNode("ip-10-0-2-20.ec2.internal", "workers"),
                ],
            });
        if (path === "/api/v1/services") return answer(res, 200, { kind: "ServiceList", metadata: {}, items: [] });
        return answer(res, 404, failure(404, "NotFound"));
    });
}

function kubeconfigFor(server: string): string {
    return YAML.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "eks", cluster: { server, "insecure-skip-tls-verify": true } }],
        users: [{ name: "eks", user: {} }],
        contexts: [{ name: "eks", context: { cluster: "eks", user: "eks" } }],
        "current-context": "eks",
    });
}

const POOLS = [
    { name: "canary", nodeSelector: "pool=canary" },
    { name: "workers", nodeSelector: "pool=workers" },
];

type Preview = { refused: RefusalError } | { findings: Finding[] };

/** The component's preview (Pulumi mocks) of an ipvs -> nftables move on the SIMULATED EKS cluster. */
async function preview(server: SimulatedServer, extra: Record<string, unknown>): Promise<Preview> {
    await pulumi.runtime.setMocks(
        {
            newResource: (a) => ({ id: `${a.name}-id`, state: { ...a.inputs, stdout: "", stderr: "" } }),
            call: () => ({}),
        },
        "project",
        "stack",
        true,
    );
    const swallow = () => undefined;
    process.on("unhandledRejection", swallow);
    try {
        const { KubeProxyMode } = await import("../../components/pulumi/kubeProxyMode.js");
        (pulumi.log as unknown as { info: () => void }).info = () => undefined;
        (pulumi.log as unknown as { warn: () => void }).warn = () => undefined;
        const kp = new KubeProxyMode("kube-proxy", {
            mode: "nftables",
            nodePortAddresses: ["0.0.0.0/0"],
            target: { flavor: "eks" },
            pools: POOLS,
            kubeconfig: kubeconfigFor(server.url),
            ...extra,
        } as never);
        const findings = (kp.findings as unknown as { promise(): Promise<Finding[]> }).promise();
        const out = await findings.then(
            (f): Preview => ({ findings: f }),
            (e: unknown): Preview => ({ refused: e as RefusalError }),
        );
        await new Promise((r) => setTimeout(r, 50));
        return out;
    } finally {
        process.off("unhandledRejection", swallow);
    }
}

function refusal(p: Preview): RefusalError {
    assert.ok(
        "refused" in p,
        `the preview was not refused; findings: ${JSON.stringify("findings" in p && p.findings)}`,
    );
    return p.refused;
}

function passed(p: Preview): Finding[] {
    assert.ok("findings" in p, `the preview was refused: ${"refused" in p && p.refused.message}`);
    return p.findings;
}

describe("kube-proxy as an EKS managed add-on (SIMULATED API server, RECONSTRUCTED add-on objects)", () => {
    let managed: SimulatedServer;
    let selfManaged: SimulatedServer;
    before(async () => {
        managed = await simulatedEks(ADDON_CONFIG_MAP, ADDON_DAEMON_SET);
        selfManaged = await simulatedEks(SELF_MANAGED_CONFIG_MAP, SELF_MANAGED_DAEMON_SET);
    });
    after(async () => {
        await managed.close();
        await selfManaged.close();
    });

    describe("the preview refuses unless the stack says how the add-on is configured", () => {
        it("without eksAddon: refused as a migration, field eksAddon, naming the objects EKS manages and both fixes", async () => {
            const r = refusal(await preview(managed, {}));
            assert.equal(r.kind, "migration", r.message);
            assert.ok(r.fields.includes("eksAddon"), `fields: ${r.fields.join(", ")}`);
            assert.deepEqual(
                r.findings.map((f) => f.code),
                ["eks.addonManaged"],
            );
            assert.match(r.message, /EKS manages kube-proxy as an add-on/);
            assert.match(r.message, /ConfigMap kube-system\/kube-proxy-config \(field manager "eks", Apply/);
            assert.match(r.message, /DaemonSet kube-system\/kube-proxy \(field manager "eks", Apply/);
            assert.match(r.message, /resolveConflicts OVERWRITE rewrites kube-system\/kube-proxy-config/);
            assert.match(r.message, /eksAddon\.configurationValues \(they must carry mode nftables/);
            assert.match(r.message, /eksAddon\.acknowledgeOverwrite: true/);
        });

        const refusedValues: [string, string, RegExp][] = [
            [
                "another mode (the add-on's ipvs values)",
                '{"mode":"ipvs","ipvs":{"scheduler":"rr"}}',
                /configurationValues set mode ipvs, not the target nftables/,
            ],
            ["no mode (an ipvs scheduler only)", '{"ipvs":{"scheduler":"rr"}}', /configurationValues set no mode/],
            ["no values at all (empty text)", "", /configurationValues set no mode/],
            ["another mode, in YAML", "mode: iptables\n", /configurationValues set mode iptables, not the target/],
            ["a mode kube-proxy does not know", '{"mode":"ebpf"}', /set mode "ebpf", which kube-proxy does not know/],
            ["text that is not an object", '["nftables"]', /is not a JSON object/],
        ];
        for (const [what, values, reason] of refusedValues) {
            it(`configurationValues with ${what}: refused, field eksAddon.configurationValues, naming the fix`, async () => {
                const r = refusal(await preview(managed, { eksAddon: { configurationValues: values } }));
                assert.equal(r.kind, "migration", r.message);
                assert.ok(r.fields.includes("eksAddon.configurationValues"), `fields: ${r.fields.join(", ")}`);
                assert.match(r.message, reason);
                assert.match(r.message, /fix: set the add-on's configurationValues to carry mode nftables/);
            });
        }

        it("a mode that differs is refused even with acknowledgeOverwrite: a known mismatch is never waived", async () => {
            const r = refusal(
                await preview(managed, {
                    eksAddon: { configurationValues: '{"mode":"ipvs"}', acknowledgeOverwrite: true },
                }),
            );
            assert.match(r.message, /configurationValues set mode ipvs, not the target nftables/);
        });
    });

    describe("the preview passes when the stack says how the add-on is configured", () => {
        for (const [what, values] of [
            ["JSON", '{"mode":"nftables"}'],
            ["YAML", "mode: nftables\nresources:\n  requests:\n    cpu: 100m\n"],
        ] as const) {
            it(`configurationValues carrying the target mode (${what}): passes, with an info finding for the reviewer`, async () => {
                const findings = passed(await preview(managed, { eksAddon: { configurationValues: values } }));
                const f = findings.find((x) => (x.code as string) === "eks.addonChecked");
                assert.ok(f, `findings: ${findings.map((x) => x.code).join(", ")}`);
                assert.equal(f.severity, "info");
                assert.match(f.message, /set mode nftables, the target/);
            });
        }

        it("acknowledgeOverwrite: true: passes, with a warning that the add-on's values were not checked", async () => {
            const findings = passed(await preview(managed, { eksAddon: { acknowledgeOverwrite: true } }));
            const f = findings.find((x) => (x.code as string) === "eks.addonUnchecked");
            assert.ok(f, `findings: ${findings.map((x) => x.code).join(", ")}`);
            assert.equal(f.severity, "warning");
            assert.equal(f.field, "eksAddon.acknowledgeOverwrite");
        });

        it("EKS's self-managed kube-proxy (the same label, no field manager eks): passes without eksAddon", async () => {
            const findings = passed(await preview(selfManaged, {}));
            assert.deepEqual(
                findings.filter((f) => f.code.startsWith("eks.")),
                [],
            );
        });
    });

    describe("eksAddon is validated at preview, naming the field", () => {
        const cases: [string, unknown, RegExp][] = [
            ["an empty object", {}, /eksAddon: give configurationValues .* or acknowledgeOverwrite: true/],
            [
                "acknowledgeOverwrite: false alone",
                { acknowledgeOverwrite: false },
                /eksAddon: give configurationValues/,
            ],
            [
                "configurationValues as an object, not text",
                { configurationValues: { mode: "nftables" } },
                /eksAddon\.configurationValues: eksAddon\.configurationValues must be the add-on's values as text/,
            ],
            ["a misspelt field", { acknowledgeOverwirte: true }, /eksAddon: unknown field\(s\) "acknowledgeOverwirte"/],
            [
                "acknowledgeOverwrite as text",
                { acknowledgeOverwrite: "yes" },
                /eksAddon\.acknowledgeOverwrite: eksAddon\.acknowledgeOverwrite must be true or false/,
            ],
        ];
        for (const [what, eksAddon, reason] of cases) {
            it(what, async () => {
                const r = refusal(await preview(managed, { eksAddon }));
                assert.equal(r.kind, "input", r.message);
                assert.match(r.message, reason);
            });
        }
    });
});
