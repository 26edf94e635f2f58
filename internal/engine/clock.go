package engine

import "time"

// Clock is a client's monotonic clock: nanoseconds since the client was
// created. It measures the client's own intervals (a lease's safe window,
// a handler's run time) and is only ever compared with itself, never with
// database times.
type Clock struct{ epoch time.Time }

// NewClock returns a clock whose zero is now.
func NewClock() *Clock { return &Clock{epoch: time.Now()} }

// Now returns the clock's reading.
func (c *Clock) Now() int64 { return int64(time.Since(c.epoch)) }

// Window is how long after sending a claim or a renewal a client relies
// on the lease it set: TTL - Margin. The database starts the lease no
// earlier than the send, so within the window nobody else can hold the
// job, whatever the clocks of the two machines say.
type Window struct {
	TTL    time.Duration
	Margin time.Duration
	Clock  *Clock
}

// Safe returns TTL - Margin.
func (w *Window) Safe() time.Duration { return w.TTL - w.Margin }

// Overdue returns how far past its safe window l's lease is at now (a
// Clock reading): negative while the lease is inside it.
func (w *Window) Overdue(l *Lease, now int64) time.Duration {
	return time.Duration(now-l.renewedAt.Load()) - w.Safe()
}
