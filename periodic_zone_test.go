package leasehold_test

import (
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
)

// sameSlots fails t unless a and b give the same slots, ten from each of
// a winter and a summer date.
func sameSlots(t *testing.T, what string, a, b leasehold.Schedule) {
	t.Helper()
	for _, from := range []time.Time{
		time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC), time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC),
	} {
		x, y := from, from
		for range 10 {
			x, y = a.Next(x), b.Next(y)
			if !x.Equal(y) {
				t.Errorf("%s: schedule's slot %v, recorded spec's %v", what, x.UTC(), y.UTC())
				return
			}
		}
	}
}

// TestFixedZoneSpecReparses checks that the spec recorded for a cron
// schedule read in a fixed-offset zone (time.FixedZone) gives, parsed
// again (as `leasehold periodic list` shows it and as any process may
// read it), the schedule's slots, whatever name the zone was given, or
// that the schedule is refused with ErrInvalidSchedule when no spec
// could say its zone.
func TestFixedZoneSpecReparses(t *testing.T) {
	for _, loc := range []*time.Location{
		time.FixedZone("", 3600), time.FixedZone("UTC", 3600), time.FixedZone("CET", 3600),
		time.FixedZone("", -5*3600), time.FixedZone("Europe/Paris", 3600), time.FixedZone("", 0),
		time.FixedZone("IST", 5*3600+1800), time.FixedZone("UTC", 14*3600),
	} {
		name, off := time.Date(2026, 1, 1, 0, 0, 0, 0, loc).Zone()
		what := loc.String() + " " + time.Duration(off*int(time.Second)).String()
		s, err := leasehold.Cron("0 9 * * *", loc)
		if err != nil {
			if !errors.Is(err, leasehold.ErrInvalidSchedule) {
				t.Errorf("%s (%s): Cron = %v, want a schedule or ErrInvalidSchedule", what, name, err)
			}
			t.Logf("%s: refused: %v", what, err)
			continue
		}
		again, err := leasehold.Cron(s.String(), nil)
		if err != nil {
			t.Errorf("%s: the recorded spec %q does not parse: %v", what, s.String(), err)
			continue
		}
		t.Logf("%s: recorded as %q", what, s.String())
		sameSlots(t, what+" recorded as "+s.String(), s, again)
	}
}

// TestFixedZoneHalfHourRefused checks that a fixed zone whose offset
// no zone database name has (not whole hours) is refused rather than
// recorded under a name that reads as another zone.
func TestFixedZoneHalfHourRefused(t *testing.T) {
	_, err := leasehold.Cron("0 9 * * *", time.FixedZone("IST", 5*3600+1800))
	if !errors.Is(err, leasehold.ErrInvalidSchedule) {
		t.Fatalf("Cron in FixedZone(\"IST\", +5:30) = %v, want ErrInvalidSchedule", err)
	}
}

// TestNamedZoneSpecUnchanged checks that a zone loaded by name is
// recorded under that name, as before.
func TestNamedZoneSpecUnchanged(t *testing.T) {
	for _, name := range []string{"Europe/Paris", "America/New_York", "UTC", "Asia/Kolkata"} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		s, err := leasehold.Cron("0 9 * * *", loc)
		if err != nil {
			t.Fatalf("Cron in %s: %v", name, err)
		}
		if want := "CRON_TZ=" + name + " 0 9 * * *"; s.String() != want {
			t.Errorf("Cron in %s recorded as %q, want %q", name, s.String(), want)
		}
		again, err := leasehold.Cron(s.String(), nil)
		if err != nil {
			t.Fatalf("%q: %v", s.String(), err)
		}
		sameSlots(t, name, s, again)
	}
	if s, err := leasehold.Cron("0 9 * * *", nil); err != nil || s.String() != "CRON_TZ=UTC 0 9 * * *" {
		t.Errorf("Cron with no location = %v, %v; want CRON_TZ=UTC 0 9 * * *", s, err)
	}
}
