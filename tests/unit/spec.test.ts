// components/rollout/spec.ts, core/pools.ts, core/promotion.ts: durations are read once, where an
// input or the step's spec is parsed. Each duration field as written ("90s") comes out in seconds
// under its own name (soakSeconds, ...), with its default when left out; a bad value is refused
// with a message naming the field. A spec written by the previous version (0.1.0, durations as
// text, tests/fixtures/specs/rollout-spec-0.1.0.json) parses unchanged, and the form the
// component stores (and puts in each pool step's triggers) is byte for byte what 0.1.0 stored.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { parsePools } from "../../components/core/pools.js";
import { parsePromotion } from "../../components/core/promotion.js";
import { describeIssues } from "../../components/core/schema.js";
import { rolloutSpecInputSchema, rolloutSpecSchema } from "../../components/rollout/spec.js";
import { FIXTURES, ROOT } from "../helpers.js";

const V010 = JSON.parse(readFileSync(join(FIXTURES, "specs", "rollout-spec-0.1.0.json"), "utf8")) as Record<
    string,
    unknown
>;
const TARGET = V010.target;

/** A spec with one pool and the given pool fields and verify settings, as the component writes it. */
function spec(pool: Record<string, unknown> = {}, verify: Record<string, unknown> = {}) {
    return { target: TARGET, pools: [{ name: "canary", nodeSelector: "pool=canary", ...pool }], verify };
}

/** The lines the spec's parse refuses it with ("<field>: <what and the fix>"), or [] when it parses. */
function refusal(input: unknown): string[] {
    const parsed = rolloutSpecSchema.safeParse(input);
    return parsed.success ? [] : describeIssues(parsed.error.issues, "");
}

describe("the rollout spec's durations are parsed once, into seconds", () => {
    it("pools[].soak: 1h30m -> soakSeconds 5400; left out -> 0", () => {
        assert.equal(rolloutSpecSchema.parse(spec({ soak: "1h30m" })).pools[0].soakSeconds, 5400);
        assert.equal(rolloutSpecSchema.parse(spec()).pools[0].soakSeconds, 0);
    });
    it("pools[].drainTimeout: 45s -> drainTimeoutSeconds 45; 0 -> 0 (no limit, as kubectl); left out -> 300", () => {
        assert.equal(rolloutSpecSchema.parse(spec({ drainTimeout: "45s" })).pools[0].drainTimeoutSeconds, 45);
        assert.equal(rolloutSpecSchema.parse(spec({ drainTimeout: "0" })).pools[0].drainTimeoutSeconds, 0);
        assert.equal(rolloutSpecSchema.parse(spec()).pools[0].drainTimeoutSeconds, 300);
    });
    it("verify.maxSyncAge: 90s -> maxSyncAgeSeconds 90; left out -> 300", () => {
        assert.equal(rolloutSpecSchema.parse(spec({}, { maxSyncAge: "90s" })).verify.maxSyncAgeSeconds, 90);
        assert.equal(rolloutSpecSchema.parse(spec()).verify.maxSyncAgeSeconds, 300);
        assert.equal(rolloutSpecSchema.parse({ target: TARGET, pools: spec().pools }).verify.maxSyncAgeSeconds, 300);
    });
    it("verify.podTimeout: 2m30s -> podTimeoutSeconds 150; left out -> 180", () => {
        assert.equal(rolloutSpecSchema.parse(spec({}, { podTimeout: "2m30s" })).verify.podTimeoutSeconds, 150);
        assert.equal(rolloutSpecSchema.parse(spec()).verify.podTimeoutSeconds, 180);
    });
    it("verify.hooks[].timeout: 2m -> timeoutSeconds 120; left out -> 300", () => {
        const hooks = [
            { name: "a", command: ["./a.sh"], timeout: "2m" },
            { name: "b", command: ["./b.sh"] },
        ];
        assert.deepEqual(
            rolloutSpecSchema.parse(spec({}, { hooks })).verify.hooks.map((h) => h.timeoutSeconds),
            [120, 300],
        );
    });
    it("the parsed spec carries seconds only: no duration text is left for later code to parse", () => {
        const parsed = rolloutSpecSchema.parse(V010);
        const texts = JSON.stringify(parsed).match(/"(soak|drainTimeout|maxSyncAge|podTimeout|timeout)":/g);
        assert.equal(texts, null, `duration text left in the parsed spec: ${texts?.join(", ")}`);
    });
    it("a bad duration is refused, naming the field and the fix", () => {
        const fix = /is not a duration; write it like 30s, 10m or 1h30m$/;
        const cases: [unknown, string][] = [
            [spec({ soak: "soon" }), "pools[0].soak"],
            [spec({ drainTimeout: "5 minutes" }), "pools[0].drainTimeout"],
            [spec({}, { maxSyncAge: "5" }), "verify.maxSyncAge"],
            [spec({}, { podTimeout: "3mins" }), "verify.podTimeout"],
            [spec({}, { hooks: [{ name: "a", command: ["./a.sh"], timeout: "1d" }] }), "verify.hooks[0].timeout"],
        ];
        for (const [input, field] of cases) {
            const lines = refusal(input);
            assert.equal(lines.length, 1, `${field}: ${lines.join("; ")}`);
            assert.ok(lines[0].startsWith(`${field}: `), lines[0]);
            assert.match(lines[0], fix);
        }
    });
    it("a timeout of 0 is refused (it could never pass): verify.podTimeout, verify.maxSyncAge, a hook's timeout", () => {
        assert.match(refusal(spec({}, { podTimeout: "0" }))[0], /^verify\.podTimeout: "0" must be longer than 0/);
        assert.match(refusal(spec({}, { maxSyncAge: "0s" }))[0], /^verify\.maxSyncAge: "0s" must be longer than 0/);
        assert.match(
            refusal(spec({}, { hooks: [{ name: "a", command: ["x"], timeout: "0" }] }))[0],
            /^verify\.hooks\[0\]\.timeout: "0" must be longer than 0/,
        );
    });
    it("the spec refuses a pool name used twice (the runner plans from it)", () => {
        const twice = { target: TARGET, pools: [spec().pools[0], spec().pools[0]] };
        assert.deepEqual(refusal(twice), ["pools[1].name: pool name canary is used twice"]);
    });
});

