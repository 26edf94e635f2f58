package sqlitedriver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// TestRefusedTellsRefusalsFromFailures: errors SQLite returns for a
// statement it will refuse again are refusals; a context that ended while
// a finish waited for the write lock, which another connection held, is
// not, so the completer never gives up an outcome on it.
func TestRefusedTellsRefusalsFromFailures(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	_, missing := d.DB().ExecContext(ctx, "SELECT * FROM no_such_table")
	_, twice := d.DB().ExecContext(ctx, "INSERT INTO leasehold_queues (name) VALUES ('q'), ('q')")
	for _, err := range []error{missing, twice} {
		if err == nil || !d.Refused(err) {
			t.Errorf("not a refusal: %v", err)
		}
	}
	conn, err := d.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	waited, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = d.Finish(waited, nil, completed())
	if err == nil || d.Refused(err) {
		t.Errorf("a refusal: %v", err)
	} else {
		t.Logf("no refusal: %v", err)
	}
}

// completed is a finish of a lease that does not exist: the statement
// runs and matches nothing.
func completed() []*driver.FinishParams {
	return []*driver.FinishParams{{ID: 1, Owner: "w", Attempt: 1, Transition: transition(leasehold.OutcomeCompleted, "")}}
}

// TestEndedContextBlamesNoWriter: a write called with a context that has
// already ended says so, and does not blame another writer that does not
// exist.
func TestEndedContextBlamesNoWriter(t *testing.T) {
	d := openTest(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	_, err := d.Insert(ctx, nil, []*driver.InsertParams{job(`{}`)})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "before the transaction began") ||
		strings.Contains(err.Error(), "another connection") {
		t.Fatalf("Insert with an ended context: %v", err)
	}
}
