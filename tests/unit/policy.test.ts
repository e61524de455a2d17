// The guard-rail policies: the pure checks (a stack's resources in, violations out) for every
// policy, passing and failing, and the CrossGuard adapter (unknown values during preview, the
// pack's files). The real engine runs the pack in tests/e2e/policy.e2e.test.ts.
import assert from "node:assert/strict";
import { accessSync, constants, readFileSync } from "node:fs";
import { join } from "node:path";
import * as YAML from "yaml";
import { unknownCheckingProxy } from "@pulumi/policy";
import type { PolicyResource } from "@pulumi/policy";
import {
    checkFeatureGates,
    checkIpvs,
    checkModePinned,
    checkOwnership,
    clusterVersion,
    managedConfigurations,
    POLICY,
    TYPES,
    type StackResource,
} from "../../components/policy/checks.js";
import { POLICIES, toStackResource } from "../../components/policy/policies.js";
import { KUBE_PROXY_MODE_TYPE } from "../../components/core/types.js";
import { fixture, ROOT } from "../helpers.js";

const kpc = (fields: Record<string, unknown>) =>
    YAML.stringify({ apiVersion: "kubeproxy.config.k8s.io/v1alpha1", kind: "KubeProxyConfiguration", ...fields });
let n = 0;
function cm(fields: Partial<StackResource> & { config?: Record<string, unknown> }, key = "config.conf"): StackResource {
    const { config, ...rest } = fields;
    const name = rest.name ?? `cm-${++n}`;
    return {
        urn: `urn:pulumi:dev::p::${rest.type ?? TYPES.configMapPatch}::${name}`,
        type: TYPES.configMapPatch,
        name,
        namespace: "kube-system",
        objectName: "kube-proxy",
        ...(config ? { data: { [key]: kpc(config) } } : {}),
        ...rest,
    };
}
const component = (name = "kube-proxy"): StackResource => ({
    urn: `urn:pulumi:dev::p::${KUBE_PROXY_MODE_TYPE}::${name}`,
    type: KUBE_PROXY_MODE_TYPE,
    name,
});
const daemonSet = (image: string): StackResource => ({
    urn: "urn:ds",
    type: TYPES.daemonSetPatch,
    name: "ds",
    namespace: "kube-system",
    objectName: "kube-proxy",
    images: [image],
});

describe("policy kube-proxy-mode-pinned", () => {
    it('rejects kubeadm\'s own unpinned ConfigMap (mode "") and says how to pin it', () => {
        const real = YAML.parse(fixture("kubeadm/1.33/configmap.yaml"));
        const v = checkModePinned([cm({ type: TYPES.configMap, data: real.data })]);
        assert.equal(v.length, 1);
        assert.equal(v[0].policy, POLICY.pinned);
        assert.match(
            v[0].message,
            /^ConfigMap kube-system\/kube-proxy \(data\["config.conf"\]\) does not pin the mode \(mode: ""\): kube-proxy runs iptables today/,
        );
        assert.match(
            v[0].message,
            /Fix: set mode: nftables \(kernel 5\.13\+ on every node\) or mode: iptables, or declare the mode with KubeProxyMode/,
        );
    });
    it("rejects a missing mode and a mode kube-proxy does not know", () => {
        const v = checkModePinned([
            cm({ config: { clusterCIDR: "10.0.0.0/8" } }),
            cm({ objectName: "other", namespace: "team", config: { mode: "userspace" } }),
        ]);
        assert.equal(v.length, 2);
        assert.match(v[0].message, /does not pin the mode/);
        assert.match(
            v[1].message,
            /^ConfigMapPatch team\/other \(data\["config.conf"\]\) sets mode "userspace", which kube-proxy does not know \(it knows iptables, ipvs, nftables\)/,
        );
    });
    it("passes pinned configurations: kubeadm 1.37's (iptables) and EKS's (under data.config)", () => {
        const kubeadm = YAML.parse(fixture("kubeadm/1.37/configmap.yaml"));
        const eks = YAML.parse(fixture("eks/kube-proxy-config.yaml"));
        assert.deepEqual(
            checkModePinned([
                cm({ type: TYPES.configMap, data: kubeadm.data }),
                cm({ objectName: "kube-proxy-config", data: eks.data }),
            ]),
            [],
        );
    });
    it("finds a configuration by its kind anywhere, and reads the installers' keys even when unreadable", () => {
        const found = managedConfigurations([
            cm({
                namespace: "platform",
                objectName: "kp-canary",
                data: { "kube-proxy.yaml": kpc({ mode: "" }), other: "kind: Something" },
            }),
            cm({ data: { "config.conf": "mode: [unclosed" } }),
            cm({ namespace: "default", objectName: "app", data: { "config.conf": "x: 1" } }),
        ]);
        assert.deepEqual(
            found.map((f) => [f.resource.objectName, f.key, f.config ? "read" : "unreadable"]),
            [
                ["kp-canary", "kube-proxy.yaml", "read"],
                ["kube-proxy", "config.conf", "unreadable"],
            ],
        );
        const v = checkModePinned([cm({ data: { "config.conf": "mode: [unclosed" } })]);
        assert.match(
            v[0].message,
            /cannot be read as a KubeProxyConfiguration, so its mode cannot be checked: .*not valid YAML/,
        );
    });
});

