package drivertest

import (
	"errors"
	"testing"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// testTransactions checks, for each caller transaction kind, that Insert
// and Finish run inside the caller's transaction: rolled back they leave
// nothing, committed they take effect, and the fence still holds inside a
// transaction.
func testTransactions(c *tc) {
	if len(c.h.TxKinds) == 0 {
		c.Fatal("Harness.TxKinds is empty: every driver must accept a caller transaction")
	}
	for _, k := range c.h.TxKinds {
		c.Run(k.Name, func(t *testing.T) { testTxKind(c.with(t), k) })
	}
}

func testTxKind(c *tc, k TxKind) {
	queue := "tx-" + k.Name
	insertTx := func() (id int64, commit, rollback func() error) {
		c.Helper()
		tx, commit, rollback := k.Begin(c.T, c.d)
		res, err := c.d.Insert(c.ctx, tx, []*driver.InsertParams{job(queue, "k")})
		if err != nil || len(res) != 1 || res[0].Job == nil || res[0].Job.ID == 0 {
			_ = rollback()
			c.Fatalf("Insert in %s = %v, %v; want one new job", k.Name, res, err)
		}
		return res[0].Job.ID, commit, rollback
	}

	id, _, rollback := insertTx()
	if err := rollback(); err != nil {
		c.Fatalf("rollback: %v", err)
	}
	if _, err := c.d.GetJob(c.ctx, id); !errors.Is(err, leasehold.ErrJobNotFound) {
		c.Errorf("GetJob of a job inserted in a rolled-back %s: err %v, want ErrJobNotFound", k.Name, err)
	}
	if got := c.list(&leasehold.ListParams{Queue: queue}); len(got) != 0 {
		c.Errorf("ListJobs after rollback found %v", ids(got))
	}

	id, commit, _ := insertTx()
	if err := commit(); err != nil {
		c.Fatalf("commit: %v", err)
	}
	if j := c.get(id); j.State != leasehold.StatePending {
		c.Errorf("job inserted in a committed %s: state %s, want pending", k.Name, j.State)
	}
	h := c.claimID(c.d, id, "w", liveTTL, false)
	held := c.snap(id)

	finishTx := func(p *driver.FinishParams) ([]int64, func() error, func() error) {
		c.Helper()
		tx, commit, rollback := k.Begin(c.T, c.d)
		got, err := c.d.Finish(c.ctx, tx, []*driver.FinishParams{p})
		if err != nil {
			_ = rollback()
			c.Fatalf("Finish in %s: %v", k.Name, err)
		}
		return driver.FinishedIDs(got), commit, rollback
	}
	stale := fin(h, leasehold.OutcomeCompleted)
	stale.Owner = "other"
	got, _, rollback := finishTx(stale)
	c.eqIDs("Finish with a wrong owner in "+k.Name, got, nil)
	if err := rollback(); err != nil {
		c.Fatalf("rollback: %v", err)
	}

	got, _, rollback = finishTx(fin(h, leasehold.OutcomeCompleted))
	c.eqIDs("Finish in "+k.Name, got, []int64{id})
	if err := rollback(); err != nil {
		c.Fatalf("rollback: %v", err)
	}
	c.unchanged("Finish in a rolled-back "+k.Name, held)

	got, commit, _ = finishTx(fin(h, leasehold.OutcomeCompleted))
	c.eqIDs("Finish in "+k.Name, got, []int64{id})
	if err := commit(); err != nil {
		c.Fatalf("commit: %v", err)
	}
	c.eq("state after Finish in a committed "+k.Name, c.get(id).State, leasehold.StateCompleted)
	c.history(id, "w", leasehold.OutcomeCompleted)
}

// testUnsupportedTx checks that a tx value of a type the driver does not
// accept, or a typed nil (a nil *sql.Tx, a nil pointer of an accepted
// transaction type), gives ErrUnsupportedTx and changes nothing: a typed
// nil is not "no transaction", which would write outside the caller's.
func testUnsupportedTx(c *tc) {
	j := c.insert(job("q", "k"))[0]
	h := c.claimID(c.d, j.ID, "w", liveTTL, false)
	s := c.snap(j.ID)
	bad := []any{"not a tx", 42, struct{}{}}
	for _, k := range c.h.TxKinds {
		bad = append(bad, nilTxs(c.T, c.d, k)[1:]...) // all but the untyped nil
	}
	for _, tx := range bad {
		if _, err := c.d.Insert(c.ctx, tx, []*driver.InsertParams{job("other", "k")}); !errors.Is(err, leasehold.ErrUnsupportedTx) {
			c.Errorf("Insert with tx %T: err %v, want ErrUnsupportedTx", tx, err)
		}
		if _, err := c.d.Finish(c.ctx, tx, []*driver.FinishParams{fin(h, leasehold.OutcomeCompleted)}); !errors.Is(err, leasehold.ErrUnsupportedTx) {
			c.Errorf("Finish with tx %T: err %v, want ErrUnsupportedTx", tx, err)
		}
	}
	c.unchanged("Finish with an unsupported tx", s)
	if got := c.list(&leasehold.ListParams{Queue: "other"}); len(got) != 0 {
		c.Errorf("Insert with an unsupported tx inserted %v", ids(got))
	}
}
