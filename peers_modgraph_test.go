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
	for _, m := range strings.Fields(goOutput(t, goCmd, "list", "-m")) {
		if strings.HasPrefix(m, "github.com/leasehold/leasehold/bench/") {
			t.Errorf("the workspace uses %s: a peer benchmark's module belongs outside go.work", m)
		}
	}
	found := map[string]bool{}
	for _, node := range strings.Fields(goOutput(t, goCmd, "mod", "graph")) {
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

// goOutput runs the go command with args in the workspace and returns its
// standard output.
func goOutput(t *testing.T, goCmd string, args ...string) string {
	t.Helper()
	cmd := exec.Command(goCmd, args...)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return string(out)
}
