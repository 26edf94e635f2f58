package demo

import (
	"context"
	"fmt"

	"github.com/leasehold/leasehold"
)

// idRange is the ids from first to last, both included.
type idRange struct{ first, last int64 }

// paymentTally is the state of the run's payment jobs, read at once.
type paymentTally struct {
	states map[leasehold.JobState]int64
	// expired counts the processing jobs whose lease had expired by the
	// database clock, read just before the jobs.
	expired int64
}

// paymentCounts reads the run's payment jobs in one statement, through
// the primary key over their id range, so that the progress line's counts
// are of one instant and its cost grows with the run's jobs only, not
// with the jobs the database holds besides (QueueStats reads every job of
// every queue: on an existing database of a million jobs, most of a
// second per tick).
func (d *demo) paymentCounts(ctx context.Context) (*paymentTally, error) {
	now, err := d.db.Driver.Now(ctx)
	if err != nil {
		return nil, fmt.Errorf("database clock: %w", err)
	}
	jobs, err := d.client.ListJobs(ctx, &leasehold.ListParams{
		Queue: d.queue, AfterID: d.payments.first - 1, BeforeID: d.payments.last + 1, Limit: d.o.Payments,
	})
	if err != nil {
		return nil, fmt.Errorf("list payment jobs: %w", err)
	}
	t := &paymentTally{states: map[leasehold.JobState]int64{}}
	for _, j := range jobs {
		t.states[j.State]++
		if j.State == leasehold.StateProcessing && j.LeaseUntil.Before(now) {
			t.expired++
		}
	}
	return t, nil
}
