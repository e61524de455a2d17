// How KubeProxyMode refuses: a pulumi.ResourceError against the component, which the engine shows
// once, on the component's URN, as the refusal's text alone (no stack trace, no "error serializing
// property"). The decision's Output rejects with it; every resource input that awaits the decision
// (the rollout steps, the ConfigMap patch) rejects with the same object, so no step is registered
// and Node's language host reports the error once (it dedupes unhandled errors by identity).
import * as pulumi from "@pulumi/pulumi";
import { inspect, type InspectOptionsStylized } from "node:util";
import { redact } from "../core/redact.js";
import type { Finding } from "../core/types.js";

/**
 * What was refused:
 * - `input`: an input the decision checks once its Outputs resolved (target, verify, pools, onFailure, kubeconfig, context, promotion, eksAddon)
 * - `cluster`: the kubeconfig cannot be used or the cluster cannot be read
 * - `migration`: the migration breaks a rule (kernels, feature gates, NodePort reach, pools ...): see `findings`
 * - `alerts`: the alerts cannot be planned as asked
 * - `promotion`: the promotion gate is shut (the upstream stack is not ready to be followed)
 */
export type RefusalKind = "input" | "cluster" | "migration" | "alerts" | "promotion";

export interface RefusalDetails {
    /** the input fields the refusal is about, as paths ("verify.maxSyncAge", "pools[0].soak") */
    fields?: readonly string[];
    /** the error findings that refused the migration */
    findings?: readonly Finding[];
}

export class RefusalError extends pulumi.ResourceError {
    /** the component's name */
    readonly component: string;
    readonly kind: RefusalKind;
    /** the input fields the refusal is about (the findings' fields for a migration), without duplicates */
    readonly fields: readonly string[];
    /** the error findings that refused the migration; empty for the other kinds */
    readonly findings: readonly Finding[];

    constructor(
        component: pulumi.ComponentResource,
        name: string,
        kind: RefusalKind,
        reason: string,
        details: RefusalDetails = {},
    ) {
        // the one redactor: a reason that quotes a library's error never carries a loaded credential
        const text = redact(`KubeProxyMode ${name}: ${reason}`);
        super(text, component, true);
        // The SDK's serializer (runtime/rpc.js, serializeFilteredProperties) assigns
        // `err.message = 'error serializing property "<k>": ' + err.message` to an error that
        // rejects a resource's input, then rethrows the same object. Our error rejects every step's
        // inputs, so the engine would show the refusal buried under one such prefix per input it
        // passed through. The text is the refusal's whole point (users and `kube-proxy-mode promote`
        // read it): it is fixed here, and writes to it are ignored.
        Object.defineProperty(this, "message", {
            get: () => text,
            set: () => undefined,
            enumerable: false,
            configurable: false,
        });
        this.name = "RefusalError";
        this.component = name;
        this.kind = kind;
        this.findings = [...(details.findings ?? [])];
        this.fields = [...new Set([...(details.fields ?? []), ...this.findings.map((f) => f.field)])];
    }

    /**
     * How `util.inspect` shows a refusal: its text and what it is about, not its `resource`. The
     * Node.js language host inspects every unhandled error (cmd/run/run.js, for its trace span),
     * even one it shows by message alone; inspecting the component walked its Outputs and child
     * resources, which took about 25 s and 3.7 GB in a refused preview of the promotion e2e test.
     */
    [inspect.custom](_depth: number, options: InspectOptionsStylized, show: typeof inspect): string {
        const about = {
            component: this.component,
            kind: this.kind,
            fields: this.fields,
            findings: this.findings.map((f) => f.code),
        };
        return `${this.name}: ${this.message} ${show(about, { ...options, depth: 2 })}`;
    }
}

/** Builds the component's refusals: `refuse(kind, reason, details)`. */
export type Refuse = (kind: RefusalKind, reason: string, details?: RefusalDetails) => RefusalError;

export function refusalsOf(component: pulumi.ComponentResource, name: string): Refuse {
    return (kind, reason, details) => new RefusalError(component, name, kind, reason, details);
}
