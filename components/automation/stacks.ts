// Running a stack through the Pulumi Automation API, as `promote` and the fleet's stack activities
// both do: selecting a stack of a project directory, and reading what its preview or update said
// out of the engine's events (the component's `change` and `promotion` outputs, a gate's refusal,
// the error lines of a failure). It may import core/; the CLI and the fleet import it. The SDK's
// automation module is loaded only when a stack is selected, so commands that run no stack do not
// load it.
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { ModeChange, PromotionRecord } from "../core/types.js";

type Automation = typeof import("@pulumi/pulumi/automation");
export type EngineEvent = import("@pulumi/pulumi/automation").EngineEvent;
export type AutomationStack = import("@pulumi/pulumi/automation").Stack;

/**
 * What the program exports (change, promotion), as the engine reports it: KubeProxyMode's own
 * `change` and `promotion` output types (pure types, so the CLI does not load Pulumi to name them).
 */
export interface StackOutputs {
    change?: ModeChange;
    promotion?: PromotionRecord;
}

/** A stack's change as a summary shows it: the cluster, "mode (configHash)" from and to, and the nodes that move. */
export interface ChangeColumns {
    cluster: string | null;
    from: string | null;
    to: string | null;
    moving: number | null;
}

/** The Pulumi project files a directory must hold to be a project. */
const PROJECT_FILES = ["Pulumi.yaml", "Pulumi.yml", "Pulumi.json"];

/** Whether `dir` holds a Pulumi project (Pulumi.yaml, .yml or .json). */
export function hasPulumiProject(dir: string): boolean {
    return PROJECT_FILES.some((f) => existsSync(join(dir, f)));
}

/** Why a stack could not be selected: the directory holds no project, or the backend has no such stack. */
export class StackSelectError extends Error {
    constructor(
        message: string,
        readonly reason: "no project" | "no stack",
    ) {
        super(message);
        this.name = "StackSelectError";
    }
}

/** The Automation API, loaded on first use: the commands that run no stack do not load the Pulumi SDK. */
export function loadAutomation(): Automation {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded lazily, as above
    return require("@pulumi/pulumi/automation") as Automation;
}

/** The text of a thrown value. */
export function errorMessage(e: unknown): string {
    return (e as Error)?.message ?? String(e);
}

/**
 * The stack `stackName` of the project in `workDir`, through the workspace the project declares
 * (its backend, its stacks' config). Throws a {@link StackSelectError} that names the stack, the
 * directory and the engine's own reason ("no stack named ... found"), never its whole output.
 */
export async function selectStack(workDir: string, stackName: string): Promise<AutomationStack> {
    if (!hasPulumiProject(workDir))
        throw new StackSelectError(`${workDir}: no Pulumi.yaml there (not a Pulumi project directory)`, "no project");
    const { LocalWorkspace } = loadAutomation();
    try {
        return await LocalWorkspace.selectStack({ stackName, workDir });
    } catch (e) {
        const first =
            errorMessage(e)
                .split("\n")
                .find((l) => /error|no stack/i.test(l)) ?? "";
        throw new StackSelectError(
            `cannot select stack ${stackName} in ${workDir}: ${first.trim() || "unknown stack"}`,
            "no stack",
        );
    }
}

/** The gate refusal a preview or update failed with, if that is why: the upstream's full name. */
export function gateUpstream(message: string): string | undefined {
    return /promotion gate refused: (\S+) is not ready to be followed/.exec(message)?.[1];
}

/** The stack's lines of a refusal or failure, without the engine's framing. */
export function failureDetail(message: string): string {
    // The refusal's lines, up to the engine's framing or the program's stack trace. The engine's
    // text names the refusal twice: first in a progress row (its first line, then more progress),
    // then whole in the Diagnostics section; the last one is read.
    const from = message.lastIndexOf("promotion gate refused:");
    const gate =
        from < 0
            ? null
            : /^promotion gate refused:[\s\S]*?(?=\n\s*\n|\n\s*error:|\n\s+at |$)/.exec(message.slice(from));
    if (gate) return gate[0].replace(/\s+/g, " ").trim();
    const all = message.split("\n").map((l) => l.trim());
    const said = (l: string) => /error|failed|refuses/i.test(l);
    const lines = all.filter((l) => said(l) && !/^stderr:|^code:|^stdout:/.test(l));
    // else the engine's own line, when the error is only on the Automation API's "stderr: " line
    const framed = all.map((l) => l.replace(/^(?:stderr|stdout):\s*/, "")).filter((l) => said(l) && !/^code:/.test(l));
    return ((lines.length ? lines : framed).slice(-3).join(" ") || message.split("\n")[0]).slice(0, 600);
}

/** A change as a summary shows it; every column null when the program exports no change. */
export function changeColumns(c: ModeChange | undefined): ChangeColumns {
    if (!c) return { cluster: null, from: null, to: null, moving: null };
    return {
        cluster: c.cluster,
        from: `${c.from.mode} (${c.from.configHash})`,
        to: `${c.to.mode} (${c.to.configHash})`,
        moving: c.moving,
    };
}

/** "4/4", or "3/4 (1 by hooks only)" when some nodes were verified by hooks alone; null without a promotion. */
export function nodesVerifiedText(p: PromotionRecord | undefined): string | null {
    if (!p) return null;
    const byHooks = p.nodesVerified - p.nodesChecked;
    return `${p.nodesVerified}/${p.nodesTotal}${byHooks > 0 ? ` (${byHooks} by hooks only)` : ""}`;
}

/**
 * The error diagnostics of a run, one per line group: a refusal is one, on the KubeProxyMode
 * component, its text as the component wrote it (the engine's own rendering adds progress rows
 * and indentation around it).
 */
export function errorDiagnostics(events: EngineEvent[]): string {
    return events
        .map((e) => e.diagnosticEvent)
        .filter((d) => d?.severity === "error")
        .map((d) => d!.message.trim())
        .join("\n\n");
}

/** What a failed preview or update said: the error diagnostics when one is a gate's refusal, else the engine's whole message. */
export function failureText(events: EngineEvent[], e: unknown): string {
    const diagnostics = errorDiagnostics(events);
    return gateUpstream(diagnostics) ? diagnostics : errorMessage(e);
}

/** The stack outputs a preview or update reports through its engine events (the root Stack's outputs). */
export function outputsFrom(events: EngineEvent[]): StackOutputs {
    for (const e of events.slice().reverse()) {
        const m = e.resOutputsEvent?.metadata;
        if (m?.type === "pulumi:pulumi:Stack") return (m.new?.outputs ?? {}) as StackOutputs;
    }
    return {};
}

/** An update's outputs as plain values (the Automation API wraps each as `{ value, secret }`). */
export function outputValues(outputs: Record<string, { value: unknown }>): StackOutputs {
    return Object.fromEntries(Object.entries(outputs).map(([k, v]) => [k, v.value]));
}

/** Whether an update changed anything: a resource change other than "same". */
export function anyResourceChanged(resourceChanges: Record<string, number | undefined> | undefined): boolean {
    return Object.entries(resourceChanges ?? {}).some(([op, n]) => op !== "same" && (n ?? 0) > 0);
}
