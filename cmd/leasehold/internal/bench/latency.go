package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold"
)

// Pickup modes.
const (
	ModeNotify    = "listen/notify"
	ModePollOnly  = "poll-only"
	ModeInProcess = "in-process wake"
)

// latencyInserters is how many goroutines insert the paced jobs, so that
// one slow commit does not delay the next insert.
const latencyInserters = 8

// LatencyResult is a pickup latency measurement: jobs inserted one by one
// at Rate per second, and the time from the start of each Insert call to
// the start of its handler, on one monotonic clock.
type LatencyResult struct {
	Mode string `json:"mode"`
	Rate int    `json:"rate"`
	Jobs int    `json:"jobs"`
	// PollInterval is the consumer's (default) poll interval.
	PollInterval string  `json:"poll_interval"`
	P50          float64 `json:"p50_ms"`
	P95          float64 `json:"p95_ms"`
	P99          float64 `json:"p99_ms"`
	Max          float64 `json:"max_ms"`
	// InsertP50 is the median time of the Insert call itself (a commit),
	// part of every pickup latency.
	InsertP50 float64 `json:"insert_p50_ms"`
}

// pingArgs is the kind of the latency jobs.
type pingArgs struct {
	Seq int `json:"seq"`
}

// Kind names the latency job kind.
func (pingArgs) Kind() string { return "bench.ping" }

func (b *bench) runLatency(ctx context.Context) error {
	modes := []string{ModeInProcess}
	if b.postgres() {
		modes = []string{ModeNotify, ModePollOnly}
	}
	return forModes(ctx, modes, b.latencyOnce, func(r LatencyResult) {
		b.rep.Latency = append(b.rep.Latency, r)
		b.logf("latency: %s at %d/s: p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms (insert p50 %.1f ms)",
			r.Mode, r.Rate, r.P50, r.P95, r.P99, r.Max, r.InsertP50)
	})
}

// forModes measures once per mode and hands each result to keep; it
// stops at the first error, which it prefixes with the mode.
func forModes[T any](ctx context.Context, modes []string, once func(context.Context, string) (T, error), keep func(T)) error {
	for _, m := range modes {
		r, err := once(ctx, m)
		if err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
		keep(r)
	}
	return nil
}

// pickupClock records, per job, when its insert started and when its
// handler started, in nanoseconds since base.
type pickupClock struct {
	base     time.Time
	sent     []atomic.Int64
	inserted []atomic.Int64
	started  []atomic.Int64
	handled  atomic.Int64
}

func (k *pickupClock) now() int64 { return int64(time.Since(k.base)) }

func (b *bench) latencyOnce(ctx context.Context, mode string) (LatencyResult, error) {
	total := max(1, int(float64(b.opts.Rate)*b.opts.LatencyFor.Seconds()))
	r := LatencyResult{Mode: mode, Rate: b.opts.Rate, Jobs: total, PollInterval: leasehold.DefaultPollInterval.String()}
	s, clock, workers, err := b.pickupScratch(ctx, total)
	if err != nil {
		return r, err
	}
	defer s.Close()
	consumer, err := leasehold.NewClient(leasehold.Config{Driver: s.drv, Workers: workers,
		PollOnly: mode == ModePollOnly, Logger: b.opts.Logger})
	if err != nil {
		return r, err
	}
	producer, closeProducer, err := b.producer(ctx, s, mode, consumer)
	if err != nil {
		return r, err
	}
	defer closeProducer()
	if err := consumer.Start(ctx); err != nil {
		return r, err
	}
	defer func() { _ = consumer.Stop(context.WithoutCancel(ctx)) }()
	// Let the listener connect and the pools warm up before timing.
	if err := sleep(ctx, 500*time.Millisecond); err != nil {
		return r, err
	}
	if err := paceInserts(ctx, producer, clock, b.opts.Rate, nil); err != nil {
		return r, err
	}
	if err := clock.wait(ctx, b.opts.Timeout); err != nil {
		return r, err
	}
	clock.fill(&r)
	return r, nil
}

