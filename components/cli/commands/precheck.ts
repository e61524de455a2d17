import { Cluster, apiErrorMessage } from "../../cluster/client.js";
import { nodeVerdict, parseNodeList, type NodeFacts, type NodeVerdict } from "../../core/nodes.js";
import { matchesSelector, type Selector } from "../../core/selector.js";
import type { ProxyMode } from "../../core/types.js";
import type { KubeVersion } from "../../core/versions.js";
import {
    booleanValue,
    commandFlags,
    flag,
    kubeVersionValue,
    modeValue,
    INPUT_LIMITS,
    readInput,
    requireMode,
    selectorValue,
    type Flags,
} from "../args.js";
import { kubeconfigFromFlags, reachCluster } from "../kubeconfig.js";
import { CliError, EXIT, table } from "../output.js";
import type { Io } from "../io.js";
import { ACCESS_FLAGS } from "./access.js";

export const PRECHECK_HELP = `kube-proxy-mode precheck --mode MODE [--nodes FILE|-] [options]

Judges every node by what its Node object reports (kernel, OS) and prints one row per node.

  --mode iptables|ipvs|nftables    required
  --nodes FILE|-                   kubectl get nodes -o json output; without it, the cluster
                                   of the current kubeconfig is read
  --selector LABELS                only nodes matching this label selector
  --kubernetes-version X.Y         shown in the report; read from the cluster when absent
  --conntrack-tcp-be-liberal true|false   whether the target config sets it (silences the pre-6.1 warning)
  --kubeconfig PATH, --context NAME   which cluster (default: $KUBECONFIG or ~/.kube/config;
                                      KPM_KUBECONFIG may hold a kubeconfig's content instead,
                                      KPM_CONTEXT the context)
  --json                           one JSON object on stdout
  -o, --output json|yaml           -o json is --json; -o yaml the same object as YAML

Exit codes: 0 every node can run MODE (warnings allowed), 1 a node cannot or the cluster cannot
be read, 2 invalid input (a kubeconfig that cannot be loaded included).`;

/** precheck's flags. */
export const PRECHECK_FLAGS = {
    mode: flag.value(modeValue),
    nodes: flag.value(),
    selector: flag.value(selectorValue),
    "kubernetes-version": flag.value(kubeVersionValue),
    "conntrack-tcp-be-liberal": flag.value(booleanValue),
    ...ACCESS_FLAGS,
};

type PrecheckFlags = Flags<typeof PRECHECK_FLAGS>;

/** The nodes to judge and the cluster's release: from --nodes, else read from the cluster. */
async function readNodes(
    flags: PrecheckFlags,
    io: Io,
): Promise<{ nodes: NodeFacts[]; version: KubeVersion | undefined }> {
    const version = flags["kubernetes-version"];
    if (flags.nodes !== undefined)
        return { nodes: parseNodeList(readInput(flags.nodes, "--nodes", INPUT_LIMITS.nodeList), "--nodes"), version };
    const cluster = new Cluster(kubeconfigFromFlags(flags));
    await reachCluster(cluster, io);
    try {
        const nodes = await cluster.nodes();
        return { nodes, version: version ?? (await cluster.serverVersion()) };
    } catch (e) {
        throw new CliError(`precheck: cannot read the cluster's nodes: ${apiErrorMessage(e)}`, EXIT.failed);
    }
}

/** One row per node on stdout, the counts on stderr; a line on stderr when no node was selected. */
function printVerdicts(io: Io, verdicts: NodeVerdict[], mode: ProxyMode, selector: Selector | undefined): void {
    if (verdicts.length === 0) {
        io.err(
            `precheck: no node${selector ? ` matches selector ${JSON.stringify(selector.text)}` : " found"}; nothing can be shown to run ${mode}`,
        );
        return;
    }
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
        `precheck ${mode}: ${verdicts.length} node(s): ${count("ok")} ok, ${count("warn")} with warnings, ` +
            `${count("fail")} failing, ${count("skip")} skipped`,
    );
}

export async function precheckCommand(argv: string[], given: Io): Promise<number> {
    const command = commandFlags("precheck", argv, given, PRECHECK_FLAGS, PRECHECK_HELP);
    if (!command) return EXIT.ok;
    const { flags, io } = command;
    const mode = requireMode(flags.mode);
    const selector = flags.selector;
    const { nodes, version } = await readNodes(flags, io);
    const selected = selector ? nodes.filter((n) => matchesSelector(selector, n.labels)) : nodes;
    const verdicts = selected.map((n) => nodeVerdict(n, mode, { tcpBeLiberal: flags["conntrack-tcp-be-liberal"] }));
    const failed = verdicts.length === 0 || verdicts.some((v) => v.verdict === "fail");
    if (flags.json) {
        const report = {
            mode,
            kubernetesVersion: version?.release ?? null,
            selector: selector?.text ?? null,
            passed: !failed,
            nodes: verdicts,
        };
        io.json(report);
    } else printVerdicts(io, verdicts, mode, selector);
    return failed ? EXIT.failed : EXIT.ok;
}
