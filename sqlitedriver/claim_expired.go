package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/leasehold/leasehold"
)

// anyExpiredSQL reports whether any lease, of any queue, expired before
// ?1: one seek in leasehold_jobs_leases.
const anyExpiredSQL = `SELECT EXISTS (SELECT 1 FROM leasehold_jobs
    WHERE status = 'processing' AND lease_until < ?1)`

// claimQuery returns the statement of a claim at now in tx: the one that
// takes over expired leases (after endTakenOverSQL) when takeOver is set
// and some lease has expired, else the one that claims pending jobs only.
// With no expired lease the two claim the same jobs, and the second saves
// ending no attempt, the search for takeover candidates and the sort of
// the union, which in a drain cost a third of the claim. tx holds the
// write lock, so no lease can expire unseen between this check and the
// claim: both read the clock once, at now.
func (d *Driver) claimQuery(ctx context.Context, tx *sql.Tx, takeOver bool, now int64) (string, error) {
	if !takeOver {
		return claimSQLPending, nil
	}
	var expired bool
	if err := d.queryRow(ctx, tx, anyExpiredSQL, now).Scan(&expired); err != nil {
		return "", fmt.Errorf("sqlitedriver: look for expired leases: %w", err)
	}
	if expired {
		return claimSQLTakeOver, nil
	}
	return claimSQLPending, nil
}

// endTakenOverReturningSQL and endTakenOverByIDReturningSQL are
// endTakenOverSQL and endTakenOverByIDSQL returning the id of each job
// whose attempt they end: the jobs the claim that follows takes over,
// since it runs in the same write transaction at the same now, over the
// same candidates. The upsert's RETURNING returns a row it updated (an
// open history row from before migration 008) as well as one it
// inserted.
const (
	endTakenOverReturningSQL = endTakenOverSQL + `
RETURNING job_id`
	endTakenOverByIDReturningSQL = endTakenOverByIDSQL + `
RETURNING job_id`
)

// takenOver holds the ids of the jobs whose expired leases a claim takes
// over; nil when it takes over none.
type takenOver map[int64]struct{}

// endTakenOver ends, in tx, the attempts the takeover claim of args (the
// claim's parameters) takes over, and returns their jobs' ids.
func (d *Driver) endTakenOver(ctx context.Context, tx *sql.Tx, args []any) (takenOver, error) {
	rows, err := d.query(ctx, tx, endTakenOverReturningSQL, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: end taken-over attempts: %w", err)
	}
	ids, err := scanAll(rows, func(s scanner) (int64, error) {
		var id int64
		err := s.Scan(&id)
		return id, err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: end taken-over attempts: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	t := make(takenOver, len(ids))
	for _, id := range ids {
		t[id] = struct{}{}
	}
	return t, nil
}

// mark sets JobRow.TakenOver on the jobs of t.
func (t takenOver) mark(jobs []*leasehold.JobRow) {
	if len(t) == 0 {
		return
	}
	for _, j := range jobs {
		_, j.TakenOver = t[j.ID]
	}
}
