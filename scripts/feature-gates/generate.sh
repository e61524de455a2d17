#!/usr/bin/env bash
# Regenerates components/core/data/feature-gates.json: for each Kubernetes
# minor release, the feature gates that release's kube-proxy binary accepts in
# KubeProxyConfiguration.featureGates (default, stage, LockToDefault), as seen
# at the binary's own version.
#
# Run by hand (not in CI). Needs Go, jq, node and the Go module proxy.
#
#   scripts/feature-gates/generate.sh                  # the default release list
#   scripts/feature-gates/generate.sh 1.37.2 1.36.5    # only these releases
#
# Passing versions regenerates only those; the other entries already in the
# JSON file are kept. For each release it builds main.go (beside this script)
# in a wrapper module under $FG_GEN_DIR (default
# $HOME/.cache/kube-proxy-mode/fg-gen/vX.Y.Z) that requires
# k8s.io/kubernetes@vX.Y.Z and replaces every staging module that
# kubernetes' own go.mod points at ./staging/src/... with its published
# v0.Y.Z, then runs it.
#
# DEFAULT_VERSIONS holds the newest patch of each minor that the Go module
# proxy served when the file was last generated. `go list -m -versions
# k8s.io/kubernetes` can omit served versions, so check newer patches with
# `go list -m -json k8s.io/kubernetes@vX.Y.Z` before bumping.
set -euo pipefail

DEFAULT_VERSIONS=(1.29.15 1.30.14 1.31.14 1.32.13 1.33.13 1.34.12 1.35.8 1.36.5 1.37.2)

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${OUT:-$root/components/core/data/feature-gates.json}
work=${FG_GEN_DIR:-$HOME/.cache/kube-proxy-mode/fg-gen}

