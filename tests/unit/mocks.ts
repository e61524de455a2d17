// Pulumi's runtime mocks for component tests that only construct KubeProxyMode in a preview and
// need nothing back from the engine: every resource echoes its inputs, unregistered (no id).
import * as pulumi from "@pulumi/pulumi";

/** Sets echoing preview mocks and returns the KubeProxyMode class, loaded under them. */
export async function previewMocks(): Promise<typeof import("../../components/pulumi/kubeProxyMode.js").KubeProxyMode> {
    await pulumi.runtime.setMocks(
        { newResource: (a) => ({ id: undefined, state: a.inputs }), call: () => ({}) },
        "project",
        "stack",
        true,
    );
    return (await import("../../components/pulumi/kubeProxyMode.js")).KubeProxyMode;
}
