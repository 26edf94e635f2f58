package drivertest

import (
	"errors"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// fenceOf is the fencing token of j, a lease of owner.
func fenceOf(j *leasehold.JobRow, owner string) *driver.FenceParams {
	return &driver.FenceParams{ID: j.ID, Owner: owner, Attempt: j.Attempt}
}

// testFenceTx: FenceTx passes in a caller's transaction of every kind
// while the lease is held, and fails with ErrLeaseLost for a wrong owner
// or attempt, once the lease has expired (by the database clock, before
// any takeover) and after a takeover; it refuses to run without a
// transaction.
func testFenceTx(c *tc) {
	held := c.claimID(c.d, c.insert(job("q", "k"))[0].ID, "w", liveTTL, false)
	fence := func(k TxKind, p *driver.FenceParams) error {
		c.Helper()
		tx, _, rollback := k.Begin(c.T, c.d)
		defer func() { _ = rollback() }()
		return c.d.FenceTx(c.ctx, tx, p)
	}
	for _, k := range c.h.TxKinds {
		if err := fence(k, fenceOf(held, "w")); err != nil {
			c.Errorf("FenceTx in %s of a held lease: %v", k.Name, err)
		}
		if err := fence(k, fenceOf(held, "other")); !errors.Is(err, leasehold.ErrLeaseLost) {
			c.Errorf("FenceTx in %s with a wrong owner = %v, want ErrLeaseLost", k.Name, err)
		}
		if err := fence(k, &driver.FenceParams{ID: held.ID, Owner: "w", Attempt: held.Attempt + 1}); !errors.Is(err, leasehold.ErrLeaseLost) {
			c.Errorf("FenceTx in %s with a wrong attempt = %v, want ErrLeaseLost", k.Name, err)
		}
	}
	if err := c.d.FenceTx(c.ctx, nil, fenceOf(held, "w")); !errors.Is(err, leasehold.ErrUnsupportedTx) {
		c.Errorf("FenceTx without a transaction = %v, want ErrUnsupportedTx", err)
	}
	short := c.claimID(c.d, c.insert(job("q", "k"))[0].ID, "w", shortTTL, false)
	c.waitExpired(short)
	k := c.h.TxKinds[0]
	if err := fence(k, fenceOf(short, "w")); !errors.Is(err, leasehold.ErrLeaseLost) {
		c.Errorf("FenceTx of an expired lease nobody took over = %v, want ErrLeaseLost", err)
	}
	c.claimID(c.d, short.ID, "thief", liveTTL, true)
	if err := fence(k, fenceOf(short, "w")); !errors.Is(err, leasehold.ErrLeaseLost) {
		c.Errorf("FenceTx after a takeover = %v, want ErrLeaseLost", err)
	}
}

// testFenceTxJudgesAtTheCall: FenceTx judges the lease by the database
// clock when it is called, not when its transaction began (on
// PostgreSQL clock_timestamp(), not now()): a lease that ran out while
// the business transaction was already open is refused.
func testFenceTxJudgesAtTheCall(c *tc) {
	const ttl = 300 * time.Millisecond
	onOther := &tc{T: c.T, ctx: c.ctx, h: c.h, d: c.second()}
	held := c.claimID(c.d, c.insert(job("q", "k"))[0].ID, "w", ttl, false)
	tx, _, rollback := c.h.TxKinds[0].Begin(c.T, c.d)
	defer func() { _ = rollback() }()
	if _, err := c.d.Insert(c.ctx, tx, []*driver.InsertParams{job("business", "k")}); err != nil {
		c.Fatalf("business write before the lease ran out: %v", err)
	}
	onOther.waitExpired(held)
	if err := c.d.FenceTx(c.ctx, tx, fenceOf(held, "w")); !errors.Is(err, leasehold.ErrLeaseLost) {
		c.Errorf("FenceTx, in a transaction begun while the lease was held, after it ran out = %v, want ErrLeaseLost", err)
	}
}

// testFenceTxHoldsOffTakeover: once FenceTx passed in a transaction, a
// takeover from another connection cannot commit before that
// transaction does, even after the lease expires meanwhile: the business
// write made in it commits while the lease is held, and the takeover,
// which comes after, sees it.
func testFenceTxHoldsOffTakeover(c *tc) {
	const ttl = 500 * time.Millisecond
	other := c.second()
	onOther := &tc{T: c.T, ctx: c.ctx, h: c.h, d: other}
	held := c.claimID(c.d, c.insert(job("q", "k"))[0].ID, "w", ttl, false)
	k := c.h.TxKinds[0]
	tx, commit, rollback := k.Begin(c.T, c.d)
	defer func() { _ = rollback() }()
	if err := c.d.FenceTx(c.ctx, tx, fenceOf(held, "w")); err != nil {
		c.Fatalf("FenceTx of a held lease: %v", err)
	}
	business, err := c.d.Insert(c.ctx, tx, []*driver.InsertParams{job("business", "k")})
	if err != nil {
		c.Fatalf("business write in the fenced tx: %v", err)
	}
	onOther.waitExpired(held)
	claimed := make(chan *leasehold.JobRow, 1)
	go func() {
		j, err := other.ClaimByID(c.ctx, &driver.ClaimByIDParams{ID: held.ID, Owner: "thief", TTL: liveTTL, TakeOver: true})
		if err != nil {
			c.Errorf("takeover: %v", err)
		}
		claimed <- j
	}()
	var early *leasehold.JobRow
	select {
	case early = <-claimed:
		if early != nil {
			c.Fatalf("a takeover committed while a fenced transaction was open: %+v", early)
		}
	case <-time.After(300 * time.Millisecond): // blocked, as it should be
	}
	if err := commit(); err != nil {
		c.Fatalf("commit of the fenced tx: %v", err)
	}
	var thief *leasehold.JobRow
	if early == nil {
		select {
		case thief = <-claimed:
		case <-time.After(waitTimeout):
			c.Fatal("the takeover did not return after the fenced tx committed")
		}
	}
	if thief == nil { // it skipped the locked row: claim again
		thief = onOther.claimID(other, held.ID, "thief", liveTTL, true)
	}
	c.eq("attempt of the takeover", thief.Attempt, held.Attempt+1)
	c.get(business[0].Job.ID) // committed
}
