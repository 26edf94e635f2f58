package sqlitedriver

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/leasehold/leasehold"
)

// jobCols is the column list every query returning a JobRow selects, in
// scanJob's order.
const jobCols = `id, kind, queue, status, priority, attempt, max_attempts, free_attempts,
    args, metadata, coalesce(unique_key, unique_scoped_key), run_at, created_at, lease_owner, lease_until,
    heartbeat_at, finished_at, last_error, cancel_requested, uuid`

// scanner is *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// scanJob reads one row selected with jobCols.
func scanJob(s scanner) (*leasehold.JobRow, error) {
	var (
		j                                   leasehold.JobRow
		status                              string
		args, meta                          []byte
		uniqueKey, owner, lastErr, jobUUID  sql.NullString
		runAt, createdAt                    int64
		leaseUntil, heartbeatAt, finishedAt sql.NullInt64
		cancelRequested                     bool
	)
	err := s.Scan(&j.ID, &j.Kind, &j.Queue, &status, &j.Priority, &j.Attempt, &j.MaxAttempts,
		&j.FreeAttempts, &args, &meta, &uniqueKey, &runAt, &createdAt, &owner, &leaseUntil,
		&heartbeatAt, &finishedAt, &lastErr, &cancelRequested, &jobUUID)
	if err != nil {
		return nil, err
	}
	j.State = leasehold.JobState(status)
	j.Args = json.RawMessage(args)
	j.Metadata = json.RawMessage(meta)
	j.UniqueKey = uniqueKey.String
	j.UUID = jobUUID.String // NULL for jobs inserted before schema version 2
	j.RunAt = fromMicros(runAt)
	j.CreatedAt = fromMicros(createdAt)
	j.LeaseOwner = owner.String
	j.LeaseUntil = nullTime(leaseUntil)
	j.HeartbeatAt = nullTime(heartbeatAt)
	j.FinishedAt = nullTime(finishedAt)
	j.LastError = lastErr.String
	j.CancelRequested = cancelRequested
	return &j, nil
}

// scanJobs reads all rows selected with jobCols and closes rows.
func scanJobs(rows *sql.Rows) ([]*leasehold.JobRow, error) {
	jobs, err := scanAll(rows, scanJob)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: read jobs: %w", err)
	}
	return jobs, nil
}

// scanAll reads every row with scan and closes rows.
func scanAll[T any](rows *sql.Rows, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// sortClaimOrder sorts jobs by priority, run_at and id: the claim order.
func sortClaimOrder(jobs []*leasehold.JobRow) {
	sort.Slice(jobs, func(a, b int) bool {
		x, y := jobs[a], jobs[b]
		if x.Priority != y.Priority {
			return x.Priority < y.Priority
		}
		if !x.RunAt.Equal(y.RunAt) {
			return x.RunAt.Before(y.RunAt)
		}
		return x.ID < y.ID
	})
}

// nullTime converts nullable Unix microseconds; NULL is the zero time.
func nullTime(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMicros(v.Int64)
}

// nullString maps "" to NULL.
func nullString(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}

// jsonParam encodes v as a JSON text parameter for json_each.
func jsonParam(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("sqlitedriver: encode parameter: %w", err)
	}
	return string(b), nil
}
