package pgdriver

import (
	"context"
	"fmt"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// finishSQL applies fenced outcomes ($1 ids; $2 an object keyed by lease,
// see leaseKeySQL, whose values hold each lease's owner, outcome, delay in
// microseconds and error) and ends the matching history rows, in one
// statement. statement_timestamp() stands for now because the statement
// may run in a caller's long transaction.
//
// The fence compares an expression of status, not status itself:
//
//	j.status || '' = 'processing'
//
// so that the planner cannot use the partial lease index: it holds a dead
// entry for every job completed since the last vacuum, and a plan that
// scans it (chosen when the statistics say few jobs are processing) makes
// each finish slower than the last. Jobs are looked up by primary key
// whatever the statistics say. Heartbeat does the same.
const finishSQL = `WITH done AS (
	UPDATE leasehold_jobs j SET
		(status, run_at, finished_at, free_attempts, last_error, lease_owner, lease_until) = (
			SELECT
				CASE i.outcome
					WHEN 'completed' THEN 'completed'
					WHEN 'failed' THEN 'failed'
					WHEN 'cancelled' THEN 'cancelled'
					ELSE 'pending' END,
				CASE WHEN i.outcome IN ('retried', 'snoozed')
					THEN statement_timestamp() + i.delay * interval '1 microsecond'
					ELSE j.run_at END, -- released and lease_lost jobs keep their place in line
				CASE WHEN i.outcome IN ('completed', 'failed', 'cancelled')
					THEN statement_timestamp() END,
				j.free_attempts + CASE WHEN i.outcome IN ('snoozed', 'released') THEN 1 ELSE 0 END,
				CASE
					WHEN i.outcome IN ('retried', 'failed', 'lease_lost') THEN nullif(i.error, '')
					WHEN i.outcome = 'cancelled' AND i.error <> '' THEN i.error
					ELSE j.last_error END,
				NULL::text, NULL::timestamptz
			FROM jsonb_to_record($2::jsonb -> ` + leaseKeySQL + `)
				AS i(owner text, outcome text, delay bigint, error text))
	WHERE j.id = ANY($1::bigint[]) AND j.status || '' = 'processing'
		AND j.lease_owner = $2::jsonb -> ` + leaseKeySQL + ` ->> 'owner'
	RETURNING j.id, j.attempt, j.heartbeat_at, $2::jsonb -> ` + leaseKeySQL + ` AS input
), history AS (
	UPDATE leasehold_attempts a
	SET ended_at = statement_timestamp(), outcome = d.input ->> 'outcome',
		error = nullif(d.input ->> 'error', ''), heartbeat_at = d.heartbeat_at
	FROM done d
	WHERE a.job_id = d.id AND a.attempt = d.attempt
)
SELECT id FROM done ORDER BY id`

// finishCompletedSQL is finishSQL for the common batch: every outcome
// completed, every lease of one owner ($1 ids, $2 the leases, see
// leaseKeySQL, $3 owner). It writes the same columns with the same fence,
// and saves the per-lease values and CASE expressions: about a quarter of
// the cost of a finish, which is half of what a drained job costs the
// database.
const finishCompletedSQL = `WITH done AS (
	UPDATE leasehold_jobs j SET
		status = 'completed', finished_at = statement_timestamp(), lease_owner = NULL, lease_until = NULL
	WHERE j.id = ANY($1::bigint[]) AND $2::jsonb ? ` + leaseKeySQL + `
		AND j.lease_owner = $3 AND j.status || '' = 'processing'
	RETURNING j.id, j.attempt, j.heartbeat_at
), history AS (
	UPDATE leasehold_attempts a
	SET ended_at = statement_timestamp(), outcome = 'completed', error = NULL, heartbeat_at = d.heartbeat_at
	FROM done d
	WHERE a.job_id = d.id AND a.attempt = d.attempt
)
SELECT id FROM done ORDER BY id`

// Finish applies fenced outcomes in one statement, in tx when it is non-nil
// (see the package documentation for accepted types), and ends their
// history rows. It returns the ids whose fence matched.
func (d *Driver) Finish(ctx context.Context, tx any, ps []*driver.FinishParams) ([]int64, error) {
	q, err := d.querierFor(tx)
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, nil
	}
	if allCompleted(ps) {
		return d.finishCompleted(ctx, q, ps)
	}
	for _, p := range ps {
		if !finishOutcome(p.Outcome) {
			return nil, fmt.Errorf("pgdriver: finish %d: unknown outcome %q", p.ID, p.Outcome)
		}
	}
	ids, in, err := finishInputs(ps)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: finish: %w", err)
	}
	done, err := collect(ctx, q, newIDScan().scan, finishSQL, ids, in)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: finish: %w", err)
	}
	return done, nil
}