describe("the rollout spec's names: each refusal names the field, the kind of name and an example", () => {
    const names = (target: Record<string, unknown>) => refusal({ ...spec(), names: target });
    it("an empty name is one refusal (not empty), not also a name rule's", () => {
        assert.deepEqual(names({ namespace: "" }), [
            "names.namespace: target.namespace must not be empty; e.g. kube-system, or leave it out for the default",
        ]);
    });
    it("each target name says which kind of name it must be", () => {
        assert.match(
            names({ namespace: "a/../b" }).join(),
            /^names\.namespace: "a\/\.\.\/b" is not a namespace name: a DNS-1123 label .*; e\.g\. kube-system$/,
        );
        assert.match(
            names({ configMap: "Bad_Name" }).join(),
            /^names\.configMap: "Bad_Name" is not a ConfigMap name: a DNS-1123 subdomain .*; e\.g\. kube-proxy$/,
        );
        assert.match(
            names({ daemonSet: "Bad_Name" }).join(),
            /^names\.daemonSet: "Bad_Name" is not a DaemonSet name: a DNS-1123 subdomain .*; e\.g\. kube-proxy$/,
        );
    });
    it("a pod selector the API cannot parse is refused once under its field, its reason not prefixed twice", () => {
        assert.deepEqual(names({ podSelector: "k8s-app=kube-proxy," }), [
            'names.podSelector: "k8s-app=kube-proxy," has an empty requirement (a trailing or doubled comma); remove it; e.g. k8s-app=kube-proxy',
        ]);
    });
    it("verify.service names the part that is wrong: the namespace or the Service", () => {
        assert.match(
            refusal(spec({}, { service: "Bad_NS/kubernetes" })).join(),
            /^verify\.service: "Bad_NS" is not a namespace name: .*; e\.g\. default\/kubernetes$/,
        );
        assert.match(
            refusal(spec({}, { service: "default/Bad.Svc" })).join(),
            /^verify\.service: "Bad\.Svc" is not a Service name: a DNS-1035 label .*; e\.g\. default\/kubernetes$/,
        );
    });
    it("a hook name used twice is refused on the second, naming it", () => {
        const hooks = [
            { name: "nodeport", command: ["./a"] },
            { name: "nodeport", command: ["./b"] },
        ];
        assert.deepEqual(refusal(spec({}, { hooks })), [
            'verify.hooks[1].name: hook name "nodeport" is used twice; give each hook its own name',
        ]);
    });
});

