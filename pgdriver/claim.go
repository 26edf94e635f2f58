package pgdriver

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// claimUpdate leases the rows of the picked CTE to $1 for $2 microseconds.
// The new attempts get no history row until they end: the job row holds
// them. The jobs are found through their primary key (= ANY of an array),
// whatever the planner guesses about the size of picked.
const claimUpdate = `
claimed AS (
	UPDATE leasehold_jobs
	SET status = 'processing', attempt = attempt + 1, lease_owner = $1,
		lease_until = now() + $2::bigint * interval '1 microsecond', heartbeat_at = NULL, claimed_at = now()
	WHERE id = ANY (ARRAY(SELECT id FROM picked))
	RETURNING *
)`

// claimReturn returns the leased rows in claim order.
const claimReturn = `
SELECT ` + jobColumns + ` FROM claimed ORDER BY priority, run_at, id`

// claimReturnTakenOver is claimReturn with one more column, whether the
// row was taken over from an expired lease (JobRow.TakenOver), read by
// newClaimScan's scan. The taken-over ids travel as an array, built once
// per statement, as in claimUpdate: "IN (SELECT ...)" would be a subplan
// that rescans the takeover CTE for every claimed row.
const claimReturnTakenOver = `
SELECT ` + jobColumns + `, id = ANY (ARRAY(SELECT id FROM takeover)) FROM claimed ORDER BY priority, run_at, id`

// claimTail is claimUpdate, and the end of the attempt of each job in the
// takeover CTE (id, attempt, lease_owner, claimed_at, heartbeat_at of the
// expired lease) with the outcome lease_expired, its history row written
// (endAttemptsSQL) in the same statement. It returns the rows with
// claimReturnTakenOver.
const claimTail = claimUpdate + `, ended AS (
	SELECT id, attempt, lease_owner AS owner, claimed_at, heartbeat_at, now() AS ended_at,
		'lease_expired' AS outcome, NULL::text AS error
	FROM takeover
)` + endAttemptsSQL + claimReturnTakenOver

// takeOverCond is the extra condition for claiming a processing job whose
// lease expired.
const takeOverCond = `status = 'processing' AND lease_until < now() AND NOT cancel_requested
		AND attempt - free_attempts < max_attempts`

// notPaused3 holds unless queue $3 is paused. It does not refer to the
// job row, so the planner runs it once per statement (a one-time filter
// on a primary-key lookup), not once per row.
const notPaused3 = `NOT EXISTS (SELECT 1 FROM leasehold_queues WHERE name = $3 AND paused_at IS NOT NULL)`

// claimStatements are the statements of one kind of claim: a full claim
// (full) and a cursor claim, with untouchedCond (after) and without it
// (afterPlain, for a server that lacks what the condition reads). They
// take $3 queue, $4 kinds, $5 limit, and a cursor claim the claim key
// after which it starts ($6, $7, $8).
type claimStatements struct{ full, after, afterPlain string }

// claimSets are the claim statements a Driver runs, by kind: takeOver
// also takes over expired leases (driver.ClaimParams TakeOver), which come
// first, but never the claiming owner's own ($1), each candidate set from
// its own partial index; pending takes pending jobs only. A pending claim
// has no takeover, so none of the CTEs that end the taken-over attempts,
// and PostgreSQL plans it in about half the time, which a claim of a few
// jobs feels (docs/benchmarks.md). Cursor claims are of that kind (the
// engine takes over expired leases in its full claims), and so are the
// claims of a queue that flags expired jobs as stuck or reconciles them.
type claimSets struct{ takeOver, pending claimStatements }

var defaultClaims = claimSets{takeOver: claimStatementsOf(true), pending: claimStatementsOf(false)}

// claimStatementsOf returns the claims that take over expired leases, or
// that take only pending jobs. A cursor claim's pending candidates come
// after the claim key in claim order: the index scan starts there instead
// of at the queue's first entry, past the entries of rows already claimed
// that an open transaction keeps vacuum from removing (driver.ClaimParams
// After; docs/design.md, "Claim cursor"). With untouchedCond, it also
// leaves out the rows another transaction has touched since its snapshot.
// No claim takes a job of a paused queue.
func claimStatementsOf(takeOver bool) claimStatements {
	return claimStatements{
		full: claimWith(takeOver, "", ""),
		after: claimWith(takeOver, snapCTE, cursorCond+`
		AND `+untouchedCond),
		afterPlain: claimWith(takeOver, "", cursorCond),
	}
}

