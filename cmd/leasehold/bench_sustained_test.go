package main

import (
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/bench"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestBenchSustained runs the sustained phase for a few one-second
// windows with a transaction held open in the middle: every window is
// reported, the held windows see the held snapshot as the cluster's
// oldest (vacuum held back), the spans and ratios are computed, and the
// chart is drawn.
func TestBenchSustained(t *testing.T) {
	db := testdb.PostgresURL(t)
	dir := t.TempDir()
	out, chart := filepath.Join(dir, "s.json"), filepath.Join(dir, "s.png")
	r := runIn(t, "", nil, "--db", db, "bench", "--phases", "sustained", "--sustain-for", "5s", "--sustain-window", "1s",
		"--sustain-rate", "200", "--sustain-retention", "1s", "--hold-tx", "2s:3s", "--out", out, "--sustain-chart", chart)
	if r.code != 0 {
		t.Fatalf("bench: %s", r)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	s := rep.Sustained
	if s == nil || len(s.Windows) != 5 || s.Inserted == 0 || s.Completed == 0 || len(s.Spans) != 6 || len(s.Ratios) != 3 {
		t.Fatalf("sustained report incomplete: %+v", s)
	}
	if s.Hold == nil || s.Hold.Xmin == "" || s.Hold.Closed-s.Hold.Opened < 2.5 {
		t.Fatalf("held transaction: %+v", s.Hold)
	}
	held := 0
	for _, w := range s.Windows {
		if w.Held && w.End > 2.5 && w.End < 4.5 { // sampled while the transaction was surely open
			held++
			if w.Server.HeldXminAge == 0 || w.Server.OldestXminAge < w.Server.HeldXminAge {
				t.Errorf("window ending at %v s: held, but the held snapshot is not the oldest: %+v", w.End, w.Server)
			}
		}
		if w.Server.JobsBytes == 0 || w.RSSMiB == 0 || w.HeapMiB == 0 {
			t.Errorf("window ending at %v s lacks figures: %+v", w.End, w)
		}
	}
	if held == 0 {
		t.Errorf("no window inside the held transaction: %+v", s.Windows)
	}
	f, err := os.Open(chart)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("chart: %v", err)
	}
}