describe("the component's inputs: durations in seconds where they are parsed", () => {
    it("pools as declared: parsePools gives soakSeconds and drainTimeoutSeconds, or a finding naming the field", () => {
        assert.deepEqual(
            parsePools([{ name: "a", nodeSelector: "x=y", soak: "10m", drainTimeout: "1m" }]).pools?.map((p) => [
                p.soakSeconds,
                p.drainTimeoutSeconds,
            ]),
            [[600, 60]],
        );
        const bad = parsePools([
            { name: "a", nodeSelector: "x=y" },
            { name: "b", nodeSelector: "x=z", soak: "soon", drainTimeout: "-1s" },
        ]);
        assert.equal(bad.pools, undefined);
        assert.deepEqual(
            bad.findings.map((f) => [f.code, f.field]),
            [
                ["pools.soak", "pools[1].soak"],
                ["pools.drainTimeout", "pools[1].drainTimeout"],
            ],
        );
        assert.match(bad.findings[0].message, /"soon" is not a duration/);
    });
    it("pool names used twice are a pools.duplicate finding on the second", () => {
        const { findings } = parsePools([
            { name: "a", nodeSelector: "x=y" },
            { name: "a", nodeSelector: "x=z" },
        ]);
        assert.deepEqual(
            findings.map((f) => [f.code, f.field, f.message]),
            [["pools.duplicate", "pools[1].name", "pool name a is used twice"]],
        );
    });
    it("promotion.minSoak: 36h -> minSoakSeconds 129600, 0s -> 0; a bad value names promotion.minSoak", () => {
        assert.equal(parsePromotion({ after: "o/p/s", minSoak: "36h" }).minSoakSeconds, 129600);
        assert.equal(parsePromotion({ after: "o/p/s", minSoak: "0s" }).minSoakSeconds, 0);
        assert.throws(
            () => parsePromotion({ after: "o/p/s", minSoak: "tomorrow" }),
            /^Error: promotion\.minSoak: "tomorrow" is not a duration; write it like 30s, 10m or 1h30m$/,
        );
    });
});

describe("a step created by the previous version (0.1.0) still runs", () => {
    it("its stored spec (durations as text) parses into the seconds the runner reads", () => {
        const parsed = rolloutSpecSchema.parse(V010);
        assert.deepEqual(
            parsed.pools.map((p) => [p.name, p.soakSeconds, p.drainTimeoutSeconds]),
            [
                ["canary", 600, 300],
                ["workers", 5400, 0],
                ["rest", 0, 45],
            ],
        );
        assert.equal(parsed.verify.maxSyncAgeSeconds, 90);
        assert.equal(parsed.verify.podTimeoutSeconds, 180);
        assert.deepEqual(
            parsed.verify.hooks.map((h) => [h.name, h.timeoutSeconds]),
            [
                ["nodeport", 120],
                ["dns", 300],
            ],
        );
    });
    it("the form the component stores now is 0.1.0's, byte for byte (so no pool step's triggers change)", () => {
        // the inputs the fixture was written from by 0.1.0 (commit 3d699da: its decideOnce's
        // rolloutSpecSchema.parse of them); the workers pool's keys come in another order here, and the
        // stored form is in the schema's order all the same
        const written = rolloutSpecInputSchema.parse({
            flavor: "kubeadm",
            names: {},
            target: TARGET,
            pools: [
                { name: "canary", nodeSelector: "pool=canary", soak: "10m" },
                {
                    soak: "1h30m",
                    drainTimeout: "0",
                    name: "workers",
                    nodeSelector: " pool=workers ",
                    maxUnavailable: 2,
                    drain: true,
                },
                { name: "rest", nodeSelector: "pool=rest", drainTimeout: "45s", drain: { force: true } },
            ],
            verify: {
                maxSyncAge: "90s",
                hooks: [
                    { name: "nodeport", command: ["./check.sh"], timeout: "2m" },
                    { name: "dns", command: ["./dns.sh"] },
                ],
            },
            onFailure: "rollback-node",
            cluster: { server: "https://127.0.0.1:6443", context: "admin" },
        });
        assert.equal(JSON.stringify(written, null, 2), JSON.stringify(V010, null, 2));
        assert.deepEqual(rolloutSpecInputSchema.parse(V010), V010, "re-parsing a stored spec changes nothing");
    });
});

describe("no code parses a duration past the schemas", () => {
    it("parseDuration is called by core/schema.ts only", () => {
        const users: string[] = [];
        const walk = (dir: string) => {
            for (const e of readdirSync(dir, { withFileTypes: true })) {
                const p = join(dir, e.name);
                if (e.isDirectory()) walk(p);
                else if (e.name.endsWith(".ts") && /\bparseDuration\(/.test(readFileSync(p, "utf8")))
                    users.push(relative(ROOT, p));
            }
        };
        walk(join(ROOT, "components"));
        assert.deepEqual(users.sort(), ["components/core/duration.ts", "components/core/schema.ts"]);
    });
});