describe("policy kube-proxy-no-ipvs-past-removal", () => {
    const ipvs = (extra: Record<string, unknown> = {}) => cm({ config: { mode: "ipvs", ...extra } });
    it("rejects ipvs on 1.40 unless KubeProxyIPVS is true, naming where the release came from", () => {
        const v = checkIpvs([ipvs()], { kubernetesVersion: "1.40" });
        assert.equal(v.length, 1);
        assert.match(
            v[0].message,
            /kube-proxy 1\.40 exits in ipvs mode unless featureGates\.KubeProxyIPVS is true.*\(release from kubernetesVersion 1\.40 in the policy config\)\. Fix: set mode to nftables or iptables/,
        );
        assert.deepEqual(
            checkIpvs([ipvs({ featureGates: { KubeProxyIPVS: true } })], { kubernetesVersion: "v1.41.3" }),
            [],
        );
    });
    it("rejects ipvs on 1.43 even with the gate", () => {
        const v = checkIpvs([ipvs({ featureGates: { KubeProxyIPVS: true } })], { kubernetesVersion: "1.43.0" });
        assert.match(v[0].message, /ipvs mode does not exist in Kubernetes 1\.43/);
    });
    it("passes ipvs before 1.40 and other modes at any release", () => {
        assert.deepEqual(checkIpvs([ipvs()], { kubernetesVersion: "1.37" }), []);
        assert.deepEqual(checkIpvs([cm({ config: { mode: "nftables" } })], { kubernetesVersion: "1.45" }), []);
    });
    it("reads the release from a kube-proxy DaemonSet the stack manages", () => {
        assert.equal(clusterVersion([daemonSet("registry.k8s.io/kube-proxy:v1.40.2")], {}).version?.release, "1.40");
        const v = checkIpvs([ipvs(), daemonSet("registry.k8s.io/kube-proxy:v1.40.2")], {});
        assert.match(
            v[0].message,
            /release from the image registry\.k8s\.io\/kube-proxy:v1\.40\.2 of DaemonSetPatch kube-system\/kube-proxy/,
        );
    });
    it("reads the release of the configuration's own cluster when the stack manages several", () => {
        const old = { ...daemonSet("registry.k8s.io/kube-proxy:v1.39.0"), urn: "urn:ds-old", cluster: "https://old" };
        const upgraded = {
            ...daemonSet("registry.k8s.io/kube-proxy:v1.40.0"),
            urn: "urn:ds-new",
            cluster: "https://new",
        };
        const onOld = cm({ name: "on-old", config: { mode: "ipvs" }, cluster: "https://old" });
        const onNew = cm({ name: "on-new", config: { mode: "ipvs" }, cluster: "https://new" });
        assert.deepEqual(
            checkIpvs([old, upgraded, onOld, onNew], {}).map((x) => x.urn),
            [onNew.urn],
        );
        assert.equal(clusterVersion([old, upgraded], {}, onNew).version?.minor, 40);
    });
    it("rejects ipvs when it cannot tell the release, and says how to tell it", () => {
        const v = checkIpvs([ipvs()], {});
        assert.match(
            v[0].message,
            /runs ipvs mode, which stops working in Kubernetes 1\.40 .* and 1\.43 \(deleted\), and this policy cannot tell the cluster's release\. Fix: set kubernetesVersion for this policy in the policy pack config/,
        );
        const bad = checkIpvs([ipvs()], { kubernetesVersion: "forty" });
        assert.match(bad[0].message, /kubernetesVersion "forty" in the policy config is not a Kubernetes version/);
    });
});

