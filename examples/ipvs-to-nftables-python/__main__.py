"""The ipvs -> nftables migration of examples/ipvs-to-nftables/index.ts, as a Python program.

It uses the generated Python SDK (sdk/python, package kube_proxy_mode) and the kube-proxy-mode
provider plugin (pulumi-resource-kube-proxy-mode); see README.md:
    pip install -r requirements.txt <kube-proxy-mode>/sdk/python
    pulumi config set --secret kubeconfig "$(cat kubeconfig)" && pulumi preview --diff && pulumi up
`pools` and `verify` may be overridden with stack config (objects, as JSON, snake_case keys).
"""
import pulumi
import kube_proxy_mode as kpm

config = pulumi.Config()

kp = kpm.KubeProxyMode(
    "kube-proxy",
    mode=config.get("mode") or kpm.ProxyMode.NFTABLES,
    node_port_addresses=["0.0.0.0/0"],  # keep the NodePort reach ipvs mode had
    conntrack={"tcp_be_liberal": True},
    target={"flavor": kpm.Flavor.KUBEADM},
    pools=config.get_object("pools") or [
        {"name": "canary", "node_selector": "pool=canary", "max_unavailable": 1, "soak": "10m"},
        {"name": "workers", "node_selector": "pool=workers", "max_unavailable": 2, "drain": {}},
        {"name": "batch", "node_selector": "pool=batch", "max_unavailable": 1},
    ],
    verify=config.get_object("verify") or {"service": "demo/backend"},
    on_failure=kpm.OnFailure.ROLLBACK_NODE,
    kubeconfig=config.require_secret("kubeconfig"),
)

pulumi.export("configDiff", kp.config_diff)
pulumi.export("plan", kp.plan)
pulumi.export("findings", kp.findings)
pulumi.export("status", kp.status)
