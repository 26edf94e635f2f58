package main

import "slices"

// claimSQL leases up to $2 pending jobs of the default queue to $1 for
// 30 s: the claim of the bench's bare-SQL ceiling, the same for every
// variant, with leasehold's claim cursor: the scan starts after id $3.
// The lab's jobs share their priority and run_at (one insert statement),
// so id order is claim order and the cursor is the largest id claimed.
// "finished_at IS NULL", true of every pending job, lets the planner use
// hotTodayIndexes' claim index, whose predicate it is.
const claimSQL = `WITH picked AS (
	SELECT id FROM leasehold_jobs
	WHERE status = 'pending' AND finished_at IS NULL AND queue = 'default' AND run_at <= now() AND id > $3
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
	finishedAtIndex,
}

const finishedAtIndex = `CREATE INDEX lab_finished_at_idx ON lab_finished (finished_at)`

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

// migratedIndexes are the hot table's migrated indexes whose keys or
// predicates name a column the claim writes (status, lease_until), which
// makes every claim a non-HOT update: a new row version with an entry in
// the primary key and in each index whose predicate it meets.
var migratedIndexes = []string{
	`CREATE INDEX leasehold_jobs_ready_idx ON leasehold_jobs (queue, priority, run_at, id) WHERE status = 'pending'`,
	`CREATE INDEX leasehold_jobs_lease_idx ON leasehold_jobs (lease_until) WHERE status = 'processing'`,
	`CREATE INDEX leasehold_jobs_finished_idx ON leasehold_jobs (finished_at)
		WHERE status IN ('completed', 'failed', 'cancelled')`,
	`CREATE UNIQUE INDEX leasehold_jobs_scoped_unique_key_idx ON leasehold_jobs
		(kind, unique_scoped_key, unique_scope, unique_window, unique_window_start)
		WHERE unique_scoped_key IS NOT NULL
		AND (unique_scope = 'forever' OR status NOT IN ('completed', 'failed', 'cancelled'))`,
	`CREATE INDEX leasehold_jobs_flagged_idx ON leasehold_jobs (status, id)
		WHERE status NOT IN ('pending', 'processing', 'completed')`,
}

// dropIndexes drops the migratedIndexes.
func dropIndexes() []string {
	return []string{`DROP INDEX leasehold_jobs_ready_idx, leasehold_jobs_lease_idx,
		leasehold_jobs_finished_idx, leasehold_jobs_scoped_unique_key_idx, leasehold_jobs_flagged_idx`}
}

// hotIndexes replace them in the hot-claim design, where a finish moves
// the job out of the table, so every row in it is unfinished: one index
// on the claim's order and nothing on status or the lease, which makes a
// claim a HOT update (the table's fillfactor leaves room on its page).
// The leased rows stay at the head of this index, where the claim
// cursor steps over them, and no index finds expired leases: the cost
// this design would pay for it (docs/benchmarks.md).
var hotIndexes = []string{
	`CREATE INDEX lab_hot_ready_idx ON leasehold_jobs (queue, priority, run_at, id)`,
}

// hotTodayIndexes make a claim a HOT update with today's finish, which
// keeps the job in the table: the claim's index and the finished one
// name finished_at, which the finish writes and the claim does not.
var hotTodayIndexes = []string{
	`CREATE INDEX lab_hot_ready_idx ON leasehold_jobs (queue, priority, run_at, id) WHERE finished_at IS NULL`,
	`CREATE INDEX lab_hot_finished_idx ON leasehold_jobs (finished_at) WHERE finished_at IS NOT NULL`,
}

// hotBRINIndexes are hotIndexes with a BRIN index for the finished
// rows' finished_at: the moved rows arrive in finish order, so a block
// range summary serves retention's range scans, and an insert adds no
// B-tree entry for it.
var hotBRINIndexes = append(slices.Clone(hotIndexes),
	`DROP INDEX lab_finished_at_idx`,
	`CREATE INDEX lab_finished_at_idx ON lab_finished USING brin (finished_at)`)

// restoreSQL undoes any variant's indexes, on emptied tables.
var restoreSQL = append([]string{truncateSQL,
	`DROP INDEX IF EXISTS lab_hot_ready_idx, lab_hot_finished_idx, lab_finished_at_idx`,
	finishedAtIndex}, migratedIndexes...)
