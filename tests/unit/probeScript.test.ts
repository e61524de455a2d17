// The node probe's cleanup, run as the shell script it is, against stand-in iptables tools on
// PATH (they print a saved table and record what is restored; nothing touches this machine's
// firewall). What is checked: which chains the cleanup removes and keeps, and that cleanups of
// several nodes sharing one /tmp (as the reference cluster's probe pods do) never mix tables.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PROBE_SCRIPT } from "../../components/core/probe.js";
import { runAsync } from "../helpers.js";

/** What `iptables-save -t <table>` prints on node $FAKE_NODE: kube-proxy's chains among others; a pause in the middle, as a busy node's save has. */
const FAKE_SAVE = `#!/bin/sh
echo "*$2"
echo ":OUTPUT ACCEPT [0:0]"
echo ":NODE-$FAKE_NODE-FIRST - [0:0]"
sleep "\${FAKE_PAUSE:-0}"
echo ":KUBE-SERVICES - [0:0]"
echo ":KUBE-MARK-MASQ - [0:0]"
echo ":KUBE-KUBELET-CANARY - [0:0]"
echo ":CNI-$FAKE_NODE - [0:0]"
echo "-A OUTPUT -j KUBE-SERVICES"
echo "-A OUTPUT -m comment --comment kube -g KUBE-MARK-MASQ"
echo "-A OUTPUT -j CNI-$FAKE_NODE"
echo "-A KUBE-SERVICES -j ACCEPT"
echo "-A CNI-$FAKE_NODE -j ACCEPT"
echo "COMMIT"
`;
/** `iptables-restore -T <table>`: records what it was given, per node and table. */
const FAKE_RESTORE = `#!/bin/sh
cat > "$FAKE_OUT/$FAKE_NODE-$2"
`;

describe("the probe's cleanup script (stand-in iptables tools)", function () {
    this.timeout(20_000);
    let dir: string;
    let bin: string;
    let out: string;

    before(() => {
        dir = mkdtempSync(join(tmpdir(), "kpm-probe-script-"));
        bin = join(dir, "bin");
        out = join(dir, "out");
        mkdirSync(bin);
        mkdirSync(out);
        writeFileSync(join(bin, "iptables-save"), FAKE_SAVE);
        writeFileSync(join(bin, "iptables-restore"), FAKE_RESTORE);
        chmodSync(join(bin, "iptables-save"), 0o755);
        chmodSync(join(bin, "iptables-restore"), 0o755);
        // only the tools the script needs: no ip, ipset or ipvsadm of this machine is reachable
        for (const tool of ["sh", "awk", "cat", "sleep", "mktemp", "rm", "readlink", "grep"]) {
            const real = execFileSync("sh", ["-c", 'command -v "$1"', "sh", tool], { encoding: "utf8" }).trim();
            symlinkSync(real, join(bin, tool));
        }
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    async function cleanup(node: string, pause: number): Promise<string> {
        const r = await runAsync("/bin/sh", ["-c", PROBE_SCRIPT], { env: { PATH: bin, KPM_ACTION: "cleanup", FAKE_NODE: node, FAKE_OUT: out, FAKE_PAUSE: String(pause), TMPDIR: dir } });
        assert.equal(r.code, 0, r.stdout + r.stderr);
        return r.stdout + r.stderr;
    }
    const restored = (node: string, table: string) => readFileSync(join(out, `${node}-${table}`), "utf8");

    it("removes kube-proxy's chains and the rules that jump to them, keeps every other chain and the kubelet's canary", async () => {
        const text = await cleanup("solo", 0);
        for (const t of ["nat", "filter", "mangle"]) assert.match(text, new RegExp(`removed kube-proxy chains from iptables table ${t}`));
        const nat = restored("solo", "nat");
        assert.doesNotMatch(nat, /KUBE-SERVICES|KUBE-MARK-MASQ/);
        assert.match(nat, /^:KUBE-KUBELET-CANARY /m, "the kubelet's chain is not kube-proxy's");
        assert.match(nat, /^:CNI-solo /m);
        assert.match(nat, /^-A OUTPUT -j CNI-solo$/m);
        assert.match(nat, /^-A CNI-solo -j ACCEPT$/m);
        assert.match(nat, /^COMMIT$/m);
        assert.deepEqual(readdirSync(dir).filter((f) => f.startsWith("kpm-ipt")), [], "its temporary file is removed");
    });

    it("cleanups of two nodes at once, sharing one /tmp, each restore their own node's tables", async () => {
        // b starts while a's save is paused halfway: with one shared file, a would restore b's
        // chains (or a mix) into its own node
        const a = cleanup("a", 0.6);
        await new Promise((r) => setTimeout(r, 200));
        const b = cleanup("b", 0);
        await Promise.all([a, b]);
        for (const [node, other] of [["a", "b"], ["b", "a"]]) {
            for (const t of ["nat", "filter", "mangle"]) {
                const text = restored(node, t);
                assert.match(text, new RegExp(`^:NODE-${node}-FIRST `, "m"), `${node} ${t}: its own table`);
                assert.doesNotMatch(text, new RegExp(`-${other}\\b`), `${node} ${t}: nothing of node ${other}`);
            }
        }
    });
});
