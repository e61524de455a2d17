// components/core/versions.ts and duration.ts: Kubernetes and kernel versions, and Go-style durations,
// as servers and users write them.
import assert from "node:assert/strict";
import {
    atLeast,
    formatDuration,
    kernelAtLeast,
    parseDuration,
    parseKernelVersion,
    parseKubeVersion,
} from "../../components/core/index.js";

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
    it("keeps the patch (0 when absent) and what was written; surrounding spaces are ignored", () => {
        assert.deepEqual(parseKubeVersion(" v1.37.2 "), {
            major: 1,
            minor: 37,
            patch: 2,
            release: "1.37",
            raw: " v1.37.2 ",
        });
        assert.equal(parseKubeVersion("1.37")?.patch, 0);
        assert.deepEqual(parseKernelVersion(" 6.8.0-51-generic "), {
            major: 6,
            minor: 8,
            patch: 0,
            raw: " 6.8.0-51-generic ",
        });
        assert.deepEqual(parseKernelVersion("5.15.153.1-microsoft-standard-WSL2")?.patch, 153);
        assert.equal(parseKernelVersion("6.6")?.patch, 0);
    });
    it("compares releases by major.minor, and kernels with their patch", () => {
        assert.equal(atLeast(parseKubeVersion("v1.33.9")!, "1.33"), true);
        assert.equal(atLeast(parseKubeVersion("v1.32.9")!, "1.33"), false);
        assert.equal(atLeast(parseKubeVersion("v2.0.0")!, "1.33"), true);
        assert.equal(kernelAtLeast(parseKernelVersion("5.13.0")!, "5.13"), true);
        assert.equal(kernelAtLeast(parseKernelVersion("5.12.19")!, "5.13"), false);
        assert.equal(kernelAtLeast(parseKernelVersion("6.1.5")!, "6.1.5"), true);
        assert.equal(kernelAtLeast(parseKernelVersion("6.1.4")!, "6.1.5"), false);
    });
});

describe("durations as Go writes them", () => {
    const read: [string, number][] = [
        ["0", 0],
        [" 10m ", 600],
        ["1h30m", 5400],
        ["1.5h", 5400],
        ["1.25h", 4500],
        ["45s", 45],
        ["250ms", 0.25],
    ];
    for (const [text, seconds] of read) {
        it(`${JSON.stringify(text)} is ${seconds}s`, () => {
            assert.equal(parseDuration(text, "soak"), seconds);
        });
    }
    for (const text of ["", "  ", "10", "1d", "10m soon", "1.h"]) {
        it(`${JSON.stringify(text)} is refused, naming the field`, () => {
            assert.throws(() => parseDuration(text, "pools[0].soak"), {
                name: "InputError",
                message: `pools[0].soak: ${JSON.stringify(text)} is not a duration; write it like 30s, 10m or 1h30m`,
            });
        });
    }
    const shown: [number, string][] = [
        [0, "0s"],
        [0.2, "0s"],
        [45, "45s"],
        [60, "1m"],
        [90, "1m30s"],
        [3600, "1h"],
        [3660, "1h1m"],
        [3601, "1h1s"],
        [93784, "26h3m4s"],
    ];
    for (const [seconds, text] of shown) {
        it(`${seconds}s is shown as ${text}`, () => {
            assert.equal(formatDuration(seconds), text);
        });
    }
});
