package chaos

import (
	"context"
	"database/sql"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/fleet"
	"github.com/leasehold/leasehold/driver"
)

// recorder wraps a worker's driver: it counts the calls the client makes,
// reports every CompleteTx the fence refuses (job, attempt) and every
// heartbeat's renewed leases with a lower bound of its database time. It
// changes nothing the client sees, except in a chaos_unfenced build (see
// refusedInTx).
type recorder struct {
	driver.Driver
	dialect cli.Dialect
	out     *fleet.Emitter
	// clock is the latest database time (Unix µs) read by sampleClock: a
	// read that returned before a heartbeat was sent bounds the
	// heartbeat's own database time from below.
	clock atomic.Int64

	ok, lastOK                                atomic.Int64
	claimErrs, hbErrs, finishErrs, rescueErrs atomic.Int64
	refused                                   atomic.Int64
	// claims, probes and rescues time those statements (latency.go).
	claims, probes, rescues latency
}

// wrap returns the recording driver for d, a driver.Notifier too when d
// is one (so LISTEN/NOTIFY wake-ups keep working).
func wrap(d driver.Driver, dialect cli.Dialect, out *fleet.Emitter) (driver.Driver, *recorder) {
	r := &recorder{Driver: d, dialect: dialect, out: out}
	if n, ok := d.(driver.Notifier); ok {
		return &notifyingRecorder{recorder: r, n: n}, r
	}
	return r, r
}

type notifyingRecorder struct {
	*recorder
	n driver.Notifier
}

// Listen implements driver.Notifier.
func (r *notifyingRecorder) Listen(ctx context.Context, wake func(queue string)) error {
	return r.n.Listen(ctx, wake)
}

// FinishLinger forwards the wrapped driver's (driver.FinishLingerer).
func (r *recorder) FinishLinger() time.Duration { return driver.FinishLingerOf(r.Driver) }

// Refused forwards the wrapped driver's (driver.Refuser).
func (r *recorder) Refused(err error) bool { return driver.IsRefused(r.Driver, err) }

// CheckTx forwards the wrapped driver's (driver.TxChecker).
func (r *recorder) CheckTx(tx any) error { return driver.CheckTxOf(r.Driver, tx) }

// count records the result of one call.
func (r *recorder) count(ctx context.Context, err error, errs *atomic.Int64) {
	switch {
	case err == nil:
		r.ok.Add(1)
		r.lastOK.Store(time.Now().UnixNano())
	case ctx.Err() == nil: // not the worker stopping
		errs.Add(1)
	}
}

// Calls returns the counters.
func (r *recorder) Calls() CallStats {
	return CallStats{
		OK: r.ok.Load(), LastOK: r.lastOK.Load(),
		ClaimErrors: r.claimErrs.Load(), HeartbeatErrors: r.hbErrs.Load(), FinishErrors: r.finishErrs.Load(),
		RescueErrors: r.rescueErrs.Load(), Refused: r.refused.Load(),
		ClaimLatency: r.claims.snapshot(), ProbeLatency: r.probes.snapshot(), RescueLatency: r.rescues.snapshot(),
	}
}

// Claim implements driver.Driver.
func (r *recorder) Claim(ctx context.Context, p *driver.ClaimParams) ([]*leasehold.JobRow, error) {
	start := time.Now()
	rows, err := r.Driver.Claim(ctx, p)
	if err == nil {
		r.claims.observe(time.Since(start))
	}
	r.count(ctx, err, &r.claimErrs)
	return rows, err
}

// ClaimableQueues implements driver.Driver, timing the producer's probe
// (not counted among the calls, as it never was).
func (r *recorder) ClaimableQueues(ctx context.Context, p *driver.ClaimableParams) ([]string, error) {
	start := time.Now()
	queues, err := r.Driver.ClaimableQueues(ctx, p)
	if err == nil {
		r.probes.observe(time.Since(start))
	}
	return queues, err
}

// Heartbeat implements driver.Driver and reports the renewed leases: not
// the ones it returned Locked, which it could not renew.
func (r *recorder) Heartbeat(ctx context.Context, p *driver.HeartbeatParams) ([]*driver.HeartbeatResult, error) {
	atLeast := r.clock.Load()
	held, err := r.Driver.Heartbeat(ctx, p)
	r.count(ctx, err, &r.hbErrs)
	if err != nil || atLeast == 0 || len(held) == 0 {
		return held, err
	}
	newest := make(map[int64]int64, len(p.Leases))
	for _, l := range p.Leases {
		newest[l.ID] = max(newest[l.ID], int64(l.Attempt))
	}
	leases := make([][2]int64, 0, len(held))
	for _, h := range held {
		if !h.Locked {
			leases = append(leases, [2]int64{h.ID, newest[h.ID]})
		}
	}
	if len(leases) == 0 {
		return held, nil
	}
	r.out.Emit(message{Report: fleet.Report{Type: msgRenewed}, AtLeast: atLeast, Leases: leases})
	return held, nil
}

// Finish implements driver.Driver. A CompleteTx (one lease, in the
// handler's transaction) that the fence refuses is reported.
func (r *recorder) Finish(ctx context.Context, tx any, ps []*driver.FinishParams) ([]driver.FinishResult, error) {
	ids, err := r.Driver.Finish(ctx, tx, ps)
	r.count(ctx, err, &r.finishErrs)
	if err != nil || tx == nil || len(ids) > 0 || len(ps) != 1 || ps[0].Outcome != leasehold.OutcomeCompleted {
		return ids, err
	}
	sqlTx, ok := tx.(*sql.Tx)
	if !ok {
		return ids, nil
	}
	return r.refusedInTx(ctx, sqlTx, ps[0])
}

// reportRefusal reports a CompleteTx the fence refused.
func (r *recorder) reportRefusal(p *driver.FinishParams) {
	r.refused.Add(1)
	r.out.Emit(message{Report: fleet.Report{Type: msgRefused}, Job: p.ID, Attempt: p.Attempt})
}

// RescueExpired implements driver.Driver.
func (r *recorder) RescueExpired(ctx context.Context, p *driver.RescueParams) ([]*leasehold.RescuedJob, error) {
	start := time.Now()
	jobs, err := r.Driver.RescueExpired(ctx, p)
	if err == nil {
		r.rescues.observe(time.Since(start))
	}
	r.count(ctx, err, &r.rescueErrs)
	return jobs, err
}

// sampleClock reads the database clock every interval until ctx ends.
func (r *recorder) sampleClock(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		qctx, cancel := context.WithTimeout(ctx, interval)
		now, err := r.Driver.Now(qctx)
		cancel()
		if err == nil {
			r.clock.Store(now.UnixMicro())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
