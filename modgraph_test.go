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
	out := goOutput(t, goCmd, []string{"GOWORK=off"}, "mod", "graph")
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

// peerModules are the module path prefixes of the job queues that the
// side-by-side benchmark (bench/peers, scripts/peerbench) drains: only its
// own modules, outside the workspace, may require them.
var peerModules = []string{"github.com/riverqueue/"}

// TestWorkspaceHasNoPeerModules checks that no module of the workspace
// (go.work: the library, the tool and the integrations, which CI builds and
// tests) is a peer benchmark's or has a peer in its module graph, so that
// neither a program requiring leasehold nor CI ever downloads a peer.
func TestWorkspaceHasNoPeerModules(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found:", err)
	}
	for _, m := range strings.Fields(goOutput(t, goCmd, nil, "list", "-m")) {
		if strings.HasPrefix(m, "github.com/leasehold/leasehold/bench/") {
			t.Errorf("the workspace uses %s: a peer benchmark's module belongs outside go.work", m)
		}
	}
	found := map[string]bool{}
	for _, node := range strings.Fields(goOutput(t, goCmd, nil, "mod", "graph")) {
		path, _, _ := strings.Cut(node, "@")
		for _, prefix := range peerModules {
			if strings.HasPrefix(path, prefix) {
				found[path] = true
			}
		}
	}
	for _, path := range slices.Sorted(maps.Keys(found)) {
		t.Errorf("the workspace's module graph holds %s, which only bench/peers may require", path)
	}
}

// goOutput runs the go command with args, read-only, with the environment
// and env, and returns its standard output.
func goOutput(t *testing.T, goCmd string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(goCmd, args...)
	cmd.Env = append(append(os.Environ(), "GOFLAGS=-mod=readonly"), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s go %s: %v\n%s", strings.Join(env, " "), strings.Join(args, " "), err, stderr.Bytes())
	}
	return string(out)
}
