package sqlitedriver

// An attempt's history row is written once, when the attempt ends, in the
// transaction that ends it (migration 008): a claim writes only the job
// row, which holds the open attempt (attempt, lease_owner, claimed_at,
// heartbeat_at), and the finish, the takeover at claim and the watcher
// insert the row with its outcome. SQLite cannot return a row's old
// values from an UPDATE, so each of them inserts the history rows first,
// from the job rows its fence matches, and then updates the jobs with the
// same fence in the same write transaction, where no other writer runs
// between the two.
//
// An attempt claimed before migration 008 already has its row, open: the
// upsert ends that row instead (keeping its owner and claim time, and its
// heartbeat when the job row has none), so an upgrade loses no attempt.

// historyInsert starts the statements that write the history rows of
// ended attempts; historyUpsert ends them. The claim time falls back to
// the end for a job claimed before migration 008, whose row exists and
// keeps its own.
const (
	historyInsert = `INSERT INTO leasehold_attempts
    (job_id, attempt, owner, claimed_at, heartbeat_at, ended_at, outcome, error)
`
	historyUpsert = `
ON CONFLICT (job_id, attempt) DO UPDATE SET ended_at = excluded.ended_at, outcome = excluded.outcome,
    error = excluded.error, heartbeat_at = coalesce(excluded.heartbeat_at, heartbeat_at)`
)

// endFinishedFrom selects the history rows of the leases in ?2 (the JSON
// shape of applySQL) whose fence matches, with their outcome and error,
// at ?1: for a job that applySQL's cancel rule cancels, the entry's
// cancelled outcome (its outcome when it has none). Statements add their
// fence beyond applySQL's, if any, and historyUpsert.
const endFinishedFrom = historyInsert + `SELECT j.id, j.attempt, j.lease_owner, coalesce(j.claimed_at, ?1),
    j.heartbeat_at, ?1,
    CASE WHEN j.cancel_requested AND r.state IN ('pending', 'stuck') THEN coalesce(r.cancelled, r.outcome)
        ELSE r.outcome END,
    NULLIF(r.err, '')
FROM (SELECT value->>0 AS rid, value->>1 AS ratt, value->>2 AS rowner, value->>3 AS state,
        value->>10 AS outcome, value->>11 AS err, value->>12 AS cancelled FROM json_each(?2)) AS r
JOIN leasehold_jobs AS j ON j.id = r.rid
WHERE j.attempt = r.ratt AND j.lease_owner = r.rowner AND +j.status = 'processing'`

// endFinishedSQL writes the history rows of finishSQL's leases;
// endRescuedSQL those of rescueApplySQL's, fenced by the lease still
// being expired as well.
const (
	endFinishedSQL = endFinishedFrom + historyUpsert
	endRescuedSQL  = endFinishedFrom + ` AND j.lease_until < ?1` + historyUpsert
)

// endUniformSQL writes the history rows of the leases of lease set ?2
// (see leaseRowsFrom) of owner ?3 whose fence matches (uniformFrom's), with
// outcome ?4 and error ?5, at ?1.
const endUniformSQL = endUniformFrom + historyUpsert

// endUniformPlainSQL and endUniformCancelledSQL split endUniformSQL for a
// transition to pending or stuck, which the cancel rule turns into
// cancelled for a job whose cancel was requested: the first writes the
// rows of the jobs without a request, the second those of the jobs with
// one (?4 then the outcome recorded for a job so cancelled). Neither
// evaluates a CASE per row, and the second runs only when the first did
// not write every lease's row.
const (
	endUniformPlainSQL     = endUniformFrom + ` AND NOT j.cancel_requested` + historyUpsert
	endUniformCancelledSQL = endUniformFrom + ` AND j.cancel_requested` + historyUpsert
)

// endUniformFrom selects what endUniformSQL writes; statements add a
// condition, if any, and historyUpsert.
const endUniformFrom = historyInsert + `SELECT j.id, j.attempt, j.lease_owner, coalesce(j.claimed_at, ?1),
    j.heartbeat_at, ?1, ?4, NULLIF(?5, '')
FROM ` + leaseRowsFrom + `?2` + leaseRowsTo + `
JOIN leasehold_jobs AS j ON j.id = r.rid
WHERE j.attempt = r.ratt AND j.lease_owner = ?3 AND +j.status = 'processing'`

// endTakenOverSQL writes, at ?1, the history rows of the expired leases
// the claim that follows it in the same transaction takes over: the same
// candidates (claimExpiredSQL, in the same order and limit, which come
// before any pending job), ended lease_expired. Its parameters are the
// claim's.
const endTakenOverSQL = historyInsert + `SELECT id, attempt, lease_owner, coalesce(claimed_at, ?1), heartbeat_at,
    ?1, 'lease_expired', NULL
FROM leasehold_jobs WHERE id IN (SELECT id FROM (` + claimExpiredSQL + `))` + historyUpsert

// endTakenOverByIDSQL is endTakenOverSQL for ClaimByID: job ?4 when
// takeover ?5 is allowed and claimByIDSQL will take its expired lease.
const endTakenOverByIDSQL = historyInsert + `SELECT id, attempt, lease_owner, coalesce(claimed_at, ?1), heartbeat_at,
    ?1, 'lease_expired', NULL
FROM leasehold_jobs
WHERE id = ?4 AND ?5 AND ` + takeOverCond + `
  AND NOT EXISTS (SELECT 1 FROM leasehold_queues q
    WHERE q.name = leasehold_jobs.queue AND q.paused_at IS NOT NULL)` + historyUpsert

// listAttemptsSQL reads job ?1's history: its ended attempts' rows, and
// its open attempt, from the job row while it is processing (or from the
// open row written by a claim before migration 008).
const listAttemptsSQL = `SELECT job_id, attempt, owner, claimed_at, heartbeat_at, ended_at,
    outcome, error, resolution FROM leasehold_attempts WHERE job_id = ?1
UNION ALL
SELECT id, attempt, lease_owner, claimed_at, heartbeat_at, NULL, NULL, NULL, NULL
FROM leasehold_jobs AS j
WHERE id = ?1 AND status = 'processing' AND claimed_at IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM leasehold_attempts AS a WHERE a.job_id = j.id AND a.attempt = j.attempt)
ORDER BY attempt`
