package payments

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/leasehold/leasehold"
)

// ScanKind is the kind of the jobs that scan for payments pending too
// long, usually inserted by a periodic job: each inserts one heal job
// (HealArgs) per such payment.
const ScanKind = "leasehold.demo.scan"

// ScanLimit bounds the charge jobs one scan reads per queue: the ones
// that finished last before the threshold.
const ScanLimit = 10000

// HealMaxAttempts is how many times a heal job asks the provider before
// it fails.
const HealMaxAttempts = 20

// ScanArgs name what a scan looks at: the payment jobs (kind Kind) of
// Queues whose job completed more than PendingAfter ago (a Go duration,
// such as "2m") without a ledger row, the payments the system still shows
// pending (their webhook was lost). Their heal jobs go to HealQueue
// (default: the scan job's own queue).
type ScanArgs struct {
	Queues       []string `json:"queues"`
	PendingAfter string   `json:"pending_after"`
	HealQueue    string   `json:"heal_queue,omitempty"`
}

// Kind implements leasehold.Args.
func (ScanArgs) Kind() string { return ScanKind }

// pendingAfter validates the arguments and returns the threshold.
func (a ScanArgs) pendingAfter() (time.Duration, error) {
	d, err := time.ParseDuration(a.PendingAfter)
	switch {
	case err != nil || d <= 0:
		return 0, fmt.Errorf("%w: pending_after %q: want a positive duration such as 2m", errBadArgs, a.PendingAfter)
	case len(a.Queues) == 0:
		return 0, fmt.Errorf("%w: queues is required", errBadArgs)
	}
	queues := a.Queues
	if a.HealQueue != "" {
		queues = append([]string{a.HealQueue}, queues...)
	}
	for _, q := range queues {
		if err := leasehold.ValidateQueue(q); err != nil {
			return 0, fmt.Errorf("%w: %w", errBadArgs, err)
		}
	}
	return d, nil
}

// scanner runs the scan jobs.
type scanner struct{ ledger *Ledger }

// Work inserts one heal job per payment pending longer than the
// threshold. The heal jobs are unique per payment while unfinished
// (leasehold.UniqueWhileUnfinished): however many scans find a payment,
// it has at most one heal job waiting or running, and a heal job that
// finished no longer keeps a later scan from inserting a new one.
func (s *scanner) Work(ctx context.Context, job *leasehold.Job[ScanArgs]) error {
	after, err := job.Args.pendingAfter()
	if err != nil {
		return leasehold.Permanent(err)
	}
	client := leasehold.ClientFromContext(ctx)
	now, err := client.Driver().Now(ctx)
	if err != nil {
		return fmt.Errorf("payments: scan: %w", err)
	}
	healQueue := job.Args.HealQueue
	if healQueue == "" {
		healQueue = job.Queue
	}
	var heals []leasehold.InsertManyParams
	for _, q := range job.Args.Queues {
		h, err := s.pending(ctx, client, q, now.Add(-after), healQueue)
		if err != nil {
			return err
		}
		heals = append(heals, h...)
	}
	if len(heals) == 0 {
		return nil
	}
	if _, err := client.InsertMany(ctx, nil, heals); err != nil {
		return fmt.Errorf("payments: scan: insert heal jobs: %w", err)
	}
	return nil
}

// pending returns the heal jobs, in healQueue, of the payments of queue
// whose charge job completed before cutoff without a ledger row.
func (s *scanner) pending(ctx context.Context, client *leasehold.Client, queue string, cutoff time.Time, healQueue string) ([]leasehold.InsertManyParams, error) {
	jobs, err := client.ListJobs(ctx, &leasehold.ListParams{
		Queue: queue, Kind: Kind, States: []leasehold.JobState{leasehold.StateCompleted},
		ByFinish: true, Desc: true, FinishedAt: cutoff, BeforeID: math.MaxInt64, Limit: ScanLimit,
	})
	if err != nil {
		return nil, fmt.Errorf("payments: scan %s: %w", queue, err)
	}
	var found []HealArgs
	ids := make([]string, 0, len(jobs))
	for _, j := range jobs {
		a, ok := DecodeCharge(j)
		if !ok {
			continue
		}
		found = append(found, HealArgs{PaymentID: a.PaymentID, IdempotencyKey: j.IdempotencyKey(), JobID: j.ID,
			AmountCents: a.AmountCents, Currency: a.Currency})
		ids = append(ids, a.PaymentID)
	}
	recorded, err := s.ledger.recordedAmong(ctx, ids)
	if err != nil {
		return nil, err
	}
	var heals []leasehold.InsertManyParams
	for _, h := range found {
		if recorded[h.PaymentID] {
			continue
		}
		recorded[h.PaymentID] = true // a payment charged by two jobs is healed once
		heals = append(heals, leasehold.InsertManyParams{Args: h, Opts: &leasehold.InsertOpts{
			Queue: healQueue, UniqueKey: HealUniqueKey(h.PaymentID), UniqueScope: leasehold.UniqueWhileUnfinished, MaxAttempts: HealMaxAttempts,
		}})
	}
	return heals, nil
}
