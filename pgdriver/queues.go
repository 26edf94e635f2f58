package pgdriver

import (
	"context"
	"fmt"
	"time"
)

// pauseSQL records queue $1 as paused; a paused queue keeps its paused_at.
const pauseSQL = `INSERT INTO leasehold_queues (name, paused_at, updated_at) VALUES ($1, now(), now())
ON CONFLICT (name) DO UPDATE SET paused_at = now(), updated_at = now()
WHERE leasehold_queues.paused_at IS NULL`

// resumeSQL resumes queue $1 if it is paused.
const resumeSQL = `UPDATE leasehold_queues SET paused_at = NULL, updated_at = now()
WHERE name = $1 AND paused_at IS NOT NULL`

// pausedSQL reads the paused queues.
const pausedSQL = `SELECT name, paused_at FROM leasehold_queues WHERE paused_at IS NOT NULL`

// PauseQueue records queue as paused: claims lease none of its jobs until
// ResumeQueue. Pausing a paused queue keeps its PausedAt.
func (d *Driver) PauseQueue(ctx context.Context, queue string) error {
	if _, err := d.pool.Exec(ctx, pauseSQL, queue); err != nil {
		return fmt.Errorf("pgdriver: pause queue: %w", err)
	}
	return nil
}

// ResumeQueue lets claims lease queue's jobs again and, when it was
// paused, sends the queue's wake-up hint through the notifier once the
// resume has committed, so that idle workers listening (driver.Notifier)
// claim at once. The hint's errors are dropped, as an insert's are: on a
// database without pg_notify workers find the jobs at their next poll.
func (d *Driver) ResumeQueue(ctx context.Context, queue string) error {
	tag, err := d.pool.Exec(ctx, resumeSQL, queue)
	if err != nil {
		return fmt.Errorf("pgdriver: resume queue: %w", err)
	}
	if tag.RowsAffected() > 0 {
		d.notes.request([]string{queue})
	}
	return nil
}

// pausedQueues returns when each paused queue was paused.
func (d *Driver) pausedQueues(ctx context.Context) (map[string]time.Time, error) {
	rs, err := d.pool.Query(ctx, pausedSQL)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: queue stats: %w", err)
	}
	defer rs.Close()
	paused := map[string]time.Time{}
	for rs.Next() {
		var (
			name string
			at   time.Time
		)
		if err := rs.Scan(&name, &at); err != nil {
			return nil, fmt.Errorf("pgdriver: queue stats: %w", err)
		}
		paused[name] = at
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("pgdriver: queue stats: %w", err)
	}
	return paused, nil
}
