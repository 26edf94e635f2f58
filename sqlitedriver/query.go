package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// getJobSQL reads one job.
const getJobSQL = `SELECT ` + jobCols + ` FROM leasehold_jobs WHERE id = ?`

// GetJob returns job id, or ErrJobNotFound.
func (d *Driver) GetJob(ctx context.Context, id int64) (*leasehold.JobRow, error) {
	if err := d.file.check(); err != nil {
		return nil, err
	}
	j, err := scanJob(d.dbQueryRow(ctx, getJobSQL, id))
	j, err = jobOrNotFound(id, j, err)
	return j, d.wrapErr(err)
}

// getJob reads job id in tx, or returns ErrJobNotFound.
func getJob(ctx context.Context, tx *sql.Tx, id int64) (*leasehold.JobRow, error) {
	j, err := scanJob(tx.QueryRowContext(ctx, getJobSQL, id))
	return jobOrNotFound(id, j, err)
}

// jobOrNotFound maps sql.ErrNoRows to ErrJobNotFound.
func jobOrNotFound(id int64, j *leasehold.JobRow, err error) (*leasehold.JobRow, error) {
	// The Client adds the operation and the id: not repeated here.
	if errors.Is(err, sql.ErrNoRows) {
		return nil, leasehold.ErrJobNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: %w", err)
	}
	return j, nil
}

// ListAttempts returns the attempts of job jobID, oldest first, its open
// attempt included (listAttemptsSQL).
func (d *Driver) ListAttempts(ctx context.Context, jobID int64) ([]*leasehold.Attempt, error) {
	rows, err := d.dbQuery(ctx, listAttemptsSQL, jobID)
	if err != nil {
		return nil, d.wrapErr(fmt.Errorf("sqlitedriver: list attempts: %w", err))
	}
	defer rows.Close()
	var out []*leasehold.Attempt
	for rows.Next() {
		var (
			a                   leasehold.Attempt
			claimed             int64
			heartbeat, ended    sql.NullInt64
			outcome, errorsText sql.NullString
			resolution          sql.NullString
		)
		err := rows.Scan(&a.JobID, &a.Attempt, &a.Owner, &claimed, &heartbeat, &ended, &outcome, &errorsText, &resolution)
		if err != nil {
			return nil, d.wrapErr(fmt.Errorf("sqlitedriver: list attempts: %w", err))
		}
		a.ClaimedAt = fromMicros(claimed)
		a.HeartbeatAt = nullTime(heartbeat)
		a.EndedAt = nullTime(ended)
		a.Outcome = leasehold.Outcome(outcome.String)
		a.Error = errorsText.String
		a.Resolution = resolution.String
		out = append(out, &a)
	}
	if err := rows.Err(); err != nil {
		return nil, d.wrapErr(fmt.Errorf("sqlitedriver: list attempts: %w", err))
	}
	return out, nil
}

// searchCond matches a job with a string value, at any depth of its args
// or metadata, containing the parameter (folded by driver.SearchFold;
// SQLite's lower folds ASCII letters only, the same).
const searchCond = `EXISTS (SELECT 1 FROM json_tree(args) WHERE type = 'text' AND instr(lower(value), ?) > 0
    UNION ALL SELECT 1 FROM json_tree(metadata) WHERE type = 'text' AND instr(lower(value), ?) > 0)`

// ListJobs returns jobs matching p, ordered by id, descending with p.Desc
// (Limit 0 means 100).
func (d *Driver) ListJobs(ctx context.Context, p *leasehold.ListParams) ([]*leasehold.JobRow, error) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, arg any) {
		where = append(where, cond)
		args = append(args, arg)
	}
	states := p.States
	if p.ByFinish && len(states) == 0 {
		states = []leasehold.JobState{leasehold.StateCompleted, leasehold.StateFailed, leasehold.StateCancelled}
	}
	if len(states) > 0 {
		states, err := jsonParam(states)
		if err != nil {
			return nil, err
		}
		add(`status IN (SELECT value FROM json_each(?))`, states)
	}
	if p.Queue != "" {
		add(`queue = ?`, p.Queue)
	}
	if p.Kind != "" {
		add(`kind = ?`, p.Kind)
	}
	if p.Owner != "" {
		add(`lease_owner = ?`, p.Owner)
	}
	switch {
	case p.ByFinish && !p.FinishedAt.IsZero():
		op, id := ">", p.AfterID
		if p.Desc {
			op, id = "<", p.BeforeID
		}
		where = append(where, `(finished_at, id) `+op+` (?, ?)`)
		args = append(args, p.FinishedAt.UnixMicro(), id)
	default:
		if p.AfterID > 0 {
			add(`id > ?`, p.AfterID)
		}
		if p.BeforeID > 0 {
			add(`id < ?`, p.BeforeID)
		}
	}
	if p.Expired {
		where = append(where, `status = 'processing' AND lease_until < `+nowExpr)
	}
	if p.Search != "" {
		where = append(where, searchCond)
		args = append(args, driver.SearchFold(p.Search), driver.SearchFold(p.Search))
	}
	limit := p.Limit
	if limit <= 0 {
		limit = driver.DefaultListLimit
	}
	query := `SELECT ` + jobCols + ` FROM leasehold_jobs`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, ` AND `)
	}
	query += listOrder(p) + ` LIMIT ?`
	rows, err := d.dbQuery(ctx, query, append(args, limit)...) // at most 512 distinct queries
	if err != nil {
		return nil, d.wrapErr(fmt.Errorf("sqlitedriver: list jobs: %w", err))
	}
	// A damaged page met after the first rows fails here, not above.
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, d.wrapErr(err)
	}
	return jobs, nil
}

