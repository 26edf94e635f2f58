package leasehold_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/sqlitedriver"
)

// TestReconcileQueueNotRunWarns: a client that works a queue reconciling
// into a queue it does not work, or with no worker for the reconcile
// kind, warns at Start that those reconcile jobs wait for another
// process; one that runs them does not.
func TestReconcileQueueNotRunWarns(t *testing.T) {
	d, err := sqlitedriver.Open(testdb.SQLitePath(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	if _, err := d.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	reconciler := leasehold.WorkFunc[leasehold.ReconcileArgs](func(context.Context, *leasehold.Job[leasehold.ReconcileArgs]) error { return nil })
	for _, tc := range []struct {
		name       string
		queues     map[string]leasehold.QueueConfig
		reconciles bool
		warn       bool
	}{
		{"reconcile queue not worked", map[string]leasehold.QueueConfig{"pay": {Reconcile: &leasehold.ReconcilePolicy{Queue: "rec"}}}, true, true},
		{"no reconcile worker", map[string]leasehold.QueueConfig{"pay": {Reconcile: &leasehold.ReconcilePolicy{Queue: "rec"}}, "rec": {}}, false, true},
		{"both", map[string]leasehold.QueueConfig{"pay": {Reconcile: &leasehold.ReconcilePolicy{Queue: "rec"}}, "rec": {}}, true, false},
	} {
		ws := leasehold.NewWorkers()
		if err := leasehold.AddWorker(ws, leasehold.WorkFunc[lifecycleArgs](func(context.Context, *leasehold.Job[lifecycleArgs]) error { return nil })); err != nil {
			t.Fatal(err)
		}
		if tc.reconciles {
			if err := leasehold.AddWorker(ws, reconciler); err != nil {
				t.Fatal(err)
			}
		}
		var log lockedLog
		c, err := leasehold.NewClient(leasehold.Config{Driver: d, Workers: ws, Queues: tc.queues,
			PollInterval: 50 * time.Millisecond, Logger: log.Logger()})
		if err != nil {
			t.Fatalf("%s: NewClient: %v", tc.name, err)
		}
		if err := c.Start(t.Context()); err != nil {
			t.Fatalf("%s: Start: %v", tc.name, err)
		}
		_ = c.Stop(context.Background())
		got := strings.Contains(log.String(), "reconcile jobs this client does not run")
		if got != tc.warn {
			t.Errorf("%s: warned %v, want %v", tc.name, got, tc.warn)
		}
	}
}
