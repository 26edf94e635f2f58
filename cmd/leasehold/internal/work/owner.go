package work

import (
	"context"
	"fmt"
	"time"

	"github.com/leasehold/leasehold"
)

// ownerCheckTimeout bounds the start's look for live leases of --owner.
const ownerCheckTimeout = 10 * time.Second

// ownerCheckPages bounds how many pages of the owner's processing jobs
// the look reads: expired leases a crashed process left are many only
// after a crash of a busy worker, and one live lease among them is enough.
const ownerCheckPages = 10

// ownerCheckPage is the size of one of those pages.
const ownerCheckPage = 100

// warnOwnerInUse warns, before the worker starts, when its owner name
// (given with --owner; a default host-pid-random name is never in use)
// still holds a live lease. Two running processes must not share a name:
// after a failed claim, a client releases every processing lease of its
// owner that it does not know of, which includes the other process's
// running jobs, and those then run again. A live lease of the name
// means either that another running process uses it, or that this
// name's previous process stopped less than a lease TTL ago (killed, or
// its releases not written), which is harmless: it is a warning, not a
// refusal, so that a restarted worker of the same name starts. A failed
// look is logged and does not stop the start.
func warnOwnerInUse(ctx context.Context, c *leasehold.Client, o Options) {
	if o.Owner == "" {
		return
	}
	lookCtx, cancel := context.WithTimeout(ctx, ownerCheckTimeout)
	defer cancel()
	job, err := liveLease(lookCtx, c, o)
	switch {
	case err != nil:
		if ctx.Err() == nil { // a stop asked for meanwhile stays silent; a look that timed out does not
			o.Logger.Warn("could not check whether --owner is in use", "owner", o.Owner, "err", err)
		}
	case job != nil:
		o.Logger.Warn("--owner "+o.Owner+" holds a live lease: either another running process uses this name "+
			"(two processes must not share one: each releases the other's running jobs, which then run again; give each a unique --owner), "+
			"or this name's previous process stopped less than a lease TTL ago (its leases expire by themselves)",
			"owner", o.Owner, "job", job.ID, "lease_until", job.LeaseUntil)
	}
}

// liveLease returns a processing job of o.Owner whose lease has not
// expired by the database clock, or nil when it finds none.
func liveLease(ctx context.Context, c *leasehold.Client, o Options) (*leasehold.JobRow, error) {
	now, err := o.DB.Driver.Now(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the database clock: %w", err)
	}
	p := &leasehold.ListParams{States: []leasehold.JobState{leasehold.StateProcessing}, Owner: o.Owner, Limit: ownerCheckPage}
	for range ownerCheckPages {
		jobs, err := c.ListJobs(ctx, p)
		if err != nil {
			return nil, err
		}
		for _, j := range jobs {
			if j.LeaseUntil.After(now) {
				return j, nil
			}
		}
		if len(jobs) < p.Limit {
			return nil, nil
		}
		p.AfterID = jobs[len(jobs)-1].ID
	}
	return nil, nil
}