// listOrder is ListJobs' ORDER BY clause.
func listOrder(p *leasehold.ListParams) string {
	switch {
	case p.ByFinish && p.Desc:
		return ` ORDER BY finished_at DESC, id DESC`
	case p.ByFinish:
		return ` ORDER BY finished_at, id`
	case p.Desc:
		return ` ORDER BY id DESC`
	}
	return ` ORDER BY id`
}

// QueueStats returns per-queue counts by state, the age of the oldest
// claimable pending job, the live and expired lease counts and whether the
// queue is paused, ordered by queue; a paused queue with no jobs is
// included. One statement reads the counts, ages and leases, and two more
// read the never-claimed jobs and the paused queues; none takes the
// write lock.
func (d *Driver) QueueStats(ctx context.Context) ([]*leasehold.QueueStats, error) {
	now, err := d.Now(ctx)
	if err != nil {
		return nil, err
	}
	return d.queueStats(ctx, now.UnixMicro(), queueStatsSQL, neverClaimedSQL)
}

// queueStatsSQL aggregates per queue: each branch uses its own index.
const queueStatsSQL = `SELECT queue, status, count(*), NULL, 0, 0
    FROM leasehold_jobs GROUP BY queue, status` + queueStatsAges

// queueStatsAges is the branches of queueStatsSQL after the counts: the
// oldest due job and the leases of each queue.
const queueStatsAges = `
UNION ALL
SELECT queue, NULL, 0, min(run_at), 0, 0 FROM leasehold_jobs
    WHERE status = 'pending' AND run_at <= ?1 GROUP BY queue
UNION ALL
SELECT queue, NULL, 0, NULL, sum(lease_until >= ?1), sum(lease_until < ?1) FROM leasehold_jobs
    WHERE status = 'processing' GROUP BY queue`

// queueStats runs statsSQL (queueStatsSQL's columns) with ?1 now, and
// unclaimedSQL (neverClaimedSQL's) with ?1 now and then unclaimedArgs.
func (d *Driver) queueStats(ctx context.Context, now int64, statsSQL, unclaimedSQL string, unclaimedArgs ...any) ([]*leasehold.QueueStats, error) {
	rows, err := d.dbQuery(ctx, statsSQL, now)
	if err != nil {
		return nil, d.wrapErr(fmt.Errorf("sqlitedriver: queue stats: %w", err))
	}
	defer rows.Close()
	byQueue := make(map[string]*leasehold.QueueStats)
	var queues []string
	for rows.Next() {
		var (
			queue         string
			status        sql.NullString
			count         int64
			oldest        sql.NullInt64
			live, expired int64
		)
		if err := rows.Scan(&queue, &status, &count, &oldest, &live, &expired); err != nil {
			return nil, d.wrapErr(fmt.Errorf("sqlitedriver: queue stats: %w", err))
		}
		s := byQueue[queue]
		if s == nil {
			s = &leasehold.QueueStats{Queue: queue, Counts: make(map[leasehold.JobState]int64)}
			byQueue[queue] = s
			queues = append(queues, queue)
		}
		if status.Valid {
			s.Counts[leasehold.JobState(status.String)] = count
		}
		if oldest.Valid {
			s.OldestPending = driver.Micros(now - oldest.Int64)
		}
		s.LiveLeases += live
		s.ExpiredLeases += expired
	}
	if err := rows.Err(); err != nil {
		return nil, d.wrapErr(fmt.Errorf("sqlitedriver: queue stats: %w", err))
	}
	sort.Strings(queues)
	out := make([]*leasehold.QueueStats, len(queues))
	for i, q := range queues {
		out[i] = byQueue[q]
	}
	if err := d.neverClaimed(ctx, byQueue, unclaimedSQL, append([]any{now}, unclaimedArgs...)...); err != nil {
		return nil, err
	}
	paused, err := d.pausedQueues(ctx)
	if err != nil {
		return nil, err
	}
	return driver.MergePaused(out, paused), nil
}

// neverClaimedSQL returns, per (queue, kind) with due jobs never claimed
// at ?1, their count, the oldest run_at and the kind's live leases.
const neverClaimedSQL = `SELECT queue, kind, sum(status = 'pending'),
    min(CASE WHEN status = 'pending' THEN run_at END), sum(status = 'processing')
FROM leasehold_jobs
WHERE (status = 'pending' AND attempt = 0 AND run_at <= ?1)
    OR (status = 'processing' AND lease_until >= ?1)
GROUP BY queue, kind
HAVING sum(status = 'pending') > 0
ORDER BY queue, kind`

// neverClaimed fills QueueStats.NeverClaimed of the queues in byQueue.
// args are the statement's: now, and the limit for activeUnclaimedSQL.
func (d *Driver) neverClaimed(ctx context.Context, byQueue map[string]*leasehold.QueueStats, query string, args ...any) error {
	now := args[0].(int64)
	rows, err := d.dbQuery(ctx, query, args...)
	if err != nil {
		return d.wrapErr(fmt.Errorf("sqlitedriver: queue stats: %w", err))
	}
	defer rows.Close()
	for rows.Next() {
		var (
			queue  string
			b      leasehold.KindBacklog
			oldest int64
		)
		if err := rows.Scan(&queue, &b.Kind, &b.Due, &oldest, &b.LiveLeases); err != nil {
			return d.wrapErr(fmt.Errorf("sqlitedriver: queue stats: %w", err))
		}
		b.OldestDue = driver.Micros(now - oldest)
		if q := byQueue[queue]; q != nil {
			q.NeverClaimed = append(q.NeverClaimed, &b)
		}
	}
	if err := rows.Err(); err != nil {
		return d.wrapErr(fmt.Errorf("sqlitedriver: queue stats: %w", err))
	}
	return nil
}
