package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// readClaimedSQL reads the jobs of the leases of lease set ?1 (see
// leaseRowsFrom) that owner ?2 still holds. The columns need no
// table name: r's are rid and ratt.
//
// CROSS JOIN keeps the leases as the outer loop, each job found by id,
// and the unary + keeps the owner and state out of index choices: with
// the statistics of a backlog (ANALYZE saw no processing job), SQLite
// otherwise walks the processing jobs through leasehold_jobs_leases and
// scans the whole array for each (TestReadClaimedPlan).
const readClaimedSQL = `SELECT ` + claimedCols + `
FROM ` + leaseRowsFrom + `?1` + leaseRowsTo + `
CROSS JOIN leasehold_jobs AS j ON j.id = r.rid
WHERE j.attempt = r.ratt AND +j.lease_owner = ?2 AND +j.status = 'processing'`

// releaseTimeout bounds the release of leases whose jobs could not be
// read.
const releaseTimeout = 10 * time.Second

// claimThenRead claims in a write transaction that returns only each
// lease's fence (id, attempt), and reads the claimed jobs after the
// commit, on the reader connections. The write lock is then held for the
// claim alone: copying a thousand jobs' columns out of SQLite and
// decoding them took about a quarter of the claim, while every other
// write of every process waited.
//
// The read returns the leases the claimer still holds; one lost between
// the commit and the read (a TTL shorter than the read) is left out, as
// no handler may run it. When the read fails, the leases it could not
// read are released (fenced) before the error is returned, so that a
// claim that committed never leaves leases to expire unseen.
func (d *Driver) claimThenRead(ctx context.Context, p *driver.ClaimParams, kinds string) ([]*leasehold.JobRow, error) {
	var (
		leases [][2]int64
		until  int64
		taken  takenOver
	)
	err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
		rows, t, err := d.runClaim(ctx, tx, p, kinds, now, claimRefsPending, claimRefsTakeOver)
		if err != nil {
			return err
		}
		taken = t
		leases, err = scanRefs(rows, leases[:0])
		if err != nil {
			return fmt.Errorf("sqlitedriver: claim: %w", err)
		}
		until = now + micros(p.TTL)
		return nil
	}, anyExpiredSQL, claimRefsPending, claimRefsTakeOver, endTakenOverReturningSQL)
	if err != nil || len(leases) == 0 {
		return nil, err
	}
	set := string(appendLeaseSet(nil, leases))
	jobs, err := d.readClaimed(ctx, set, claimed{queue: p.Queue, owner: p.Owner, leaseUntil: fromMicros(until)})
	if err != nil {
		return nil, errors.Join(err, d.releaseUnread(ctx, p.Owner, leases))
	}
	taken.mark(jobs)
	sortClaimOrder(jobs)
	return jobs, nil
}

// scanRefs appends the (id, attempt) rows of a claim to leases, and
// closes rows.
func scanRefs(rows *sql.Rows, leases [][2]int64) ([][2]int64, error) {
	defer rows.Close()
	var l [2]int64
	for rows.Next() {
		if err := rows.Scan(&l[0], &l[1]); err != nil {
			return nil, err
		}
		leases = append(leases, l)
	}
	return leases, rows.Err()
}

// readClaimed reads, on the reader connections, the jobs of the leases
// in set (a lease set, see leaseRowsFrom).
func (d *Driver) readClaimed(ctx context.Context, set string, c claimed) ([]*leasehold.JobRow, error) {
	rows, err := d.readQuery(ctx, readClaimedSQL, set, c.owner)
	if err != nil {
		return nil, d.wrapErr(fmt.Errorf("sqlitedriver: read claimed jobs: %w", err))
	}
	jobs, err := scanClaimed(rows, c)
	if err != nil {
		return nil, d.wrapErr(fmt.Errorf("sqlitedriver: read claimed jobs: %w", err))
	}
	return jobs, nil
}

// releaseUnread releases leases, each {id, attempt}, which owner holds
// but whose jobs could not be read: each job is pending again at once, not
// charged to its retry budget (no handler ran). It runs on a context of
// its own, since the claim's may be what ended the read.
func (d *Driver) releaseUnread(ctx context.Context, owner string, leases [][2]int64) error {
	t := statemachine.Finish(statemachine.Ending{Outcome: leasehold.OutcomeReleased})
	params := make([]*driver.FinishParams, len(leases))
	for i, r := range leases {
		params[i] = &driver.FinishParams{ID: r[0], Owner: owner, Attempt: int(r[1]), Transition: t}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if _, err := d.Finish(rctx, nil, params); err != nil {
		return fmt.Errorf("sqlitedriver: release %d unread leases (they expire after their TTL): %w", len(leases), err)
	}
	return nil
}
