package demo

import (
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestPaymentCounts: the progress line counts the run's payment jobs by
// state, and the expired leases among them by the database clock, and
// nothing of the jobs around them (another queue's, inserted before and
// after).
func TestPaymentCounts(t *testing.T) {
	for name, raw := range map[string]func(testing.TB) string{
		"sqlite":   func(t testing.TB) string { return "sqlite:" + testdb.SQLitePath(t) },
		"postgres": testdb.PostgresURL,
	} {
		t.Run(name, func(t *testing.T) { checkPaymentCounts(t, raw(t)) })
	}
}

func checkPaymentCounts(t *testing.T, raw string) {
	ctx := t.Context()
	target, err := cli.ParseTarget(raw)
	if err != nil {
		t.Fatal(err)
	}
	db, err := cli.Open(ctx, target, cli.OpenOptions{Create: true})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Driver.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	c, err := leasehold.NewClient(leasehold.Config{Driver: db.Driver, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	other := func() {
		if _, err := c.Insert(ctx, leasehold.RawArgs{KindName: "k", JSON: json.RawMessage(`{}`)},
			&leasehold.InsertOpts{Queue: "other"}); err != nil {
			t.Fatal(err)
		}
	}
	other()
	d := &demo{o: Options{Payments: 6}, run: "t0", queue: "demo-t0", db: db, client: c}
	if err := d.enqueue(ctx); err != nil {
		t.Fatal(err)
	}
	other()
	claim := func(ttl time.Duration) *leasehold.JobRow {
		jobs, err := db.Driver.Claim(ctx, &driver.ClaimParams{Queue: d.queue, Kinds: []string{"leasehold.demo.charge"},
			Owner: "w-" + ttl.String(), TTL: ttl, Limit: 1})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("Claim = %v, %v", jobs, err)
		}
		return jobs[0]
	}
	claim(50 * time.Millisecond)
	claim(time.Hour)
	done := claim(time.Hour)
	if ids, err := db.Driver.Finish(ctx, nil, []*driver.FinishParams{{ID: done.ID, Owner: done.LeaseOwner,
		Attempt: done.Attempt, Transition: statemachine.Finish(statemachine.Ending{Outcome: leasehold.OutcomeCompleted})}}); err != nil || len(ids) != 1 {
		t.Fatalf("Finish = %v, %v", ids, err)
	}
	time.Sleep(200 * time.Millisecond)

	got, err := d.paymentCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[leasehold.JobState]int64{leasehold.StatePending: 3, leasehold.StateProcessing: 2, leasehold.StateCompleted: 1}
	for s, n := range want {
		if got.states[s] != n {
			t.Errorf("%s: %d, want %d (all: %v)", s, got.states[s], n, got.states)
		}
	}
	if len(got.states) != len(want) || got.expired != 1 {
		t.Errorf("counts %v, %d expired; want %v, 1 expired", got.states, got.expired, want)
	}
}
