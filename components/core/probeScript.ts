// The node probe's script: a fixed POSIX shell script run on the node (host network) by the
// probe pod, its actions chosen by its environment. It takes no user value except through its
// environment; nothing here is ever spliced into a shell string. Its output is judged in probe.ts.
import { cleanupAwkProgram, DUMMY_INTERFACE, KUBE_PROXY_IPSETS, KUBE_PROXY_OBJECTS } from "./kubeProxyObjects.js";
import { BRIDGE_TABLE, bridgeCopyAwk, natChainsAwk } from "./bridge.js";

const CLEANUP_AWK = cleanupAwkProgram();
const IPSETS = KUBE_PROXY_IPSETS.join(" ");
const NFT_TABLE = KUBE_PROXY_OBJECTS.nftablesTable.name;
const NFT_FAMILIES = KUBE_PROXY_OBJECTS.nftablesTable.families.join(" ");
const BRIDGE_AWK = bridgeCopyAwk();
const NAT_CHAINS_AWK = natChainsAwk();

/** Section markers of the probe's output. */
export const MARK = "### kpm:";

/**
 * Runs in the probe pod (busybox with the host's root at /host, or directly in the node's
 * network namespace). Env: KPM_ACTION (probe|cleanup|await-sync: samples until deleted|bridge|unbridge: core/bridge.ts), KPM_MODE (cleanup: the mode the node's
 * kube-proxy runs now, whose objects stay; empty when kube-proxy is stopped), KPM_OWNED_IPS
 * (cleanup: Service ClusterIPs/external IPs, space-separated; IPVS virtual servers on them are
 * kube-proxy's like those on kube-ipvs0), KPM_METRICS (host:port of kube-proxy's metrics
 * address), KPM_SERVICE_IP / KPM_SERVICE_PORT (a Service to connect to), KPM_IPVS_PROC (the
 * kernel's IPVS table, /proc/net/ip_vs; a test seam).
 *
 * The cleanup touches kube-proxy's own objects only (kubeProxyObjects.ts): IPVS virtual servers
 * one by one (never `ipvsadm -C`), kube-ipvs0, kube-proxy's chains through `iptables-restore
 * --noflush` holding only their deletions and the deletions of the rules jumping into them
 * (never a whole table rewritten), IPv4 and IPv6, in each iptables backend (legacy and nft) where
 * they are; kube-proxy's ipsets; its nftables tables. Every other KUBE-* chain, ipset, IPVS
 * virtual server and nftables table is reported as "not ours, left alone". It does not run
 * `kube-proxy --cleanup`: that binary is in kube-proxy's image, not on the host, and its ipvs
 * cleanup flushes every IPVS virtual server on the host.
 */
