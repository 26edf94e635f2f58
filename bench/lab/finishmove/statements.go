package main

// claimSQL leases up to $2 pending jobs of the default queue to $1 for
// 30 s: the claim of the bench's bare-SQL ceiling, the same for every
// variant.
const claimSQL = `WITH picked AS (
	SELECT id FROM leasehold_jobs
	WHERE status = 'pending' AND queue = 'default' AND run_at <= now()
	ORDER BY priority, run_at, id
	LIMIT $2
	FOR UPDATE SKIP LOCKED
)
UPDATE leasehold_jobs j
SET status = 'processing', attempt = j.attempt + 1, lease_owner = $1,
	lease_until = now() + interval '30 seconds', heartbeat_at = NULL, claimed_at = now()
FROM picked p WHERE j.id = p.id
RETURNING j.id, j.attempt`

// fence is the condition every variant's completion writes under: the
// leases $1 (ids) and $2 (a JSON object keyed "id:attempt") of owner $3.
const fence = `j.id = ANY($1::bigint[]) AND $2::jsonb ? (j.id::text || ':' || j.attempt::text)
		AND j.lease_owner = $3 AND j.status || '' = 'processing'`

// todaySQL is what leasehold writes today: the job row updated to
// completed, and the attempt's history row inserted.
const todaySQL = `WITH done AS (
	UPDATE leasehold_jobs j
	SET status = 'completed', finished_at = now(), lease_owner = NULL, lease_until = NULL
	WHERE ` + fence + `
	RETURNING j.id, j.attempt, j.claimed_at, j.heartbeat_at
)
INSERT INTO leasehold_attempts (job_id, attempt, owner, claimed_at, heartbeat_at, ended_at, outcome)
SELECT id, attempt, $3, claimed_at, heartbeat_at, now(), 'completed' FROM done`

// movedSQL is the design measured: the job row deleted from the hot
// table and inserted, with everything it held, into the final attempt's
// history row (lab_finished: the job's columns and the attempt's).
const movedSQL = `WITH done AS (
	DELETE FROM leasehold_jobs j
	WHERE ` + fence + `
	RETURNING j.*
)
INSERT INTO lab_finished (id, kind, queue, status, priority, attempt, max_attempts, free_attempts,
	args, metadata, unique_key, run_at, created_at, heartbeat_at, finished_at, last_error,
	cancel_requested, uuid, unique_scoped_key, unique_scope, unique_window, unique_window_start,
	claimed_at, owner, ended_at, outcome)
SELECT id, kind, queue, 'completed', priority, attempt, max_attempts, free_attempts,
	args, metadata, unique_key, run_at, created_at, heartbeat_at, now(), last_error,
	cancel_requested, uuid, unique_scoped_key, unique_scope, unique_window, unique_window_start,
	claimed_at, $3, now(), 'completed' FROM done`

// deletedSQL deletes the job and keeps nothing: graphile-worker's write
// set for a completed job, the floor of any design that keeps history.
const deletedSQL = `DELETE FROM leasehold_jobs j WHERE ` + fence

// setupSQL prepares the scratch schema after leasehold's migrations:
// the moved design's table, and no UUID cleanup on delete (in that
// design the job keeps its UUID row, as a completed job does today).
var setupSQL = []string{
	`ALTER TABLE leasehold_jobs DISABLE TRIGGER leasehold_jobs_uuid_delete`,
	`CREATE TABLE lab_finished (LIKE leasehold_jobs INCLUDING DEFAULTS)`,
	`ALTER TABLE lab_finished ADD COLUMN owner text, ADD COLUMN ended_at timestamptz,
		ADD COLUMN outcome text, ADD PRIMARY KEY (id)`,
	`CREATE INDEX lab_finished_at_idx ON lab_finished (finished_at)`,
}

// insertSQL inserts $1 no-op jobs, each with a UUID, which the insert
// trigger also writes to leasehold_job_uuids.
const insertSQL = `INSERT INTO leasehold_jobs (kind, queue, max_attempts, args, uuid)
SELECT 'noop', 'default', 25, '{}', gen_random_uuid() FROM generate_series(1, $1::int)`

// truncateSQL empties the lab's tables before each drain; settleSQL runs
// after the insert, as the bench's drain does before it starts.
const truncateSQL = `TRUNCATE leasehold_jobs, leasehold_attempts, lab_finished`

var settleSQL = []string{
	`VACUUM ANALYZE leasehold_jobs`,
	`VACUUM ANALYZE leasehold_attempts`,
	`VACUUM ANALYZE lab_finished`,
	`CHECKPOINT`,
}