// cursorCond bounds the pending candidates of a cursor claim.
const cursorCond = `
		AND (priority, run_at, id) > ($6::int, $7::timestamptz, $8::bigint)`

// snapCTE holds the statement's snapshot (s) and its xmax as a number
// (x), for untouchedCond; materialized, so each is read once.
const snapCTE = `snap AS MATERIALIZED (
	SELECT s, pg_snapshot_xmax(s)::text::bigint AS x FROM pg_current_snapshot() AS s
), `

// untouchedCond holds for a pending row version whose xmax is unset, or
// was set by a transaction that had ended when the statement's snapshot
// was taken (a claim or a lock that rolled back, a lock that committed):
// it leaves out, without trying their row locks, the rows that other
// claims are taking or took after that snapshot. FOR UPDATE SKIP LOCKED
// alone tries the lock of each (one lock-table lookup apiece), and when
// the other claim has committed meanwhile it locks the row's newest
// version, finds it no longer pending and leaves it out, but holds that
// lock until it commits, so the finish of the process that holds the
// lease waits for it. With many processes on one queue that happens to
// most rows (docs/design.md, "Claim cursor"). A row left out this way
// that is still pending is claimed by the next full claim, which has no
// such condition, or by a later cursor claim if it sorts after the cursor.
var untouchedCond = untouchedOf(`xmax`, `(SELECT s FROM snap)`, `(SELECT x FROM snap)`)

// farAhead is how far past the snapshot's xmax a row's xmax is taken for
// something other than a transaction id: no transaction begins that many
// transactions after the snapshot while the statement runs, but a
// multixact id (several lockers of one row), which untouchedOf cannot
// tell from a transaction id, may read as one. Such a row is tried as
// before, by its lock, rather than left to full claims.
const farAhead = `16777216`

// untouchedOf is untouchedCond of the 32-bit id xmax, given snapshot s and
// its xmax as a bigint, x. The snapshot lists top-level transactions only:
// a subtransaction's id counts as ended, and its row is tried by its lock.
func untouchedOf(xmax, s, x string) string {
	w := xid8Of(xmax, x)
	return `(` + xmax + ` = '0'::xid OR pg_visible_in_snapshot(` + w + `, ` + s + `)
			OR ` + w + ` >= (` + x + ` + ` + farAhead + `)::text::xid8)`
}

// xid8Of is SQL for the 64-bit transaction id (xid8) of xid, a 32-bit
// one, taken as the one nearest to ref, a 64-bit id as bigint (the
// snapshot's xmax): a row's xmax is never more than 2^31 transactions
// from it. An id before the first epoch comes out as 0, which every
// snapshot sees as ended.
func xid8Of(xid, ref string) string {
	return `greatest(` + ref + ` + (` + xid + `::text::bigint - ` + ref + ` % 4294967296 + 6442450944) % 4294967296 - 2147483648, 0)::text::xid8`
}

// claimWith is the claim statement with ctes, more CTEs put first, and
// after, a condition on the pending candidates, added to their WHERE
// clause; with takeOver, expired leases are candidates too, ahead of the
// pending jobs.
func claimWith(takeOver bool, ctes, after string) string {
	pending := `pending AS (
	SELECT id FROM leasehold_jobs
	WHERE status = 'pending' AND queue = $3 AND kind = ANY($4::text[]) AND run_at <= now()` + after + `
		AND ` + notPaused3 + `
	ORDER BY priority, run_at, id
	LIMIT $5::int`
	if !takeOver {
		return `WITH ` + ctes + pending + `
	FOR UPDATE SKIP LOCKED
), picked AS (
	SELECT id FROM pending
),` + claimUpdate + claimReturn
	}
	return `WITH ` + ctes + `takeover AS (
	SELECT id, attempt, lease_owner, claimed_at, heartbeat_at FROM leasehold_jobs
	WHERE ` + takeOverCond + ` AND lease_owner <> $1
		AND queue = $3 AND kind = ANY($4::text[]) AND ` + notPaused3 + `
	ORDER BY priority, run_at, id
	LIMIT $5::int
	FOR UPDATE SKIP LOCKED
), ` + pending + ` - (SELECT count(*) FROM takeover)
	FOR UPDATE SKIP LOCKED
), picked AS (
	SELECT id FROM takeover UNION ALL SELECT id FROM pending
),` + claimTail
}

