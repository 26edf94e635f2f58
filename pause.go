package leasehold

import (
	"context"
	"fmt"
)

// PauseQueue pauses queue for every process on the database: the claim
// statement itself checks the pause, so no claim that starts after
// PauseQueue returns leases a job of queue, by Claim or by id, in any
// process, with no extra round trip. Jobs already running (including any
// a claim in flight at that moment took) finish normally: their
// heartbeats and outcomes are written as usual, and a retried job waits
// for the resume. The pause is recorded in the database, so it outlives
// every client and holds for workers started later; QueueStats reports
// it. Pausing a paused queue, or a queue with no jobs yet, is allowed. An
// invalid name is an *InvalidInputError matching ErrInvalidQueue.
func (c *Client) PauseQueue(ctx context.Context, queue string) error {
	if err := ValidateQueue(queue); err != nil {
		return err
	}
	if err := c.driver.PauseQueue(ctx, queue); err != nil {
		return fmt.Errorf("leasehold: pause queue %s: %w", queue, err)
	}
	return nil
}

// ResumeQueue lets workers claim queue's jobs again. This client's own
// workers look at once; on PostgreSQL the queue's wake-up notification
// reaches the idle workers of every process (unless they run with
// PollOnly); elsewhere they claim at their next poll, within one
// PollInterval. Resuming a queue that is not paused is allowed. An invalid
// name is an *InvalidInputError matching ErrInvalidQueue.
func (c *Client) ResumeQueue(ctx context.Context, queue string) error {
	if err := ValidateQueue(queue); err != nil {
		return err
	}
	if err := c.driver.ResumeQueue(ctx, queue); err != nil {
		return fmt.Errorf("leasehold: resume queue %s: %w", queue, err)
	}
	c.wake(queue)
	return nil
}
