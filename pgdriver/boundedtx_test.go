package pgdriver

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasehold/leasehold/driver"
)

// stallAfter is a pgx.QueryTracer that stalls the first run of one
// statement, after the server has run it, until resume is closed: a
// client that stops inside its transaction, as a paused or cut-off
// process does.
type stallAfter struct {
	sql     string
	once    sync.Once
	stalled chan struct{} // closed when the stall begins
	resume  chan struct{}
	release func() // closes resume, once
}

type tracedSQL struct{}

func (s *stallAfter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, tracedSQL{}, data.SQL)
}

func (s *stallAfter) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if sql, _ := ctx.Value(tracedSQL{}).(string); sql != s.sql {
		return
	}
	s.once.Do(func() {
		close(s.stalled)
		<-s.resume
	})
}

// stallingDriver opens a driver on url whose first run of sql stalls
// after it ran, with heldIdle as the bound of its held transactions. The
// stall ends at the test's cleanup at the latest.
func stallingDriver(t *testing.T, url, sql string, heldIdle time.Duration) (*Driver, *stallAfter) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	st := &stallAfter{sql: sql, stalled: make(chan struct{}), resume: make(chan struct{})}
	cfg.ConnConfig.Tracer = st
	pool, err := pgxpool.NewWithConfig(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(pool)
	if err != nil {
		t.Fatal(err)
	}
	d.heldIdle = heldIdle
	st.release = sync.OnceFunc(func() { close(st.resume) })
	t.Cleanup(func() { st.release(); _ = d.Close(); pool.Close() })
	return d, st
}

// stalledTx runs call on a stalling driver in the background, waits for
// the stall inside its transaction, runs other on another driver and
// checks that other is not kept waiting past the bound: the server ends
// the idle transaction, whose call then fails. It returns other's error.
func stalledTx(t *testing.T, sql string, call func(context.Context, *Driver) error, other func(context.Context, *Driver) error) {
	t.Helper()
	d, url := newTestDriver(t)
	const bound = 500 * time.Millisecond
	stalled, st := stallingDriver(t, url, sql, bound)
	ctx := testCtx(t)
	errc := make(chan error, 1)
	go func() { errc <- call(ctx, stalled) }()
	select {
	case <-st.stalled:
	case err := <-errc:
		t.Fatalf("the call ended before its stall: %v", err)
	}
	wait := bound + 10*time.Second
	octx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	start := time.Now()
	if err := other(octx, d); err != nil {
		t.Fatalf("beside a client stalled in its transaction, after %s: %v (want the server to end that transaction within %s)",
			time.Since(start).Round(time.Millisecond), err, bound)
	}
	st.release()
	err := <-errc
	if err == nil {
		t.Fatal("the stalled call succeeded after its transaction sat idle past the bound")
	}
	t.Logf("the stalled call: %v", err)
}

// TestPeriodicStalledClaimLetsGo: a process stopped inside its claim of a
// schedule's slot keeps the schedule's row locked; the server ends its
// transaction past the bound, and another process claims the slot.
func TestPeriodicStalledClaimLetsGo(t *testing.T) {
	slot := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	params := func() *driver.PeriodicInsertParams {
		return &driver.PeriodicInsertParams{Name: "nightly", Spec: "@every 1h", Slot: slot,
			Next: slot.Add(time.Hour), Job: job("q")}
	}
	var slotJob int64
	stalledTx(t, periodicClaimSQL,
		func(ctx context.Context, d *Driver) error {
			_, err := d.PeriodicInsert(ctx, params())
			return err
		},
		func(ctx context.Context, d *Driver) error {
			res, err := d.PeriodicInsert(ctx, params())
			switch {
			case err != nil:
			case !res.Claimed || res.Job == nil:
				t.Errorf("the other claim of the slot did not win: %+v", res)
			default:
				slotJob = res.Job.Job.ID
			}
			return err
		})
	if slotJob == 0 {
		t.Fatal("no job inserted for the slot")
	}
}

// TestScopedInsertStalledLetsGo: a process stopped inside the transaction
// of an insert with a scoped unique key keeps other inserts of that key
// waiting on its index entry; the server ends its transaction past the
// bound, and the other insert gets the key.
func TestScopedInsertStalledLetsGo(t *testing.T) {
	scoped := func() []*driver.InsertParams {
		p := job("q")
		p.UniqueKey, p.UniqueWhileUnfinished = "charge-7", true
		return []*driver.InsertParams{p}
	}
	stalledTx(t, insertKeyedQuietSQL,
		func(ctx context.Context, d *Driver) error {
			_, err := d.Insert(ctx, nil, scoped())
			return err
		},
		func(ctx context.Context, d *Driver) error {
			res, err := d.Insert(ctx, nil, scoped())
			if err == nil && res[0].Duplicate {
				t.Errorf("the other insert is a duplicate of job %d, which never committed", res[0].Job.ID)
			}
			return err
		})
}
