package chaos_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/chaos"
	"github.com/leasehold/leasehold/internal/netns"
	"github.com/leasehold/leasehold/internal/pgctl"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestChaosNetFaults runs the harness with two of three workers behind
// the TCP proxy, which cuts, delays and stalls their traffic in turn for
// longer than the lease TTL: every invariant must hold, each kind of
// fault must have happened, and the cut-off workers must come back. As
// root (with ip netns and the PostgreSQL programs) the proxy runs in a
// network namespace of its own and the proxied workers in another, on a
// server of the run's own, and every session of a proxied worker must
// come from the proxy's namespace; otherwise the proxy runs on loopback in
// front of the test server.
func TestChaosNetFaults(t *testing.T) {
	args := []string{"--worker-exe", binary(t, ""), "--jobs", "2000", "--workers", "3", "--latency", "60ms",
		"--ttl", "1s", "--kill-every", "0", "--freeze-every", "0", "--net-fault-every", "2s", "--net-fault-for", "1.3s",
		"--net-workers", "2", "--timeout", "90s"}
	mode := namespacesOrSkip(t)
	if mode == chaos.NetModeLoopback {
		args = append(args, "--db", testdb.PostgresURL(t))
	}
	rep := mustPass(t, runChaos(t, binary(t, "orchestrator"), append(args, "--net-mode", mode)...))
	if rep.Net == nil || len(rep.Net.Kinds) != 3 {
		t.Fatalf("network figures %+v: want the three kinds of fault", rep.Net)
	}
	if rep.Net.Mode != mode {
		t.Errorf("the proxy ran in mode %q, want %q", rep.Net.Mode, mode)
	}
	if rep.Net.Proxy.Severed == 0 {
		t.Errorf("proxy %+v: no connection severed by the partitions", rep.Net.Proxy)
	}
	for _, o := range rep.Faults.Outages {
		if o.Workers == 0 || o.Recovered != o.Workers {
			t.Errorf("%s: %d of %d workers came back", o.Kind, o.Recovered, o.Workers)
		}
	}
	if mode == chaos.NetModeNamespaces {
		checkSessions(t, rep.Net)
	}
}

// namespacesOrSkip returns the mode TestChaosNetFaults can run here: the
// namespaces when this process can build them, else loopback (when the
// PostgreSQL tests are required as root, the namespaces must work).
func namespacesOrSkip(t *testing.T) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := netns.Available(ctx)
	if err == nil {
		_, err = pgctl.Find("initdb")
	}
	switch {
	case err == nil:
		return chaos.NetModeNamespaces
	case os.Geteuid() == 0 && os.Getenv(testdb.EnvRequire) == "1":
		t.Fatalf("running as root with %s=1, but the namespace mode cannot run: %v", testdb.EnvRequire, err)
	}
	t.Logf("the proxy runs on loopback: %v", err)
	return chaos.NetModeLoopback
}

// checkSessions requires both checks of the sessions, each with every
// worker seen, the proxied ones from the proxy's namespace.
func checkSessions(t *testing.T, n *chaos.NetFigures) {
	t.Helper()
	if n.ProxyNamespace == "" || n.WorkerNamespace == "" || n.WorkerAddr == "" {
		t.Errorf("network figures %+v: namespaces not named", n)
	}
	if len(n.Sessions) != 2 {
		t.Fatalf("%d checks of the sessions, want 2", len(n.Sessions))
	}
	for _, c := range n.Sessions {
		if !c.OK() || c.ProxiedWorkers != 2 || c.DirectWorkers != 1 || c.ProxiedSessions == 0 {
			t.Errorf("sessions at %s: %+v", c.At, c)
		}
	}
}

// TestChaosFailoverSync runs the harness on a primary and a synchronous
// standby of its own: the primary is SIGKILLed mid-run and the standby
// promoted. Nothing acknowledged may be lost, every worker must follow
// (pools and LISTEN), and the promoted standby, still naming itself in
// synchronous_standby_names, must block a commit until that is removed.
func TestChaosFailoverSync(t *testing.T) {
	for _, p := range []string{"initdb", "pg_ctl", "pg_basebackup"} {
		if _, err := pgctl.Find(p); err != nil {
			if os.Getenv(testdb.EnvRequire) == "1" {
				t.Fatal(err)
			}
			t.Skip(err)
		}
	}
	args := []string{"--failover", chaos.FailoverSync, "--worker-exe", binary(t, ""), "--jobs", "2000", "--workers", "3",
		"--latency", "40ms", "--kill-every", "0", "--freeze-every", "0", "--timeout", "90s"}
	rep := mustPass(t, runChaos(t, binary(t, "orchestrator"), args...))
	f := rep.Failover
	if f == nil {
		t.Fatal("no failover figures")
	}
	if !f.CommitBlocked || f.AckedLost != 0 || f.Acked == 0 || f.ListenersBack != f.Listeners || f.Listeners == 0 {
		t.Errorf("failover %+v: want a blocked commit, acknowledged commits and none lost, every listener back", *f)
	}
	if rep.Jobs.Completed != rep.Jobs.Inserted {
		t.Errorf("%d of %d jobs completed", rep.Jobs.Completed, rep.Jobs.Inserted)
	}
}
