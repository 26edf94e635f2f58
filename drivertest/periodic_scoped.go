package drivertest

import (
	"fmt"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// scopedSlotWindow is the window of the windowed slot keys of
// testPeriodicScopedSlotKey: long, so that both claims of a slot nearly
// always fall in one window.
const scopedSlotWindow = time.Hour

// testPeriodicScopedSlotKey checks that a claim that loses a slot whose
// job has a scoped unique key (the unfinished scope, or a window) gets
// the winner's job as a duplicate, found as an insert finds the key's
// holder, and inserts nothing. A slot with a scoped key is claimed twice,
// as two processes of one schedule do; the second claim loses.
func testPeriodicScopedSlotKey(c *tc) {
	scopes := []struct {
		name  string
		scope func(*driver.InsertParams)
	}{
		{"unfinished", func(p *driver.InsertParams) { p.UniqueWhileUnfinished = true }},
		{"window", func(p *driver.InsertParams) { p.UniqueWindow = scopedSlotWindow }},
		{"unfinished in a window", func(p *driver.InsertParams) {
			p.UniqueWhileUnfinished, p.UniqueWindow = true, scopedSlotWindow
		}},
	}
	base := c.now().Truncate(time.Second)
	for i, s := range scopes {
		// A window that ends between the two claims frees the key, and the
		// losing claim rightly finds no job: try again in the next window.
		for try := 0; ; try++ {
			window := c.now().Truncate(scopedSlotWindow)
			won, lost := c.claimScopedSlotTwice(fmt.Sprintf("scoped-%d-%d", i, try), base, s.scope)
			if c.now().Truncate(scopedSlotWindow).Equal(window) || try == 1 {
				c.isLoserOf(s.name, won, lost)
				break
			}
		}
	}
}

// claimScopedSlotTwice claims slot 0 of schedule name twice, its job's
// unique key scoped by scope, and returns the two results; the first must
// win with a new job.
func (c *tc) claimScopedSlotTwice(name string, base time.Time,
	scope func(*driver.InsertParams)) (won, lost *driver.PeriodicInsertResult) {
	c.Helper()
	claim := func() *driver.PeriodicInsertParams {
		p := slotClaim(name, base, 0)
		p.Job.UniqueKey = "periodic:" + name + ":0"
		scope(p.Job)
		return p
	}
	won, err := c.d.PeriodicInsert(c.ctx, claim())
	if err != nil || !won.Claimed || won.Job == nil || won.Job.Duplicate {
		c.Fatalf("first claim of schedule %s = %+v, %v; want claimed with a new job", name, won, err)
	}
	if lost, err = c.d.PeriodicInsert(c.ctx, claim()); err != nil {
		c.Fatalf("second claim of schedule %s: %v", name, err)
	}
	return won, lost
}

// isLoserOf checks that lost is a refused claim whose job is won's, as a
// duplicate, and that the slot's job was inserted once.
func (c *tc) isLoserOf(what string, won, lost *driver.PeriodicInsertResult) {
	c.Helper()
	want := won.Job.Job
	if lost.Claimed || lost.Job == nil || lost.Job.Job == nil {
		c.Errorf("%s: losing claim = %+v; want refused, with job %d as duplicate", what, lost, want.ID)
		return
	}
	c.isDuplicateOf(what+": losing claim", lost.Job, want)
	c.eq(what+": unique key of the job found", lost.Job.Job.UniqueKey, want.UniqueKey)
	jobs := c.list(&leasehold.ListParams{Kind: "tick"})
	n := 0
	for _, j := range jobs {
		if j.UniqueKey == want.UniqueKey {
			n++
		}
	}
	c.eq(what+": jobs of the slot", n, 1)
}
