package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

// Defaults of the sustained phase's options.
const (
	// DefaultSustainFor is how long the sustained phase inserts and drains.
	DefaultSustainFor = 15 * time.Minute
	// DefaultSustainRate is the sustained insert rate: at it more than a
	// million jobs pass through in DefaultSustainFor.
	DefaultSustainRate = 1150
	// DefaultSustainRetention is the FinishedRetention of the sustained
	// phase's worker: finished jobs are deleted a minute after they end.
	DefaultSustainRetention = time.Minute
	// DefaultSustainWindow is the length of one reported window.
	DefaultSustainWindow = 10 * time.Second
)

// sustainSpanOf is the length of the first and last spans a sustained run
// compares.
const sustainSpanOf = time.Minute

// sustainArgs is the kind of the sustained phase's jobs; Sent is when the
// insert carrying the job started, in nanoseconds since the run's base.
type sustainArgs struct {
	Sent int64 `json:"sent"`
}

// Kind names the sustained job kind.
func (sustainArgs) Kind() string { return "bench.sustain" }

// holdMax bounds each part of a held-transaction flag.
const holdMax = 30 * cli.Day

// ParseHold parses a held-transaction flag "START:DURATION" (such as
// "5m:5m": opened 5 minutes into the run, held for 5 minutes; each part a
// duration as cli.ParseDuration reads it); "" and "0" mean none.
func ParseHold(s string) (at, dur time.Duration, err error) {
	if s == "" || s == "0" {
		return 0, 0, nil
	}
	a, d, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, fmt.Errorf("bench: held transaction %q: want START:DURATION, such as 5m:5m", s)
	}
	if at, err = cli.ParseDuration(a, 0, holdMax); err != nil {
		return 0, 0, fmt.Errorf("bench: held transaction start: %w", err)
	}
	if dur, err = cli.ParseDuration(d, time.Millisecond, holdMax); err != nil {
		return 0, 0, fmt.Errorf("bench: held transaction duration: %w", err)
	}
	return at, dur, nil
}

// validateSustained checks the sustained phase's options.
func (o Options) validateSustained() error {
	if o.Path != "" {
		return fmt.Errorf("bench: the %s phase needs PostgreSQL (table sizes, dead rows and vacuum)", PhaseSustained)
	}
	if o.SustainRate < 1 || o.SustainFor < o.SustainWindow || o.SustainWindow <= 0 || o.SustainRetention <= 0 {
		return fmt.Errorf("bench: sustained: rate, retention and window must be positive, and the run at least one window")
	}
	if o.HoldFor > 0 && o.HoldAt+o.HoldFor > o.SustainFor {
		return fmt.Errorf("bench: held transaction %v+%v ends after the run (%v)", o.HoldAt, o.HoldFor, o.SustainFor)
	}
	return nil
}

// runSustained inserts at a fixed rate and drains continuously for
// SustainFor, with retention on and, when HoldFor is set, one transaction
// held open that stops vacuum from removing dead rows.
func (b *bench) runSustained(ctx context.Context) error {
	s, err := b.newScratch(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	run := newSustainRun(b.opts)
	consumer, err := run.worker(s, b.opts)
	if err != nil {
		return err
	}
	producer, closeProducer, err := b.producer(ctx, s, ModeNotify, consumer)
	if err != nil {
		return err
	}
	defer closeProducer()
	if err := consumer.Start(ctx); err != nil {
		return err
	}
	defer func() { _ = consumer.Stop(context.WithoutCancel(ctx)) }()
	res, err := run.measure(ctx, b, s, producer, consumer)
	if res != nil {
		b.rep.Sustained = res
	}
	return err
}

// worker returns the draining client: every setting at its default but
// the retention of finished jobs.
func (r *sustainRun) worker(s *scratch, o Options) (*leasehold.Client, error) {
	workers := leasehold.NewWorkers()
	if err := leasehold.AddWorker(workers, leasehold.WorkFunc[sustainArgs](func(_ context.Context, j *leasehold.Job[sustainArgs]) error {
		r.started(j.Args.Sent)
		return nil
	})); err != nil {
		return nil, err
	}
	return leasehold.NewClient(leasehold.Config{Driver: s.drv, Workers: workers,
		FinishedRetention: o.SustainRetention, Logger: o.Logger})
}

// measure runs the load, the sampler and the held transaction until the
// run's end, and summarizes the windows.
func (r *sustainRun) measure(ctx context.Context, b *bench, s *scratch, producer, consumer *leasehold.Client) (*SustainedResult, error) {
	o := b.opts
	res := &SustainedResult{Rate: o.SustainRate, Seconds: o.SustainFor.Seconds(), Window: o.SustainWindow.Seconds(),
		Retention: o.SustainRetention.String(), Workers: leasehold.DefaultMaxWorkers}
	if err := readAutovacuum(ctx, s, res); err != nil {
		return nil, err
	}
	b.logf("sustained: %d jobs/s for %v, retention %v, windows of %v, autovacuum %s",
		o.SustainRate, o.SustainFor, o.SustainRetention, o.SustainWindow, res.Autovacuum["autovacuum"])
	r.begin() // the clients are up: the run starts now
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg              sync.WaitGroup
		insErr, holdErr error
	)
	wg.Add(1)
	go func() { defer wg.Done(); insErr = r.insert(runCtx, producer) }()
	if o.HoldFor > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); res.Hold, holdErr = r.hold(runCtx, b, s) }()
	}
	sampleErr := r.sample(ctx, b, s, consumer, res)
	cancel()
	wg.Wait()
	res.Inserted, res.Completed = r.inserted.Load(), consumer.Stats().Completed
	r.summarize(res, o)
	for _, err := range []error{sampleErr, insErr, holdErr} {
		if err != nil {
			return res, err
		}
	}
	return res, nil
}
