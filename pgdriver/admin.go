package pgdriver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// GetJob returns job id, or ErrJobNotFound.
func (d *Driver) GetJob(ctx context.Context, id int64) (*leasehold.JobRow, error) {
	j, err := d.getJob(ctx, id)
	if err != nil {
		return nil, wrapOp(err)
	}
	return j, nil
}

// wrapOp names the driver in err, unless err is one of the library's
// sentinel errors: the Client adds the operation and the job id, so
// repeating them here would print them twice.
func wrapOp(err error) error {
	if errors.Is(err, leasehold.ErrJobNotFound) || errors.Is(err, leasehold.ErrJobRunning) ||
		errors.Is(err, leasehold.ErrJobFinished) || errors.Is(err, leasehold.ErrJobNotFinished) ||
		errors.Is(err, leasehold.ErrUniqueKeyHeld) || errors.Is(err, leasehold.ErrJobCompleted) ||
		errors.Is(err, leasehold.ErrJobChanging) {
		return err
	}
	return fmt.Errorf("pgdriver: %w", err)
}

func (d *Driver) getJob(ctx context.Context, id int64) (*leasehold.JobRow, error) {
	return d.oneJob(ctx, "SELECT "+jobColumns+" FROM leasehold_jobs WHERE id = $1", id)
}

// oneJob runs a query returning at most one job; no row is ErrJobNotFound.
func (d *Driver) oneJob(ctx context.Context, query string, args ...any) (*leasehold.JobRow, error) {
	jobs, err := collect(ctx, pgxQuerier{d.pool}, newJobScan(&d.names).scan, query, args...)
	if err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, leasehold.ErrJobNotFound
	}
	return jobs[0], nil
}

// ListAttempts returns the history of job jobID, oldest attempt first,
// its open attempt included (listAttemptsSQL).
func (d *Driver) ListAttempts(ctx context.Context, jobID int64) ([]*leasehold.Attempt, error) {
	as, err := collect(ctx, pgxQuerier{d.pool}, scanAttempt, listAttemptsSQL, jobID)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: %w", err) // the Client names the job
	}
	return as, nil
}

// ListJobs returns the jobs matching p, ordered by id (descending with
// p.Desc), at most p.Limit (driver.DefaultListLimit when 0).
func (d *Driver) ListJobs(ctx context.Context, p *leasehold.ListParams) ([]*leasehold.JobRow, error) {
	if p == nil {
		p = &leasehold.ListParams{}
	}
	query, args := listQuery(p)
	jobs, err := collect(ctx, pgxQuerier{d.pool}, newJobScan(&d.names).scan, query, args...)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: list jobs: %w", err)
	}
	return jobs, nil
}

// The search folds the ASCII letters of a text and nothing else, whatever
// the database's locale, as driver.SearchFold does: lower() under the C
// collation maps only A-Z (and is much faster than translate()).

// searchCond matches a job with a string value, at any depth of its args
// or metadata, containing the parameter (folded by driver.SearchFold).
const searchCond = `EXISTS (SELECT 1 FROM jsonb_path_query(args, 'strict $.**') v
	WHERE jsonb_typeof(v) = 'string' AND strpos(lower((v #>> '{}') COLLATE "C"), $%[1]d) > 0
	UNION ALL SELECT 1 FROM jsonb_path_query(metadata, 'strict $.**') v
	WHERE jsonb_typeof(v) = 'string' AND strpos(lower((v #>> '{}') COLLATE "C"), $%[1]d) > 0)`

// stateCond is ListJobs' condition on the status: the states written out
// as literals (they are validated, and the planner matches literals
// against the partial indexes' predicates, which it cannot do for a
// parameter), and with ByFinish the finished states the finish-time
// index holds.
func stateCond(p *leasehold.ListParams) string {
	states := p.States
	if p.ByFinish && len(states) == 0 {
		states = []leasehold.JobState{leasehold.StateCompleted, leasehold.StateFailed, leasehold.StateCancelled}
	}
	if len(states) == 0 {
		return ""
	}
	lits := make([]string, len(states))
	for i, s := range states {
		if !s.Valid() {
			return "false"
		}
		lits[i] = "'" + string(s) + "'"
	}
	return "status IN (" + strings.Join(lits, ", ") + ")"
}

