package chaos

import (
	"strings"
	"testing"
	"time"
)

// TestTerminationNotInjected: a termination whose own statement failed (a
// server too loaded to answer the harness) fails no worker: it is reported
// as not injected, and faults-delivered misses a termination only when
// none was made. A failed restart, or a worker that did not come back,
// still fails workers-recovered.
func TestTerminationNotInjected(t *testing.T) {
	h := &harness{o: Options{PGTerminateEvery: 1}}
	failed := &outage{Kind: outageTerminate, Error: "failed to connect", Workers: 1, Recovered: 1}
	made := &outage{Kind: outageTerminate, Sessions: 3, Workers: 1, Recovered: 1}
	r := &Report{Faults: FaultFigures{Outages: []*outage{failed, made}}}
	if !h.allRecovered(r) {
		t.Errorf("a termination the harness could not make failed workers-recovered")
	}
	if s := recoverySummary(r.Faults.Outages); !strings.Contains(s, "1 pg_terminate: 1/1 workers back") ||
		!strings.Contains(s, "1 not injected, the harness's statement failed: failed to connect") {
		t.Errorf("summary %q: want the one termination made, and the one not injected", s)
	}
	if missing := h.undelivered(r); len(missing) != 0 {
		t.Errorf("undelivered = %v with one termination made", missing)
	}
	r.Faults.Outages = []*outage{failed}
	if missing := h.undelivered(r); len(missing) != 1 || missing[0] != "no session termination" {
		t.Errorf("undelivered = %v with no termination made, want no session termination", missing)
	}
	for _, bad := range []*outage{
		{Kind: outageRestart, Error: "pg_ctl: server did not start"},
		{Kind: outageTerminate, Sessions: 3, Workers: 2, Recovered: 1},
		{Kind: outageTerminate, Error: "timeout", Workers: 2, Recovered: 1},
	} {
		if h.allRecovered(&Report{Faults: FaultFigures{Outages: []*outage{made, bad}}}) {
			t.Errorf("workers-recovered holds with %+v", *bad)
		}
	}
}

// TestFreezeCutShortTestsNothing: refusals-seen asks for a refused late
// write only after freezes whose worker lived to send it. A freeze whose
// worker was killed just after its thaw, or whose database was
// restarting then, never sent its late CompleteTx (a PostgreSQL run had
// both, 18 ms and 0.1 s after the thaw); faults elsewhere or later, or a
// termination of its sessions (it reconnects), leave it counted.
func TestFreezeCutShortTestsNothing(t *testing.T) {
	s := func(sec float64) time.Duration { return time.Duration(sec * float64(time.Second)) }
	frozen := &freezeEvent{Worker: "w2.2", At: s(3.311), For: s(2.5)} // thawed at 5.811
	for _, tc := range []struct {
		name   string
		faults FaultFigures
		tested int
	}{
		{"nothing around it", FaultFigures{}, 1},
		{"faults of other workers", FaultFigures{
			Kills:   []*killEvent{{Worker: "w1.2", At: s(5.9)}},
			Outages: []*outage{{Kind: outageTerminate, Worker: "w3.3", At: s(4.7)}},
		}, 1},
		{"its sessions ended while frozen", FaultFigures{Outages: []*outage{{Kind: outageTerminate, Worker: "w2.2", At: s(3.312)}}}, 1},
		{"killed 0.5 s after its thaw", FaultFigures{Kills: []*killEvent{{Worker: "w2.2", At: s(6.3)}}}, 1},
		{"a restart early in the freeze", FaultFigures{Outages: []*outage{{Kind: outageRestart, At: s(3.5)}}}, 1},
		{"killed just after its thaw", FaultFigures{Kills: []*killEvent{{Worker: "w2.2", At: s(5.925)}}}, 0},
		{"database restarted just after its thaw", FaultFigures{Outages: []*outage{{Kind: outageRestart, At: s(5.830)}}}, 0},
		{"a failover just before its thaw", FaultFigures{Outages: []*outage{{Kind: outageFailover, At: s(5.4)}}}, 0},
	} {
		tc.faults.Freezes = []*freezeEvent{frozen, {Worker: "w1.1", At: s(1), For: s(2.5), HeldWriteLock: true}}
		if got := testedFreezes(tc.faults); got != tc.tested {
			t.Errorf("%s: testedFreezes = %d, want %d", tc.name, got, tc.tested)
		}
	}
}
