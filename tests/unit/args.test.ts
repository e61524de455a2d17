// The CLI's typed flags (components/cli/args.ts and each command's FlagSet): an unknown flag and a
// wrongly typed value are refused with exit 2, naming the flag, before the command reads any input
// or touches a cluster; each command's --help lists exactly the flags it declares.
import assert from "node:assert/strict";
import { join } from "node:path";
import { flag, kubeVersionValue, parseFlags, poolNameValue } from "../../components/cli/args.js";
import { ACCESS_FLAGS, NODE_POD_FLAGS, probeSettings, SERVICE_FLAGS } from "../../components/cli/commands/access.js";
import { CLEANUP_FLAGS, ROLLOUT_FLAGS, STATUS_FLAGS, VERIFY_FLAGS } from "../../components/cli/commands/cluster.js";
import { PRECHECK_FLAGS } from "../../components/cli/commands/precheck.js";
import { POLICY_PACK_FLAGS } from "../../components/cli/commands/policyPack.js";
import { PROMOTE_FLAGS } from "../../components/cli/commands/promote.js";
import { RENDER_FLAGS } from "../../components/cli/commands/render.js";
import { main } from "../../components/cli/main.js";
import { verifySchema } from "../../components/rollout/spec.js";
import { FIXTURES, withEnvironment } from "../helpers.js";

const KUBEADM = join(FIXTURES, "kubeadm/1.37/configmap.yaml");

/** Runs the CLI in this process; a kubeconfig that does not exist, so no cluster is ever reached. */
async function cli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const code = await withEnvironment({ KUBECONFIG: "/nonexistent/kubeconfig", KPM_KUBECONFIG: undefined }, () =>
        main(argv, { out: (l) => out.push(l), err: (l) => err.push(l) }),
    );
    return { code, out: out.join("\n"), err: err.join("\n") };
}

