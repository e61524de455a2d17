// components/core/selector.ts: label selectors as text, parsed as the API parses them and matched
// locally, so a pool selects the same nodes from a --nodes file as from the API.
import assert from "node:assert/strict";
import { matchesSelector, parseSelector } from "../../components/core/selector.js";

const NODE = { pool: "canary", zone: "a", "node.kubernetes.io/gpu": "" };

describe("matchesSelector: which nodes a selector selects", () => {
    const table: [string, boolean][] = [
        ["", true],
        ["  ", true],
        ["pool=canary", true],
        ["pool==canary", true],
        ["pool=workers", false],
        ["tier=canary", false],
        ["pool!=workers", true],
        ["pool!=canary", false],
        ["tier!=x", true],
        ["pool in (canary,workers)", true],
        ["pool in (workers)", false],
        ["tier in (canary)", false],
        ["pool notin (workers)", true],
        ["pool notin (canary, workers)", false],
        ["tier notin (canary)", true],
        ["pool", true],
        ["tier", false],
        ["!tier", true],
        ["!pool", false],
        ["! tier", true],
        ["node.kubernetes.io/gpu", true],
        ["node.kubernetes.io/gpu=", true],
        ["pool=canary, zone=a", true],
        ["pool=canary,zone=b", false],
        ["zone=b,pool=canary", false],
        ["pool  in  (canary)", true],
        ["pool in ( workers , canary )", true],
    ];
    for (const [text, selects] of table) {
        it(`${JSON.stringify(text)} ${selects ? "selects" : "does not select"} ${JSON.stringify(NODE)}`, () => {
            assert.equal(matchesSelector(parseSelector(text), NODE), selects);
        });
    }
    it("a node without labels is selected only by requirements of absence", () => {
        assert.equal(matchesSelector(parseSelector("!pool,tier!=x,tier notin (a)"), undefined), true);
        assert.equal(matchesSelector(parseSelector("pool"), undefined), false);
    });
});

describe("parseSelector: what the API would refuse", () => {
    const refused: [string, RegExp][] = [
        ["pool=canary,", /empty requirement/],
        ["/pool=canary", /invalid label key "\/pool"/],
        [`${"k".repeat(64)}=v`, /invalid label key/],
        [`pool=${"v".repeat(64)}`, /invalid label value/],
        ["pool in ( )", /lists no value: in needs at least one/],
        ["pool in (a b)", /invalid label value "a b"/],
        ["-pool in (a)", /invalid label key "-pool"/],
        ["x pool in (a)", /cannot read "x pool in \(a\)"/],
        ["pool in (a) x", /cannot read/],
        ["!pool=canary", /invalid label key "pool=canary"/],
        ["pool!canary", /cannot read "pool!canary"/],
        ["!pool x", /cannot read "!pool x"/],
    ];
    for (const [text, why] of refused) {
        it(`refuses ${JSON.stringify(text.length > 30 ? `${text.slice(0, 12)}...` : text)}`, () => {
            assert.throws(() => parseSelector(text, "pools[0].nodeSelector"), {
                name: "InputError",
                message: new RegExp(`^pools\\[0\\]\\.nodeSelector: .*${why.source}`),
            });
        });
    }
    it("takes keys and values up to 63 characters", () => {
        const name = "k".repeat(63);
        const value = "v".repeat(63);
        assert.equal(matchesSelector(parseSelector(`${name}=${value}`), { [name]: value }), true);
    });
    it("names the field nodeSelector unless told another", () => {
        assert.throws(() => parseSelector("a=b,"), { message: /^nodeSelector: / });
    });
});
