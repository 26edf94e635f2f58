package sqlitedriver

import (
	"database/sql"
	"encoding/json"
	"time"

	"github.com/leasehold/leasehold"
)

// claimedCols is what a batch claim returns of each job: the columns of
// jobCols the claim does not set. Every claimed job is processing, in the
// claim's queue, owned by the claimer until now + TTL, with no heartbeat
// yet, so those five columns are filled in from the claim instead of
// being copied out of SQLite and decoded again for every job of every
// batch (each column returned costs about 2 % of a claim).
const claimedCols = `id, kind, priority, attempt, max_attempts, free_attempts,
    args, metadata, coalesce(unique_key, unique_scoped_key), run_at, created_at,
    finished_at, last_error, cancel_requested, uuid`

// claimed is what scanClaimed fills in from the claim itself.
type claimed struct {
	queue, owner string
	leaseUntil   time.Time
}

// scanClaimed reads the rows of a batch claim (selected with claimedCols)
// and closes rows.
func scanClaimed(rows *sql.Rows, c claimed) ([]*leasehold.JobRow, error) {
	var buf claimedRow
	dest := buf.dest()
	return scanAll(rows, func(s scanner) (*leasehold.JobRow, error) {
		if err := s.Scan(dest...); err != nil {
			return nil, err
		}
		return buf.job(c), nil
	})
}

// claimedRow holds one row selected with claimedCols as it is scanned.
// One serves every row of a claim, with its Scan destinations built
// once: a variable per column passed to Scan escapes to the heap, which
// cost ten allocations per claimed job, made while the claim holds the
// database's write lock.
type claimedRow struct {
	id, runAt, createdAt           int64
	priority, attempt, maxAttempts int
	freeAttempts                   int
	kind                           string
	args, meta                     []byte
	uniqueKey, lastErr, uuid       sql.NullString
	finishedAt                     sql.NullInt64
	cancelRequested                bool
}

// dest returns the Scan destinations of r, in claimedCols' order.
func (r *claimedRow) dest() []any {
	return []any{&r.id, &r.kind, &r.priority, &r.attempt, &r.maxAttempts, &r.freeAttempts,
		&r.args, &r.meta, &r.uniqueKey, &r.runAt, &r.createdAt, &r.finishedAt,
		&r.lastErr, &r.cancelRequested, &r.uuid}
}

// job returns the job of the row last scanned into r, with what the claim
// set filled in from c. Scan gives args and meta slices of their own
// (it copies bytes into a *[]byte), so the job may keep them.
func (r *claimedRow) job(c claimed) *leasehold.JobRow {
	return &leasehold.JobRow{
		ID: r.id, Kind: r.kind, Queue: c.queue, State: leasehold.StateProcessing,
		Priority: r.priority, Attempt: r.attempt, MaxAttempts: r.maxAttempts, FreeAttempts: r.freeAttempts,
		Args: json.RawMessage(r.args), Metadata: json.RawMessage(r.meta), UniqueKey: r.uniqueKey.String,
		UUID:  r.uuid.String, // NULL for jobs inserted before schema version 2
		RunAt: fromMicros(r.runAt), CreatedAt: fromMicros(r.createdAt),
		LeaseOwner: c.owner, LeaseUntil: c.leaseUntil,
		FinishedAt: nullTime(r.finishedAt), // HeartbeatAt: the claim cleared it
		LastError:  r.lastErr.String, CancelRequested: r.cancelRequested,
	}
}
