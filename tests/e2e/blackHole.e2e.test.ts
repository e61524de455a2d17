// A black-holed API server, for real: a TCP proxy on 127.0.0.1 (blackHoleProxy.ts) stands between
// the CLI and the reference cluster's real kube-apiserver, and stops forwarding while keeping every
// connection open and accepting new ones it never answers. `status` and `precheck` through it fail
// within the request timeout; a rollout cut off mid-node exits in bounded time naming the server
// and the timeout, no write of it reaches the API server after its lease could be taken over (the
// API server's audit log says so), and once the proxy forwards again the next run resumes the node
// and finishes it. kwok nodes run no process, so the built-in node checks CANNOT run here
// (verify.nodeChecks: false); the per-node check is a hook the test steers (hooks/fault-hook.js).
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { parse, stringify } from "yaml";
import { MARKS } from "../../components/core/plan.js";
import type { ClusterState } from "../../scripts/referenceCluster.js";
import { CLI, ROOT, runAsync } from "../helpers.js";
import { BlackHoleProxy } from "./blackHoleProxy.js";
import { writeSpec } from "./drainSupport.js";
import { clients, leastPrivilegeKubeconfig, startCluster, stopCluster, watchedCli } from "./support.js";

const KWOK = "(kwok nodes: built-in node checks not run; the check is a steerable hook)";
/** the lease of these runs, and their request timeout (at most a third of it) */
const LEASE_SECONDS = 12;
const TIMEOUT_SECONDS = 3;
const ROLLOUT_ACCOUNT = "system:serviceaccount:kube-system:kube-proxy-mode";

/** What the test reads of an audit event. */
interface AuditEvent {
    verb?: string;
    requestURI?: string;
    requestReceivedTimestamp?: string;
    user?: { username?: string };
}

