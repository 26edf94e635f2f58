package leasehold_test

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// toolOnlyModules are module path prefixes that only the command-line tool
// (module github.com/leasehold/leasehold/cmd/leasehold) may need: its flag
// parsing, the bench's plots with their font, PDF, SVG and image
// dependencies, and browser automation; and what only the integrations
// in modules of their own need (contrib/prometheus: client_golang;
// OpenTelemetry).
var toolOnlyModules = []string{
	"github.com/spf13/cobra",
	"github.com/spf13/pflag",
	"github.com/inconshreveable/mousetrap",
	"gonum.org/",
	"github.com/chromedp/",
	"codeberg.org/go-fonts/",
	"codeberg.org/go-latex/",
	"codeberg.org/go-pdf/",
	"git.sr.ht/~sbinet/",
	"github.com/ajstarks/svgo",
	"github.com/golang/freetype",
	"golang.org/x/image",
	"github.com/prometheus/",
	"go.opentelemetry.io/",
}

// TestModuleGraphHasNoToolModules checks that the library module's graph, as
// a program requiring leasehold with both drivers inherits it, holds none of
// the tool's modules. It reads `go mod graph` of this module alone
// (GOWORK=off), so the tool's module in go.work does not count.
func TestModuleGraphHasNoToolModules(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found:", err)
	}
	cmd := exec.Command(goCmd, "mod", "graph")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("GOWORK=off go mod graph: %v\n%s", err, stderr.Bytes())
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		for _, node := range strings.Fields(line) {
			path, _, _ := strings.Cut(node, "@")
			seen[path] = true
		}
	}
	if !seen["github.com/leasehold/leasehold"] {
		t.Fatalf("go mod graph does not show this module:\n%s", out)
	}
	for _, path := range slices.Sorted(maps.Keys(seen)) {
		for _, prefix := range toolOnlyModules {
			if strings.HasPrefix(path, prefix) {
				t.Errorf("module graph holds %s, which only the command-line tool or an integration needs", path)
			}
		}
	}
}
