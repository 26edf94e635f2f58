// Package jobkinds registers the job kinds the leasehold binary can run
// with `leasehold work`: payment.charge (the demo's payments) and sleep (a
// job that waits, and optionally fails, for trying the queue by hand).
package jobkinds

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/payments"
)

// SleepKind is the kind of SleepArgs.
const SleepKind = "sleep"

// MaxSleep bounds SleepArgs.Duration.
const MaxSleep = 24 * time.Hour

// SleepArgs make a job that waits Duration (a Go duration such as "2s";
// default 0), then fails with Fail when it is set.
type SleepArgs struct {
	Duration string `json:"duration,omitempty"`
	Fail     string `json:"fail,omitempty"`
}

// Kind implements leasehold.Args.
func (SleepArgs) Kind() string { return SleepKind }

// sleep runs SleepArgs. Cancellation (lease lost, operator cancel,
// shutdown) ends the wait with the context's cause.
func sleep(ctx context.Context, job *leasehold.Job[SleepArgs]) error {
	var d time.Duration
	if job.Args.Duration != "" {
		var err error
		if d, err = time.ParseDuration(job.Args.Duration); err != nil || d < 0 || d > MaxSleep {
			return leasehold.Permanent(fmt.Errorf("sleep: bad duration %q (want 0 to 24h, e.g. 2s)", job.Args.Duration))
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
	}
	if job.Args.Fail != "" {
		return errors.New(job.Args.Fail)
	}
	return nil
}

// Deps are what the job kinds need.
type Deps struct {
	// Ledger records payments.
	Ledger *payments.Ledger
	// ProviderURL is the payment provider's base URL.
	ProviderURL string
	// Payments tunes the payment worker.
	Payments payments.Options
}

// Kinds lists the kinds NewClient registers, sorted.
func Kinds() []string { return []string{payments.Kind, SleepKind} }

// NewClient returns a leasehold client built from cfg (its Workers are
// replaced) that runs every kind of Kinds.
func NewClient(cfg leasehold.Config, deps Deps) (*leasehold.Client, error) {
	cfg.Workers = leasehold.NewWorkers()
	if err := leasehold.AddWorker(cfg.Workers, leasehold.WorkFunc[SleepArgs](sleep)); err != nil {
		return nil, err
	}
	return payments.NewClient(cfg, deps.Ledger, deps.ProviderURL, deps.Payments)
}
