package chaos_test

import (
	"os"
	"testing"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/chaos"
	"github.com/leasehold/leasehold/internal/pgctl"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestChaosNetFaults runs the harness with two of three workers behind
// the TCP proxy, which cuts, delays and stalls their traffic in turn for
// longer than the lease TTL: every invariant must hold, each kind of
// fault must have happened, and the cut-off workers must come back.
func TestChaosNetFaults(t *testing.T) {
	db := testdb.PostgresURL(t)
	args := []string{"--db", db, "--worker-exe", binary(t, ""), "--jobs", "2000", "--workers", "3", "--latency", "60ms",
		"--ttl", "1s", "--kill-every", "0", "--freeze-every", "0", "--net-fault-every", "2s", "--net-fault-for", "1.3s",
		"--net-workers", "2", "--timeout", "90s"}
	rep := mustPass(t, runChaos(t, binary(t, "orchestrator"), args...))
	if rep.Net == nil || len(rep.Net.Kinds) != 3 {
		t.Fatalf("network figures %+v: want the three kinds of fault", rep.Net)
	}
	if rep.Net.Proxy.Severed == 0 {
		t.Errorf("proxy %+v: no connection severed by the partitions", rep.Net.Proxy)
	}
	for _, o := range rep.Faults.Outages {
		if o.Workers == 0 || o.Recovered != o.Workers {
			t.Errorf("%s: %d of %d workers came back", o.Kind, o.Recovered, o.Workers)
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
