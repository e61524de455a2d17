// sdkgen writes the generated SDKs of the kube-proxy-mode package (sdk/<language>/) from
// schema.json, with the code generators of github.com/pulumi/pulumi/pkg/v3 at the version the
// toolchain's pulumi CLI is built from. `pulumi package gen-sdk` cannot do it here: CLI 3.276.0
// hands Python, Go and .NET codegen to their language host plugins, which the toolchain does not
// have, and the toolchain's Node.js host (v3.68.0) lacks GeneratePackage.
//
//	cd scripts/sdkgen && go run . ../../schema.json ../../sdk python go nodejs
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	nodejsgen "github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	pythongen "github.com/pulumi/pulumi/pkg/v3/codegen/python"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

const tool = "kube-proxy-mode sdkgen"

// sdkVersion: the Go SDK's pulumi dependency, the version this generator is built from (go.mod)
const sdkVersion = "v3.276.0"

func main() {
	if len(os.Args) < 4 {
		fail(fmt.Errorf("usage: sdkgen SCHEMA.json OUT_DIR LANGUAGE... (python, go, nodejs)"))
	}
	text, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail(err)
	}
	var spec schema.PackageSpec
	if err := json.Unmarshal(text, &spec); err != nil {
		fail(fmt.Errorf("%s: %w", os.Args[1], err))
	}
	// the schema refers to no other package, so the loader is never asked for a plugin
	loader := schema.NewPluginLoader(nil)
	pkg, diags, err := schema.BindSpec(spec, loader, schema.ValidationOptions{})
	if err != nil {
		fail(err)
	}
	if diags.HasErrors() {
		fail(diags)
	}
	for _, language := range os.Args[3:] {
		var files map[string][]byte
		switch language {
		case "python":
			files, err = pythongen.GeneratePackage(tool, pkg, nil, loader)
		case "go":
			files, err = gogen.GeneratePackage(tool, pkg, nil)
		case "nodejs":
			files, err = nodejsgen.GeneratePackage(tool, pkg, nil, nil, false, loader)
		default:
			err = fmt.Errorf("language %q: this script generates python, go and nodejs", language)
		}
		if err != nil {
			fail(fmt.Errorf("%s: %w", language, err))
		}
		dir := filepath.Join(os.Args[2], language)
		if err := os.RemoveAll(dir); err != nil {
			fail(err)
		}
		for name, content := range files {
			path := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				fail(err)
			}
			if err := os.WriteFile(path, content, 0o644); err != nil {
				fail(err)
			}
		}
		if language == "go" {
			// a module of its own, so `go get <importBasePath>` resolves (gen-sdk leaves this to the Go language host)
			if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(goMod(pkg)), 0o644); err != nil {
				fail(err)
			}
		}
		fmt.Printf("%s: %d files in %s\n", language, len(files), dir)
	}
}

// goMod: the Go SDK's module, the import base path's parent (sdk/go holds the package directory).
func goMod(pkg *schema.Package) string {
	if err := pkg.ImportLanguages(map[string]schema.Language{"go": gogen.Importer}); err != nil {
		fail(err)
	}
	base := pkg.Language["go"].(gogen.GoPackageInfo).ImportBasePath
	return fmt.Sprintf("module %s\n\ngo 1.24\n\nrequire github.com/pulumi/pulumi/sdk/v3 %s\n", filepath.Dir(base), sdkVersion)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "sdkgen:", err)
	os.Exit(1)
}
