package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// pauseSQL records queue ?2 as paused at ?1; a paused queue keeps its
// paused_at.
const pauseSQL = `INSERT INTO leasehold_queues (name, paused_at, updated_at) VALUES (?2, ?1, ?1)
ON CONFLICT (name) DO UPDATE SET paused_at = ?1, updated_at = ?1
WHERE leasehold_queues.paused_at IS NULL`

// resumeSQL resumes queue ?2 at ?1.
const resumeSQL = `UPDATE leasehold_queues SET paused_at = NULL, updated_at = ?1
WHERE name = ?2 AND paused_at IS NOT NULL`

// pausedSQL reads the paused queues.
const pausedSQL = `SELECT name, paused_at FROM leasehold_queues WHERE paused_at IS NOT NULL`

// PauseQueue records queue as paused: claims lease none of its jobs until
// ResumeQueue. Pausing a paused queue keeps its PausedAt.
func (d *Driver) PauseQueue(ctx context.Context, queue string) error {
	return d.setPaused(ctx, pauseSQL, queue)
}

// ResumeQueue lets claims lease queue's jobs again. SQLite has no
// notifications: workers of other processes claim at their next poll
// (the Client wakes its own at once).
func (d *Driver) ResumeQueue(ctx context.Context, queue string) error {
	return d.setPaused(ctx, resumeSQL, queue)
}

// setPaused runs pauseSQL or resumeSQL for queue.
func (d *Driver) setPaused(ctx context.Context, query, queue string) error {
	return d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
		if _, err := d.exec(ctx, tx, query, now, queue); err != nil {
			return fmt.Errorf("sqlitedriver: pause or resume queue %s: %w", queue, err)
		}
		return nil
	}, query)
}

// pausedQueues returns when each paused queue was paused.
func (d *Driver) pausedQueues(ctx context.Context) (map[string]time.Time, error) {
	rows, err := d.dbQuery(ctx, pausedSQL)
	if err != nil {
		return nil, d.wrapErr(fmt.Errorf("sqlitedriver: queue stats: %w", err))
	}
	defer rows.Close()
	paused := map[string]time.Time{}
	for rows.Next() {
		var (
			name string
			at   int64
		)
		if err := rows.Scan(&name, &at); err != nil {
			return nil, d.wrapErr(fmt.Errorf("sqlitedriver: queue stats: %w", err))
		}
		paused[name] = fromMicros(at)
	}
	if err := rows.Err(); err != nil {
		return nil, d.wrapErr(fmt.Errorf("sqlitedriver: queue stats: %w", err))
	}
	return paused, nil
}
