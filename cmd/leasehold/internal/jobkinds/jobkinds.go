// Package jobkinds registers the job kinds the leasehold binary can run
// with `leasehold work`: leasehold.demo.charge (the demo's payments) and
// leasehold.sleep (a job that waits, and optionally fails, snoozes,
// cancels itself or panics, for trying the queue by hand). Their names are
// in the project's own namespace, so that `leasehold work` on an
// application's database never claims the application's own kinds.
package jobkinds

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/payments"
)

// SleepKind is the kind of SleepArgs.
const SleepKind = "leasehold.sleep"

// MaxSleep bounds SleepArgs.Duration.
const MaxSleep = 24 * time.Hour

// SleepArgs make a job that waits Duration (a Go duration such as "2s";
// default 0), then ends as the other fields say: the first attempt
// snoozes for Snooze when it is set; then the job panics with Panic,
// cancels itself with Cancel, or fails with Fail, whichever is set first,
// and completes otherwise.
type SleepArgs struct {
	Duration string `json:"duration,omitempty"`
	Fail     string `json:"fail,omitempty"`
	Snooze   string `json:"snooze,omitempty"`
	Cancel   string `json:"cancel,omitempty"`
	Panic    string `json:"panic,omitempty"`
}

// Kind implements leasehold.Args.
func (SleepArgs) Kind() string { return SleepKind }

// sleep runs SleepArgs. Cancellation (lease lost, operator cancel,
// shutdown) ends the wait with the context's cause.
func sleep(ctx context.Context, job *leasehold.Job[SleepArgs]) error {
	d, err := parseSleep("duration", job.Args.Duration)
	if err != nil {
		return err
	}
	snooze, err := parseSleep("snooze", job.Args.Snooze)
	if err != nil {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
	}
	a := job.Args
	switch {
	case a.Snooze != "" && job.Attempt == 1:
		return leasehold.Snooze(snooze)
	case a.Panic != "":
		panic("sleep: " + a.Panic)
	case a.Cancel != "":
		return leasehold.Cancel(errors.New(a.Cancel))
	case a.Fail != "":
		return errors.New(a.Fail)
	}
	return nil
}

// parseSleep parses a duration argument of SleepArgs ("" is 0).
func parseSleep(name, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > MaxSleep {
		return 0, leasehold.Permanent(fmt.Errorf("sleep: bad %s %q (want 0 to 24h, e.g. 2s)", name, s))
	}
	return d, nil
}

// Deps are what the job kinds need.
type Deps struct {
	// Kinds selects the kinds to run, a subset of Kinds(); nil runs them
	// all.
	Kinds []string
	// Ledger records payments; it is needed only when the payment kind
	// runs.
	Ledger *payments.Ledger
	// ProviderURL is the payment provider's base URL.
	ProviderURL string
	// Payments tunes the payment worker.
	Payments payments.Options
}

// Kinds lists the kinds NewClient can register, sorted.
func Kinds() []string { return []string{payments.Kind, SleepKind} }

// ErrUnknownKind reports a kind that is not built in.
var ErrUnknownKind = errors.New("not a built-in job kind")

// Select checks kinds against Kinds and returns them sorted without
// duplicates; nil or empty selects every kind.
func Select(kinds []string) ([]string, error) {
	if len(kinds) == 0 {
		return Kinds(), nil
	}
	var out []string
	for _, k := range Kinds() {
		if slices.Contains(kinds, k) {
			out = append(out, k)
		}
	}
	for _, k := range kinds {
		if !slices.Contains(out, k) {
			return nil, fmt.Errorf("%w: %q (want %s)", ErrUnknownKind, k, strings.Join(Kinds(), ", "))
		}
	}
	return out, nil
}

// Runs reports whether the selection kinds (nil: all) includes kind.
func Runs(kinds []string, kind string) bool {
	return len(kinds) == 0 || slices.Contains(kinds, kind)
}

// NewClient returns a leasehold client built from cfg (its Workers are
// replaced) that runs the kinds of deps.Kinds.
func NewClient(cfg leasehold.Config, deps Deps) (*leasehold.Client, error) {
	kinds, err := Select(deps.Kinds)
	if err != nil {
		return nil, err
	}
	cfg.Workers = leasehold.NewWorkers()
	if Runs(kinds, SleepKind) {
		if err := leasehold.AddWorker(cfg.Workers, leasehold.WorkFunc[SleepArgs](sleep)); err != nil {
			return nil, err
		}
	}
	if Runs(kinds, payments.Kind) {
		return payments.NewClient(cfg, deps.Ledger, deps.ProviderURL, deps.Payments)
	}
	return leasehold.NewClient(cfg)
}
