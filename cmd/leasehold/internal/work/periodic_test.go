package work

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
)

func TestParsePeriodic(t *testing.T) {
	job, err := ParsePeriodic("nightly=CRON_TZ=Europe/Paris 0 3 * * *:leasehold.sleep", "jobs")
	if err != nil {
		t.Fatal(err)
	}
	if job.Name != "nightly" || job.Schedule.String() != "CRON_TZ=Europe/Paris 0 3 * * *" {
		t.Fatalf("parsed %s with schedule %s, want nightly and the cron expression", job.Name, job.Schedule)
	}
	slot := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	args, opts := job.Args(slot)
	var md PeriodicMetadata
	if err := json.Unmarshal(opts.Metadata, &md); err != nil || md.Periodic != "nightly" || !md.Slot.Equal(slot) {
		t.Fatalf("metadata %s (%v), want the name and the slot", opts.Metadata, err)
	}
	if args.Kind() != "leasehold.sleep" || opts.Queue != "jobs" {
		t.Fatalf("job of kind %s in queue %s, want sleep in jobs", args.Kind(), opts.Queue)
	}
	for _, bad := range []string{"", "tick", "tick=@every 1s", "=@every 1s:leasehold.sleep", "tick=:leasehold.sleep", "tick=@every 1s:"} {
		if _, err := ParsePeriodic(bad, "q"); err == nil {
			t.Errorf("ParsePeriodic(%q) succeeded, want an error", bad)
		}
	}
	if _, err := ParsePeriodic("tick=61 * * * *:leasehold.sleep", "q"); !errors.Is(err, leasehold.ErrInvalidSchedule) {
		t.Errorf("a bad cron expression: %v, want ErrInvalidSchedule", err)
	}
	if _, err := ParsePeriodic("tick=@every 1s:Bad Kind", "q"); !errors.Is(err, leasehold.ErrInvalidKind) {
		t.Errorf("a bad kind: %v, want ErrInvalidKind", err)
	}
}

// TestParsePeriodicZoneOnly checks that a zone with no fields is an
// error, not a panic of the cron parser that ended the worker at flag
// parsing, and that the machine's zone is refused.
func TestParsePeriodicZoneOnly(t *testing.T) {
	for _, s := range []string{"x=CRON_TZ=UTC:kind", "x=TZ=Europe/Paris:kind", "x=CRON_TZ=Local 0 9 * * *:kind"} {
		if _, err := ParsePeriodic(s, "default"); !errors.Is(err, leasehold.ErrInvalidSchedule) {
			t.Errorf("ParsePeriodic(%q) = %v, want ErrInvalidSchedule", s, err)
		}
	}
}