describe("policy kube-proxy-feature-gates-known", () => {
    const gated = (featureGates: Record<string, unknown>) => cm({ config: { mode: "nftables", featureGates } });
    it("rejects an unknown gate and suggests the name meant", () => {
        const v = checkFeatureGates([gated({ NFTablesProxyMod: true })], { kubernetesVersion: "1.37" });
        assert.equal(v.length, 1);
        assert.match(
            v[0].message,
            /NFTablesProxyMod is not a feature gate of Kubernetes 1\.37: kube-proxy refuses to start on an unknown gate; did you mean NFTablesProxyMode\? Fix: rename it to NFTablesProxyMode/,
        );
    });
    it("rejects a gate named like an Object member (constructor, toString): the release's own names only", () => {
        const v = checkFeatureGates([gated({ constructor: true, toString: false })], { kubernetesVersion: "1.37" });
        assert.equal(v.length, 2);
        assert.match(v[0].message, /constructor is not a feature gate of Kubernetes 1\.37/);
        assert.match(v[1].message, /toString is not a feature gate of Kubernetes 1\.37/);
    });
    it("checks against the cluster's own release: a gate removed since is fine on the release that had it", () => {
        assert.deepEqual(checkFeatureGates([gated({ APIListChunking: true })], { kubernetesVersion: "1.29" }), []);
        assert.match(
            checkFeatureGates([gated({ APIListChunking: true })], { kubernetesVersion: "1.37" })[0].message,
            /APIListChunking is not a feature gate of Kubernetes 1\.37/,
        );
        assert.match(
            checkFeatureGates([gated({ APIListChunking: true })], {})[0].message,
            /checked against the newest release this pack knows/,
        );
    });
    it("rejects a locked gate set against its lock and a broken dependency", () => {
        assert.match(
            checkFeatureGates([gated({ CPUManagerPolicyOptions: false })], { kubernetesVersion: "1.37" })[0].message,
            /locked to true in 1\.37.*Fix: remove featureGates\.CPUManagerPolicyOptions/,
        );
        assert.match(
            checkFeatureGates([gated({ ClusterTrustBundle: false, ClusterTrustBundleProjection: true })], {
                kubernetesVersion: "1.37",
            })[0].message,
            /ClusterTrustBundleProjection needs ClusterTrustBundle enabled/,
        );
    });
    it("passes known gates, and unknown names when allowUnknownFeatureGates is set", () => {
        assert.deepEqual(
            checkFeatureGates([gated({ NFTablesProxyMode: true, KubeProxyIPVS: true })], { kubernetesVersion: "1.37" }),
            [],
        );
        assert.deepEqual(
            checkFeatureGates([gated({ SomethingFrom1_45: true })], {
                kubernetesVersion: "1.45",
                allowUnknownFeatureGates: true,
            }),
            [],
        );
    });
});

