// kube-proxy-mode promote without a backend: its input errors (exit 2, naming the flag) and how it
// reads a gate refusal out of the engine's error. The end-to-end test runs it on three stacks.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gateUpstream } from "../../components/cli/commands/promote.js";
import { runCli } from "../helpers.js";

describe("kube-proxy-mode promote (input)", () => {
    it("is listed in the usage", () => {
        const r = runCli(["--help"]);
        assert.match(r.stdout, /^ {2}promote\s+preview stacks \(dev,staging,prod\), then apply them in order/m);
    });
    it("--help documents --stacks, --yes, --cwd and the summary", () => {
        const r = runCli(["promote", "--help"]);
        assert.equal(r.code, 0);
        assert.match(r.stdout, /--stacks A,B,C/);
        assert.match(r.stdout, /^\s+--yes\s+apply, in order; without it: preview only/m);
        assert.match(r.stdout, /^\s+--cwd DIR\s+the Pulumi project directory/m);
        assert.match(r.stdout, /stack, cluster, from -> to, nodes verified, duration, result/);
    });
    it("requires --stacks", () => {
        const r = runCli(["promote"]);
        assert.equal(r.code, 2);
        assert.match(r.stderr, /promote: --stacks is required: the stacks in order, e\.g\. --stacks dev,staging,prod/);
    });
    it("refuses a stack named twice", () => {
        const r = runCli(["promote", "--stacks", "dev,prod,dev"]);
        assert.equal(r.code, 2);
        assert.match(r.stderr, /--stacks names dev more than once/);
    });
    it("refuses a directory without a Pulumi project", () => {
        const dir = mkdtempSync(join(tmpdir(), "kpm-promote-"));
        try {
            const r = runCli(["promote", "--stacks", "dev", "--cwd", dir]);
            assert.equal(r.code, 2);
            assert.match(
                r.stderr,
                /--cwd .*kpm-promote-\w+: no Pulumi\.yaml there; run promote in the project directory or pass --cwd/,
            );
        } finally {
            rmSync(dir, { recursive: true, force: true });
        }
    });
    it("reads which upstream a gate refusal waits for out of the engine's error", () => {
        const engine =
            "error: Running program failed\n    error: KubeProxyMode kube-proxy: promotion gate refused: organization/kube-proxy-mode/staging is not ready to be followed:\n    - x";
        assert.equal(gateUpstream(engine), "organization/kube-proxy-mode/staging");
        assert.equal(gateUpstream("error: node workers-1 failed"), undefined);
    });
});
