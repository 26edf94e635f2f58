package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/fleet"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/work"
	"github.com/leasehold/leasehold/view"
)

// periodicRun is how long the fleet runs the one-second schedule.
const periodicRun = 30 * time.Second

// TestPeriodicFleetOneJobPerSlot runs three worker processes with the
// same one-second schedule for 30 s and SIGKILLs one in the middle: from
// the first slot to the last, every slot has exactly one job, none is
// missed, and the schedule's record names the last slot and its job.
func TestPeriodicFleetOneJobPerSlot(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		f := fleet.New(nil)
		defer f.Close()
		var procs []*fleet.Proc
		for i := range 3 {
			p, err := f.Start(fleet.Spec{
				Name: fmt.Sprintf("w%d", i+1), Owner: fmt.Sprintf("periodic-w%d", i+1), Executable: binary, DB: db,
				Args: []string{"work", "--kind", "leasehold.sleep", "--periodic", "tick=@every 1s:leasehold.sleep",
					"--poll-interval", "100ms", "--shutdown-timeout", "2s", "--log-level", "warn"},
			})
			if err != nil {
				t.Fatal(err)
			}
			procs = append(procs, p)
		}
		waitFor(t, 30*time.Second, "the first slot's job", func() bool { return len(periodicSlots(t, db)) > 0 })
		time.Sleep(periodicRun / 2)
		before := len(periodicSlots(t, db))
		if err := f.Kill(procs[1]); err != nil {
			t.Fatalf("SIGKILL w2: %v", err)
		}
		time.Sleep(periodicRun / 2)
		for _, p := range procs {
			if p != procs[1] && !p.Alive() {
				t.Fatalf("worker %s exited: %v\n%s", p.Name(), p.Err(), p.LogTail(20))
			}
		}
		f.StopAll(10 * time.Second)

		slots := periodicSlots(t, db)
		var times []time.Time
		for s, n := range slots {
			if n != 1 {
				t.Errorf("slot %v has %d jobs, want exactly 1", s.Format(time.RFC3339), n)
			}
			times = append(times, s)
		}
		sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
		for i := 1; i < len(times); i++ {
			if gap := times[i].Sub(times[i-1]); gap != time.Second {
				t.Errorf("slots %v then %v: %v apart; a slot was missed", times[i-1].Format(time.RFC3339),
					times[i].Format(time.RFC3339), gap)
			}
		}
		if after := len(times) - before; before < 10 || after < 10 {
			t.Errorf("%d slots before the kill and %d after, want at least 10 each", before, after)
		}
		var rows []view.PeriodicView
		okJSON(t, db, &rows, "periodic", "list")
		if len(rows) != 1 || rows[0].Name != "tick" || rows[0].LastSlot == nil || !rows[0].LastSlot.Equal(times[len(times)-1]) {
			t.Errorf("periodic list = %+v; want tick with last slot %v", rows, times[len(times)-1])
		}
		if out := ok(t, db, "periodic", "list"); !strings.Contains(out, "tick") || !strings.Contains(out, "@every 1s") {
			t.Errorf("periodic list printed %q, want the schedule tick, @every 1s", out)
		}
		if out := ok(t, db, "periodic", "forget", "tick"); !strings.Contains(out, "schedule tick forgotten") {
			t.Errorf("periodic forget tick printed %q", out)
		}
		if out := ok(t, db, "periodic", "list"); !strings.Contains(out, "no periodic jobs") {
			t.Errorf("periodic list after forget printed %q, want no periodic jobs", out)
		}
		t.Logf("%s: %d slots, %d before the SIGKILL, each with one job", db[:strings.IndexByte(db, ':')], len(times), before)
	})
}

// periodicSlots returns how many jobs of the schedule tick each slot has,
// by the slot in their metadata.
func periodicSlots(t *testing.T, db string) map[time.Time]int {
	t.Helper()
	var jobs []view.JobView
	okJSON(t, db, &jobs, "jobs", "list", "--kind", "leasehold.sleep", "--limit", "10000")
	out := map[time.Time]int{}
	for _, j := range jobs {
		var md work.PeriodicMetadata
		if err := json.Unmarshal(j.Metadata, &md); err != nil || md.Periodic != "tick" {
			t.Fatalf("job %d metadata %s: not a job of schedule tick (%v)", j.ID, j.Metadata, err)
		}
		out[md.Slot]++
	}
	return out
}

// TestWorkPeriodicFlagRefusesBadSchedules: a malformed --periodic, one
// whose cron expression does not parse, or a --scan-every without
// --reconcile-into, exits with the usage code before any worker starts.
func TestWorkPeriodicFlagRefusesBadSchedules(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "p.db")
	for _, c := range []struct{ flag, want string }{
		{"tick", "want NAME=SPEC:KIND"},
		{"tick=61 * * * *:leasehold.sleep", "invalid schedule"},
	} {
		checkOneLineError(t, c.flag, lh(t, db, "work", "--periodic", c.flag), cli.ExitUsage, c.want)
	}
	checkOneLineError(t, "--scan-every", lh(t, db, "work", "--scan-every", "1s"), cli.ExitUsage, "needs --reconcile-into")
	// The cron parser's error quotes the spec raw.
	r := lh(t, db, "work", "--periodic", "tick=CRON_TZ=\x1b[2J * * * * *:leasehold.sleep")
	checkOneLineError(t, "--periodic with an escape sequence", r, cli.ExitUsage, `unknown time zone \x1b[2J`)
	checkNoControlCharacters(t, "--periodic with an escape sequence", r.stderr)
}

// checkNoControlCharacters fails the test if s, but for line breaks,
// holds a control character.
func checkNoControlCharacters(t *testing.T, name, s string) {
	t.Helper()
	for _, r := range s {
		if r != '\n' && unicode.IsControl(r) {
			t.Errorf("%s: output holds control character %U: %q", name, r, s)
			return
		}
	}
}

// TestPeriodicForgetNames: `periodic forget` with an empty or blank NAME
// or one no schedule could have is a usage error (exit code 2), refused
// before the database is opened, echoed with its control characters
// escaped, so that it cannot reach the operator's terminal as escape
// sequences; an unknown NAME exits 3.
func TestPeriodicForgetNames(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		for _, name := range []string{"", "   ", "\t\n"} {
			checkOneLineError(t, fmt.Sprintf("forget %q", name), lh(t, db, "periodic", "forget", name), cli.ExitUsage,
				"periodic forget takes a schedule NAME, got an empty one")
		}
		checkOneLineError(t, "forget nosuch", lh(t, db, "periodic", "forget", "nosuch"), cli.ExitNotFound,
			"no schedule nosuch recorded")
	})
	missing := "sqlite:" + filepath.Join(t.TempDir(), "none.db")
	checkOneLineError(t, "forget '' without a database", lh(t, missing, "periodic", "forget", ""), cli.ExitUsage,
		"periodic forget takes a schedule NAME, got an empty one")
	r := lh(t, missing, "periodic", "forget", "a\x1b]0;owned\a\x1b[2Jb\u009b")
	checkOneLineError(t, "forget an escape sequence", r, cli.ExitUsage,
		`invalid periodic job: periodic name: "a\x1b]0;owned\a\x1b[2Jb\u009b"`)
	checkNoControlCharacters(t, "forget an escape sequence", r.stderr)
	checkOneLineError(t, "forget a name no schedule could have", lh(t, missing, "periodic", "forget", "a b"), cli.ExitUsage,
		`periodic name: "a b": ' ' at byte 1`)
	if _, err := os.Stat(strings.TrimPrefix(missing, "sqlite:")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused periodic forget created its database (stat: %v)", err)
	}
}