describe("policy kube-proxy-config-through-component", () => {
    const own = (parent: StackResource, objectName = "kube-proxy"): StackResource => ({
        ...cm({ name: "kube-proxy-canonical-config", objectName, config: { mode: "nftables" } }),
        parentUrn: parent.urn,
    });
    it("rejects a hand-written patch of the ConfigMap a KubeProxyMode in the stack manages, naming the component", () => {
        const kp = component();
        const handWritten = cm({ name: "by-hand", type: TYPES.configMap, config: { mode: "iptables" } });
        const v = checkOwnership([kp, own(kp), handWritten]);
        assert.equal(v.length, 1);
        assert.equal(v[0].urn, handWritten.urn);
        assert.match(
            v[0].message,
            /^ConfigMap kube-system\/kube-proxy is written outside KubeProxyMode "kube-proxy" in the same stack.*Fix: remove this resource and set what it sets on KubeProxyMode "kube-proxy"/,
        );
    });
    it("rejects a hand-written patch of the kube-proxy DaemonSet", () => {
        const kp = component();
        const v = checkOwnership([kp, own(kp), daemonSet("registry.k8s.io/kube-proxy:v1.37.2")]);
        assert.match(
            v[0].message,
            /DaemonSetPatch kube-system\/kube-proxy is written outside KubeProxyMode "kube-proxy".*OnDelete/,
        );
    });
    it("passes the component's own resources (at any depth), other ConfigMaps, and stacks without the component", () => {
        const kp = component();
        const child: StackResource = {
            urn: "urn:child",
            type: "kube-proxy-mode:index:Nested",
            name: "nested",
            parentUrn: kp.urn,
        };
        const deep = { ...own(kp), parentUrn: child.urn };
        assert.deepEqual(
            checkOwnership([kp, child, deep, cm({ objectName: "coredns", config: { mode: "nftables" } })]),
            [],
        );
        assert.deepEqual(checkOwnership([cm({ config: { mode: "iptables" } })]), []);
    });
    it("tells clusters apart by their providers' API servers: a patch for another cluster passes, another provider of the same server does not", () => {
        const kp = component();
        const mine = { ...own(kp), cluster: "https://10.0.0.1:6443" };
        const step: StackResource = {
            urn: "urn:step",
            type: "pulumi-nodejs:dynamic:Resource",
            name: "step",
            parentUrn: kp.urn,
        };
        const otherCluster = cm({
            name: "other",
            config: { mode: "iptables" },
            cluster: "https://10.0.0.2:6443",
            provider: "other",
        });
        const otherDaemonSet = { ...daemonSet("registry.k8s.io/kube-proxy:v1.37.2"), cluster: "https://10.0.0.2:6443" };
        assert.deepEqual(checkOwnership([kp, mine, step, otherCluster, otherDaemonSet]), []);
        const sameServer = cm({
            name: "same",
            config: { mode: "iptables" },
            cluster: "https://10.0.0.1:6443",
            provider: "second",
        });
        const v = checkOwnership([kp, mine, step, sameServer]);
        assert.deepEqual(
            v.map((x) => x.urn),
            [sameServer.urn],
        );
        assert.match(
            v[0].message,
            /is written outside KubeProxyMode "kube-proxy" on the same cluster, which manages kube-proxy there/,
        );
        // a provider whose cluster cannot be told (the ambient kubeconfig) may be on the component's
        const untold = cm({ name: "untold", config: { mode: "iptables" }, provider: "default_4_25_0" });
        const u = checkOwnership([kp, mine, untold]);
        assert.deepEqual(
            u.map((x) => x.urn),
            [untold.urn],
        );
        assert.match(
            u[0].message,
            /in the same stack.*If it is for another cluster, give it a provider whose kubeconfig names that cluster's API server \(this policy cannot tell which cluster provider "default_4_25_0" points at\)$/,
        );
        // and so may everything when the component's own cluster cannot be told
        assert.equal(checkOwnership([kp, own(kp), otherCluster]).length, 1);
    });
    it("two components on two clusters: each claims its own", () => {
        const a = component("a");
        const b = component("b");
        const onA = { ...own(a), urn: "urn:a-own", cluster: "https://a" };
        const onB = { ...own(b, "kube-proxy-config"), urn: "urn:b-own", cluster: "https://b" };
        const handA = cm({
            name: "hand-a",
            objectName: "kube-proxy-config",
            config: { mode: "iptables" },
            cluster: "https://a",
        });
        const handB = cm({
            name: "hand-b",
            objectName: "kube-proxy-config",
            config: { mode: "iptables" },
            cluster: "https://b",
        });
        const v = checkOwnership([a, b, onA, onB, handA, handB]);
        assert.deepEqual(
            v.map((x) => x.urn),
            [handB.urn],
        );
        assert.match(v[0].message, /KubeProxyMode "b" on the same cluster/);
    });
    it("is about the ConfigMap the component manages: EKS's kube-proxy-config, not kubeadm's name", () => {
        const kp = component();
        assert.deepEqual(checkOwnership([kp, own(kp, "kube-proxy-config"), cm({ config: { mode: "iptables" } })]), []);
        assert.equal(
            checkOwnership([
                kp,
                own(kp, "kube-proxy-config"),
                cm({ objectName: "kube-proxy-config", config: { mode: "iptables" } }),
            ]).length,
            1,
        );
    });
});

