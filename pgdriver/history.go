package pgdriver

// An attempt's history row is written once, when the attempt ends, by the
// statement that ends it (migration 008): a claim writes only the job row,
// which holds the open attempt (attempt, lease_owner, claimed_at,
// heartbeat_at), and the finish, the takeover at claim and the watcher
// insert the row with its outcome. A completed job so leaves two dead row
// versions, both of its job row, and no dead history row.

// endAttemptsSQL follows a WITH list whose CTE ended holds the attempts a
// statement ends (columns id, attempt, owner, claimed_at, heartbeat_at,
// ended_at, outcome and error), and writes their history rows. An attempt
// claimed before migration 008 already has its row, open: that row is
// ended instead (keeping its owner and claim time, and its heartbeat when
// the job row has none), so an upgrade loses no attempt. Open rows are
// looked for once per statement, in migration 014's index of them alone
// (anyOpenAttemptSQL, a one-time filter), and by attempt only when one
// exists: with none, as in every database that no claim from before 008
// touched, each attempt costs one insert and no probe (and no dead
// version: an INSERT ... ON CONFLICT would also log the confirmation of
// each speculative insert). Every writer of an attempt's row holds its
// job's row lock, so no other statement writes the same row meanwhile.
const endAttemptsSQL = `, history_ended AS (
	UPDATE leasehold_attempts a
	SET ended_at = e.ended_at, outcome = e.outcome, error = e.error,
		heartbeat_at = coalesce(e.heartbeat_at, a.heartbeat_at)
	FROM ended e
	WHERE a.job_id = e.id AND a.attempt = e.attempt AND a.ended_at IS NULL
		AND ` + anyOpenAttemptSQL + `
	RETURNING a.job_id
), history AS (
	INSERT INTO leasehold_attempts (job_id, attempt, owner, claimed_at, heartbeat_at, ended_at, outcome, error)
	SELECT e.id, e.attempt, e.owner, coalesce(e.claimed_at, e.ended_at), e.heartbeat_at, e.ended_at,
		e.outcome, e.error
	FROM ended e
	WHERE NOT EXISTS (SELECT 1 FROM history_ended h WHERE h.job_id = e.id)
)`

// anyOpenAttemptSQL holds when some history row is open (written by a
// claim from before migration 008). It names no column of the statement
// around it, so PostgreSQL evaluates it once per statement, one probe of
// leasehold_attempts_open_idx (TestEndAttemptsProbesOnce).
const anyOpenAttemptSQL = `EXISTS (SELECT 1 FROM leasehold_attempts o WHERE o.ended_at IS NULL)`

// listAttemptsSQL reads job $1's history: its ended attempts' rows, and
// its open attempt, from the job row while it is processing (or from the
// open row written by a claim before migration 008).
const listAttemptsSQL = `SELECT ` + attemptColumns + ` FROM leasehold_attempts WHERE job_id = $1
UNION ALL
SELECT id, attempt, lease_owner, claimed_at, heartbeat_at, NULL::timestamptz, '', '', ''
FROM leasehold_jobs j
WHERE id = $1 AND status = 'processing' AND claimed_at IS NOT NULL
	AND NOT EXISTS (SELECT 1 FROM leasehold_attempts a WHERE a.job_id = j.id AND a.attempt = j.attempt)
ORDER BY attempt`
