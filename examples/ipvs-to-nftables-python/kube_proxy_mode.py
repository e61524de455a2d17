"""KubeProxyMode for Python without a generated SDK: the component served by the kube-proxy-mode
provider plugin, declared as a remote component (the engine asks the plugin to construct it).
A generated SDK (`pulumi package gen-sdk` on the plugin's schema) replaces this file."""
from typing import Any, Mapping, Optional, Sequence

import pulumi

TYPE = "kube-proxy-mode:index:KubeProxyMode"
OUTPUTS = ("configDiff", "plan", "findings", "status", "configHash", "config", "mode", "promotion", "change", "alerts")


class KubeProxyMode(pulumi.ComponentResource):
    config_diff: pulumi.Output[str]
    plan: pulumi.Output[Any]
    findings: pulumi.Output[Sequence[Mapping[str, Any]]]
    status: pulumi.Output[str]
    config_hash: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        mode: pulumi.Input[str],
        pools: pulumi.Input[Sequence[Any]],
        node_port_addresses: Optional[pulumi.Input[Sequence[str]]] = None,
        feature_gates: Optional[pulumi.Input[Mapping[str, bool]]] = None,
        conntrack: Optional[pulumi.Input[Mapping[str, Any]]] = None,
        kubernetes_version: Optional[pulumi.Input[str]] = None,
        target: Optional[pulumi.Input[Mapping[str, Any]]] = None,
        verify: Optional[pulumi.Input[Mapping[str, Any]]] = None,
        on_failure: Optional[pulumi.Input[str]] = None,
        kubeconfig: Optional[pulumi.Input[str]] = None,
        context: Optional[pulumi.Input[str]] = None,
        opts: Optional[pulumi.ResourceOptions] = None,
    ) -> None:
        inputs = {
            "mode": mode,
            "pools": pools,
            "nodePortAddresses": node_port_addresses,
            "featureGates": feature_gates,
            "conntrack": conntrack,
            "kubernetesVersion": kubernetes_version,
            "target": target,
            "verify": verify,
            "onFailure": on_failure,
            "kubeconfig": pulumi.Output.secret(kubeconfig) if kubeconfig is not None else None,
            "context": context,
        }
        props = {k: v for k, v in inputs.items() if v is not None}
        for out in OUTPUTS:
            if out not in props:
                props[_PY_NAMES.get(out, out)] = None
        super().__init__(TYPE, name, props, opts, remote=True)

    def translate_output_property(self, prop: str) -> str:
        return _PY_NAMES.get(prop, prop)

    def translate_input_property(self, prop: str) -> str:
        return _SCHEMA_NAMES.get(prop, prop)


# Output names that differ between the schema (camelCase) and Python (snake_case).
_PY_NAMES = {"configDiff": "config_diff", "configHash": "config_hash"}
_SCHEMA_NAMES = {v: k for k, v in _PY_NAMES.items()}
