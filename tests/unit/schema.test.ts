// components/core/schema.ts and core/settings.ts: every refused input is named by its field,
// with what is wrong and how to write it; what is valid passes unchanged. A duration is bounded
// by what the runner's timer can keep.
import assert from "node:assert/strict";
import { z } from "../../components/libraries/zod.js";
import {
    describeIssues,
    durationSchema,
    eksAddonSchema,
    issuePath,
    LONGEST_WAIT_SECONDS,
    secondsOf,
    uniqueNames,
} from "../../components/core/schema.js";
import { validateDesired } from "../../components/core/settings.js";

/** "<field>: <message>" lines of a refused value under `prefix`, or [] when it parses. */
function refused(schema: z.ZodType, value: unknown, prefix = "timeout"): string[] {
    const r = schema.safeParse(value);
    return r.success ? [] : describeIssues(r.error.issues, prefix);
}

describe("durationSchema: a Go duration, bounded", () => {
    it("a duration that is not one is refused with how to write it", () => {
        assert.deepEqual(refused(durationSchema({ positive: false }), "abc"), [
            'timeout: "abc" is not a duration; write it like 30s, 10m or 1h30m',
        ]);
        assert.deepEqual(refused(durationSchema({ positive: false }), "-1s"), [
            'timeout: "-1s" is not a duration; write it like 30s, 10m or 1h30m',
        ]);
    });
    it("zero passes unless the field must be positive", () => {
        assert.deepEqual(refused(durationSchema({ positive: false }), "0s"), []);
        assert.deepEqual(refused(durationSchema({ positive: true }), "0s"), [
            'timeout: "0s" must be longer than 0; write it like 30s, 10m or 1h30m',
        ]);
        assert.deepEqual(refused(durationSchema({ positive: true }), "1s"), []);
    });
    it("a waited duration is at most the longest wait a timer keeps: that passes, one second more is refused", () => {
        const schema = durationSchema({ positive: true, waited: true });
        assert.equal(LONGEST_WAIT_SECONDS, 2_147_483);
        assert.deepEqual(refused(schema, `${LONGEST_WAIT_SECONDS}s`), []);
        assert.deepEqual(refused(schema, `${LONGEST_WAIT_SECONDS + 1}s`), [
            `timeout: "${LONGEST_WAIT_SECONDS + 1}s" is longer than 596h31m23s, the longest wait this tool can keep (a timer's limit); write at most 596h`,
        ]);
        // a duration nobody waits on may be longer, up to what a number holds exactly
        assert.deepEqual(refused(durationSchema({ positive: true }), `${LONGEST_WAIT_SECONDS + 1}s`), []);
        assert.deepEqual(refused(durationSchema({ positive: true }), "99999999999999999999h"), [
            'timeout: "99999999999999999999h" is too long to be a duration; write it like 30s, 10m or 1h30m',
        ]);
    });
    it("a missing required duration gets the field's own message; the text is kept as written", () => {
        assert.deepEqual(refused(durationSchema({ positive: true, required: "give the soak" }), undefined), [
            "timeout: give the soak",
        ]);
        assert.deepEqual(refused(durationSchema({ positive: true }), 5), [
            "timeout: Invalid input: expected string, received number",
        ]);
        assert.equal(durationSchema({ positive: true }).parse("1h30m"), "1h30m");
    });
    it("secondsOf reads the admitted text, or gives the fallback when the field was left out", () => {
        assert.equal(secondsOf("1h30m"), 5400);
        assert.equal(secondsOf(undefined, 300), 300);
        assert.equal(secondsOf("0s", 300), 0);
    });
});

describe("uniqueNames: the second use of a name is refused at its index", () => {
    it("every repeat is reported at [i].name with the message and params; the first use is not", () => {
        const list = z
            .array(z.object({ name: z.string() }))
            .superRefine(uniqueNames((n) => `pool ${n} is named twice`, { code: "pool.duplicate" }));
        const r = list.safeParse([{ name: "a" }, { name: "b" }, { name: "a" }, { name: "b" }, { name: "c" }]);
        assert.ok(!r.success);
        assert.deepEqual(
            r.error.issues.map((i) => ({
                path: i.path,
                message: i.message,
                params: (i as { params?: unknown }).params,
            })),
            [
                { path: [2, "name"], message: "pool a is named twice", params: { code: "pool.duplicate" } },
                { path: [3, "name"], message: "pool b is named twice", params: { code: "pool.duplicate" } },
            ],
        );
        assert.ok(list.safeParse([{ name: "a" }, { name: "b" }]).success);
    });
});

describe("describeIssues: one line per field, '<field>: <what and the fix>'", () => {
    it("the path as written in the input: dots between names, brackets for indexes, under the prefix", () => {
        assert.equal(issuePath(["pools", 0, "name"], ""), "pools[0].name");
        assert.equal(issuePath([0, "hooks", 1], "verify"), "verify[0].hooks[1]");
        assert.equal(issuePath(["a"], "spec"), "spec.a");
        assert.equal(issuePath([], ""), "");
    });
    it("an issue of the whole input is the spec's; an unknown field is named, quoted, with the fix", () => {
        const schema = z.strictObject({ a: z.string() });
        assert.deepEqual(refused(schema, { a: "x", b: 1, "c d": 2 }, ""), [
            'spec: unknown field(s) "b", "c d": check the spelling',
        ]);
        assert.deepEqual(refused(schema, { a: 1 }, "verify"), [
            "verify.a: Invalid input: expected string, received number",
        ]);
    });
});

