package pgdriver

import (
	"context"
	"fmt"
	"time"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// recordThroughputSQL adds $1, $2, $3 (queues, outcomes, counts) to the
// current minute's totals and, when $4 (microseconds) is positive,
// deletes the totals older than that, in one statement. The rows are
// written in (queue, outcome) order, so that every client's recorder
// locks the minute's rows in the same order: in the order a hash
// aggregate happens to give, two recorders flushing the same keys could
// each wait for a row the other holds (a deadlock, one flush refused).
const recordThroughputSQL = `WITH gone AS (
	DELETE FROM leasehold_throughput
	WHERE $4::bigint > 0 AND minute < now() - $4::bigint * interval '1 microsecond'
)
INSERT INTO leasehold_throughput (minute, queue, outcome, jobs)
SELECT date_trunc('minute', now()), c.queue, c.outcome, sum(c.jobs)
FROM unnest($1::text[], $2::text[], $3::bigint[]) AS c(queue, outcome, jobs)
GROUP BY c.queue, c.outcome
ORDER BY c.queue, c.outcome
ON CONFLICT (minute, queue, outcome)
DO UPDATE SET jobs = leasehold_throughput.jobs + EXCLUDED.jobs`

// RecordThroughput adds p.Counts to the current minute's totals and
// deletes the totals older than p.Keep.
func (d *Driver) RecordThroughput(ctx context.Context, p *driver.ThroughputParams) error {
	n := len(p.Counts)
	queues, outcomes, jobs := make([]string, n), make([]string, n), make([]int64, n)
	for i, c := range p.Counts {
		queues[i], outcomes[i], jobs[i] = c.Queue, string(c.Outcome), c.Jobs
	}
	if _, err := d.pool.Exec(ctx, recordThroughputSQL, queues, outcomes, jobs, micros(p.Keep)); err != nil {
		return fmt.Errorf("pgdriver: record throughput: %w", err)
	}
	return nil
}

// throughputSQL returns the totals of the minutes since $1 microseconds
// ago, oldest first, each minute's queues in byte order (COLLATE "C").
const throughputSQL = `SELECT minute, queue, outcome, jobs FROM leasehold_throughput
WHERE minute >= date_trunc('minute', now() - $1::bigint * interval '1 microsecond')
ORDER BY minute, queue COLLATE "C", outcome`

// Throughput returns the per-minute totals of the last since.
func (d *Driver) Throughput(ctx context.Context, since time.Duration) ([]*leasehold.ThroughputBucket, error) {
	rs, err := d.pool.Query(ctx, throughputSQL, micros(since))
	if err != nil {
		return nil, fmt.Errorf("pgdriver: throughput: %w", err)
	}
	defer rs.Close()
	var out []*leasehold.ThroughputBucket
	for rs.Next() {
		var (
			b       leasehold.ThroughputBucket
			outcome string
		)
		if err := rs.Scan(&b.Minute, &b.Queue, &outcome, &b.Jobs); err != nil {
			return nil, fmt.Errorf("pgdriver: throughput: %w", err)
		}
		b.Outcome = leasehold.Outcome(outcome)
		out = append(out, &b)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("pgdriver: throughput: %w", err)
	}
	return out, nil
}