describe("the EKS managed add-on (kube-proxy's configurationValues)", () => {
    const addon = (values?: string, version = "v1.40.0-eksbuild.1", parentUrn?: string): StackResource => ({
        urn: `urn:pulumi:dev::p::${TYPES.eksAddon}::kube-proxy-${++n}`,
        type: TYPES.eksAddon,
        name: "kube-proxy",
        parentUrn,
        addon: { name: "kube-proxy", version, values },
    });
    it("an add-on without mode is not pinned; with mode it is", () => {
        const v = checkModePinned([addon(undefined), addon(JSON.stringify({ ipvs: { scheduler: "rr" } }))]);
        assert.equal(v.length, 2);
        assert.match(
            v[0].message,
            /^EKS add-on kube-proxy \(aws:eks\/addon:Addon kube-proxy\) configurationValues does not set mode: kube-proxy runs whatever the add-on version defaults to .* Fix: set configurationValues to JSON with mode, e\.g\. \{"mode":"nftables"\}/,
        );
        assert.deepEqual(checkModePinned([addon('{"mode":"nftables"}'), addon("mode: iptables")]), []);
        assert.match(
            checkModePinned([addon("{not json")])[0].message,
            /cannot be read, so its mode cannot be checked: not JSON or YAML/,
        );
        assert.deepEqual(
            checkModePinned([{ ...addon(undefined), addon: { name: "vpc-cni" } }]),
            [],
            "other add-ons are not kube-proxy",
        );
    });
    it("ipvs in the add-on is judged against the add-on's own version", () => {
        const v = checkIpvs([addon(JSON.stringify({ mode: "ipvs", ipvs: { scheduler: "rr" } }))], {});
        assert.match(
            v[0].message,
            /kube-proxy 1\.40 exits in ipvs mode .*release from addonVersion v1\.40\.0-eksbuild\.1 of EKS add-on kube-proxy/,
        );
        assert.deepEqual(checkIpvs([addon('{"mode":"ipvs"}', "v1.33.0-eksbuild.1")], {}), []);
    });
    it("an add-on setting mode beside KubeProxyMode is rejected; one leaving mode to the component passes", () => {
        const kp = component();
        const v = checkOwnership([kp, addon('{"mode":"iptables"}')]);
        assert.equal(v.length, 1);
        assert.match(
            v[0].message,
            /sets mode in configurationValues beside KubeProxyMode "kube-proxy".*Fix: remove mode and ipvs from the add-on's configurationValues/,
        );
        assert.deepEqual(
            checkOwnership([kp, addon(undefined), addon('{"resources":{"limits":{"memory":"128Mi"}}}')]),
            [],
        );
    });
});

