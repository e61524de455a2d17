"""The ipvs -> nftables migration of examples/ipvs-to-nftables/index.ts, as a Python program.

It uses the kube-proxy-mode provider plugin (pulumi-resource-kube-proxy-mode; see README.md):
    pulumi config set --secret kubeconfig "$(cat kubeconfig)" && pulumi preview --diff && pulumi up
`pools` and `verify` may be overridden with stack config (objects, as JSON).
"""
import pulumi

from kube_proxy_mode import KubeProxyMode

config = pulumi.Config()

kp = KubeProxyMode(
    "kube-proxy",
    mode=config.get("mode") or "nftables",
    node_port_addresses=["0.0.0.0/0"],  # keep the NodePort reach ipvs mode had
    conntrack={"tcpBeLiberal": True},
    target={"flavor": "kubeadm"},
    pools=config.get_object("pools") or [
        {"name": "canary", "nodeSelector": "pool=canary", "maxUnavailable": 1, "soak": "10m"},
        {"name": "workers", "nodeSelector": "pool=workers", "maxUnavailable": 2, "drain": {}},
        {"name": "batch", "nodeSelector": "pool=batch", "maxUnavailable": 1},
    ],
    verify=config.get_object("verify") or {"service": "demo/backend"},
    on_failure="rollback-node",
    kubeconfig=config.require_secret("kubeconfig"),
)

pulumi.export("configDiff", kp.config_diff)
pulumi.export("plan", kp.plan)
pulumi.export("findings", kp.findings)
pulumi.export("status", kp.status)