// claimByIDSQL: $3 id, $4 take over, never a lease of the claiming owner
// $1 (driver.ClaimByIDParams TakeOver), as in Claim. Racers wait for the
// row lock and re-check the condition, so exactly one wins. A job of a
// paused queue is not claimable.
const claimByIDSQL = `WITH picked AS (
	SELECT id, status, attempt, lease_owner, claimed_at, heartbeat_at FROM leasehold_jobs j
	WHERE id = $3 AND ((status = 'pending' AND run_at <= now())
		OR ($4::boolean AND ` + takeOverCond + ` AND lease_owner <> $1))
		AND NOT EXISTS (SELECT 1 FROM leasehold_queues q WHERE q.name = j.queue AND q.paused_at IS NOT NULL)
	FOR UPDATE OF j
), takeover AS (
	SELECT id, attempt, lease_owner, claimed_at, heartbeat_at FROM picked WHERE status = 'processing'
),` + claimTail

// Claim leases up to p.Limit claimable jobs of p.Queue whose kind is in
// p.Kinds, in one statement that also ends the attempts it takes over.
func (d *Driver) Claim(ctx context.Context, p *driver.ClaimParams) ([]*leasehold.JobRow, error) {
	if p.Limit <= 0 || len(p.Kinds) == 0 {
		return nil, nil
	}
	stmts, scan := &d.claims.pending, newJobScan(&d.names).scan
	if p.TakeOver {
		stmts, scan = &d.claims.takeOver, newClaimScan(&d.names).scan
	}
	query, args := stmts.full, []any{p.Owner, micros(p.TTL), p.Queue, p.Kinds, p.Limit}
	plain := d.plainCursor.Load()
	if a := p.After; a != nil {
		query, args = stmts.after, append(args, a.Priority, a.RunAt, a.ID)
		if plain {
			query = stmts.afterPlain
		}
	}
	jobs, err := collect(ctx, pgxQuerier{d.pool}, scan, query, args...)
	if err != nil && p.After != nil && !plain && lacksSnapshotFuncs(err) {
		// Refused as it was parsed: nothing ran. The cursor claims go on
		// without the condition once one without it succeeds.
		if jobs, err = collect(ctx, pgxQuerier{d.pool}, scan, stmts.afterPlain, args...); err == nil {
			d.plainCursor.Store(true)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("pgdriver: claim: %w", err)
	}
	return jobs, nil
}

// lacksSnapshotFuncs reports whether err may say the server has no xmax
// column, snapshot functions or xid8 type, as some PostgreSQL-compatible
// engines do not: undefined column, function or object (also what a
// schema that is not leasehold's gets, so Claim switches only once the
// statement without them succeeds).
func lacksSnapshotFuncs(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "42703" || pe.Code == "42883" || pe.Code == "42704")
}

// ClaimByID leases job p.ID if it is claimable. It returns (nil, nil) when
// the job is not claimable and ErrJobNotFound when it does not exist.
func (d *Driver) ClaimByID(ctx context.Context, p *driver.ClaimByIDParams) (*leasehold.JobRow, error) {
	jobs, err := collect(ctx, pgxQuerier{d.pool}, newClaimScan(&d.names).scan, claimByIDSQL,
		p.Owner, micros(p.TTL), p.ID, p.TakeOver)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: claim %d: %w", p.ID, err)
	}
	if len(jobs) == 1 {
		return jobs[0], nil
	}
	if err := d.mustExist(ctx, p.ID); err != nil {
		return nil, fmt.Errorf("pgdriver: claim %d: %w", p.ID, err)
	}
	return nil, nil
}

