// components/core/nodePortAddresses.ts: the fix offered for an entry kube-proxy would refuse, and the
// IPv6 forms Go's net.ParseCIDR reads (tests/unit/inputs.test.ts has the refusals' reasons).
import assert from "node:assert/strict";
import { classifyNodePortAddress, type NodePortEntry } from "../../components/core/index.js";

const suggestion = (e: NodePortEntry) => (e.kind === "invalid" ? e.suggestion : `not refused: ${JSON.stringify(e)}`);
const reason = (e: NodePortEntry) => (e.kind === "invalid" ? e.reason : `not refused: ${JSON.stringify(e)}`);

describe("nodePortAddresses: the fix offered for an entry kube-proxy refuses", () => {
    const FIXES: [string, string | undefined][] = [
        // leading zeros: the decimal reading kube-proxy takes, every octet
        ["010.001.0.0/16", "10.1.0.0/16"],
        ["010.0.0.255/32", "10.0.0.255/32"],
        ["::ffff:010.0.0.1/96", "::ffff:10.0.0.1/96"],
        // a zone: the address without it
        ["fe80::1%eth0/64", "fe80::1/64"],
        // spaces: the entry trimmed; nothing but spaces has no fix
        [" 10.0.0.0/8 ", "10.0.0.0/8"],
        ["   ", undefined],
        // an address without a prefix: its family's full length
        ["fd00::1", "fd00::1/128"],
        ["10.1.2.3", "10.1.2.3/32"],
        // hex or exponent octets are not leading zeros: nothing to offer
        ["0x0a.0.0.0/8", undefined],
        ["1e2.0.0.0/8", undefined],
        ["::ffff:1.2.3/96", undefined],
    ];
    for (const [entry, fix] of FIXES) {
        it(`${JSON.stringify(entry)}: ${fix === undefined ? "refused without a fix" : `fix ${fix}`}`, () => {
            const e = classifyNodePortAddress(entry);
            assert.equal(e.kind, "invalid");
            assert.equal(suggestion(e), fix);
            if (fix === undefined) assert.ok(!("suggestion" in e), "no suggestion key");
        });
    }
    it("the reason says what is wrong with the address", () => {
        assert.match(reason(classifyNodePortAddress("::ffff:1.2.3/96")), /dotted tail must be four decimal octets/);
        assert.match(reason(classifyNodePortAddress("1::g/64")), /not an IPv6 address: 8 groups/);
        assert.match(reason(classifyNodePortAddress("fe80::1%eth0/64")), /no zone \(%eth0\)/);
        assert.match(reason(classifyNodePortAddress("banana")), /neither a CIDR nor one of primary, localhost, all/);
        assert.match(reason(classifyNodePortAddress("/8")), /four decimal octets/, "a prefix without its address");
        assert.match(reason(classifyNodePortAddress("10.0.0.0/8x")), /prefix length must be a whole number/);
    });
});

describe("nodePortAddresses: IPv6 as Go's net.ParseCIDR reads it", () => {
    const ACCEPTED = [
        "1:2:3:4:5:6:1.2.3.4/128", // six groups and a dotted tail: the full form
        "::1.2.3.4/128", // the tail right after ::
        "64:ff9b::1.2.3.4/96",
        "1:2:3:4:5:6:7::/128", // :: standing for one group
    ];
    for (const entry of ACCEPTED)
        it(`${entry} is an ipv6 CIDR`, () => {
            assert.deepEqual(classifyNodePortAddress(entry), { kind: "cidr", family: "ipv6", cidr: entry });
        });
    const REFUSED = [
        "1:2:3::4:5::6:7:8/128", // two ::
        "1:2:3:4:5:6:7::8/128", // :: standing for no group
        "1:2:3:4:5::6:1.2.3.4/128", // :: and a tail that leave no group for it
        "1:2:3:4:5:1.2.3.4/128", // one group short before the tail
        "1::g/64",
        "1:g::/64",
        "1:2:3:4:5:6:7:12345/128",
    ];
    for (const entry of REFUSED)
        it(`${entry} is refused`, () => {
            assert.equal(classifyNodePortAddress(entry).kind, "invalid");
        });
});