describe("the policy pack as CrossGuard runs it", () => {
    const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"; // the engine's unknown-string sentinel
    const resource = (
        type: string,
        name: string,
        props: Record<string, any>,
        parent?: PolicyResource,
    ): PolicyResource =>
        ({
            type,
            name,
            urn: `urn:pulumi:dev::p::${type}::${name}`,
            props: unknownCheckingProxy(props),
            parent,
            opts: {} as any,
            dependencies: [],
            propertyDependencies: {},
        }) as unknown as PolicyResource;
    function run(resources: PolicyResource[], config: Record<string, unknown> = {}) {
        const out: { policy: string; urn?: string; message: string }[] = [];
        for (const p of POLICIES) {
            (p as any).validateStack(
                { resources, getConfig: () => config, stackTags: new Map(), notApplicable: () => undefined as never },
                (message: string, urn?: string) => out.push({ policy: p.name, urn, message }),
            );
        }
        return out;
    }
    it("has the four policies, mandatory, and the version and unknown-gate settings where they matter", () => {
        assert.deepEqual(
            POLICIES.map((p) => [p.name, p.enforcementLevel, Object.keys(p.configSchema?.properties ?? {}).join(",")]),
            [
                [POLICY.pinned, "mandatory", ""],
                [POLICY.ipvs, "mandatory", "kubernetesVersion,allowUnknownFeatureGates"],
                [POLICY.gates, "mandatory", "kubernetesVersion,allowUnknownFeatureGates"],
                [POLICY.ownership, "mandatory", ""],
            ],
        );
    });
    it("a value unknown during preview skips only what it hides; the rest of the stack is still checked", () => {
        const computed = resource(TYPES.configMapPatch, "computed", {
            metadata: { name: "kube-proxy", namespace: "kube-system" },
            data: { "config.conf": UNKNOWN },
        });
        const bad = resource(TYPES.configMap, "bad", {
            metadata: { name: "kp", namespace: "team" },
            data: { "config.conf": kpc({ mode: "" }) },
        });
        assert.deepEqual(toStackResource(computed).unknown, ["data.config.conf"]);
        const v = run([computed, bad]);
        assert.deepEqual(
            v.map((x) => [x.policy, x.urn]),
            [[POLICY.pinned, bad.urn]],
        );
    });
    it("reads a DaemonSet's images and the parent chain from the engine's resources", () => {
        const kp = resource(KUBE_PROXY_MODE_TYPE, "kube-proxy", {});
        const ds = resource(TYPES.daemonSet, "ds", {
            metadata: { name: "kube-proxy", namespace: "kube-system" },
            spec: { template: { spec: { containers: [{ image: "registry.k8s.io/kube-proxy:v1.43.1" }] } } },
        });
        const mine = resource(
            TYPES.configMapPatch,
            "kube-proxy-canonical-config",
            {
                metadata: { name: "kube-proxy", namespace: "kube-system" },
                data: { "config.conf": kpc({ mode: "ipvs" }) },
            },
            kp,
        );
        assert.deepEqual(toStackResource(mine).parentUrn, kp.urn);
        const v = run([kp, ds, mine]);
        assert.deepEqual(
            v.map((x) => [x.policy, x.urn]),
            [
                [POLICY.ipvs, mine.urn],
                [POLICY.ownership, ds.urn],
            ],
        );
        assert.match(v[0].message, /does not exist in Kubernetes 1\.43/);
    });
    it("reads the API server a resource's Kubernetes provider writes to, never keeping the kubeconfig", () => {
        const kubeconfig = (current: string) =>
            YAML.stringify({
                apiVersion: "v1",
                kind: "Config",
                clusters: [
                    { name: "one", cluster: { server: "https://10.0.0.1:6443/" } },
                    { name: "two", cluster: { server: "https://10.0.0.2:6443" } },
                ],
                users: [{ name: "u", user: { token: "s3cr3t-token" } }],
                contexts: [
                    { name: "one", context: { cluster: "one", user: "u" } },
                    { name: "two", context: { cluster: "two", user: "u" } },
                ],
                "current-context": current,
            });
        const on = (props: Record<string, unknown>, type = "pulumi:providers:kubernetes") => {
            const r = resource(TYPES.configMapPatch, "p", {
                metadata: { name: "kube-proxy", namespace: "kube-system" },
            }) as any;
            r.provider = {
                type,
                name: "cluster",
                urn: `urn:pulumi:dev::p::${type}::cluster`,
                props: unknownCheckingProxy(props),
            };
            return toStackResource(r);
        };
        assert.equal(on({ kubeconfig: kubeconfig("one") }).cluster, "https://10.0.0.1:6443");
        assert.equal(on({ kubeconfig: kubeconfig("one"), context: "two" }).cluster, "https://10.0.0.2:6443");
        assert.equal(on({ kubeconfig: kubeconfig("one"), cluster: "two" }).cluster, "https://10.0.0.2:6443");
        assert.equal(
            on({ kubeconfig: JSON.stringify(YAML.parse(kubeconfig("two"))) }).cluster,
            "https://10.0.0.2:6443",
        );
        assert.equal(on({ kubeconfig: kubeconfig("one") }).provider, "cluster");
        assert.doesNotMatch(JSON.stringify(on({ kubeconfig: kubeconfig("one") })), /s3cr3t|token/);
        // what cannot be told: the ambient kubeconfig, a path, a value computed at up, another provider's type
        assert.equal(on({}).cluster, undefined);
        assert.equal(on({ kubeconfig: "/home/me/.kube/config" }).cluster, undefined);
        const computed = on({ kubeconfig: UNKNOWN });
        assert.equal(computed.cluster, undefined);
        assert.deepEqual(computed.unknown, ["provider.kubeconfig"]);
        assert.equal(on({ kubeconfig: kubeconfig("one") }, "pulumi:providers:aws").cluster, undefined);
    });
    it("reads an EKS add-on's name, version and values; an unknown configurationValues skips only that add-on", () => {
        const known = resource(TYPES.eksAddon, "kube-proxy", {
            addonName: "kube-proxy",
            addonVersion: "v1.43.0-eksbuild.1",
            configurationValues: '{"mode":"ipvs"}',
        });
        assert.deepEqual(toStackResource(known).addon, {
            name: "kube-proxy",
            version: "v1.43.0-eksbuild.1",
            values: '{"mode":"ipvs"}',
        });
        assert.deepEqual(
            run([known]).map((x) => x.policy),
            [POLICY.ipvs],
        );
        const computed = resource(TYPES.eksAddonNative, "kp", {
            addonName: "kube-proxy",
            configurationValues: UNKNOWN,
        });
        assert.deepEqual(toStackResource(computed).unknown, ["configurationValues"]);
        assert.deepEqual(run([computed]), []);
    });
    it("a misspelt setting in the policy config is a violation, not silently ignored", () => {
        const v = run([], {
            kubernetesVersoin: "1.40",
            enforcementLevel: "mandatory",
            allowUnknownFeatureGates: false,
        });
        assert.deepEqual(
            v.map((x) => [x.policy, x.urn]),
            [
                [POLICY.ipvs, undefined],
                [POLICY.gates, undefined],
            ],
        );
        assert.match(
            v[0].message,
            /^the policy config of kube-proxy-no-ipvs-past-removal has an unknown setting "kubernetesVersoin", which would be ignored\. Fix: use kubernetesVersion or allowUnknownFeatureGates$/,
        );
    });
    it("ships a runnable pack: PulumiPolicy.yaml, the package version the pack reports, an executable launcher", () => {
        const dir = join(ROOT, "components", "policy");
        assert.match(readFileSync(join(dir, "PulumiPolicy.yaml"), "utf8"), /^runtime: nodejs$/m);
        const pack = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
        assert.equal(pack.version, JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version);
        accessSync(join(dir, pack.main), constants.R_OK);
        accessSync(join(dir, "analyzer"), constants.X_OK);
        const root = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
        for (const f of ["PulumiPolicy.yaml", "package.json", "analyzer"])
            assert.ok(root.files.includes(`components/policy/${f}`), `package.json files lists components/policy/${f}`);
    });
});
