import * as YAML from "../../libraries/yaml.js";
import { parseCurrentConfig, type ConfigMapSource } from "../../core/config.js";
import { renderConfiguration } from "../../core/render.js";
import { validateDesired } from "../../core/settings.js";
import { hasErrors, type DesiredSettings } from "../../core/types.js";
import {
    booleanValue,
    commandFlags,
    featureGatesValue,
    flag,
    kubeVersionValue,
    modeValue,
    readInput,
    requireMode,
    strictListValue,
    type Flags,
} from "../args.js";
import { CliError, EXIT, formatChange, formatFinding } from "../output.js";
import type { Io } from "../io.js";

export const RENDER_HELP = `kube-proxy-mode render --current FILE|- --mode MODE [options]

Prints the kube-proxy configuration that moves the current one to MODE, keeping every
field, comment and key order it does not own; given a ConfigMap, the whole ConfigMap with it,
ready for kubectl apply -f - (without the fields the server sets). Changes and findings go to
stderr.

  --current FILE|-                     KubeProxyConfiguration, or the ConfigMap as
                                       kubectl get cm -n kube-system kube-proxy -o yaml|json prints it
  --mode iptables|ipvs|nftables        required
  --kubernetes-version X.Y             the cluster's release (version rules need it)
  --feature-gate NAME=true|false       repeatable
  --node-port-addresses A,B            CIDRs, or primary/localhost/all (1.37+)
  --conntrack-tcp-be-liberal true|false
  --allow-unknown-feature-gates        accept gate names newer than this tool knows
  --diff                               print a unified diff instead of the configuration
  --json                               print {config, diff, changes, warnings, errors}
  -o, --output json|yaml               -o json is --json; -o yaml the same object as YAML

Exit codes: 0 rendered (warnings allowed), 2 invalid input or a violated rule.`;

/** render's flags. */
export const RENDER_FLAGS = {
    current: flag.value(),
    mode: flag.value(modeValue),
    "kubernetes-version": flag.value(kubeVersionValue),
    "feature-gate": flag.list(featureGatesValue),
    "node-port-addresses": flag.value(strictListValue),
    "conntrack-tcp-be-liberal": flag.value(booleanValue),
    "allow-unknown-feature-gates": flag.switch(),
    diff: flag.switch(),
    json: flag.switch(),
    output: flag.output(),
};

/** The settings the flags ask for, validated by the same rules as the component's inputs. */
export function desiredFromFlags(flags: Flags<typeof RENDER_FLAGS>): DesiredSettings {
    const input: Record<string, unknown> = { mode: requireMode(flags.mode) };
    if (flags["kubernetes-version"] !== undefined) input.kubernetesVersion = flags["kubernetes-version"].raw;
    const gates = flags["feature-gate"];
    if (gates?.length) input.featureGates = Object.assign({}, ...gates) as Record<string, boolean>;
    const npa = flags["node-port-addresses"];
    if (npa) input.nodePortAddresses = npa;
    if (flags["conntrack-tcp-be-liberal"] !== undefined)
        input.conntrack = { tcpBeLiberal: flags["conntrack-tcp-be-liberal"] };
    if (flags["allow-unknown-feature-gates"]) input.allowUnknownFeatureGates = true;
    const { settings, findings } = validateDesired(input);
    if (!settings) throw new CliError("invalid settings", EXIT.invalid, findings.map(formatFinding));
    return settings;
}

// eslint-disable-next-line @typescript-eslint/require-await -- every command has the same async signature
export async function renderCommand(argv: string[], given: Io): Promise<number> {
    const command = commandFlags("render", argv, given, RENDER_FLAGS, RENDER_HELP);
    if (!command) return EXIT.ok;
    const { flags, io } = command;
    if (flags.current === undefined) throw new CliError("--current is required: a file, or - for standard input");
    const desired = desiredFromFlags(flags);
    const current = parseCurrentConfig(readInput(flags.current, "--current"), "--current");
    const r = renderConfiguration(current, desired);
    const errors = r.findings.filter((f) => f.severity === "error");
    const warnings = r.findings.filter((f) => f.severity !== "error");
    const failed = hasErrors(r.findings);
    if (flags.json) {
        io.json({
            config: failed ? null : r.config,
            diff: failed ? null : r.diff,
            changes: r.changes,
            warnings,
            errors,
            kubernetesVersion: r.version?.release ?? null,
        });
        return failed ? EXIT.invalid : EXIT.ok;
    }
    for (const c of r.changes) io.finding(formatChange(c));
    for (const f of [...warnings, ...errors]) io.finding(formatFinding(f));
    if (failed) {
        io.err(`render: ${errors.length} rule(s) violated; nothing rendered`);
        return EXIT.invalid;
    }
    if (flags.diff) {
        if (r.diff) io.out(r.diff.replace(/\n$/, ""));
        else io.err("no change: the configuration already says this");
    } else if (current.source.kind === "ConfigMap") io.out(configMapManifest(current.source, r.config));
    else io.out(r.config.replace(/\n$/, ""));
    return EXIT.ok;
}

/** What kubectl adds to an object it applied: a copy of the whole object, stale once the data changes. */
const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

/**
 * The ConfigMap given, with the new configuration under its key, as YAML `kubectl apply -f -`
 * takes: its name, namespace, labels and annotations, every other data key as it was, and none of
 * the fields the server sets (resourceVersion, uid, managedFields, ...), which would make the
 * apply a conflict or an error.
 */
export function configMapManifest(source: ConfigMapSource, config: string): string {
    const object = source.object as {
        metadata?: { labels?: unknown; annotations?: Record<string, unknown> };
        data?: Record<string, unknown>;
        binaryData?: unknown;
        immutable?: unknown;
    };
    const { [LAST_APPLIED]: _stale, ...annotations } = object.metadata?.annotations ?? {};
    const manifest = {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
            name: source.name ?? "kube-proxy",
            namespace: source.namespace ?? "kube-system",
            ...(object.metadata?.labels ? { labels: object.metadata.labels } : {}),
            ...(Object.keys(annotations).length ? { annotations } : {}),
        },
        data: { ...object.data, [source.key]: config },
        ...(object.binaryData ? { binaryData: object.binaryData } : {}),
        ...(object.immutable !== undefined ? { immutable: object.immutable } : {}),
    };
    // lineWidth 0: no value folded, so each reads back exactly as written
    return YAML.stringify(manifest, { lineWidth: 0 }).replace(/\n$/, "");
}
