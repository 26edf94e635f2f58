package netns_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/netns"
)

// foreignConfig names a network whose names something else also uses in
// TestCreateLeavesForeignNamesAlone.
var foreignConfig = netns.Config{Prefix: "lhtest-fns", Bridge: "lhtest-fbr", Hosts: 2, Subnet: netip.MustParsePrefix("10.213.252.0/24")}

// ipT runs ip, failing the test on an error.
func ipT(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// foreignBridge adds a bridge of the test's own (not Create's), removed
// at the end of the test.
func foreignBridge(t *testing.T, name string) {
	t.Helper()
	ipT(t, "link", "add", name, "type", "bridge")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "delete", name).Run() })
}

// foreignNamespace adds a namespace of the test's own with a process in
// it, both removed at the end of the test, and returns a function that
// reports whether the process still runs.
func foreignNamespace(t *testing.T, name string) (alive func() bool) {
	t.Helper()
	ipT(t, "netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", name).Run() })
	sleeper := netns.Host{Name: name}.Command(context.Background(), "sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = sleeper.Wait(); close(done) }()
	t.Cleanup(func() { _ = sleeper.Process.Kill(); <-done })
	return func() bool {
		select {
		case <-done:
			return false
		case <-time.After(100 * time.Millisecond): // a SIGKILL lands at once
			return true
		}
	}
}

// exists reports whether ip show args succeeds: the object is there.
func exists(args ...string) bool { return exec.Command("ip", args...).Run() == nil }

// TestCreateLeavesForeignNamesAlone gives Create, Cleanup and Close names
// that a bridge, a link or a namespace (with a process in it) made by
// something else already has: Create must refuse with ErrForeign and
// nothing of the others' may be deleted or killed.
func TestCreateLeavesForeignNamesAlone(t *testing.T) {
	ctx := available(t)
	c := foreignConfig
	for _, tc := range []struct {
		name string
		add  func(t *testing.T) (alive func() bool)
		keep []string // ip show args of what must remain
	}{
		{"bridge", func(t *testing.T) func() bool { foreignBridge(t, c.Bridge); return nil }, []string{"link", "show", c.Bridge}},
		{"veth", func(t *testing.T) func() bool { foreignBridge(t, c.Bridge+"-2"); return nil }, []string{"link", "show", c.Bridge + "-2"}},
		{"namespace", func(t *testing.T) func() bool { return foreignNamespace(t, c.Prefix+"1") }, []string{"-n", c.Prefix + "1", "link", "show", "lo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alive := tc.add(t)
			n, err := netns.Create(ctx, c)
			if !errors.Is(err, netns.ErrForeign) || !strings.Contains(err.Error(), "exists and was not made by leasehold hosts: choose another --bridge/--prefix") {
				if err == nil {
					_ = n.Close(ctx)
				}
				t.Fatalf("Create: %v, want ErrForeign", err)
			}
			if err := netns.Cleanup(ctx, c); err != nil {
				t.Fatalf("Cleanup: %v", err)
			}
			if !exists(tc.keep...) {
				t.Errorf("ip %s: gone after Create and Cleanup", strings.Join(tc.keep, " "))
			}
			if alive != nil && !alive() {
				t.Errorf("the process in the foreign namespace was killed")
			}
			if exists("link", "show", c.Bridge) && tc.name != "bridge" {
				t.Errorf("Create left its bridge %s after refusing", c.Bridge)
			}
		})
	}

	// Names of the same pattern beside a network of Create's own: Close
	// removes the network and leaves the others.
	t.Run("beside", func(t *testing.T) {
		alive := foreignNamespace(t, c.Prefix+"7")
		foreignBridge(t, c.Bridge+"-9")
		n, err := netns.Create(ctx, c)
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		if err := n.Close(ctx); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if !alive() {
			t.Errorf("the process in the foreign namespace was killed")
		}
		if !exists("-n", c.Prefix+"7", "link", "show", "lo") || !exists("link", "show", c.Bridge+"-9") {
			t.Errorf("Close removed a namespace or link it did not make")
		}
		for _, args := range [][]string{{"link", "show", c.Bridge}, {"-n", c.Prefix + "1", "link", "show"}} {
			if exists(args...) {
				t.Errorf("ip %s: left behind by Close", strings.Join(args, " "))
			}
		}
	})
}

// helperEnv makes the test binary run Create for TestCleanupAfterKilledCreate
// (TestKilledCreateHelper) and wait to be killed.
const helperEnv = "LEASEHOLD_NETNS_CREATE_HELPER"

// TestKilledCreateHelper is the process TestCleanupAfterKilledCreate
// SIGKILLs; it does nothing in a normal run.
func TestKilledCreateHelper(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("helper of TestCleanupAfterKilledCreate")
	}
	fmt.Println("creating") // the parent's clock starts
	if _, err := netns.Create(context.Background(), testConfig); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Minute)
}

// TestCleanupAfterKilledCreate SIGKILLs a process in the middle of Create
// at various moments (between adding a link or namespace and marking it,
// among others): each time, the next Create must take what it left as its
// own, and Close must leave nothing.
func TestCleanupAfterKilledCreate(t *testing.T) {
	ctx := available(t)
	start := time.Now()
	n, err := netns.Create(ctx, testConfig)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	const steps = 12
	for i := range steps {
		helper := exec.Command(os.Args[0], "-test.run=^TestKilledCreateHelper$")
		helper.Env = append(os.Environ(), helperEnv+"=1")
		out, err := helper.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := helper.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		time.Sleep(took * time.Duration(i) / steps)
		_ = helper.Process.Kill()
		_ = helper.Wait()
		n, err := netns.Create(ctx, testConfig)
		if err != nil {
			t.Fatalf("Create after a Create killed at %v of %v: %v", took*time.Duration(i)/steps, took, err)
		}
		if err := n.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if left := remains(t, ctx); left != "" {
			t.Fatalf("left behind: %s", left)
		}
	}
}
