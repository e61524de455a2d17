// Command fg-gen dumps the feature gates that the kube-proxy binary of one
// Kubernetes release accepts in KubeProxyConfiguration.featureGates.
//
// It is not built inside this repository: scripts/feature-gates/generate.sh
// copies it into a throw-away wrapper module that requires
// k8s.io/kubernetes@vX.Y.Z (staging modules replaced by their published
// v0.Y.Z) and builds it there, once per release.
//
// It imports exactly what cmd/kube-proxy/proxy.go imports, so every init()
// that registers gates in the real kube-proxy binary (pkg/features, the
// apiserver and client-go gates it pulls in, the logs/metrics gates added by
// cmd/kube-proxy/app's own init, ...) also runs here. It then reads the
// process-wide gate that kube-proxy calls SetFromMap on
// (utilfeature.DefaultMutableFeatureGate). GetAll() resolves versioned specs
// (1.31+) at the gate's emulation version, which for kube-proxy is the
// binary's own version (kube-proxy has no --emulated-version flag), and leaves
// out gates that are still pre-alpha at that version (SetFromMap rejects them).
//
// Since 1.35 the registry also has gate dependencies (AddDependencies):
// SetFromMap refuses a map that leaves an enabled gate with a disabled
// dependency. They are dumped too (Dependencies(), where it exists).
//
// As a self-check it sets each gate alone to the opposite of its default on a
// deep copy of the gate and verifies that the LockToDefault gates, and only
// they, are refused as locked; any other refusal must be a dependency error.
// It also checks that an unknown name is refused. Each refusal is recorded in
// the per-release output (flipErrors) for inspection; generate.sh keeps only
// gates and dependencies in the data file.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"

	// The imports of cmd/kube-proxy/proxy.go (package main of kube-proxy).
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	_ "k8s.io/kubernetes/cmd/kube-proxy/app"
)

type gate struct {
	Default bool   `json:"default"`
	Stage   string `json:"stage"`
	Locked  bool   `json:"locked"`
}

type output struct {
	Source           string              `json:"source"`
	EmulationVersion string              `json:"emulationVersion,omitempty"`
	Gates            map[string]gate     `json:"gates"`
	Dependencies     map[string][]string `json:"dependencies,omitempty"`
	FlipErrors       map[string]string   `json:"flipErrors,omitempty"`
}

type setter interface {
	SetFromMap(map[string]bool) error
}

// deepCopy calls DeepCopy() by reflection: its return type differs between
// releases (MutableFeatureGate before 1.31, MutableVersionedFeatureGate after).
func deepCopy(fg interface{}) setter {
	out := reflect.ValueOf(fg).MethodByName("DeepCopy").Call(nil)
	return out[0].Interface().(setter)
}

// emulationVersion returns the gate's emulation version (1.31+), or "".
func emulationVersion(fg interface{}) string {
	m := reflect.ValueOf(fg).MethodByName("EmulationVersion")
	if !m.IsValid() {
		return ""
	}
	v := m.Call(nil)[0]
	if s, ok := v.Interface().(fmt.Stringer); ok && !v.IsNil() {
		return s.String()
	}
	return ""
}

// dependencies calls Dependencies() by reflection (absent in older releases).
func dependencies(fg interface{}) map[string][]string {
	m := reflect.ValueOf(fg).MethodByName("Dependencies")
	if !m.IsValid() {
		return nil
	}
	out := map[string][]string{}
	iter := m.Call(nil)[0].MapRange()
	for iter.Next() {
		var deps []string
		for i := 0; i < iter.Value().Len(); i++ {
			deps = append(deps, iter.Value().Index(i).String())
		}
		if len(deps) == 0 {
			continue // registered with no dependencies
		}
		sort.Strings(deps)
		out[iter.Key().String()] = deps
	}
	return out
}

// stage maps FeatureSpec.PreRelease ("ALPHA", "BETA", "" for GA,
// "DEPRECATED") to the names used in the JSON.
func stage(p string) string {
	if p == "" {
		return "GA"
	}
	return strings.ToUpper(p)
}

func main() {
	source := flag.String("source", "", "module@version this binary was built from")
	flag.Parse()

	// Silence the "setting GA/deprecated feature gate" warnings of the self-check.
	klog.SetLogger(logr.Discard())

	fg := utilfeature.DefaultMutableFeatureGate
	all := fg.GetAll()
	out := output{
		Source:           *source,
		EmulationVersion: emulationVersion(fg),
		Gates:            map[string]gate{},
		Dependencies:     dependencies(fg),
		FlipErrors:       map[string]string{},
	}
	names := make([]string, 0, len(all))
	for name, spec := range all {
		names = append(names, string(name))
		out.Gates[string(name)] = gate{Default: spec.Default, Stage: stage(string(spec.PreRelease)), Locked: spec.LockToDefault}
	}
	sort.Strings(names)

	failed := false
	for _, name := range names {
		g := out.Gates[name]
		err := deepCopy(fg).SetFromMap(map[string]bool{name: !g.Default})
		if err != nil {
			out.FlipErrors[name] = err.Error()
		}
		lockErr := err != nil && strings.Contains(err.Error(), "is locked to")
		depErr := err != nil && strings.Contains(err.Error(), "depends on features that are disabled")
		if lockErr != g.Locked || (err != nil && !lockErr && !depErr) {
			failed = true
			fmt.Fprintf(os.Stderr, "self-check: %s locked=%v but setting it to %v gave err=%v\n", name, g.Locked, !g.Default, err)
		}
		if err := deepCopy(fg).SetFromMap(map[string]bool{name: g.Default}); err != nil {
			failed = true
			fmt.Fprintf(os.Stderr, "self-check: %s: setting it to its default failed: %v\n", name, err)
		}
	}
	if err := deepCopy(fg).SetFromMap(map[string]bool{"NoSuchFeatureGateForKubeProxyMode": true}); err == nil {
		failed = true
		fmt.Fprintln(os.Stderr, "self-check: an unknown gate name was accepted")
	}

	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if failed {
		os.Exit(2)
	}
}
