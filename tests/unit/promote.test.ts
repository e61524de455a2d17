// kube-proxy-mode promote without a backend: its input errors (exit 2, naming the flag) and how it
// reads a gate refusal out of the engine's error. The end-to-end test runs it on three stacks.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type * as pulumi from "@pulumi/pulumi";
import {
    errorDiagnostics,
    failureDetail,
    gateUpstream,
    type StackOutputs,
} from "../../components/automation/stacks.js";
import type { KubeProxyMode } from "../../components/pulumi/kubeProxyMode.js";
import { runCli } from "../helpers.js";

/** Whether two types are the same type (each assignable to the other, checked without distribution). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type OutputOf<T> = T extends pulumi.Output<infer U> ? U : never;

describe("kube-proxy-mode promote (stack outputs)", () => {
    it("reads change and promotion as KubeProxyMode's own output types, not a shape of its own", () => {
        // checked when the tests compile: a shape written again in promote.ts that drifts from
        // the component's outputs fails the build here
        const change: Same<Required<StackOutputs>["change"], OutputOf<KubeProxyMode["change"]>> = true;
        const promotion: Same<
            Required<StackOutputs>["promotion"],
            NonNullable<OutputOf<KubeProxyMode["promotion"]>>
        > = true;
        assert.deepEqual([change, promotion], [true, true]);
    });
});

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

    // The engine's text when the refusal is a ResourceError on the component (a `pulumi up` run by
    // promote, as the e2e test printed it): the refusal's first line in a progress row, then more
    // progress, then the whole refusal under the component in Diagnostics.
    const LEFT = "promotion.minSoak is 1h: 59m55s left (retry after 2026-12-01T09:43:41.965Z)";
    const REFUSAL =
        "promotion gate refused: organization/kube-proxy-mode/dev is not ready to be followed: - organization/kube-proxy-mode/dev " +
        `finished at 2026-12-01T08:43:41.965Z and has held it for 5s; ${LEFT}`;
    const ENGINE = [
        " +  kube-proxy-mode:index:KubeProxyMode kube-proxy creating (35s) error: KubeProxyMode kube-proxy: promotion gate refused: organization/kube-proxy-mode/dev is not ready to be followed:",
        "@ updating...",
        ".",
        "",
        " +  kube-proxy-mode:index:KubeProxyMode kube-proxy **creating failed** 1 error; 2 warnings; 3 messages",
        " +  pulumi:pulumi:Stack kube-proxy-mode-staging created (38s) 1 warning",
        "Diagnostics:",
        "  kube-proxy-mode:index:KubeProxyMode (kube-proxy):",
        "    warning: conntrack.tcpBeLiberal: on nodes with a kernel older than 6.1 ...",
        "    error: KubeProxyMode kube-proxy: promotion gate refused: organization/kube-proxy-mode/dev is not ready to be followed:",
        `    - organization/kube-proxy-mode/dev finished at 2026-12-01T08:43:41.965Z and has held it for 5s; ${LEFT}`,
        "",
        "  pulumi:pulumi:Stack (kube-proxy-mode-staging):",
        "    warning: using pulumi-language-nodejs from $PATH",
    ].join("\n");

    it("reads a gate refusal shown on the component: the whole refusal from Diagnostics, not the progress rows after its first line", () => {
        assert.equal(gateUpstream(ENGINE), "organization/kube-proxy-mode/dev");
        assert.equal(failureDetail(ENGINE), REFUSAL);
    });

    it("reads a gate refusal from the engine's error diagnostics (events) as the component wrote it", () => {
        const text =
            "KubeProxyMode kube-proxy: promotion gate refused: organization/kube-proxy-mode/dev is not ready to be followed:\n" +
            `- organization/kube-proxy-mode/dev finished at 2026-12-01T08:43:41.965Z and has held it for 5s; ${LEFT}\n`;
        const diagnostic = (severity: "info" | "warning" | "error", message: string) => ({
            sequence: 0,
            timestamp: 0,
            diagnosticEvent: {
                urn: "urn:pulumi:staging::p::kube-proxy-mode:index:KubeProxyMode::kube-proxy",
                message,
                color: "never",
                severity,
            },
        });
        const shown = errorDiagnostics([
            diagnostic("info", "cluster ..."),
            diagnostic("error", text),
            diagnostic("warning", "x"),
        ]);
        assert.equal(gateUpstream(shown), "organization/kube-proxy-mode/dev");
        assert.equal(failureDetail(shown), REFUSAL);
    });
});
