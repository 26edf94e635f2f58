package maintenance

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/service"
	"github.com/leasehold/leasehold/leasetype"
)

// Tally counts a client's finished attempts by queue and outcome between
// two flushes of its Recorder. It is safe for concurrent use; Add is a
// map increment under a mutex, cheap enough for every outcome.
type Tally struct {
	mu     sync.Mutex
	counts map[tallyKey]int64
}

type tallyKey struct {
	queue   string
	outcome leasetype.Outcome
}

// Add counts one attempt of queue that ended with outcome.
func (t *Tally) Add(queue string, outcome leasetype.Outcome) {
	t.mu.Lock()
	if t.counts == nil {
		t.counts = map[tallyKey]int64{}
	}
	t.counts[tallyKey{queue, outcome}]++
	t.mu.Unlock()
}

// take returns the counts since the last take and resets them.
func (t *Tally) take() []leasetype.ThroughputCount {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]leasetype.ThroughputCount, 0, len(t.counts))
	for k, n := range t.counts {
		out = append(out, leasetype.ThroughputCount{Queue: k.queue, Outcome: k.outcome, Jobs: n})
	}
	clear(t.counts)
	return out
}

// restore adds back counts a flush could not write.
func (t *Tally) restore(counts []leasetype.ThroughputCount) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counts == nil {
		t.counts = map[tallyKey]int64{}
	}
	for _, c := range counts {
		t.counts[tallyKey{c.Queue, c.Outcome}] += c.Jobs
	}
}

// ThroughputKeep is how long the per-minute totals are kept.
const ThroughputKeep = 24 * time.Hour

// finalFlushBudget is the time the last flush at Stop gets, whatever
// Stop's context, when FinalBy does not say; minFinalFlush the least it
// gets when FinalBy's deadline has passed.
const (
	finalFlushBudget = 2 * time.Second
	minFinalFlush    = 250 * time.Millisecond
)

// Recorder writes a Tally to the database's per-minute totals every
// interval, and once more at Stop, so the dashboard's chart shows every
// process's work at the cost of one statement per interval per process.
// A flush that fails keeps its counts for the next one.
type Recorder struct {
	periodic Periodic
	rec      ThroughputWriter
	tally    *Tally
	log      *slog.Logger
	// FinalBy, when set, returns the deadline of the last flush at Stop
	// (the client's release budget, which the last outcomes share).
	FinalBy func() time.Time
	final   sync.Once
}

// ThroughputWriter is the driver call a Recorder makes.
type ThroughputWriter interface {
	RecordThroughput(ctx context.Context, p *driver.ThroughputParams) error
}

// NewRecorder returns the recorder of tally. Each periodic flush is
// bounded by interval, and by passTimeout at least: a flush on a
// connection that stopped answering ends by then, and puts its counts
// back for the next one.
func NewRecorder(d ThroughputWriter, tally *Tally, interval time.Duration, log *slog.Logger) *Recorder {
	r := &Recorder{rec: d, tally: tally, log: log}
	r.periodic = Periodic{Interval: interval, Timeout: max(interval, passTimeout), Pass: func(ctx context.Context) {
		logFailure(ctx, log, "leasehold: record throughput", r.flush(ctx))
	}}
	return r
}

// Start launches the periodic flushes.
func (r *Recorder) Start(ctx context.Context) error { return r.periodic.Start(ctx) }

// Stop ends the flushes and writes what was counted since the last one,
// once, by FinalBy's deadline (at least minFinalFlush from now; without
// FinalBy, within finalFlushBudget), even when ctx is done (as it is once
// a client's ShutdownTimeout has passed): the counts would be lost
// otherwise. A Stop called meanwhile waits for the first to return; a
// later one only waits for the flushes to end. It returns the error of
// ending them.
//
// The first Stop waits for the loop by that deadline too, not by ctx: a
// flush that Stop cuts off puts its counts back into the tally, and the
// last flush must come after it to write them.
func (r *Recorder) Stop(ctx context.Context) error {
	var err error
	first := false
	r.final.Do(func() { // a Stop meanwhile waits for this to return
		first = true
		fctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), r.finalDeadline())
		defer cancel()
		err = r.periodic.Stop(fctx)
		if ferr := r.flush(fctx); ferr != nil {
			r.log.Warn("leasehold: record throughput at stop", "err", ferr)
		}
	})
	if !first {
		return r.periodic.Stop(ctx)
	}
	return err
}

// finalDeadline is when the last flush at Stop must be done by.
func (r *Recorder) finalDeadline() time.Time {
	now := time.Now()
	if r.FinalBy == nil {
		return now.Add(finalFlushBudget)
	}
	if by := r.FinalBy(); by.After(now.Add(minFinalFlush)) {
		return by
	}
	return now.Add(minFinalFlush)
}

// flush writes the counts taken from the tally, if any.
func (r *Recorder) flush(ctx context.Context) error { return r.tally.Flush(ctx, r.rec) }

// Flush writes the counts since the last flush to w's per-minute totals,
// if any, and keeps them for the next flush when the write fails. A
// Recorder calls it; a client that runs no Recorder (not started) calls
// it itself after work it did on the caller's behalf.
func (t *Tally) Flush(ctx context.Context, w ThroughputWriter) error {
	counts := t.take()
	if len(counts) == 0 {
		return nil
	}
	err := w.RecordThroughput(ctx, &driver.ThroughputParams{Counts: counts, Keep: ThroughputKeep})
	if err != nil {
		t.restore(counts)
	}
	return err
}

var _ service.Service = (*Recorder)(nil)
