// components/core/versions.ts: Kubernetes and kernel versions as servers and users write them.
import assert from "node:assert/strict";
import { parseKernelVersion, parseKubeVersion } from "../../components/core/index.js";

describe("versions", () => {
    it("reads Kubernetes versions as servers and users write them", () => {
        for (const [raw, release] of [
            ["1.37", "1.37"],
            ["v1.37.2", "1.37"],
            ["1.30.4-eks-a737599", "1.30"],
            ["v1.33.1+k3s1", "1.33"],
        ]) {
            assert.equal(parseKubeVersion(raw)?.release, release, raw);
        }
        assert.equal(parseKubeVersion("latest"), undefined);
    });
    it("reads kernel versions, and nothing that is not one", () => {
        assert.deepEqual(parseKernelVersion("5.14.0-427.13.1.el9_4.x86_64")?.minor, 14);
        assert.equal(parseKernelVersion("Linux 5.14"), undefined);
    });
});
