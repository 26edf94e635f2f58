package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// minuteMicros is one minute in Unix microseconds.
const minuteMicros = int64(time.Minute / time.Microsecond)

// addThroughputSQL adds ?4 jobs of queue ?2 and outcome ?3 to the totals
// of the minute ?1.
const addThroughputSQL = `INSERT INTO leasehold_throughput (minute, queue, outcome, jobs)
VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (minute, queue, outcome) DO UPDATE SET jobs = jobs + excluded.jobs`

// trimThroughputSQL deletes the totals of the minutes before ?1.
const trimThroughputSQL = `DELETE FROM leasehold_throughput WHERE minute < ?1`

// RecordThroughput adds p.Counts to the current minute's totals and
// deletes the totals older than p.Keep, in one write transaction.
func (d *Driver) RecordThroughput(ctx context.Context, p *driver.ThroughputParams) error {
	return d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
		minute := now - now%minuteMicros
		for _, c := range p.Counts {
			if _, err := d.exec(ctx, tx, addThroughputSQL, minute, c.Queue, string(c.Outcome), c.Jobs); err != nil {
				return fmt.Errorf("sqlitedriver: record throughput: %w", err)
			}
		}
		if p.Keep > 0 {
			if _, err := d.exec(ctx, tx, trimThroughputSQL, now-p.Keep.Microseconds()); err != nil {
				return fmt.Errorf("sqlitedriver: record throughput: %w", err)
			}
		}
		return nil
	}, addThroughputSQL, trimThroughputSQL)
}

// throughputSQL returns the totals of the minutes from ?1 on.
const throughputSQL = `SELECT minute, queue, outcome, jobs FROM leasehold_throughput
WHERE minute >= ?1 ORDER BY minute, queue, outcome`

// Throughput returns the per-minute totals of the last since.
func (d *Driver) Throughput(ctx context.Context, since time.Duration) ([]*leasehold.ThroughputBucket, error) {
	now, err := d.Now(ctx)
	if err != nil {
		return nil, err
	}
	from := now.UnixMicro() - since.Microseconds()
	rows, err := d.dbQuery(ctx, throughputSQL, from-from%minuteMicros)
	if err != nil {
		return nil, d.wrapErr(fmt.Errorf("sqlitedriver: throughput: %w", err))
	}
	defer rows.Close()
	var out []*leasehold.ThroughputBucket
	for rows.Next() {
		var (
			b       leasehold.ThroughputBucket
			minute  int64
			outcome string
		)
		if err := rows.Scan(&minute, &b.Queue, &outcome, &b.Jobs); err != nil {
			return nil, d.wrapErr(fmt.Errorf("sqlitedriver: throughput: %w", err))
		}
		b.Minute, b.Outcome = fromMicros(minute), leasehold.Outcome(outcome)
		out = append(out, &b)
	}
	if err := rows.Err(); err != nil {
		return nil, d.wrapErr(fmt.Errorf("sqlitedriver: throughput: %w", err))
	}
	return out, nil
}