describe("eksAddon: the add-on's values, or an explicit acknowledgement", () => {
    it("one of the two is required; acknowledgeOverwrite: false is not an acknowledgement", () => {
        const why =
            'eksAddon: give configurationValues (the add-on\'s values, e.g. {"mode":"nftables"}) or acknowledgeOverwrite: true';
        assert.deepEqual(refused(eksAddonSchema, {}, "eksAddon"), [why]);
        assert.deepEqual(refused(eksAddonSchema, { acknowledgeOverwrite: false }, "eksAddon"), [why]);
        assert.deepEqual(refused(eksAddonSchema, { acknowledgeOverwrite: true }, "eksAddon"), []);
        assert.deepEqual(refused(eksAddonSchema, { configurationValues: '{"mode":"nftables"}' }, "eksAddon"), []);
    });
    it("each field of the wrong type, and an unknown field, is refused by name", () => {
        assert.deepEqual(refused(eksAddonSchema, { configurationValues: 1 }, "eksAddon"), [
            'eksAddon.configurationValues: eksAddon.configurationValues must be the add-on\'s values as text, e.g. {"mode":"nftables"}',
        ]);
        assert.deepEqual(refused(eksAddonSchema, { acknowledgeOverwrite: "yes" }, "eksAddon"), [
            "eksAddon.acknowledgeOverwrite: eksAddon.acknowledgeOverwrite must be true or false",
        ]);
        assert.deepEqual(refused(eksAddonSchema, { acknowledgeOverwrite: true, overwrite: true }, "eksAddon"), [
            'eksAddon: unknown field(s) "overwrite": check the spelling',
        ]);
    });
});

describe("validateDesired: the desired settings' shape, each refusal naming its field", () => {
    const MODES = /must be one of iptables, ipvs, nftables: an empty or missing mode follows upstream's default/;
    /** The findings of a refused input as "field: message" (every one an error of code settings.shape). */
    function findings(input: unknown): string[] {
        const { settings, findings } = validateDesired(input);
        assert.equal(settings, undefined);
        for (const f of findings) assert.deepEqual([f.severity, f.code], ["error", "settings.shape"]);
        return findings.map((f) => `${f.field}: ${f.message}`);
    }

    it("every field, valid, passes as given", () => {
        const all = {
            mode: "nftables",
            featureGates: { KubeProxyNFTablesLocalhostNodePorts: true },
            nodePortAddresses: ["primary"],
            conntrack: { tcpBeLiberal: true },
            kubernetesVersion: "v1.37.2",
            allowUnknownFeatureGates: false,
        };
        assert.deepEqual(validateDesired(all), { settings: all, findings: [] });
    });
    it("a missing or empty mode says why it must be pinned; a wrong one is quoted as given", () => {
        for (const input of [{}, { mode: "" }]) {
            const [line, ...rest] = findings(input);
            assert.deepEqual(rest, []);
            assert.match(line, /^mode: mode is required and /);
            assert.match(line, MODES);
        }
        assert.match(findings({ mode: "nft" })[0], /^mode: mode "nft" is not a kube-proxy mode; mode is required/);
        assert.match(findings({ mode: 3 })[0], /^mode: mode 3 is not a kube-proxy mode; /);
    });
    it("each other field of the wrong shape is named, down to the entry", () => {
        const base = { mode: "nftables" };
        assert.deepEqual(findings({ ...base, featureGates: { NFTablesProxyMode: "yes" } }), [
            "featureGates.NFTablesProxyMode: feature-gate values must be true or false",
        ]);
        assert.deepEqual(findings({ ...base, featureGates: { "": true } }), ["featureGates.: Invalid key in record"]);
        assert.deepEqual(findings({ ...base, nodePortAddresses: ["primary", 1] }), [
            "nodePortAddresses.1: each nodePortAddresses entry must be a string (a CIDR or primary/localhost/all)",
        ]);
        assert.deepEqual(findings({ ...base, conntrack: { tcpBeLiberal: 1 } }), [
            "conntrack.tcpBeLiberal: conntrack.tcpBeLiberal must be true or false",
        ]);
        assert.deepEqual(findings({ ...base, conntrack: { maxPerCore: 1 } }), [
            "conntrack: unknown setting(s) maxPerCore",
        ]);
        assert.deepEqual(findings({ ...base, kubernetesVersion: "1.x" }), [
            'kubernetesVersion: kubernetesVersion must look like "1.37" or "v1.37.2"',
        ]);
        assert.match(findings({ ...base, allowUnknownFeatureGates: "yes" })[0], /^allowUnknownFeatureGates: /);
    });
    it("unknown settings are named together; settings that are not a mapping are the settings' error", () => {
        assert.deepEqual(findings({ mode: "nftables", modee: "x", gates: {} }), [
            "settings: unknown setting(s) modee, gates",
        ]);
        assert.match(findings(null)[0], /^settings: /);
        assert.match(findings("nftables")[0], /^settings: /);
    });
    it("featureGates.__proto__ is refused, not dropped", () => {
        assert.deepEqual(findings({ mode: "nftables", featureGates: JSON.parse('{"__proto__": true}') }), [
            'featureGates.__proto__: "__proto__" is not a feature gate of any Kubernetes release: kube-proxy refuses to start on an unknown gate; remove it',
        ]);
    });
});
