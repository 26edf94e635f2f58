package bench

import (
	"bytes"
	"strings"
	"testing"
)

// TestTableNamesIdleSource checks the table's first line: when the idle
// phase counted the server's transactions (no pg_stat_statements), it
// says so instead of claiming every count came from the driver calls.
func TestTableNamesIdleSource(t *testing.T) {
	r := &Report{Server: "PostgreSQL 15", StatementSource: SourceDriverCalls,
		Idle: []IdleResult{{Mode: ModeNotify, Queues: 10, Source: SourceXactCommit}}}
	var out bytes.Buffer
	if err := WriteTable(&out, r); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(out.String(), "\n")
	if !strings.Contains(first, "statements from "+SourceDriverCalls) || !strings.Contains(first, "transactions ("+SourceXactCommit+")") {
		t.Errorf("first line %q: want the drain's source and the idle phase's transactions named", first)
	}
	r.Idle[0].Source = SourceDriverCalls
	out.Reset()
	if err := WriteTable(&out, r); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(out.String(), "\n"); strings.Contains(first, "idle") {
		t.Errorf("first line %q: the idle phase counted like the rest, nothing to add", first)
	}
}
