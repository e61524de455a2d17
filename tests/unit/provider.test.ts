// The `kube-proxy-mode` provider plugin: its package schema (generated from the zod input schemas;
// the committed schema.json must be that output) and `construct`, which builds the same
// KubeProxyMode as a TypeScript program does, under Pulumi's mocks with a fixture snapshot.
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import type { ClusterSnapshot } from "../../components/core/migration.js";
import { KUBE_PROXY_MODE_TYPE, PROXY_MODES } from "../../components/core/types.js";
import type { KubeProxyModeArgs } from "../../components/pulumi/kubeProxyMode.js";
import { packageSchema } from "../../components/provider/schema.js";
import { schemaText } from "../../scripts/providerSchema.js";
import { ROOT } from "../helpers.js";
import { clusterSnapshot, nodeState as node } from "./snapshots.js";

// every input of the TypeScript API, checked by the compiler: a new input fails to compile here until listed
const TS_INPUTS: Record<keyof KubeProxyModeArgs, true> = {
    mode: true,
    featureGates: true,
    nodePortAddresses: true,
    conntrack: true,
    kubernetesVersion: true,
    allowUnknownFeatureGates: true,
    target: true,
    pools: true,
    verify: true,
    onFailure: true,
    kubeconfig: true,
    context: true,
    alerts: true,
    promotion: true,
    eksAddon: true,
};

const schema = packageSchema("0.0.0-test");
const component = schema.resources[KUBE_PROXY_MODE_TYPE];
const typeOf = (name: string) => schema.types[`kube-proxy-mode:index:${name}`];

describe("provider plugin: package schema", () => {
    it("the committed schema.json is the one generated from the input schemas (regenerate: node dist/scripts/providerSchema.js)", () => {
        assert.equal(readFileSync(join(ROOT, "schema.json"), "utf8"), schemaText());
    });
    it("has one input per input of the TypeScript API, mode and pools required, the kubeconfig secret", () => {
        assert.deepEqual(Object.keys(component.inputProperties).sort(), Object.keys(TS_INPUTS).sort());
        assert.deepEqual([...component.requiredInputs].sort(), ["mode", "pools"]);
        assert.equal(component.inputProperties.kubeconfig.secret, true);
        assert.equal(component.isComponent, true);
    });
    it("carries mode, onFailure and flavor as string enums and a pool's drain (boolean | object) as an object type", () => {
        assert.deepEqual(component.inputProperties.mode, {
            $ref: "#/types/kube-proxy-mode:index:ProxyMode",
            description: component.inputProperties.mode.description,
        });
        assert.deepEqual(
            typeOf("ProxyMode").enum?.map((e) => e.value),
            [...PROXY_MODES],
        );
        assert.deepEqual(
            typeOf("OnFailure").enum?.map((e) => e.value),
            ["rollback-node", "stop"],
        );
        assert.deepEqual(
            typeOf("Flavor").enum?.map((e) => e.value),
            ["kubeadm", "eks"],
        );
        assert.equal(typeOf("Pool").properties?.drain?.$ref, "#/types/kube-proxy-mode:index:PoolDrain");
        assert.deepEqual(Object.keys(typeOf("PoolDrain").properties ?? {}).sort(), ["deleteEmptyDirData", "force"]);
        assert.deepEqual(typeOf("Pool").required, ["name", "nodeSelector"]);
        const { description: hooksDoc, ...hooks } = typeOf("Verify").properties?.hooks ?? {};
        assert.deepEqual(hooks, { type: "array", items: { $ref: "#/types/kube-proxy-mode:index:Hook" } });
        assert.ok(hooksDoc, "the zod schema's description reaches the package schema");
    });
    it("has no construct the package schema cannot carry (no oneOf/anyOf, every $ref resolves)", () => {
        const text = JSON.stringify(schema);
        assert.doesNotMatch(text, /"(oneOf|anyOf|allOf)"/);
        for (const m of text.matchAll(/"\$ref":"#\/types\/([^"]+)"/g))
            assert.ok(schema.types[m[1]], `${m[1]} is defined`);
    });
    it("outputs: diff, plan, findings (typed), status, hash, config, mode, promotion, change, alerts", () => {
        assert.deepEqual(Object.keys(component.properties), [
            "configDiff",
            "plan",
            "findings",
            "status",
            "configHash",
            "config",
            "mode",
            "promotion",
            "change",
            "alerts",
        ]);
        assert.deepEqual(component.properties.findings.items, { $ref: "#/types/kube-proxy-mode:index:Finding" });
        assert.equal(component.properties.plan.$ref, "pulumi.json#/Any");
    });
});