export const PROBE_SCRIPT = String.raw`
set -u
if [ -x /host/bin/sh ] && [ "$(readlink -f /host)" != "/" ]; then H="chroot /host"; else H=""; fi
# a host tool, through the host's own /bin/sh: a busybox that prefers its applets would otherwise
# run its own ip or nc for "chroot /host ip"
host() { if [ -n "$H" ]; then chroot /host /bin/sh -c 'exec "$@"' sh "$@"; else "$@"; fi; }
has() { host sh -c 'command -v "$1"' sh "$1" >/dev/null 2>&1; }
fetch() { if has curl; then host curl -fsS -m 5 "$1"; elif has wget; then host wget -qO- -T 5 "$1"; else echo "no curl or wget on the node" >&2; return 127; fi; }
section() { echo "${MARK}$1"; }
first() { echo "$1" | grep -v '^#' | head -n 1; }
KPM_ACTION=${"${KPM_ACTION:-probe}"}
KPM_MODE=${"${KPM_MODE:-}"}
KPM_METRICS=${"${KPM_METRICS:-127.0.0.1:10249}"}
IPVS_PROC=${"${KPM_IPVS_PROC:-/proc/net/ip_vs}"}
# the iptables tool of one family ($1 iptables|ip6tables) and backend ($2 legacy|nft), $3 save|restore:
# the backend's own name, or the plain name when its --version says that backend
tool() {
  if has "$1-$2-$3"; then echo "$1-$2-$3"; return 0; fi
  has "$1-$3" || return 1
  case "$(host "$1" --version 2>/dev/null)" in *nf_tables*) b=nft;; *) b=legacy;; esac
  [ "$b" = "$2" ] && echo "$1-$3"
}
section host
echo "ran via: ${"${H:-direct}"}; the pod's shell: $(readlink -f /bin/sh 2>/dev/null || echo sh)"
if [ "$KPM_ACTION" = cleanup ]; then
  section cleanup
  fail=0
  err() { echo "error: $*"; fail=1; }
  if [ "$KPM_MODE" != ipvs ]; then
    owned=" ${"${KPM_OWNED_IPS:-}"} "
    if has ip; then for a in $(host ip -o addr show dev ${DUMMY_INTERFACE} 2>/dev/null | awk '{ split($4, x, "/"); print x[1] }'); do owned="$owned$a "; done; fi
    if grep -qE '^(TCP|UDP|SCTP|FWM) ' "$IPVS_PROC" 2>/dev/null; then
      if has ipvsadm; then
        list=$(host ipvsadm -Ln 2>&1) || err "ipvsadm -Ln failed: $(first "$list")"
        for vs in $(echo "$list" | awk '/^(TCP|UDP|SCTP|FWM) / { print $1 "=" $2 }'); do
          proto=${"${vs%%=*}"}; addr=${"${vs#*=}"}; a=${"${addr%:*}"}; a=${"${a#[}"}; a=${"${a%]}"}
          case "$proto" in TCP) f=-t;; UDP) f=-u;; SCTP) f=--sctp-service;; *) f="";; esac
          case "$owned" in
            *" $a "*) if [ -n "$f" ] && out=$(host ipvsadm -D $f "$addr" 2>&1); then echo "removed IPVS virtual server $proto $addr"; else err "ipvsadm -D $f $addr failed: $out"; fi;;
            *) echo "not ours, left alone: IPVS virtual server $proto $addr";;
          esac
        done
      else err "ipvsadm is not on the node: IPVS virtual servers are there and cannot be removed"; fi
    fi
    if has ip; then
      if host ip link show ${DUMMY_INTERFACE} >/dev/null 2>&1; then if host ip link del ${DUMMY_INTERFACE}; then echo "removed link ${DUMMY_INTERFACE}"; else err "ip link del ${DUMMY_INTERFACE} failed"; fi; fi
    else err "ip is not on the node: ${DUMMY_INTERFACE} cannot be checked"; fi
  fi
  for ipt in iptables ip6tables; do
    seen=0
    for b in legacy nft; do
      save=$(tool $ipt $b save) || continue
      restore=$(tool $ipt $b restore) || { err "$save is on the node but not its restore tool"; continue; }
      seen=1
      rules=$(host $save 2>&1) || { err "$save failed: $(first "$rules")"; continue; }
      plan=$(echo "$rules" | awk -v mode="$KPM_MODE" '${CLEANUP_AWK}')
      echo "$plan" | while read -r kind t c target; do case "$kind" in
        N) echo "not ours, left alone: $ipt chain $c (table $t, $b backend)";;
      esac; done
      if echo "$plan" | grep -q '^R '; then
        if out=$(echo "$plan" | sed -n 's/^R //p' | host $restore --noflush 2>&1); then
          echo "$plan" | while read -r kind t c target; do case "$kind" in
            J) echo "removed the rule of chain $c jumping to $target ($ipt table $t, $b backend)";;
            D) echo "removed kube-proxy chain $c ($ipt table $t, $b backend)";;
          esac; done
        else err "$restore --noflush failed, nothing removed from $ipt ($b backend): $(first "$out")"; fi
      fi
    done
    [ $seen = 1 ] || err "neither $ipt-legacy-save nor $ipt-nft-save (nor $ipt-save) is on the node: $ipt cannot be checked"
  done
  if [ "$KPM_MODE" != ipvs ]; then
    if has ipset; then
      sets=$(host ipset list -n 2>&1) || err "ipset list -n failed: $(first "$sets")"
      for s in $(echo "$sets" | grep '^KUBE-'); do
        case " ${IPSETS} " in
          *" $s "*) if out=$(host ipset destroy "$s" 2>&1); then echo "destroyed ipset $s"; else err "ipset destroy $s failed: $out"; fi;;
          *) echo "not ours, left alone: ipset $s";;
        esac
      done
    else echo "ipset is not on the node: no ipset checked (only ipvs mode uses ipsets)"; fi
  fi
  if has nft; then
    tables=$(host nft list tables 2>&1) || err "nft list tables failed: $(first "$tables")"
    for fam in ${NFT_FAMILIES}; do
      if [ "$KPM_MODE" != nftables ] && echo "$tables" | grep -qx "table $fam ${NFT_TABLE}"; then if out=$(host nft delete table $fam ${NFT_TABLE} 2>&1); then echo "removed nftables table $fam ${NFT_TABLE}"; else err "nft delete table $fam ${NFT_TABLE} failed: $out"; fi; fi
      if echo "$tables" | grep -qx "table $fam ${BRIDGE_TABLE}"; then if out=$(host nft delete table $fam ${BRIDGE_TABLE} 2>&1); then echo "removed nftables table $fam ${BRIDGE_TABLE} (a bridge the rollout left)"; else err "nft delete table $fam ${BRIDGE_TABLE} failed: $out"; fi; fi
    done
    echo "$tables" | grep '^table ' | grep -v -x -E -e "table ip6? ${NFT_TABLE}" -e "table ip6? ${BRIDGE_TABLE}" -e 'table ip6? (filter|nat|mangle|raw|security)' | sed 's/^table /not ours, left alone: nftables table /'
  else echo "nft is not on the node: no nftables table checked"; fi
  section end
  exit $fail
fi
if [ "$KPM_ACTION" = bridge ] || [ "$KPM_ACTION" = unbridge ]; then
  # bridge: any earlier copy deleted, kube-proxy's tables copied as ${BRIDGE_TABLE} (nft -f is one
  # transaction: all or nothing), both tables' nat base chains listed for the check; unbridge: deleted
  section bridge
  if has nft; then
    for fam in ${NFT_FAMILIES}; do
      if host nft list table $fam ${BRIDGE_TABLE} >/dev/null 2>&1; then
        if out=$(host nft delete table $fam ${BRIDGE_TABLE} 2>&1); then echo "deleted $fam"; else echo "error nft delete table $fam ${BRIDGE_TABLE}: $(first "$out")"; fi
      fi
      [ "$KPM_ACTION" = bridge ] || continue
      if listed=$(host nft list table $fam ${NFT_TABLE} 2>/dev/null); then
        if out=$(echo "$listed" | awk '${BRIDGE_AWK}' | host nft -f - 2>&1); then echo "copied $fam"; else echo "error nft -f (the copy of $fam ${NFT_TABLE}): $(first "$out")"; fi
        echo "$listed" | awk -v f=$fam -v t=${NFT_TABLE} '${NAT_CHAINS_AWK}'
        host nft list table $fam ${BRIDGE_TABLE} 2>/dev/null | awk -v f=$fam -v t=${BRIDGE_TABLE} '${NAT_CHAINS_AWK}'
      else echo "none $fam"; fi
    done
    if tables=$(host nft list tables 2>&1); then echo "$tables" | grep -x -E "table ip6? ${BRIDGE_TABLE}" | sed 's/^table /present /'; else echo "error nft list tables: $(first "$tables")"; fi
  else echo "missing nft"; fi
  section end
  exit 0
fi
if [ "$KPM_ACTION" = await-sync ]; then
  # samples kube-proxy until the pod is deleted: /proxyMode, the families that finished a sync, and
  # the CPU ticks of kube-proxy's processes in this network namespace with their children
  # (iptables-restore, nft), read from the host's /proc where the pod can see it
  section samples
  P=/host/proc; [ -r $P/self/ns/net ] || P=/proc
  me=$(readlink $P/self/ns/net 2>/dev/null)
  while :; do
    mode=$(fetch "http://$KPM_METRICS/proxyMode" 2>/dev/null) || mode=""
    synced=$(fetch "http://$KPM_METRICS/metrics" 2>/dev/null | sed -n 's/^kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="\(IPv[46]\)"}.*/\1/p' | tr '\n' , | sed 's/,$//')
    pids=""
    for f in $(grep -lx kube-proxy $P/[0-9]*/comm 2>/dev/null); do
      d=${"${f%/comm}"}
      [ "$(readlink $d/ns/net 2>/dev/null)" = "$me" ] && pids="$pids${"${pids:+,}"}${"${d##*/}"}"
    done
    cpu=-
    if [ -n "$pids" ] && [ "$P" = /host/proc ]; then
      cpu=$(cat $P/[0-9]*/stat 2>/dev/null | awk -v kp=",$pids," '{ pid = $1; sub(/^.*\) /, "") }
        index(kp, "," pid ",") { t += $12 + $13 + $14 + $15 } index(kp, "," $2 ",") { t += $12 + $13 } END { print t + 0 }')
    fi
    echo "sample $(date +%s) mode=${"${mode:--}"} synced=${"${synced:--}"} cpu=$cpu pids=${"${pids:--}"}"
    sleep ${"${KPM_INTERVAL:-2}"}
  done
fi
section time
date +%s
section proxyMode
fetch "http://$KPM_METRICS/proxyMode"; rc=$?; echo; echo "rc=$rc"
section metrics
fetch "http://$KPM_METRICS/metrics" | grep '^kubeproxy_sync_' || true
section kube-ipvs0
if has ip; then
  if host ip link show ${DUMMY_INTERFACE} >/dev/null 2>&1; then echo present; host ip -o addr show dev ${DUMMY_INTERFACE} 2>&1; else echo absent; fi
else echo "missing ip"; fi
section ipsets
if has ipset; then out=$(host ipset list -n 2>&1); rc=$?; if [ $rc -eq 0 ]; then echo "$out" | sed -n 's/^\(.\)/set \1/p'; else echo "error ipset list -n rc=$rc: $(first "$out")"; fi; else echo "missing ipset"; fi
section ipvs
if [ -e "$IPVS_PROC" ]; then out=$(cat "$IPVS_PROC" 2>&1) || echo "error $IPVS_PROC: $out"; echo "$out" | grep -E '^(TCP|UDP|SCTP|FWM) ' | sed 's/^/vs /'; else echo "no ip_vs in the kernel"; fi
section iptables
for ipt in iptables ip6tables; do
  if [ $ipt = iptables ]; then fam=IPv4; names=/proc/net/ip_tables_names; else fam=IPv6; names=/proc/net/ip6_tables_names; fi
  seen=0
  for b in legacy nft; do
    save=$(tool $ipt $b save) || { if [ $b = legacy ] && [ -s $names ]; then echo "missing $ipt-legacy-save (legacy $ipt tables are in use: $(tr '\n' ' ' < $names))"; fi; continue; }
    seen=1
    out=$(host $save 2>&1); rc=$?
    if [ $rc -ne 0 ]; then echo "error $save rc=$rc: $(first "$out")"; continue; fi
    echo "$out" | awk -v f=$fam -v b=$b '/^\*/ { t = substr($1, 2) } /^:/ { print "chain " f " " b " " t " " substr($1, 2) }'
  done
  [ $seen = 1 ] || echo "missing $ipt-save"
done
section nftables
if has nft; then out=$(host nft list tables 2>&1); rc=$?; echo "$out"; [ $rc -eq 0 ] || echo "error nft list tables rc=$rc"; else echo "missing nft"; fi
section connect
if [ -n "${"${KPM_SERVICE_IP:-}"}" ]; then
  case "$KPM_SERVICE_IP" in *:*) url="http://[$KPM_SERVICE_IP]:$KPM_SERVICE_PORT/";; *) url="http://$KPM_SERVICE_IP:$KPM_SERVICE_PORT/";; esac
  if has nc; then host nc -z -w 5 "$KPM_SERVICE_IP" "$KPM_SERVICE_PORT" && echo connected || echo "failed rc=$?";
  elif has curl; then host curl -s -o /dev/null -m 5 "$url"; rc=$?; if [ $rc -eq 0 ] || [ $rc -eq 22 ] || [ $rc -eq 52 ] || [ $rc -eq 56 ] || [ $rc -eq 35 ]; then echo connected; else echo "failed rc=$rc ($url)"; fi;
  else echo "failed: no nc or curl on the node"; fi
else echo "skipped"; fi
section end
`;
