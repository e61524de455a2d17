import { Cluster, apiErrorMessage } from "../../cluster/client.js";
import { nodeVerdict, parseNodeList, type NodeFacts } from "../../core/nodes.js";
import { matchesSelector, parseSelector } from "../../core/selector.js";
import { parseKubeVersion } from "../../core/versions.js";
import { parseBool, parseFlags, readInput, requireMode } from "../args.js";
import { CliError, EXIT, table } from "../output.js";
import type { Io } from "../main.js";

export const PRECHECK_HELP = `kube-proxy-mode precheck --mode MODE [--nodes FILE|-] [options]

Judges every node by what its Node object reports (kernel, OS) and prints one row per node.

  --mode iptables|ipvs|nftables    required
  --nodes FILE|-                   kubectl get nodes -o json output; without it, the cluster
                                   of the current kubeconfig is read
  --selector LABELS                only nodes matching this label selector
  --kubernetes-version X.Y         shown in the report; read from the cluster when absent
  --conntrack-tcp-be-liberal true|false   whether the target config sets it (silences the pre-6.1 warning)
  --kubeconfig PATH, --context NAME
  --json

Exit codes: 0 every node can run MODE (warnings allowed), 1 a node cannot, 2 invalid input.`;

export async function precheckCommand(argv: string[], io: Io): Promise<number> {
    const flags = parseFlags("precheck", argv, {
        mode: { type: "string" },
        nodes: { type: "string" },
        selector: { type: "string" },
        "kubernetes-version": { type: "string" },
        "conntrack-tcp-be-liberal": { type: "string" },
        kubeconfig: { type: "string" },
        context: { type: "string" },
        json: { type: "boolean" },
    });
    if (flags.help) {
        io.out(PRECHECK_HELP);
        return EXIT.ok;
    }
    const mode = requireMode(flags.mode);
    const selector = flags.selector !== undefined ? parseSelector(flags.selector, "--selector") : undefined;
    let version = flags["kubernetes-version"] !== undefined ? parseKubeVersion(flags["kubernetes-version"]) : undefined;
    if (flags["kubernetes-version"] !== undefined && !version)
        throw new CliError(
            `--kubernetes-version ${JSON.stringify(flags["kubernetes-version"])}: expected X.Y or vX.Y.Z`,
        );
    const tcpBeLiberal =
        flags["conntrack-tcp-be-liberal"] !== undefined
            ? parseBool(flags["conntrack-tcp-be-liberal"], "--conntrack-tcp-be-liberal")
            : undefined;

    let nodes: NodeFacts[];
    if (flags.nodes !== undefined) {
        nodes = parseNodeList(readInput(flags.nodes, "--nodes"), "--nodes");
    } else {
        try {
            const cluster = Cluster.connect({ kubeconfig: flags.kubeconfig, context: flags.context });
            nodes = await cluster.nodes();
            version ??= await cluster.serverVersion();
        } catch (e) {
            throw new CliError(`precheck: cannot read the cluster's nodes: ${apiErrorMessage(e)}`, EXIT.failed);
        }
    }
    const selected = selector ? nodes.filter((n) => matchesSelector(selector, n.labels)) : nodes;
    const verdicts = selected.map((n) => nodeVerdict(n, mode, { tcpBeLiberal }));
    const failed = verdicts.length === 0 || verdicts.some((v) => v.verdict === "fail");
    if (flags.json) {
        io.out(
            JSON.stringify(
                {
                    mode,
                    kubernetesVersion: version?.release ?? null,
                    selector: selector?.text ?? null,
                    passed: !failed,
                    nodes: verdicts,
                },
                null,
                2,
            ),
        );
    } else {
        if (verdicts.length === 0)
            io.err(
                `precheck: no node${selector ? ` matches selector ${JSON.stringify(selector.text)}` : " found"}; nothing can be shown to run ${mode}`,
            );
        else {
            io.out(
                table(
                    ["NODE", "KERNEL", "OS-IMAGE", "VERDICT", "WHY"],
                    verdicts.map((v) => [
                        v.node,
                        v.kernel ?? "(none)",
                        v.osImage ?? "(none)",
                        v.verdict,
                        v.findings.map((f) => f.message.replace(`${v.node}: `, "")).join("; ") || `can run ${mode}`,
                    ]),
                ),
            );
            const count = (k: string) => verdicts.filter((v) => v.verdict === k).length;
            io.err(
                `precheck ${mode}: ${verdicts.length} node(s): ${count("ok")} ok, ${count("warn")} with warnings, ${count("fail")} failing, ${count("skip")} skipped`,
            );
        }
    }
    return failed ? EXIT.failed : EXIT.ok;
}
