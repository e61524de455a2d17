#!/bin/sh
# A verification hook: kube-proxy-mode runs it after the built-in checks of every node, as argv
# (no shell string is ever built from your values), with NODE, POOL, MODE and KUBECONFIG set.
# Exit non-zero to fail the node: the rollout stops, rolls the node back, and shows this output.
set -eu
port=${NODEPORT:-30080}
ip=$(kubectl get node "$NODE" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')
if ! curl -fsS -m 5 -o /dev/null "http://$ip:$port/healthz"; then
  echo "NodePort $port does not answer on $NODE ($ip) after the move to $MODE" >&2
  exit 1
fi
echo "NodePort $port answers on $NODE ($ip) in $MODE mode"
