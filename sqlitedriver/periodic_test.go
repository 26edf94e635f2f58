package sqlitedriver

import (
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
)

// TestPeriodicLostSlotLookupErrorNamesDriverOnce: when the job of a slot
// another process claimed cannot be read, PeriodicInsert's error names
// the driver once and the schedule, as a failed insert of a won slot's
// job does.
func TestPeriodicLostSlotLookupErrorNamesDriverOnce(t *testing.T) {
	d := openTest(t)
	slot := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	params := func() *driver.PeriodicInsertParams {
		p := job(`{}`)
		p.UniqueKey = "nightly@2026-01-01"
		return &driver.PeriodicInsertParams{Name: "nightly", Spec: "@every 1h", Slot: slot,
			Next: slot.Add(time.Hour), Job: p}
	}
	won, err := d.PeriodicInsert(testCtx(t), params())
	if err != nil || !won.Claimed {
		t.Fatalf("first claim of the slot: %+v, %v", won, err)
	}
	// A row the lookup cannot scan: cancel_requested is not a boolean.
	conn, err := d.db.Conn(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"PRAGMA ignore_check_constraints = ON",
		"UPDATE leasehold_jobs SET cancel_requested = 2", "PRAGMA ignore_check_constraints = OFF"} {
		if _, err := conn.ExecContext(testCtx(t), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = d.PeriodicInsert(testCtx(t), params())
	if err == nil {
		t.Fatal("PeriodicInsert read an unreadable slot job without error")
	}
	if n := strings.Count(err.Error(), "sqlitedriver:"); n != 1 || !strings.Contains(err.Error(), "nightly") {
		t.Errorf("error %q names the driver %d times; want once, and the schedule", err, n)
	}
}
