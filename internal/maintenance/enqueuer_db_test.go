package maintenance_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/maintenance"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/internal/testlog"
	"github.com/leasehold/leasehold/pgdriver/pgtest"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
)

// TestEnqueuerFellBehindOnDatabase: two processes run one schedule of
// 100 ms slots (grace 500 ms) on one database, and one of them pauses
// for 1.5 s once (a long GC pause) while the other enqueues every slot.
// The paused one logs, at Debug, that it fell behind, and warns of no
// missed slot, since none was. Alone, the same pause misses slots, and
// it warns.
func TestEnqueuerFellBehindOnDatabase(t *testing.T) {
	for _, db := range []struct {
		name string
		open func(t *testing.T) (a, b driver.Driver)
	}{{"sqlite", openSQLite}, {"postgres", openPostgres}} {
		t.Run(db.name, func(t *testing.T) {
			t.Run("another process keeps up", func(t *testing.T) {
				a, b := db.open(t)
				keeping := runSchedule(t, a, 0, nil)
				waitFor(t, "the first slot enqueued", func() bool { return lastSlot(t, a).After(time.Time{}) })
				var logs testlog.Buffer
				paused := runSchedule(t, b, 1500*time.Millisecond, &logs)
				waitFor(t, "the paused process past its pause", func() bool {
					return strings.Contains(logs.String(), "fell behind") || strings.Contains(logs.String(), "slots missed")
				})
				stop(t, paused, keeping)
				if strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "fell behind") {
					t.Errorf("the process that fell behind alone logged:\n%s\nwant that it fell behind, at Debug, and no warning", logs.String())
				}
			})
			t.Run("alone", func(t *testing.T) {
				_, b := db.open(t)
				var logs testlog.Buffer
				paused := runSchedule(t, b, 1500*time.Millisecond, &logs)
				waitFor(t, "the paused process past its pause", func() bool {
					return strings.Contains(logs.String(), "fell behind") || strings.Contains(logs.String(), "slots missed")
				})
				stop(t, paused)
				if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "periodic slots missed") {
					t.Errorf("the one process running the schedule logged:\n%s\nwant a warning that slots were missed", logs.String())
				}
			})
		})
	}
}

// runSchedule starts an enqueuer on d running the schedule "tick" (100 ms
// slots, 500 ms grace), whose first wait lasts pause longer than asked,
// logging at Debug to logs (nil: nowhere).
func runSchedule(t *testing.T, d driver.Driver, pause time.Duration, logs *testlog.Buffer) *maintenance.Enqueuer {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	if logs != nil {
		logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	var paused atomic.Bool
	sleep := func(ctx context.Context, d time.Duration) bool {
		if !paused.Swap(true) {
			d += pause
		}
		tm := time.NewTimer(d)
		defer tm.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-tm.C:
			return true
		}
	}
	const every, grace = 100 * time.Millisecond, 500 * time.Millisecond
	e := maintenance.NewEnqueuer(maintenance.EnqueuerConfig{Driver: d, Logger: logger, Sleep: sleep})
	e.Add(&maintenance.Schedule{
		Name: "tick", Spec: "@every 100ms", Kind: "tick", Queue: "default", Grace: grace,
		Next: func(t time.Time) time.Time { return t.Truncate(every).Add(every) },
		Insert: func(ctx context.Context, slot, next, _ time.Time, claim maintenance.Claim) (*driver.PeriodicInsertResult, error) {
			var res *driver.PeriodicInsertResult
			err := claim(func() error {
				var err error
				res, err = d.PeriodicInsert(ctx, &driver.PeriodicInsertParams{
					Name: "tick", Spec: "@every 100ms", Slot: slot, Next: next, Grace: grace,
					Job: &driver.InsertParams{Kind: "tick", Queue: "default", Args: []byte(`{}`), MaxAttempts: 1,
						UniqueKey: "periodic:tick:" + slot.UTC().Format(time.RFC3339Nano)},
				})
				return err
			})
			return res, err
		},
	})
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	return e
}

func stop(t *testing.T, es ...*maintenance.Enqueuer) {
	t.Helper()
	for _, e := range es {
		if err := e.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// lastSlot returns the recorded last slot of "tick".
func lastSlot(t *testing.T, d driver.Driver) time.Time {
	t.Helper()
	rows, err := d.PeriodicList(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Name == "tick" {
			return r.LastSlot
		}
	}
	return time.Time{}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// openSQLite returns two drivers on one new SQLite file, as two processes
// open it.
func openSQLite(t *testing.T) (a, b driver.Driver) {
	path := testdb.SQLitePath(t)
	return sqlitetest.OpenPath(t, path), sqlitetest.OpenPath(t, path)
}

// openPostgres returns two drivers on one new PostgreSQL schema, as two
// processes open it.
func openPostgres(t *testing.T) (a, b driver.Driver) {
	url := pgtest.URL(t)
	return pgtest.OpenURL(t, url), pgtest.OpenURL(t, url)
}
