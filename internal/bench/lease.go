package bench

import "context"

// LeaseResult is a lease overhead measurement.
type LeaseResult struct{
	Processes, InFlight int
	Seconds, HeartbeatsPerSec, HeartbeatRowsPerSec, StatementsPerSec float64
}

func (b *bench) runLease(ctx context.Context) error { return nil }