// allCompleted reports whether every outcome of ps is completed, by one
// owner.
func allCompleted(ps []*driver.FinishParams) bool {
	for _, p := range ps {
		if p.Outcome != leasehold.OutcomeCompleted || p.Owner != ps[0].Owner {
			return false
		}
	}
	return true
}

// finishCompleted runs finishCompletedSQL.
func (d *Driver) finishCompleted(ctx context.Context, q querier, ps []*driver.FinishParams) ([]int64, error) {
	ids, leases := leaseSet(len(ps), func(i int) driver.LeaseRef {
		return driver.LeaseRef{ID: ps[i].ID, Attempt: ps[i].Attempt}
	})
	done, err := collect(ctx, q, newIDScan().scan, finishCompletedSQL, ids, leases, ps[0].Owner)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: finish: %w", err)
	}
	return done, nil
}

// finishOutcome reports whether o is an outcome Finish can apply.
func finishOutcome(o leasehold.Outcome) bool {
	switch o {
	case leasehold.OutcomeCompleted, leasehold.OutcomeRetried, leasehold.OutcomeFailed,
		leasehold.OutcomeSnoozed, leasehold.OutcomeReleased, leasehold.OutcomeCancelled,
		leasehold.OutcomeLeaseLost:
		return true
	}
	return false
}

// defaultRescueLimit bounds one watcher pass when RescueParams.Limit is 0.
const defaultRescueLimit = 1000

// rescueSQL: $1 flag queues, $2 limit. The new state is decided on the
// locked row; SKIP LOCKED makes concurrent watchers harmless.
const rescueSQL = `WITH picked AS (
	SELECT id, lease_owner AS old_owner,
		CASE WHEN cancel_requested THEN 'cancelled'
			WHEN attempt - free_attempts >= max_attempts THEN 'failed'
			WHEN queue = ANY($1::text[]) THEN 'stuck'
			ELSE 'pending' END AS new_status
	FROM leasehold_jobs
	WHERE status = 'processing' AND lease_until < now()
	ORDER BY lease_until, id
	LIMIT $2::int
	FOR UPDATE SKIP LOCKED
), moved AS (
	UPDATE leasehold_jobs j SET
		status = p.new_status,
		finished_at = CASE WHEN p.new_status IN ('cancelled', 'failed') THEN now() END,
		lease_owner = NULL,
		lease_until = NULL,
		last_error = 'lease expired (owner ' || coalesce(p.old_owner, '') || ')'
	FROM picked p
	WHERE j.id = p.id
	RETURNING j.id, j.queue, j.kind, j.attempt, p.old_owner, j.status, j.heartbeat_at, j.last_error
), history AS (
	UPDATE leasehold_attempts a
	SET ended_at = now(), outcome = 'lease_expired', heartbeat_at = m.heartbeat_at, error = m.last_error
	FROM moved m
	WHERE a.job_id = m.id AND a.attempt = m.attempt AND a.ended_at IS NULL
)
SELECT id, queue, kind, attempt, coalesce(old_owner, ''), status FROM moved ORDER BY id`

// RescueExpired moves up to p.Limit (default 1000) processing jobs whose
// lease expired to cancelled, failed, stuck or pending, and ends their
// history rows with OutcomeLeaseExpired.
func (d *Driver) RescueExpired(ctx context.Context, p *driver.RescueParams) ([]*leasehold.RescuedJob, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = defaultRescueLimit
	}
	flag := p.FlagQueues
	if flag == nil {
		flag = []string{}
	}
	jobs, err := collect(ctx, pgxQuerier{d.pool}, scanRescued, rescueSQL, flag, limit)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: rescue expired: %w", err)
	}
	return jobs, nil
}

func scanRescued(r scanner) (*leasehold.RescuedJob, error) {
	var (
		j     leasehold.RescuedJob
		state string
	)
	if err := r.Scan(&j.ID, &j.Queue, &j.Kind, &j.Attempt, &j.Owner, &state); err != nil {
		return nil, err
	}
	j.NewState = leasehold.JobState(state)
	return &j, nil
}
