// components/core/pools.ts: a list of pools as declared, parsed, or refused with findings that
// name the pool's field (the component refuses the migration with them).
import assert from "node:assert/strict";
import { parsePools } from "../../components/core/pools.js";

const findings = (input: unknown) => {
    const parsed = parsePools(input);
    assert.equal(parsed.pools, undefined, "no pools when there are findings");
    return parsed.findings;
};

describe("parsePools: the findings of a list of pools", () => {
    for (const [what, input] of [
        ["absent", undefined],
        ["not a list", { name: "all", nodeSelector: "kubernetes.io/os=linux" }],
        ["empty", []],
    ] as const) {
        it(`pools ${what}: pools.empty, with the pool to add`, () => {
            assert.deepEqual(findings(input), [
                {
                    severity: "error",
                    code: "pools.empty",
                    field: "pools",
                    message: "pools must list at least one node pool",
                    fix: 'add { name: "all", nodeSelector: "kubernetes.io/os=linux" }',
                },
            ]);
        });
    }
    it("a selector that cannot be read is pools.selector on the pool's nodeSelector, quoting it", () => {
        const [f] = findings([{ name: "a", nodeSelector: "a in (b" }]);
        assert.deepEqual([f.severity, f.code, f.field], ["error", "pools.selector", "pools[0].nodeSelector"]);
        assert.match(f.message, /^nodeSelector: cannot read "a in \(b" as a label selector/);
    });
    it("a pool that is not an object, or has an unknown field, is pools.field on the pool itself", () => {
        assert.deepEqual(
            findings([5]).map((f) => [f.code, f.field]),
            [["pools.field", "pools[0]"]],
        );
        const [unknown] = findings([
            { name: "a", nodeSelector: "x=y" },
            { name: "b", nodeSelector: "x=z", drian: true },
        ]);
        assert.deepEqual(
            [unknown.code, unknown.field, unknown.message],
            ["pools.field", "pools[1]", 'unknown field(s) "drian": check the spelling'],
        );
    });
    it("a list of valid pools parses with no findings", () => {
        const { pools, findings: none } = parsePools([{ name: "all", nodeSelector: "kubernetes.io/os=linux" }]);
        assert.deepEqual(none, []);
        assert.deepEqual(
            pools?.map((p) => p.name),
            ["all"],
        );
    });
});
