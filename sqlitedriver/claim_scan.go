package sqlitedriver

import (
	"database/sql"
	"encoding/json"
	"time"

	"github.com/leasehold/leasehold"
)

// claimedCols is what a batch claim returns of each job: the columns of
// jobCols the claim does not set. Every claimed job is processing, in the
// claim's queue, owned by the claimer until now + TTL, so those four
// columns are filled in from the claim instead of being copied out of
// SQLite and decoded again for every job of every batch.
const claimedCols = `id, kind, priority, attempt, max_attempts, free_attempts,
    args, metadata, coalesce(unique_key, unique_scoped_key), run_at, created_at,
    heartbeat_at, finished_at, last_error, cancel_requested, uuid`

// claimed is what scanClaimed fills in from the claim itself.
type claimed struct {
	queue, owner string
	leaseUntil   time.Time
}

// scanClaimed reads the rows of a batch claim (selected with claimedCols)
// and closes rows.
func scanClaimed(rows *sql.Rows, c claimed) ([]*leasehold.JobRow, error) {
	return scanAll(rows, func(s scanner) (*leasehold.JobRow, error) { return scanClaimedRow(s, c) })
}

// scanClaimedRow reads one row selected with claimedCols.
func scanClaimedRow(s scanner, c claimed) (*leasehold.JobRow, error) {
	var (
		j                       leasehold.JobRow
		args, meta              []byte
		uniqueKey, lastErr, id  sql.NullString
		runAt, createdAt        int64
		heartbeatAt, finishedAt sql.NullInt64
	)
	err := s.Scan(&j.ID, &j.Kind, &j.Priority, &j.Attempt, &j.MaxAttempts, &j.FreeAttempts,
		&args, &meta, &uniqueKey, &runAt, &createdAt, &heartbeatAt, &finishedAt, &lastErr,
		&j.CancelRequested, &id)
	if err != nil {
		return nil, err
	}
	j.State = leasehold.StateProcessing
	j.Queue = c.queue
	j.LeaseOwner = c.owner
	j.LeaseUntil = c.leaseUntil
	j.Args = json.RawMessage(args)
	j.Metadata = json.RawMessage(meta)
	j.UniqueKey = uniqueKey.String
	j.UUID = id.String // NULL for jobs inserted before schema version 2
	j.RunAt = fromMicros(runAt)
	j.CreatedAt = fromMicros(createdAt)
	j.HeartbeatAt = nullTime(heartbeatAt)
	j.FinishedAt = nullTime(finishedAt)
	j.LastError = lastErr.String
	return &j, nil
}
