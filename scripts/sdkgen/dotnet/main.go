// sdkgen/dotnet writes the generated .NET SDK of the kube-proxy-mode package (sdk/dotnet/) from
// schema.json. A module of its own: github.com/pulumi/pulumi/pkg/v3 dropped its .NET generator
// (it moved to github.com/pulumi/pulumi-dotnet, whose module the Go proxy does not serve), so this
// one is built against v3.215.0, the newest pkg/v3 here that still has codegen/dotnet.
//
//	cd scripts/sdkgen/dotnet && go run . ../../../schema.json ../../../sdk
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"

	dotnetgen "github.com/pulumi/pulumi/pkg/v3/codegen/dotnet"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

// logoTransport answers the generator's one HTTP request, the package logo (by default downloaded
// from raw.githubusercontent.com, unreachable here), with a plain 64x64 PNG drawn here; it refuses
// any other request.
type logoTransport struct{ url string }

func (t logoTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.String() != t.url {
		return nil, fmt.Errorf("sdkgen-dotnet makes no network request (asked for %s)", r.URL)
	}
	img := image.NewRGBA(image.Rect(0, 0, 64, 64))
	for x := 0; x < 64; x++ {
		for y := 0; y < 64; y++ {
			img.Set(x, y, color.RGBA{0x32, 0x6c, 0xe5, 0xff})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return &http.Response{StatusCode: 200, Body: io.NopCloser(&buf), Header: http.Header{}, Request: r}, nil
}

func main() {
	if len(os.Args) != 3 {
		fail(fmt.Errorf("usage: sdkgen-dotnet SCHEMA.json OUT_DIR"))
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
	pkg, diags, err := schema.BindSpec(spec, schema.NewPluginLoader(nil), schema.ValidationOptions{})
	if err != nil {
		fail(err)
	}
	if diags.HasErrors() {
		fail(diags)
	}
	const logo = "https://kube-proxy-mode.invalid/logo.png"
	pkg.LogoURL = logo
	http.DefaultTransport = logoTransport{url: logo}
	files, err := dotnetgen.GeneratePackage("kube-proxy-mode sdkgen", pkg, nil, nil)
	if err != nil {
		fail(fmt.Errorf("dotnet: %w", err))
	}
	dir := filepath.Join(os.Args[2], "dotnet")
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
	fmt.Printf("dotnet: %d files in %s\n", len(files), dir)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "sdkgen-dotnet:", err)
	os.Exit(1)
}