// searchPrefilter is a cheap necessary condition of searchCond: a string
// value holding the text makes the JSON text of args or metadata hold it
// too, so most jobs are ruled out without walking their values. It holds
// only for texts that the JSON form writes unescaped (textSearchable).
const searchPrefilter = `(strpos(lower(args::text COLLATE "C"), $%[1]d) > 0
	OR strpos(lower(metadata::text COLLATE "C"), $%[1]d) > 0)`

// textSearchable reports whether s appears as itself in the JSON text of a
// string value holding it: it has no quote, backslash or control
// character, which JSON escapes.
func textSearchable(s string) bool {
	for _, r := range s {
		if r == '"' || r == '\\' || r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// listQuery builds ListJobs' statement from the non-zero filters of p.
func listQuery(p *leasehold.ListParams) (string, []any) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if cond := stateCond(p); cond != "" {
		where = append(where, cond)
	}
	if p.Queue != "" {
		add("queue = $%d", p.Queue)
	}
	if p.Kind != "" {
		add("kind = $%d", p.Kind)
	}
	if p.Owner != "" {
		add("lease_owner = $%d", p.Owner)
	}
	switch {
	case p.ByFinish && !p.FinishedAt.IsZero():
		op, id := ">", p.AfterID
		if p.Desc {
			op, id = "<", p.BeforeID
		}
		args = append(args, p.FinishedAt, id)
		where = append(where, fmt.Sprintf("(finished_at, id) %s ($%d, $%d)", op, len(args)-1, len(args)))
	default:
		if p.AfterID > 0 {
			add("id > $%d", p.AfterID)
		}
		if p.BeforeID > 0 {
			add("id < $%d", p.BeforeID)
		}
	}
	if p.Expired {
		where = append(where, "status = 'processing' AND lease_until < now()")
	}
	if p.Search != "" {
		if textSearchable(p.Search) {
			add(searchPrefilter, driver.SearchFold(p.Search))
		}
		add(searchCond, driver.SearchFold(p.Search))
	}
	limit := p.Limit
	if limit <= 0 {
		limit = driver.DefaultListLimit
	}
	var b strings.Builder
	b.WriteString("SELECT " + jobColumns + " FROM leasehold_jobs")
	if len(where) > 0 {
		b.WriteString(" WHERE " + strings.Join(where, " AND "))
	}
	args = append(args, limit)
	order := "id"
	if p.ByFinish {
		order = "finished_at, id"
	}
	if p.Desc {
		order = strings.ReplaceAll(order, ",", " DESC,") + " DESC"
	}
	fmt.Fprintf(&b, " ORDER BY %s LIMIT $%d", order, len(args))
	return b.String(), args
}

// retrySQL makes job $1 pending now with a fresh retry budget, unless it
// is processing, or completed and $2 (allow completed) is false, or $3
// (the attempt the caller saw) is not 0 and not its attempt.
const retrySQL = `UPDATE leasehold_jobs SET status = 'pending', run_at = now(),
	free_attempts = attempt, finished_at = NULL, cancel_requested = false,
	lease_owner = NULL, lease_until = NULL, heartbeat_at = NULL
WHERE id = $1 AND status <> 'processing' AND (status <> 'completed' OR $2)
	AND ($3::int = 0 OR attempt = $3::int)
RETURNING ` + jobColumns

// RetryJob makes job p.ID pending now with a fresh retry budget. It
// returns ErrJobRunning for a processing job, ErrJobCompleted for a
// completed one unless p.Completed, ErrJobChanging for one no longer at
// p.Attempt (when set), ErrJobNotFound for a missing one and
// ErrUniqueKeyHeld for a finished one whose scoped key another job holds.
func (d *Driver) RetryJob(ctx context.Context, p *driver.RetryParams) (*leasehold.JobRow, error) {
	j, err := d.updateOr(ctx, p.ID, retrySQL, func(j *leasehold.JobRow) error {
		if err := attemptMoved(j, p.Attempt); err != nil {
			return err
		}
		return retryRefused(j.State, p.Completed)
	}, p.Completed, p.Attempt)
	if scopedKeyTaken(err) {
		err = fmt.Errorf("%w: %w", leasehold.ErrUniqueKeyHeld, err)
	}
	if err != nil {
		return nil, wrapOp(err)
	}
	return j, nil
}

// retryRefused returns the error of a retry that found the job in state
// s, or nil when s allows it (the state changed since the UPDATE).
func retryRefused(s leasehold.JobState, completed bool) error {
	switch {
	case s == leasehold.StateProcessing:
		return leasehold.ErrJobRunning
	case s == leasehold.StateCompleted && !completed:
		return leasehold.ErrJobCompleted
	}
	return nil
}

// attemptMoved returns ErrJobChanging when a retry that saw the job at
// attempt (0: any) finds it at another: it was claimed again since.
func attemptMoved(j *leasehold.JobRow, attempt int) error {
	if attempt != 0 && j.Attempt != attempt {
		return fmt.Errorf("%w: it ran again since (attempt %d, not %d)", leasehold.ErrJobChanging, j.Attempt, attempt)
	}
	return nil
}

// strandedByCancel and strandedByDelete are the last_error and history
// resolution (strandedSQL's $2, formatted with the reconcile job's id) of
// a job whose reconcile job an operator cancelled or deleted before it
// decided.
const (
	strandedByCancel = "stuck: reconcile job %s was cancelled by an operator before it decided; retry or cancel this job"
	strandedByDelete = "stuck: reconcile job %s was deleted by an operator without having decided; retry or cancel this job"
)

// maxOperatorTries is how many times updateOr tries its write before it
// gives up with ErrJobChanging.
const maxOperatorTries = 3

// updateOr runs a conditional UPDATE of job id ($1, then more as $2...)
// returning the job. When no row matched, it reads the job to find out
// why: refuse returns the error for the state found, or nil when the
// state changed meanwhile and the update is worth another try. After
// maxOperatorTries such misses it returns ErrJobChanging.
func (d *Driver) updateOr(ctx context.Context, id int64, update string, refuse func(*leasehold.JobRow) error, more ...any) (*leasehold.JobRow, error) {
	args := append([]any{id}, more...)
	for try := 0; ; try++ {
		j, err := d.oneJob(ctx, update, args...)
		if !errors.Is(err, leasehold.ErrJobNotFound) {
			return j, err
		}
		if j, err = d.getJob(ctx, id); err != nil {
			return nil, err
		}
		if err := refuse(j); err != nil {
			return j, err
		}
		if try == maxOperatorTries-1 {
			return nil, fmt.Errorf("%w: %d writes matched nothing while the job was %s when read",
				leasehold.ErrJobChanging, maxOperatorTries, j.State)
		}
	}
}

// cancelSQL cancels job $1 (or marks it, processing) and sends the job
// it reconciles, if it is a reconcile job, to stuck (strandedSQL, $2).
const cancelSQL = `WITH c AS (
	UPDATE leasehold_jobs SET
		status = CASE WHEN status = 'processing' THEN status ELSE 'cancelled' END,
		finished_at = CASE WHEN status = 'processing' THEN finished_at ELSE now() END,
		cancel_requested = cancel_requested OR status = 'processing'
	WHERE id = $1 AND status IN ('pending', 'stuck', 'reconciling', 'processing')
	RETURNING *
)` + strandedSQL + `
SELECT ` + jobColumns + ` FROM c`

// strandedSQL follows a CTE c of the jobs an operator cancelled or
// deleted: a reconcile job among them (its kind, or the unique key its
// args rebuild, as statemachine.Reconciler knows one) whose job is still
// reconciling at the attempt it reconciles sends that job to stuck, its
// last_error and the attempt's resolution set to format($2, reconcile
// job id), so that no job is left reconciling without a reconcile job to
// decide it. The job's row is found by primary key (the args' numbers
// cast only when they are integers).
const strandedSQL = `, stranded AS (
	UPDATE leasehold_jobs t SET status = 'stuck', last_error = format($2::text, c.id)
	FROM c
	WHERE (c.kind = '` + leasehold.ReconcileKind + `' OR coalesce(c.unique_key, c.unique_scoped_key) =
			'reconcile:' || (c.args->>'idempotency_key') || ':' || (c.args->>'attempt'))
		AND t.id = ` + argJobID + ` AND t.attempt = ` + argAttempt + `
		AND t.status = 'reconciling'
	RETURNING t.id, t.attempt, t.last_error
), stranded_history AS (
	UPDATE leasehold_attempts a SET resolution = s.last_error
	FROM stranded s
	WHERE a.job_id = s.id AND a.attempt = s.attempt
)`

// argJobID and argAttempt are the job_id and attempt of c's args as
// bigints, NULL when they are not integers.
const (
	argJobID = `(CASE WHEN jsonb_typeof(c.args->'job_id') = 'number' AND (c.args->>'job_id') ~ '^[0-9]{1,18}$'
		THEN (c.args->>'job_id')::bigint END)`
	argAttempt = `(CASE WHEN jsonb_typeof(c.args->'attempt') = 'number' AND (c.args->>'attempt') ~ '^[0-9]{1,9}$'
		THEN (c.args->>'attempt')::int END)`
)

// CancelJob cancels a pending, stuck or reconciling job at once and sets CancelRequested
// on a processing one; a reconcile job's job still reconciling goes to
// stuck with it (strandedSQL). For a terminal job it returns the job and
// ErrJobFinished; for a missing one ErrJobNotFound.
func (d *Driver) CancelJob(ctx context.Context, id int64) (*leasehold.JobRow, error) {
	j, err := d.updateOr(ctx, id, cancelSQL, func(j *leasehold.JobRow) error {
		if j.State.Finished() {
			return leasehold.ErrJobFinished
		}
		return nil
	}, strandedByCancel)
	if err != nil {
		return j, wrapOp(err)
	}
	return j, nil
}

// deleteSQL deletes finished job $1, its history and its checkpoints in
// one statement, and sends the job it reconciles, if it is a reconcile
// job, to stuck (strandedSQL, $2).
const deleteSQL = `WITH c AS (
	DELETE FROM leasehold_jobs WHERE id = $1 AND status IN ('completed', 'failed', 'cancelled')
	RETURNING *
), history AS (
	DELETE FROM leasehold_attempts a USING c d WHERE a.job_id = d.id
), checkpoints AS (
	DELETE FROM leasehold_checkpoints k USING c d WHERE k.job_id = d.id
)` + strandedSQL + `
SELECT ` + jobColumns + ` FROM c`

// DeleteJob deletes a finished job and its history. For an unfinished job
// it returns the job and ErrJobRunning or ErrJobNotFinished; for a missing
// one ErrJobNotFound.
func (d *Driver) DeleteJob(ctx context.Context, id int64) (*leasehold.JobRow, error) {
	j, err := d.updateOr(ctx, id, deleteSQL, unfinished, strandedByDelete)
	if err != nil {
		return j, wrapOp(err)
	}
	return j, nil
}

// unfinished returns why a job in j's state cannot be deleted, or nil for
// a finished one.
func unfinished(j *leasehold.JobRow) error {
	switch {
	case j.State == leasehold.StateProcessing:
		return leasehold.ErrJobRunning
	case !j.State.Finished():
		return leasehold.ErrJobNotFinished
	}
	return nil
}
