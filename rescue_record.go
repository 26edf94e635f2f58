package leasehold

import "context"

// recordIfIdle writes the attempts counted since the last flush to the
// per-minute totals when no recorder of this client runs to do it (the
// client is new or stopped), as for the moves of a RescueExpired called
// by `leasehold watch --once` or the dashboard. A failure is logged: the
// counts stay in the tally for the next call, and never fail the moves
// that were committed.
func (c *Client) recordIfIdle(ctx context.Context) {
	c.mu.Lock()
	idle := c.state == stateNew || c.state == stateStopped
	c.mu.Unlock()
	if !idle {
		return
	}
	if err := c.events.throughput.Flush(ctx, c.driver); err != nil {
		c.cfg.Logger.Warn("leasehold: record throughput", "err", err)
	}
}
