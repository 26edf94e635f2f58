package pgdriver

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// TestRefusedTellsRefusalsFromFailures: errors the server returns for a
// statement it will refuse again are refusals; a connection the server
// ended under the pool (as a restart does), a statement timeout and a
// cancelled context are not, so the completer never gives up an outcome
// on them.
func TestRefusedTellsRefusalsFromFailures(t *testing.T) {
	d, url := newTestDriver(t)
	ctx := testCtx(t)
	var refusals, failures []error
	_, err := d.pool.Exec(ctx, "SELECT * FROM no_such_table")
	refusals = append(refusals, err)
	_, err = d.pool.Exec(ctx, "INSERT INTO leasehold_queues (name) VALUES ('q'), ('q')")
	refusals = append(refusals, err)

	failures = append(failures, finishOnDeadConnections(t, d, url))
	err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = 10"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "SELECT pg_sleep(1)")
		return err
	})
	failures = append(failures, err)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = d.Finish(cancelled, nil, completed())
	failures = append(failures, err)

	for _, err := range refusals {
		if err == nil || !d.Refused(err) {
			t.Errorf("not a refusal: %v", err)
		}
	}
	for _, err := range failures {
		if err == nil || d.Refused(err) {
			t.Errorf("a refusal: %v", err)
		} else {
			t.Logf("no refusal: %v", err)
		}
	}
}

// finishOnDeadConnections leaves d's pool one idle connection whose
// session the server ended (as a restart does) and returns the error of a
// finish statement made on it.
func finishOnDeadConnections(t *testing.T, d *Driver, url string) error {
	t.Helper()
	ctx := testCtx(t)
	d.pool.Reset()
	var pid int32
	if err := d.pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatalf("backend pid: %v", err)
	}
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend($1, 5000)", pid); err != nil {
		t.Fatalf("terminate: %v", err)
	}
	_, err = d.Finish(ctx, nil, completed())
	return err
}

// completed is a finish of a lease that does not exist: the statement
// runs and matches nothing.
func completed() []*driver.FinishParams {
	return []*driver.FinishParams{{ID: 1, Owner: "w", Attempt: 1, Transition: transition(leasehold.OutcomeCompleted, "")}}
}
