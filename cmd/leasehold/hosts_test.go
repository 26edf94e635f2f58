package main

import (
	"os"
	"strings"
	"testing"
)

// TestHostsRefusesBadFlags checks the command's refusals, which come
// before any network or server is built.
func TestHostsRefusesBadFlags(t *testing.T) {
	r := runIn(t, "", nil, "hosts", "--subnet", "10.213.0.0")
	if r.code != 2 || !strings.Contains(r.stderr, "--subnet") {
		t.Fatalf("bad --subnet: %s", r)
	}
	if os.Geteuid() != 0 {
		r = runIn(t, "", nil, "hosts")
		if r.code != 1 || !strings.Contains(r.stderr, "needs root") {
			t.Fatalf("not root: %s", r)
		}
		return
	}
	r = runIn(t, "", nil, "hosts", "--procs", "0", "--prefix", "lhtest-flags", "--bridge", "lhtest-fb")
	if r.code != 2 || !strings.Contains(r.stderr, "process counts") {
		t.Fatalf("--procs 0: %s", r)
	}
}
