package chaos

import (
	"strings"
	"testing"
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