if [ $# -gt 0 ]; then versions=("$@"); else versions=("${DEFAULT_VERSIONS[@]}"); fi

export GOFLAGS="-mod=mod -buildvcs=false" GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0

mkdir -p "$work"
results=()
for v in "${versions[@]}"; do
  v=${v#v}
  minor=${v%.*}      # 1.37
  patch=${v##*.}     # 2
  staging_version="v0.${minor#1.}.$patch"
  dir=$work/v$v
  echo "== k8s.io/kubernetes@v$v (staging modules at $staging_version) in $dir" >&2

  gomod=$(go mod download -json "k8s.io/kubernetes@v$v" | jq -r .GoMod)
  go_directive=$(awk '$1 == "go" { print $2; exit }' "$gomod")
  # Every "k8s.io/x => ./staging/src/k8s.io/x" replace, in block or single-line form.
  mapfile -t staging < <(sed -nE 's#^[[:space:]]*(replace[[:space:]]+)?([^[:space:]]+)[[:space:]]+=>[[:space:]]+\./staging/.*$#\2#p' "$gomod")
  if [ ${#staging[@]} -eq 0 ]; then
    echo "no ./staging replaces found in $gomod" >&2
    exit 1
  fi

  rm -rf "$dir"
  mkdir -p "$dir"

  # The proxy does not serve every staging module at every patch (e.g.
  # k8s.io/kube-proxy@v0.31.14 is refused). Fall back to the newest served
  # earlier patch of the same minor, and record it.
  declare -A replace_version=()
  : > "$dir/substitutions.txt"
  for m in "${staging[@]}"; do
    replace_version[$m]=$staging_version
    if ! go mod download "$m@$staging_version" >/dev/null 2>&1; then
      found=
      for ((p = patch - 1; p >= 0; p--)); do
        if go mod download "$m@v0.${minor#1.}.$p" >/dev/null 2>&1; then found=v0.${minor#1.}.$p; break; fi
      done
      if [ -z "$found" ]; then
        echo "$m: no version v0.${minor#1.}.* <= $staging_version is served" >&2
        exit 1
      fi
      echo "WARNING: $m@$staging_version is not served; using $found" >&2
      replace_version[$m]=$found
      echo "$m $found" >> "$dir/substitutions.txt"
    fi
  done
  cp "$here/main.go" "$dir/main.go"
  {
    echo "module kube-proxy-mode/fg-gen"
    echo
    echo "go $go_directive"
    echo
    echo "require k8s.io/kubernetes v$v"
    echo
    echo "replace ("
    for m in "${staging[@]}"; do printf '\t%s => %s %s\n' "$m" "$m" "${replace_version[$m]}"; done
    echo ")"
  } > "$dir/go.mod"

  (cd "$dir" && nice -n 10 go mod tidy && nice -n 10 go build -o fg-gen .)
  # Keep only the substitutions of modules that are actually built in.
  used=$(cd "$dir" && go list -deps -f '{{with .Module}}{{.Path}}{{end}}' . | sort -u)
  awk 'NR == FNR { used[$1] = 1; next } ($1 in used)' <(echo "$used") "$dir/substitutions.txt" > "$dir/substitutions.used.txt"
  "$dir/fg-gen" -source "k8s.io/kubernetes@v$v" > "$dir/gates.json"
  results+=("$minor=$dir/gates.json")
done

# Merge into the data file: versions sorted numerically, gate names sorted,
# one gate per line.
node - "$out" "${results[@]}" <<'JS'
const fs = require('fs');
const path = require('path');
const [out, ...pairs] = process.argv.slice(2);
let versions = {};
if (fs.existsSync(out)) versions = JSON.parse(fs.readFileSync(out, 'utf8')).versions || {};
const emulation = {};
for (const pair of pairs) {
  const i = pair.indexOf('=');
  const minor = pair.slice(0, i);
  const r = JSON.parse(fs.readFileSync(pair.slice(i + 1), 'utf8'));
  if (r.emulationVersion && r.emulationVersion !== minor) {
    throw new Error(`${r.source}: emulation version ${r.emulationVersion}, expected ${minor}`);
  }
  const gates = {};
  for (const name of Object.keys(r.gates).sort()) {
    const g = r.gates[name];
    gates[name] = { default: g.default, stage: g.stage, locked: g.locked };
  }
  versions[minor] = { source: r.source, gates };
  const subs = fs.readFileSync(path.join(path.dirname(pair.slice(i + 1)), 'substitutions.used.txt'), 'utf8')
    .split('\n').filter(Boolean).map((l) => l.split(' '));
  if (subs.length > 0) versions[minor].stagingSubstitutions = Object.fromEntries(subs.sort());
  const deps = r.dependencies || {};
  if (Object.keys(deps).length > 0) {
    versions[minor].dependencies = {};
    for (const name of Object.keys(deps).sort()) versions[minor].dependencies[name] = [...(deps[name] || [])].sort();
  }
}
const keys = Object.keys(versions).sort((a, b) => {
  const [am, an] = a.split('.').map(Number), [bm, bn] = b.split('.').map(Number);
  return am - bm || an - bn;
});
const generatedFrom =
  'scripts/feature-gates/generate.sh: for each release, a Go program importing what cmd/kube-proxy/proxy.go imports ' +
  '(k8s.io/kubernetes/cmd/kube-proxy/app and thus pkg/features, apiserver, client-go, component-base logs/metrics/zpages gates), ' +
  'built against k8s.io/kubernetes@<source> with staging modules replaced by their published v0.<minor>.<patch>, ' +
  'dumping utilfeature.DefaultMutableFeatureGate.GetAll() at the binary\'s default emulation version (its own minor; ' +
  'gates still pre-alpha there are left out). stage GA means PreRelease ""; locked is LockToDefault. ' +
  'AllAlpha and AllBeta are the gate registry\'s built-in meta gates. ' +
  'dependencies (1.35+, gates with none left out): gate -> gates it depends on (featuregate Dependencies()); SetFromMap is fatal when an enabled gate ' +
  'has a disabled dependency, so e.g. enabling a default-off gate without its default-off dependency is refused. ' +
  'stagingSubstitutions: staging modules linked into the program that the module proxy does not serve at v0.<minor>.<patch>, ' +
  'built at the newest served earlier patch instead.';
let s = '{\n  "generatedFrom": ' + JSON.stringify(generatedFrom) + ',\n  "versions": {\n';
s += keys.map((k) => {
  const v = versions[k];
  const names = Object.keys(v.gates).sort();
  const lines = names.map((n) => `        ${JSON.stringify(n)}: ${JSON.stringify(v.gates[n]).replace(/,/g, ', ').replace(/:/g, ': ')}`);
  let e = `    ${JSON.stringify(k)}: {\n      "source": ${JSON.stringify(v.source)},\n`;
  if (v.stagingSubstitutions) e += `      "stagingSubstitutions": ${JSON.stringify(v.stagingSubstitutions).replace(/,/g, ', ').replace(/":"/g, '": "')},\n`;
  e += `      "gates": {\n${lines.join(',\n')}\n      }`;
  if (v.dependencies) {
    const deps = Object.keys(v.dependencies).map((n) => `        ${JSON.stringify(n)}: ${JSON.stringify(v.dependencies[n]).replace(/,/g, ', ')}`);
    e += `,\n      "dependencies": {\n${deps.join(',\n')}\n      }`;
  }
  return e + '\n    }';
}).join(',\n');
s += '\n  }\n}\n';
JSON.parse(s);
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, s);
for (const k of keys) console.error(`${k}: ${Object.keys(versions[k].gates).length} gates (${versions[k].source})`);
JS