// pickupScratch returns a scratch database, and the clock and handler of
// total ping jobs.
func (b *bench) pickupScratch(ctx context.Context, total int) (*scratch, *pickupClock, *leasehold.Workers, error) {
	s, err := b.newScratch(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	clock := newPickupClock(total)
	workers, err := clock.workers()
	if err != nil {
		s.Close()
		return nil, nil, nil, err
	}
	return s, clock, workers, nil
}

func newPickupClock(total int) *pickupClock {
	return &pickupClock{base: time.Now(), sent: make([]atomic.Int64, total),
		inserted: make([]atomic.Int64, total), started: make([]atomic.Int64, total)}
}

// workers returns the handler of the ping jobs, which records when each
// started.
func (k *pickupClock) workers() (*leasehold.Workers, error) {
	total := len(k.started)
	workers := leasehold.NewWorkers()
	err := leasehold.AddWorker(workers, leasehold.WorkFunc[pingArgs](func(_ context.Context, j *leasehold.Job[pingArgs]) error {
		if seq := j.Args.Seq; seq >= 0 && seq < total {
			k.started[seq].Store(k.now())
			k.handled.Add(1)
		}
		return nil
	}))
	return workers, err
}

// wait returns once every job has started, or an error after timeout.
func (k *pickupClock) wait(ctx context.Context, timeout time.Duration) error {
	total := int64(len(k.started))
	deadline := time.Now().Add(timeout)
	for k.handled.Load() < total {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out: %d of %d jobs started", k.handled.Load(), total)
		}
		if err := sleep(ctx, completionPollEvery); err != nil {
			return err
		}
	}
	return nil
}

// fill sets r's quantiles from the recorded times.
func (k *pickupClock) fill(r *LatencyResult) {
	total := len(k.started)
	lat, ins := make([]float64, total), make([]float64, total)
	for i := range lat {
		lat[i] = float64(k.started[i].Load()-k.sent[i].Load()) / 1e6
		ins[i] = float64(k.inserted[i].Load()-k.sent[i].Load()) / 1e6
	}
	slices.Sort(lat)
	slices.Sort(ins)
	r.InsertP50 = quantile(ins, 0.5)
	r.P50, r.P95, r.P99, r.Max = quantile(lat, 0.50), quantile(lat, 0.95), quantile(lat, 0.99), lat[len(lat)-1]
}

// producer returns the client that inserts the jobs: another client on a
// driver and pool of its own, so the consumer learns of the jobs through
// LISTEN/NOTIFY or polling only; for the in-process wake (SQLite) the
// consumer itself, whose inserts wake its fetcher.
func (b *bench) producer(ctx context.Context, s *scratch, mode string, consumer *leasehold.Client) (*leasehold.Client, func(), error) {
	if mode == ModeInProcess {
		return consumer, func() {}, nil
	}
	d, closeDriver, err := s.secondDriver(ctx)
	if err != nil {
		return nil, nil, err
	}
	c, err := leasehold.NewClient(leasehold.Config{Driver: d, Logger: b.opts.Logger})
	if err != nil {
		closeDriver()
		return nil, nil, err
	}
	return c, closeDriver, nil
}

// paceInserts inserts one job per entry of clock, job i due at i/rate
// seconds after the start, from latencyInserters goroutines, with opts(i)
// (nil opts: default options).
func paceInserts(ctx context.Context, c *leasehold.Client, clock *pickupClock, rate int, opts func(seq int) *leasehold.InsertOpts) error {
	total := len(clock.sent)
	due := make(chan int, total)
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range latencyInserters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := range due {
				clock.sent[seq].Store(clock.now())
				var o *leasehold.InsertOpts
				if opts != nil {
					o = opts(seq)
				}
				if _, err := c.Insert(ctx, pingArgs{Seq: seq}, o); err != nil {
					errOnce.Do(func() { firstErr = err })
				}
				clock.inserted[seq].Store(clock.now())
			}
		}()
	}
	start := time.Now()
	for i := range total {
		if err := sleep(ctx, time.Until(start.Add(time.Duration(i)*time.Second/time.Duration(rate)))); err != nil {
			break
		}
		due <- i
	}
	close(due)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// quantile returns the q-quantile of sorted values (nearest rank).
func quantile(sorted []float64, q float64) float64 {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