// mustExist returns ErrJobNotFound when no job has id.
func (d *Driver) mustExist(ctx context.Context, id int64) error {
	var one int
	err := d.pool.QueryRow(ctx, "SELECT 1 FROM leasehold_jobs WHERE id = $1", id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return leasehold.ErrJobNotFound
	}
	return err
}

// heartbeatSQL renews the leases ($1 ids, $2 the leases, see leaseKeySQL)
// of owner $3 by $4 microseconds. Its fence hides status from the partial
// lease index, as finishSQL's does, so jobs are found by primary key.
//
// It locks the rows it renews with SKIP LOCKED, as a claim does, so that
// a row another transaction holds (a handler's business transaction
// after FenceTx, CheckpointTx or CompleteTx, until it ends) holds back
// only its own lease, not every lease of the client. The leases it did
// not renew are read in the statement's snapshot, without a lock: one
// held there is returned locked. So is a lease whose row a takeover has
// locked, or changed since the statement began: it is lost at the next
// heartbeat, one interval later than an UPDATE that waited would have
// told (the fence, not the heartbeat, keeps its late writes out).
//
// There is no join: the locked ids travel as an array to the UPDATE's
// primary-key scan, and the ids it did not renew (EXCEPT, hashed) to the
// read of the ones still held, which finds none in the common case. A
// join with the CTEs is planned for the ten rows the planner guesses for
// "= ANY($1)", as a nested loop that rescans one CTE for every row of
// the other: a heartbeat of 1,000 leases took 60-80 ms instead of 12-21.
const heartbeatSQL = `WITH renewable AS (
	SELECT coalesce(array_agg(s.id), '{}') AS ids FROM (
		SELECT j.id FROM leasehold_jobs j
		WHERE j.id = ANY($1::bigint[]) AND $2::jsonb ? ` + leaseKeySQL + `
			AND j.lease_owner = $3 AND j.status || '' = 'processing'
		FOR UPDATE SKIP LOCKED) s
), renewed AS (
	UPDATE leasehold_jobs j
	SET lease_until = now() + $4::bigint * interval '1 microsecond', heartbeat_at = now()
	WHERE j.id = ANY((SELECT ids FROM renewable)::bigint[]) AND $2::jsonb ? ` + leaseKeySQL + `
		AND j.lease_owner = $3 AND j.status || '' = 'processing'
	RETURNING j.id, j.cancel_requested
), skipped AS (
	SELECT coalesce(array_agg(e.id), '{}') AS ids FROM (
		SELECT unnest($1::bigint[]) EXCEPT SELECT id FROM renewed) e(id)
)
SELECT id, cancel_requested, false FROM renewed
UNION ALL
SELECT j.id, j.cancel_requested, true FROM leasehold_jobs j
WHERE j.id = ANY((SELECT ids FROM skipped)::bigint[]) AND $2::jsonb ? ` + leaseKeySQL + `
	AND j.lease_owner = $3 AND j.status || '' = 'processing'`

// Heartbeat renews all of p.Leases in one fenced statement on the dedicated
// heartbeat pool, and returns the leases still held.
func (d *Driver) Heartbeat(ctx context.Context, p *driver.HeartbeatParams) ([]*driver.HeartbeatResult, error) {
	if len(p.Leases) == 0 {
		return nil, nil
	}
	ids, leases := leaseSet(len(p.Leases), func(i int) driver.LeaseRef { return p.Leases[i] })
	res, err := collect(ctx, pgxQuerier{d.hbPool}, scanHeartbeat, heartbeatSQL,
		ids, leases, p.Owner, micros(p.TTL))
	if err != nil {
		return nil, fmt.Errorf("pgdriver: heartbeat: %w", err)
	}
	return res, nil
}

func scanHeartbeat(r scanner) (*driver.HeartbeatResult, error) {
	var h driver.HeartbeatResult
	err := r.Scan(&h.ID, &h.CancelRequested, &h.Locked)
	return &h, err
}
