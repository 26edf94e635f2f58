package netns

import (
	"context"
	"os/exec"
	"testing"
)

// TestCleanupTakesClaimedUnmarked leaves what a run killed between adding
// a namespace or link and marking it leaves (the object unmarked, its
// claim), and a claim whose object was never added: Cleanup must remove
// the objects and the claims.
func TestCleanupTakesClaimedUnmarked(t *testing.T) {
	ctx := context.Background()
	if err := Available(ctx); err != nil {
		t.Skipf("skipping: %v", err)
	}
	cfg := Config{Prefix: "lhtest-cns", Bridge: "lhtest-cbr"}
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "delete", "lhtest-cns1").Run()
		_ = exec.Command("ip", "link", "delete", "lhtest-cbr").Run()
		_ = unclaim(kindNetns, "lhtest-cns1")
		_ = unclaim(kindNetns, "lhtest-cns2")
		_ = unclaim(kindLink, "lhtest-cbr")
	})
	for _, c := range []struct{ kind, name string }{{kindNetns, "lhtest-cns1"}, {kindNetns, "lhtest-cns2"}, {kindLink, "lhtest-cbr"}} {
		if err := claim(c.kind, c.name); err != nil {
			t.Fatal(err)
		}
	}
	if err := runAll(ctx, []string{"netns", "add", "lhtest-cns1"}, []string{"link", "add", "lhtest-cbr", "type", "bridge"}); err != nil {
		t.Fatal(err)
	}
	if err := Cleanup(ctx, cfg); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	if exec.Command("ip", "-n", "lhtest-cns1", "link", "show").Run() == nil {
		t.Errorf("the claimed namespace is left")
	}
	if exec.Command("ip", "link", "show", "lhtest-cbr").Run() == nil {
		t.Errorf("the claimed bridge is left")
	}
	for _, c := range []struct{ kind, name string }{{kindNetns, "lhtest-cns1"}, {kindNetns, "lhtest-cns2"}, {kindLink, "lhtest-cbr"}} {
		if claimed(c.kind, c.name) {
			t.Errorf("claim of %s %s is left", c.kind, c.name)
		}
	}
}
