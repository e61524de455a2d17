// components/core/names.ts: names refused here exactly where the API server refuses them
// (apimachinery's validation: lengths, shapes, and ConfigMap keys).
import assert from "node:assert/strict";
import { configMapKeyProblem, nameProblem } from "../../components/core/names.js";

const label = (n: number) => "a".repeat(n);
// a subdomain of `n` characters: 63-character labels joined by dots, the last one shorter
function subdomain(n: number): string {
    const parts: string[] = [];
    let left = n;
    while (left > 0) {
        const len = Math.min(63, left);
        parts.push("a".repeat(len));
        left -= len + 1;
    }
    return parts.join(".").slice(0, n).replace(/\.$/, "b");
}

describe("names as the API server validates them", () => {
    it("a namespace (DNS-1123 label) of 63 characters is accepted, 64 refused", () => {
        assert.equal(nameProblem(label(63), "namespace", "label"), undefined);
        assert.match(nameProblem(label(64), "namespace", "label")!, /is not a namespace name: a DNS-1123 label/);
    });
    it("a Service name (DNS-1035 label) of 63 characters is accepted, 64 refused", () => {
        assert.equal(nameProblem(label(63), "Service", "service"), undefined);
        assert.ok(nameProblem(label(64), "Service", "service"));
    });
    it("a Service name starting with a digit is refused with the DNS-1035 rule", () => {
        assert.match(
            nameProblem("1kubernetes", "Service", "service")!,
            /not a Service name: a DNS-1035 label .*starting with a letter/,
        );
        assert.equal(nameProblem("1kubernetes", "namespace", "label"), undefined, "a namespace may start with a digit");
    });
    it("an object name (DNS-1123 subdomain) of 253 characters is accepted, 254 refused", () => {
        assert.equal(subdomain(253).length, 253);
        assert.equal(nameProblem(subdomain(253), "ConfigMap", "subdomain"), undefined);
        assert.equal(subdomain(254).length, 254);
        assert.match(nameProblem(subdomain(254), "ConfigMap", "subdomain")!, /a DNS-1123 subdomain/);
    });
});

describe("ConfigMap keys as the API server validates them", () => {
    it("dotted keys, hidden files and keys of 253 characters are accepted", () => {
        for (const key of ["config.conf", ".hidden", "a..b", "a".repeat(253)])
            assert.equal(configMapKeyProblem(key), undefined, key);
    });
    it("a key longer than 253 characters is refused", () => {
        assert.ok(configMapKeyProblem("a".repeat(254)));
    });
    it('"." and ".." are refused, and so is a key starting with ".." (the kubelet\'s ..data links)', () => {
        for (const key of [".", "..", "..data", "..."])
            assert.match(configMapKeyProblem(key)!, /is not a ConfigMap key/, key);
    });
    it("a key with a slash or a space is refused", () => {
        for (const key of ["a/b", "a b", ""]) assert.ok(configMapKeyProblem(key), JSON.stringify(key));
    });
});
