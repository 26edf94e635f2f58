package payments

import (
	"context"
	"sync"
	"testing"
)

// TestLedger: the ledger table can be created by several processes at
// once, holds one row per payment and counts by prefix, on both databases.
func TestLedger(t *testing.T) {
	for name, open := range openTestDB {
		t.Run(name, func(t *testing.T) {
			l := open(t).ledger
			ctx := context.Background()
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := l.Migrate(ctx); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			record(t, l, "run1-a", true)
			record(t, l, "run1-b", false) // rolled back
			record(t, l, "run2-a", true)
			tx, err := l.DB().BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.insert(ctx, tx, Entry{PaymentID: "run1-a", ChargeID: "ch"}); err == nil {
				t.Error("a second row for payment run1-a was accepted")
			}
			_ = tx.Rollback()
			if n, err := l.Count(ctx, "run1-"); err != nil || n != 1 {
				t.Errorf("Count(run1-) = %d, %v; want 1 (only run1-a committed)", n, err)
			}
			if n, err := l.Count(ctx, ""); err != nil || n != 2 {
				t.Errorf("Count() = %d, %v; want 2", n, err)
			}
		})
	}
}

// record inserts a ledger row for payment id and commits or rolls back.
func record(t *testing.T, l *Ledger, id string, commit bool) {
	t.Helper()
	ctx := context.Background()
	tx, err := l.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := Entry{PaymentID: id, ChargeID: "ch-" + id, JobID: 1, Attempt: 1, Owner: "w", AmountCents: 5, Currency: "EUR"}
	if err := l.insert(ctx, tx, e); err != nil {
		t.Fatal(err)
	}
	if !commit {
		_ = tx.Rollback()
		return
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}