describe("CLI flags are typed (components/cli/args.ts)", () => {
    describe("parseFlags", () => {
        const FLAGS = {
            count: flag.value((raw, name) => {
                if (!/^\d+$/.test(raw)) throw new Error(`${name} ${JSON.stringify(raw)}: expected a number`);
                return Number(raw);
            }),
            pool: flag.list(poolNameValue),
            version: flag.value(kubeVersionValue),
            dry: flag.switch(),
        };
        it("returns each value converted by its flag (number, list, version, switch); an absent flag is undefined", () => {
            const f = parseFlags(
                "x",
                ["--count", "3", "--pool", "a", "--pool", "b", "--version", "v1.37.2", "--dry"],
                FLAGS,
            );
            assert.equal(f.count, 3);
            assert.deepEqual(f.pool, ["a", "b"]);
            assert.equal(f.version?.release, "1.37");
            assert.equal(f.dry, true);
            assert.equal(parseFlags("x", [], FLAGS).count, undefined);
        });
        it("refuses a value its flag cannot convert, naming the flag", () => {
            assert.throws(() => parseFlags("x", ["--count", "three"], FLAGS), /--count "three": expected a number/);
            assert.throws(() => parseFlags("x", ["--pool", "a", "--pool", "B!"], FLAGS), /--pool "B!": pool name must/);
            assert.throws(() => parseFlags("x", ["--version", "latest"], FLAGS), /--version "latest": expected X\.Y/);
        });
        it("refuses a value given to a switch and a missing value, naming the flag", () => {
            assert.throws(() => parseFlags("x", ["--dry=yes"], FLAGS), /x: Option '--dry' does not take an argument/);
            assert.throws(() => parseFlags("x", ["--count"], FLAGS), /x: Option '--count <value>' argument missing/);
        });
        it("refuses an unknown flag, naming it and the declared flag it is closest to", () => {
            assert.throws(
                () => parseFlags("x", ["--pools", "a"], FLAGS),
                /^Error: x: Unknown option '--pools' \(did you mean --pool\?\); see kube-proxy-mode x --help$/,
            );
            assert.throws(
                () => parseFlags("x", ["--frobnicate"], FLAGS),
                /^Error: x: Unknown option '--frobnicate'; see kube-proxy-mode x --help$/,
            );
        });
    });

    describe("the commands", () => {
        it("a misspelt flag exits 2 naming it and the flag meant (render --modee)", async () => {
            const r = await cli(["render", "--current", KUBEADM, "--modee", "nftables"]);
            assert.equal(r.code, 2, r.err);
            assert.match(
                r.err,
                /^render: Unknown option '--modee' \(did you mean --mode\?\); see kube-proxy-mode render --help$/,
            );
            assert.equal(r.out, "");
        });
        it("render --kubernetes-version latest exits 2 naming the flag, as precheck does", async () => {
            for (const command of [
                ["render", "--current", KUBEADM, "--mode", "nftables"],
                ["precheck", "--mode", "nftables", "--nodes", KUBEADM],
            ]) {
                const r = await cli([...command, "--kubernetes-version", "latest"]);
                assert.equal(r.code, 2, r.err);
                assert.match(r.err, /--kubernetes-version "latest": expected X\.Y or vX\.Y\.Z/, command[0]);
            }
        });
        it("rollout --pool with a name no pool can have exits 2 naming the flag, before the spec is read", async () => {
            const r = await cli(["rollout", "--pool", "Canary_1"]);
            assert.equal(r.code, 2, r.err);
            assert.match(r.err, /^rollout: --pool "Canary_1": pool name must be lower-case letters, digits and '-'/);
            assert.doesNotMatch(r.err, /rollout spec/);
        });
        it("an empty --image exits 2 naming the flag (status, verify, cleanup), before any cluster is read", async () => {
            for (const command of [["status"], ["verify", "--node", "n1"], ["cleanup", "--node", "n1"]]) {
                const r = await cli([...command, "--image", ""]);
                assert.equal(r.code, 2, `${command[0]}: ${r.err}`);
                assert.match(r.err, /--image needs a value/, command[0]);
                assert.doesNotMatch(r.err, /kubeconfig/, command[0]);
            }
        });
        it("--flavor, --mode and --service are refused naming the flag before any cluster is read", async () => {
            const flavor = await cli(["status", "--flavor", "gke"]);
            assert.equal(flavor.code, 2);
            assert.match(flavor.err, /--flavor "gke": use kubeadm or eks/);
            const mode = await cli(["verify", "--node", "n1", "--mode", "ipvs2"]);
            assert.equal(mode.code, 2);
            assert.match(mode.err, /--mode "ipvs2" is not a kube-proxy mode/);
            const service = await cli(["status", "--service", "kubernetes"]);
            assert.equal(service.code, 2);
            assert.match(service.err, /--service "kubernetes": expected NAMESPACE\/NAME/);
        });
        const COMMANDS: [string, Record<string, unknown>][] = [
            ["render", RENDER_FLAGS],
            ["precheck", PRECHECK_FLAGS],
            ["rollout", ROLLOUT_FLAGS],
            ["status", STATUS_FLAGS],
            ["verify", VERIFY_FLAGS],
            ["cleanup", CLEANUP_FLAGS],
            ["promote", PROMOTE_FLAGS],
            ["policy-pack", POLICY_PACK_FLAGS],
        ];
        it("status, verify and cleanup take their node pod's flags from one declaration (access.ts), not each its own", () => {
            const commands: [string, Record<string, unknown>][] = [
                ["status", STATUS_FLAGS],
                ["verify", VERIFY_FLAGS],
                ["cleanup", CLEANUP_FLAGS],
            ];
            for (const [command, flags] of commands)
                for (const [name, spec] of Object.entries(NODE_POD_FLAGS))
                    assert.equal(flags[name], spec, `${command} --${name} is NODE_POD_FLAGS.${name}`);
            for (const [command, flags] of commands.slice(0, 2))
                assert.equal(flags.service, SERVICE_FLAGS.service, `${command} --service is SERVICE_FLAGS.service`);
        });
        it("precheck and rollout take which cluster (and the output flags) from ACCESS_FLAGS, not each its own", () => {
            for (const [command, flags] of [
                ["precheck", PRECHECK_FLAGS],
                ["rollout", ROLLOUT_FLAGS],
            ] as [string, Record<string, unknown>][])
                for (const [name, spec] of Object.entries(ACCESS_FLAGS))
                    assert.equal(flags[name], spec, `${command} --${name} is ACCESS_FLAGS.${name}`);
        });
        it("the probe pod's image and Service are the flags given, else the rollout's verify defaults", () => {
            const defaults = verifySchema.parse({});
            assert.deepEqual(probeSettings({}), defaults);
            const given = probeSettings({ image: "busybox:1", service: "shop/web" });
            assert.deepEqual([given.image, given.service], ["busybox:1", "shop/web"]);
        });
        for (const [command, flags] of COMMANDS) {
            it(`${command} --help lists exactly the flags ${command} declares`, async () => {
                const help = await cli([command, "--help"]);
                assert.equal(help.code, 0);
                const listed = new Set([...help.out.matchAll(/(?<![\w-])--([a-z][a-z-]*)/g)].map((m) => m[1]));
                listed.delete("help");
                listed.delete("policy-pack"); // policy-pack's help quotes `pulumi preview --policy-pack`
                assert.deepEqual([...listed].sort(), Object.keys(flags).sort());
            });
        }
    });
});
