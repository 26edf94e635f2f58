package sqlitedriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// readClaimedSQL reads the jobs of the leases in ?1 (a JSON array of
// [id, attempt] pairs) that owner ?2 still holds. The columns need no
// table name: r's are rid and ratt.
//
// CROSS JOIN keeps the leases as the outer loop, each job found by id,
// and the unary + keeps the owner and state out of index choices: with
// the statistics of a backlog (ANALYZE saw no processing job), SQLite
// otherwise walks the processing jobs through leasehold_jobs_leases and
// scans the whole array for each (TestReadClaimedPlan).
const readClaimedSQL = `SELECT ` + claimedCols + `
FROM (SELECT value->>0 AS rid, value->>1 AS ratt FROM json_each(?1)) AS r
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
		refs  []byte
		n     int
		until int64
	)
	err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
		rows, err := d.runClaim(ctx, tx, p, kinds, now, claimRefsPending, claimRefsTakeOver)
		if err != nil {
			return err
		}
		refs, n, err = scanRefs(rows, refs[:0])
		if err != nil {
			return fmt.Errorf("sqlitedriver: claim: %w", err)
		}
		until = now + micros(p.TTL)
		return nil
	}, anyExpiredSQL, claimRefsPending, claimRefsTakeOver, endTakenOverSQL)
	if err != nil || n == 0 {
		return nil, err
	}
	jobs, err := d.readClaimed(ctx, refs, claimed{queue: p.Queue, owner: p.Owner, leaseUntil: fromMicros(until)})
	if err != nil {
		return nil, errors.Join(err, d.releaseUnread(ctx, p.Owner, refs))
	}
	sortClaimOrder(jobs)
	return jobs, nil
}

// scanRefs reads the (id, attempt) rows of a claim into a JSON array of
// pairs appended to buf, and closes rows. It returns the array and how
// many pairs it holds.
func scanRefs(rows *sql.Rows, buf []byte) ([]byte, int, error) {
	defer rows.Close()
	buf = append(buf, '[')
	n := 0
	var id, attempt int64
	for rows.Next() {
		if err := rows.Scan(&id, &attempt); err != nil {
			return nil, 0, err
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = append(strconv.AppendInt(append(buf, '['), id, 10), ',')
		buf = append(strconv.AppendInt(buf, attempt, 10), ']')
		n++
	}
	return append(buf, ']'), n, rows.Err()
}

// readClaimed reads the jobs of the leases in refs on the reader
// connections.
func (d *Driver) readClaimed(ctx context.Context, refs []byte, c claimed) ([]*leasehold.JobRow, error) {
	rows, err := d.readQuery(ctx, readClaimedSQL, string(refs), c.owner)
	if err != nil {
		return nil, d.wrapErr(fmt.Errorf("sqlitedriver: read claimed jobs: %w", err))
	}
	jobs, err := scanClaimed(rows, c)
	if err != nil {
		return nil, d.wrapErr(fmt.Errorf("sqlitedriver: read claimed jobs: %w", err))
	}
	return jobs, nil
}

// releaseUnread releases the leases in refs, which owner holds but whose
// jobs could not be read: each job is pending again at once, not charged
// to its retry budget (no handler ran). It runs on a context of its own,
// since the claim's may be what ended the read.
func (d *Driver) releaseUnread(ctx context.Context, owner string, refs []byte) error {
	var pairs [][2]int64
	if err := json.Unmarshal(refs, &pairs); err != nil {
		return fmt.Errorf("sqlitedriver: release unread leases: %w", err)
	}
	t := statemachine.Finish(statemachine.Ending{Outcome: leasehold.OutcomeReleased})
	params := make([]*driver.FinishParams, len(pairs))
	for i, r := range pairs {
		params[i] = &driver.FinishParams{ID: r[0], Owner: owner, Attempt: int(r[1]), Transition: t}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if _, err := d.Finish(rctx, nil, params); err != nil {
		return fmt.Errorf("sqlitedriver: release %d unread leases (they expire after their TTL): %w", len(pairs), err)
	}
	return nil
}
