package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
)

// TestOwnerInUse: `leasehold work --owner NAME` warns at start when a
// lease of NAME is still live (another running process of that name
// would have its jobs released and run again), and still starts and
// works; a fresh name is not warned of. The flag's help and the README
// say the name must be unique among running processes, and why.
func TestOwnerInUse(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		enqueueID(t, db, "leasehold.sleep", "--queue", "elsewhere", "--args", `{"duration":"1h"}`)
		d := openDB(t, db).Driver
		jobs, err := d.Claim(t.Context(), &driver.ClaimParams{Queue: "elsewhere", Kinds: []string{"leasehold.sleep"},
			Owner: "shared", TTL: time.Hour, Limit: 1})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim: %v, %d jobs", err, len(jobs))
		}
		enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"1ms"}`)
		const warning = "holds a live lease: either another running process uses this name"
		r := lh(t, db, "work", "--owner", "shared", "--until-idle", "--poll-interval", "50ms")
		if r.code != 0 || !strings.Contains(r.stderr, warning) || !strings.Contains(r.stderr, "owner=shared") ||
			!strings.Contains(r.stdout, "completed 1") {
			t.Errorf("work --owner shared with a live lease of shared: want a warning, a start and the job run\n%s", r)
		}
		r = lh(t, db, "work", "--owner", "fresh", "--until-idle", "--poll-interval", "50ms")
		if r.code != 0 || strings.Contains(r.stderr, warning) {
			t.Errorf("work --owner fresh: want no warning\n%s", r)
		}
	})
	help := ok(t, "sqlite:"+t.TempDir()+"/h.db", "work", "--help")
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string]string{"work --help": help, "README.md": strings.Join(strings.Fields(string(readme)), " ")} {
		if !strings.Contains(text, "must be unique among running processes") || !strings.Contains(text, "which then run again") {
			t.Errorf("%s does not say that --owner must be unique among running processes, and why", what)
		}
	}
}