describe(
    "@e2e a black-holed API server (a real TCP black hole in front of the real kube-apiserver) " + KWOK,
    function () {
        this.timeout(300_000);
        let cluster: ClusterState | undefined;
        let proxy: BlackHoleProxy;
        let dir: string;
        let faultFile: string;
        let kubeconfig: string;
        const output: string[] = [];

        before(async () => {
            cluster = await startCluster({
                nodes: "kwok",
                pools: [["canary", 1]],
                audit: true,
            });
            dir = mkdtempSync(join(tmpdir(), "kpm-blackhole-"));
            faultFile = join(dir, "fault.json");
            proxy = new BlackHoleProxy({ host: "127.0.0.1", port: cluster.ports.apiserver });
            await proxy.start();
            // the rollout's identity (the shipped role), reaching the API server through the proxy
            const config = parse(await leastPrivilegeKubeconfig(cluster)) as {
                clusters: { cluster: { server: string } }[];
            };
            for (const c of config.clusters) c.cluster.server = proxy.url;
            kubeconfig = join(dir, "kubeconfig");
            writeFileSync(kubeconfig, stringify(config), { mode: 0o600 });
        });
        afterEach(function () {
            proxy.blackHole(false);
            if (this.currentTest?.state === "failed")
                process.stderr.write(`--- output of the failed test ---\n${output.join("\n").slice(-8000)}\n`);
        });
        after(async () => {
            await proxy?.close();
            if (dir) rmSync(dir, { recursive: true, force: true });
            await stopCluster(cluster);
        });

        const steer = (control: { sleepMs?: number }) => writeFileSync(faultFile, JSON.stringify(control));
        const escaped = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

        it("status and precheck through the black hole exit 1 within the request timeout, naming the server and the timeout", async () => {
            proxy.blackHole(true);
            for (const command of [["status"], ["precheck", "--mode", "nftables"]]) {
                const started = Date.now();
                const r = await runAsync(process.execPath, [CLI, ...command, "--kubeconfig", kubeconfig], {
                    env: { KPM_API_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS) },
                });
                const took = Date.now() - started;
                output.push(`[${command[0]} ${took} ms] ${r.stderr}`);
                assert.equal(r.code, 1, r.stderr);
                assert.match(
                    r.stderr,
                    new RegExp(
                        `the API server ${escaped(proxy.url)} did not answer GET \\S+ within ${TIMEOUT_SECONDS}s \\(request timeout`,
                    ),
                );
                // the CLI's start (1-2 s on a loaded machine) and one request timeout
                assert.ok(took < (TIMEOUT_SECONDS + 6) * 1000, `${command[0]} took ${took} ms`);
            }
        });

        /** Runs `kube-proxy-mode rollout` through the proxy; `on` a matching line, calls `then` once; killed after `limitMs`. */
        function rollout(spec: string, holder: string, on?: { line: RegExp; then: () => void }, limitMs = 120_000) {
            // a run that never ends is the failure this file is about: it is killed, and the test says so
            return watchedCli(
                ["rollout", "--spec", spec, "--kubeconfig", kubeconfig],
                {
                    KPM_LEASE_SECONDS: String(LEASE_SECONDS),
                    KPM_API_TIMEOUT_SECONDS: String(TIMEOUT_SECONDS),
                    KPM_HOLDER: holder,
                    TMPDIR: dir,
                },
                holder,
                output,
                on,
                limitMs,
            );
        }

        async function node(c: ClusterState, name: string) {
            const n = await clients(c).core.readNode({ name });
            const a = n.metadata?.annotations ?? {};
            return {
                placement: n.metadata?.labels?.[MARKS.configLabel] ?? null,
                verified: a[MARKS.verifiedAnnotation]?.split("@")[0],
                phase: a[MARKS.moveAnnotation]
                    ? (JSON.parse(a[MARKS.moveAnnotation]) as { phase: string }).phase
                    : undefined,
                cordoned: n.spec?.unschedulable === true,
            };
        }

        /** The writes (create, update, patch, delete) of the rollout's identity the API server's audit log holds, with when each came. */
        function rolloutWrites(c: ClusterState): { at: number; what: string }[] {
            return readFileSync(c.auditLog!, "utf8")
                .split("\n")
                .flatMap((l) => {
                    try {
                        return [JSON.parse(l) as AuditEvent];
                    } catch {
                        return []; // the line being written
                    }
                })
                .filter(
                    (e) => e.user?.username === ROLLOUT_ACCOUNT && /^(create|update|patch|delete)$/.test(e.verb ?? ""),
                )
                .map((e) => ({
                    at: Date.parse(e.requestReceivedTimestamp ?? ""),
                    what: `${e.verb} ${e.requestURI}`,
                }));
        }

        it("a rollout cut off mid-node exits 1 in bounded time naming the server and the timeout, writes nothing after its lease could be taken over, and the next run finishes the node", async () => {
            const c = cluster!;
            const { file, hash } = await writeSpec(c, [{ name: "canary", nodeSelector: "pool=canary" }], {
                nodeChecks: false,
                hooks: [
                    {
                        name: "steered",
                        command: [process.execPath, join(ROOT, "tests", "e2e", "hooks", "fault-hook.js")],
                        env: { FAULT_FILE: faultFile },
                    },
                ],
                podTimeout: "2m",
            });
            // canary-1 restarted on the target; its check (the hook) takes 5 s, and the black hole begins
            steer({ sleepMs: 5000 });
            let holeAt = 0;
            const cut = await rollout(file, "cut-off-run", {
                line: /canary-1: kube-proxy \S* running on configuration/,
                then: () => {
                    holeAt = Date.now();
                    proxy.blackHole(true);
                },
            });
            assert.ok(cut.triggeredAt, cut.out);
            const took = cut.endedAt - holeAt;
            assert.equal(cut.code, 1, cut.out);
            assert.match(
                cut.out,
                new RegExp(
                    `the API server ${escaped(proxy.url)} did not answer \\S+ \\S+ within ${TIMEOUT_SECONDS}s \\(request timeout`,
                ),
            );
            assert.match(cut.out, /rollout failed: node canary-1 \(pool canary\) failed/);
            assert.doesNotMatch(cut.out, /no node is left cordoned/, "canary-1 is left cordoned");
            // the hook's 5 s, then a few requests of the request timeout each (the write, the rollback's, the release)
            assert.ok(took < 45_000, `the cut-off run ended ${took} ms into the black hole`);
            output.push(`[test] the cut-off run ended ${took} ms into the black hole`);
            // the node keeps its move memory and cordon, for the next run
            const left = await node(c, "canary-1");
            assert.deepEqual(left, { placement: hash, verified: undefined, phase: "switching", cordoned: true });

            // the lease as the cut-off run last renewed it (its release got no answer): when another run may take over
            const lease = await clients(c)
                .kc.makeApiClient(k8s.CoordinationV1Api)
                .readNamespacedLease({ name: "kube-proxy-mode", namespace: "kube-system" });
            assert.match(lease.spec?.holderIdentity ?? "", /^cut-off-run@/);
            const expiresAt = new Date(lease.spec!.renewTime!).getTime() + LEASE_SECONDS * 1000;
            const wait = expiresAt - Date.now() + 1000;
            if (wait > 0) await new Promise((r) => setTimeout(r, wait));

            // the black hole ends after the lease expired: the cut-off run's connections closed before, so nothing it sent arrives now
            proxy.blackHole(false);
            assert.equal(proxy.lateBytes, 0, "bytes the cut-off run sent into the black hole reached the API server");
            const nextAt = Date.now();
            steer({});
            const next = await rollout(file, "next-run");
            assert.equal(next.code, 0, next.out);
            assert.match(next.out, /canary-1: resuming a move a previous run left in phase switching/);
            assert.deepEqual(await node(c, "canary-1"), {
                placement: hash,
                verified: hash,
                phase: undefined,
                cordoned: false,
            });

            // the API server's own record: the rollout's identity wrote before the black hole, and nothing
            // from then until the next run started, so nothing after the cut-off run's lease expired
            const writes = rolloutWrites(c);
            assert.ok(
                writes.some((w) => w.at < holeAt && /nodes\/canary-1/.test(w.what)),
                JSON.stringify(writes),
            );
            const late = writes.filter((w) => w.at >= holeAt && w.at < nextAt);
            assert.deepEqual(
                late,
                [],
                `writes after the black hole began (the lease expired at ${new Date(expiresAt).toISOString()})`,
            );
        });
    },
);