const snapshot = (): ClusterSnapshot =>
    clusterSnapshot([node("c1", "canary"), node("w1", "workers"), node("w2", "workers")], {
        services: [{ namespace: "shop", name: "web", type: "NodePort", nodePorts: [30080] }],
    });

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://10.0.0.1:6443" } }]
users: [{ name: u, user: { token: secret-token } }]
contexts: [{ name: ctx, context: { cluster: c, user: u } }]
current-context: ctx
`;

describe("provider plugin: construct (Pulumi mocks)", () => {
    const registered: { type: string; name: string; inputs: any }[] = [];
    before(async () => {
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
    });
    const load = async () => {
        const { KubeProxyModeProvider } = await import("../../components/provider/provider.js");
        return new KubeProxyModeProvider({ snapshotReader: async () => snapshot() });
    };
    const value = <T>(o: any) =>
        pulumi.Output.isInstance(o) ? ((o as any).promise() as Promise<T>) : Promise.resolve(o as T);

    // the inputs as the engine hands them to construct: plain values, the kubeconfig a secret Output,
    // a pool's drain as the schema's object (drain: {} is drain: true)
    const inputs = () => ({
        mode: "nftables",
        nodePortAddresses: ["0.0.0.0/0"],
        pools: [
            { name: "canary", nodeSelector: "pool=canary", maxUnavailable: 1, soak: "10m" },
            { name: "workers", nodeSelector: "pool=workers", maxUnavailable: 2, drain: {} },
        ],
        onFailure: "stop",
        verify: { nodeChecks: false },
        kubeconfig: pulumi.secret(KUBECONFIG),
    });

    it("maps the schema's inputs onto KubeProxyMode: its plan, diff and findings come back as the component's outputs", async () => {
        const provider = await load();
        const result = await provider.construct("kp", KUBE_PROXY_MODE_TYPE, inputs(), {});
        const [urn, plan, diff, findings, mode] = await Promise.all([
            value<string>(result.urn),
            value<any>(result.state.plan),
            value<string>(result.state.configDiff),
            value<any[]>(result.state.findings),
            value<string>(result.state.mode),
        ]);
        assert.match(urn, /kube-proxy-mode:index:KubeProxyMode::kp$/);
        assert.equal(mode, "nftables");
        assert.match(diff, /^\+mode: nftables/m);
        assert.deepEqual(
            plan.pools.map((p: any) => [p.name, p.maxUnavailable, p.batches]),
            [
                ["canary", 1, ["c1"]],
                ["workers", 2, ["w1 w2"]],
            ],
        );
        assert.equal(plan.pools[1].drain, true, "drain: {} drains the pool");
        assert.ok(findings.every((f) => typeof f.code === "string" && typeof f.message === "string"));
        // one step per pool, in the order given, plus the finish, under the component
        await new Promise((r) => setTimeout(r, 50));
        const steps = registered.filter((r) => r.name.startsWith("kp-")).map((r) => r.name);
        assert.ok(
            steps.includes("kp-pool-canary") && steps.includes("kp-pool-workers") && steps.includes("kp-finish"),
            steps.join(", "),
        );
    });
    it("takes an input sent as null or as a known Output of nothing as not given (no promotion gate, no alerts), as the generated SDKs send them", async () => {
        const provider = await load();
        const before = registered.length;
        const result = await provider.construct(
            "kp-none",
            KUBE_PROXY_MODE_TYPE,
            {
                ...inputs(),
                promotion: pulumi.output(undefined),
                alerts: null,
                verify: pulumi.output(undefined).apply(() => undefined),
                conntrack: null,
            },
            {},
        );
        const plan = await value<any>(result.state.plan);
        assert.deepEqual(
            plan.pools.map((p: any) => p.name),
            ["canary", "workers"],
        );
        await new Promise((r) => setTimeout(r, 50));
        const types = registered.slice(before).map((r) => r.type);
        assert.ok(!types.includes("pulumi:pulumi:StackReference"), `no promotion gate: ${types.join(", ")}`);
        assert.equal(await value(result.state.alerts), null, "no PrometheusRule");
    });
    it("refuses an input the schema does not have, naming it", async () => {
        const provider = await load();
        await assert.rejects(
            provider.construct("kp2", KUBE_PROXY_MODE_TYPE, { ...inputs(), pool: [] }, {}),
            /unknown input\(s\) "pool"/,
        );
    });
    it("refuses another type token, naming the one it provides", async () => {
        const provider = await load();
        await assert.rejects(
            provider.construct("kp3", "kube-proxy-mode:index:Other", inputs(), {}),
            /unknown resource type kube-proxy-mode:index:Other: this plugin provides kube-proxy-mode:index:KubeProxyMode/,
        );
    });
    it("serves the schema with this installation's version", async () => {
        const provider = await load();
        const served = JSON.parse(await provider.getSchema());
        const version = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version;
        assert.equal(served.version, version);
        assert.equal(provider.version, version);
        assert.deepEqual(served.resources, packageSchema(version).resources);
    });
});

describe("provider plugin: the executable launcher and the package", () => {
    it("bin/pulumi-resource-kube-proxy-mode starts the provider, prints its port and serves this schema over gRPC (as the engine runs it)", async function () {
        this.timeout(30_000);
        const { spawn } = await import("node:child_process");
        const grpc = await import("@grpc/grpc-js");
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- generated gRPC stubs without typings
        const rpc = require("@pulumi/pulumi/proto/provider_grpc_pb");
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- as above
        const pb = require("@pulumi/pulumi/proto/provider_pb");
        // the engine's address: nothing listens there; GetSchema does not call the engine
        const child = spawn(join(ROOT, "bin", "pulumi-resource-kube-proxy-mode"), ["127.0.0.1:1"], {
            stdio: ["ignore", "pipe", "pipe"],
        });
        try {
            const port = await new Promise<string>((resolve, reject) => {
                let out = "";
                child.stdout.on("data", (d: Buffer) => {
                    out += d.toString();
                    const m = /^(\d+)\s*$/m.exec(out);
                    if (m) resolve(m[1]);
                });
                child.on("exit", (code) => reject(new Error(`the launcher exited (${code}) before printing its port`)));
            });
            const client = new rpc.ResourceProviderClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
            const served = await new Promise<any>((resolve, reject) =>
                client.getSchema(new pb.GetSchemaRequest(), (err: Error | null, res: any) =>
                    err ? reject(err) : resolve(JSON.parse(res.getSchema())),
                ),
            );
            client.close();
            assert.equal(served.name, "kube-proxy-mode");
            assert.deepEqual(served, JSON.parse(readFileSync(join(ROOT, "schema.json"), "utf8")));
        } finally {
            child.kill();
        }
    });
    it("package.json ships the launcher on PATH (bin), schema.json and the plugin directory", () => {
        const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
        assert.equal(pkg.bin["pulumi-resource-kube-proxy-mode"], "bin/pulumi-resource-kube-proxy-mode");
        for (const f of ["bin", "schema.json", "provider"]) assert.ok(pkg.files.includes(f), `files lists ${f}`);
        const dir = JSON.parse(readFileSync(join(ROOT, "provider", "package.json"), "utf8"));
        assert.equal(
            require.resolve(join(ROOT, "provider")),
            join(ROOT, "dist", "components", "provider", "main.js"),
            `the plugin directory's main (${dir.main}) is the provider's entry point`,
        );
        assert.match(readFileSync(join(ROOT, "provider", "PulumiPlugin.yaml"), "utf8"), /^runtime: nodejs$/m);
    });
});

/** Every file of a generated SDK, concatenated. */
function sdkText(language: string): string {
    const walk = (dir: string): string[] =>
        readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? walk(join(dir, f)) : [join(dir, f)]));
    return walk(join(ROOT, "sdk", language))
        .filter((f) => /\.(py|go|cs|ts|json)$/.test(f))
        .map((f) => readFileSync(f, "utf8"))
        .join("\n");
}

describe("provider plugin: the generated SDKs (sdk/) are generated from this schema.json (else: npm run sdk)", () => {
    const committed = JSON.parse(readFileSync(join(ROOT, "schema.json"), "utf8"));
    const names = new Set<string>([
        ...Object.keys(committed.resources[KUBE_PROXY_MODE_TYPE].inputProperties),
        ...Object.keys(committed.resources[KUBE_PROXY_MODE_TYPE].properties),
    ]);
    for (const t of Object.values<any>(committed.types)) for (const k of Object.keys(t.properties ?? {})) names.add(k);
    const enumValues = Object.values<any>(committed.types).flatMap((t) =>
        (t.enum ?? []).map((e: any) => e.value as string),
    );
    for (const language of ["python", "go", "dotnet", "nodejs"]) {
        it(`${language}: every property of the schema, every enum value and the schema's version are in the SDK`, () => {
            const text = sdkText(language);
            // TypeScript declares fields (name?:); C#'s output types take them as constructor parameters (string name,); the others quote the wire name
            const present = (n: string) =>
                language === "nodejs"
                    ? new RegExp(`\\b${n}\\??:`).test(text)
                    : text.includes(`"${n}"`) || (language === "dotnet" && new RegExp(`\\b${n}[,)]`).test(text));
            const missing = [...names].filter((n) => !present(n));
            assert.deepEqual(missing, [], `properties missing from sdk/${language}`);
            assert.deepEqual(
                enumValues.filter((v) => !text.includes(`"${v}"`)),
                [],
                `enum values missing from sdk/${language}`,
            );
            assert.match(
                text,
                new RegExp(`"version": "${committed.version.replace(/\./g, "\\.")}"`),
                "pulumi-plugin.json names the schema's version",
            );
        });
    }
});
