package bench

import (
	"context"
	"fmt"
)

// CeilingRound is one round of the default drain against the ceiling:
// one drain and one ceiling measured one right after the other, in the
// order the round's number gives (see drainRounds).
type CeilingRound struct {
	Drain   float64 `json:"drain_jobs_per_sec"`
	Ceiling float64 `json:"ceiling_jobs_per_sec"`
	// CeilingFirst says the ceiling was measured before the drain.
	CeilingFirst bool    `json:"ceiling_first"`
	Ratio        float64 `json:"ratio"`
}

// roundRatios returns the rounds' drain-to-ceiling ratios.
func roundRatios(rs []CeilingRound) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = r.Ratio
	}
	return out
}

// roundCeilings returns the rounds' ceilings.
func roundCeilings(rs []CeilingRound) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = r.Ceiling
	}
	return out
}

// drainRounds compares the drain with w workers with the ceiling in
// CeilingRounds rounds of one drain and one ceiling each, the drain first
// in even rounds and the ceiling first in odd ones, so that neither side
// always runs on a machine that the other has just warmed or loaded. The
// ceiling drifts by tens of per cent within a run on a shared machine; a
// round's two measurements are next to each other in time, and the median
// of the rounds' ratios leaves out a round that a burst of other work
// fell on. It returns the drain of median rate with the rounds attached
// (its Ceiling the median of the rounds' ceilings) and the last ceiling
// measured.
func (b *bench) drainRounds(ctx context.Context, w int) (DrainResult, float64, error) {
	var (
		runs   []DrainResult
		rounds []CeilingRound
		last   float64
	)
	for i := range b.opts.CeilingRounds {
		rd := CeilingRound{CeilingFirst: i%2 == 1}
		var (
			r   DrainResult
			err error
		)
		if rd.CeilingFirst {
			if rd.Ceiling, err = b.measureCeiling(ctx); err != nil {
				return r, 0, fmt.Errorf("ceiling: %w", err)
			}
		}
		if r, err = b.drainOnce(ctx, w, nil); err != nil {
			return r, 0, err
		}
		if !rd.CeilingFirst {
			if rd.Ceiling, err = b.measureCeiling(ctx); err != nil {
				return r, 0, fmt.Errorf("ceiling: %w", err)
			}
		}
		rd.Drain, rd.Ratio, last = r.JobsPerSec, r.JobsPerSec/rd.Ceiling, rd.Ceiling
		runs, rounds = append(runs, r), append(rounds, rd)
		b.logf("drain: %4d workers, round %d: drain %.0f jobs/s, ceiling %.0f jobs/s (%s): %.1f%%",
			w, i+1, rd.Drain, rd.Ceiling, rd.order(), 100*rd.Ratio)
	}
	r := medianRun(runs)
	r.Rounds, r.Ceiling = rounds, median(roundCeilings(rounds))
	b.logf("drain: %4d workers: %.1f%% of the ceiling, median of %d rounds' ratios", w,
		100*median(roundRatios(rounds)), len(rounds))
	return r, last, nil
}

// order says which side of the round ran first.
func (r CeilingRound) order() string {
	if r.CeilingFirst {
		return "ceiling first"
	}
	return "drain first"
}
