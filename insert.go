package leasehold

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/driver"
)

// Limits on insert options.
const (
	MaxPriority     = 32767
	MaxMaxAttempts  = 10_000
	MaxUniqueKeyLen = 512
)

// InsertOpts are per-job insert options. A nil *InsertOpts takes every
// default.
type InsertOpts struct {
	// Queue defaults to "default".
	Queue string
	// Priority orders claimable jobs of a queue: lower runs first. 0 to
	// MaxPriority, default 0.
	Priority int
	// RunAt schedules the job for an absolute time, in the years 1 to
	// 9999 UTC, whatever its location (the drivers store the instant, and
	// beyond those years it would not survive their storage or JSON).
	// Zero means now.
	RunAt time.Time
	// RunIn schedules the job this long after the database clock's now.
	// Use RunAt or RunIn, not both.
	RunIn time.Duration
	// MaxAttempts is the retry budget. Default: the kind's
	// WorkerOptions.MaxAttempts when this client has a worker for the
	// kind that sets it, else Config.DefaultMaxAttempts.
	MaxAttempts int
	// UniqueKey, when set, makes the insert idempotent: while a job of
	// the same kind holds the key, an insert with it returns that job
	// (InsertResult.Duplicate) instead of adding one. The key spans one
	// kind: jobs of other kinds may use the same key. Within that kind it
	// spans every queue. Which jobs hold it is the UniqueScope's and the
	// UniqueWindow's choice; by default every job with the key, finished
	// or not, for as long as it is kept (until Purge or retention
	// deletes it). Racing inserts of one key, in any number of processes
	// and within one batch, add exactly one job: the database's unique
	// indexes decide.
	// A key is at most MaxUniqueKeyLen bytes of valid UTF-8 without
	// control characters (no NUL, tab, newline or escape sequence: keys
	// are printed in logs and tables).
	UniqueKey string
	// UniqueScope says which jobs with the key hold it: UniqueForever
	// (the default) or UniqueWhileUnfinished (until the job is
	// completed, failed or cancelled). It needs a UniqueKey.
	UniqueScope UniqueScope
	// UniqueWindow, when positive, makes the key unique only within a
	// window of time: the job holds its key within the window of this
	// length that holds its insert, windows being aligned on the Unix
	// epoch of the database clock (a one-hour window runs from one full
	// hour, UTC, to the next), counted from the insert, not from RunAt.
	// In the next window the key is free again. It combines with the
	// scope: UniqueWhileUnfinished with a window holds the key until the
	// job finishes or the window ends, whichever is first. A whole
	// number of microseconds, at least MinUniqueWindow; it needs a
	// UniqueKey.
	//
	// The scope and the window are part of the key: jobs inserted with
	// another UniqueScope or UniqueWindow never block each other, so give
	// one kind's key one scope and one window.
	UniqueWindow time.Duration
	// Metadata is a JSON object stored with the job, for the caller's use.
	// It is checked like the job's arguments (see InvalidInputError),
	// with a size limit of its own of Config.MaxPayloadBytes
	// (ErrPayloadTooLarge).
	Metadata json.RawMessage
}

// InsertManyParams is one job of a batch insert.
type InsertManyParams struct {
	Args Args
	Opts *InsertOpts
}

// Insert adds a job in its own transaction and wakes this client's
// fetcher for its queue (other processes are woken by the driver's
// notifications, or poll).
//
// An error other than a refusal of the job (such as an
// *InvalidInputError, returned before any statement) may leave the
// insert's outcome unknown: when the connection broke or ctx ended after
// the statement reached a PostgreSQL server, the transaction may have
// committed. A fault review
// found 191 of 1,453 inserts that failed on a short deadline in the
// database. To retry such an error safely, insert with a UniqueKey: the
// retry then returns the job the first attempt inserted, if it did. The
// same holds for InsertMany and InsertBulk. A scoped key (UniqueScope
// UniqueWhileUnfinished, or a UniqueWindow) holds only while its job is
// unfinished or its window lasts: a retry after that inserts a second job.
func (c *Client) Insert(ctx context.Context, args Args, opts *InsertOpts) (*InsertResult, error) {
	res, err := c.insert(ctx, nil, []InsertManyParams{{Args: args, Opts: opts}}, false)
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// InsertTx adds a job inside the caller's transaction: it exists only if
// tx commits. tx is a transaction type the driver accepts (pgx.Tx or
// *sql.Tx for pgdriver, *sql.Tx for sqlitedriver).
func (c *Client) InsertTx(ctx context.Context, tx any, args Args, opts *InsertOpts) (*InsertResult, error) {
	if err := c.checkTx(tx); err != nil {
		return nil, err
	}
	res, err := c.insert(ctx, tx, []InsertManyParams{{Args: args, Opts: opts}}, false)
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// InsertMany adds several jobs in one transaction (in tx when non-nil; a
// typed nil such as a nil *sql.Tx is ErrUnsupportedTx): one statement, and
// a read of the jobs holding unique keys when some are taken. Results are
// in the order of jobs. When one job is refused, or the call fails,
// nothing is inserted (without tx; with tx, nothing commits unless tx
// does) and the *InvalidInputError's Index says which job was refused.
func (c *Client) InsertMany(ctx context.Context, tx any, jobs []InsertManyParams) ([]*InsertResult, error) {
	if tx != nil {
		if err := c.checkTx(tx); err != nil {
			return nil, err
		}
	}
	return c.insert(ctx, tx, jobs, true)
}

// InsertBulk adds many jobs as fast as the database allows (COPY on
// PostgreSQL) without returning them, and reports how many it inserted
// (jobs whose unique key another job holds, in the table or earlier in
// jobs, are skipped). When one job is refused,
// nothing is inserted and the *InvalidInputError's Index says which one.
func (c *Client) InsertBulk(ctx context.Context, jobs []InsertManyParams) (int64, error) {
	built, err := c.buildInserts(jobs, true)
	if err != nil {
		return 0, err
	}
	var n int64
	_, err = c.interceptJobs(ctx, nil, built, true, func(ctx context.Context, jobs []*InsertJob) ([]*InsertResult, error) {
		params := toInsertParams(jobs)
		n, err = c.driver.InsertBulk(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("leasehold: bulk insert: %w", err)
		}
		c.wakeQueues(params)
		return nil, nil
	})
	return n, err
}

func (c *Client) insert(ctx context.Context, tx any, jobs []InsertManyParams, batch bool) ([]*InsertResult, error) {
	built, err := c.buildInserts(jobs, batch)
	if err != nil {
		return nil, err
	}
	res, err := c.interceptJobs(ctx, tx, built, batch, func(ctx context.Context, jobs []*InsertJob) ([]*InsertResult, error) {
		params := toInsertParams(jobs)
		res, err := c.driver.Insert(ctx, tx, params)
		if err != nil {
			return nil, fmt.Errorf("leasehold: insert: %w", err)
		}
		c.wakeQueues(params)
		return res, nil
	})
	if err == nil && len(res) != len(built) {
		// An insert middleware returned without next's results: callers
		// index them, so say so rather than hand back a short slice.
		return nil, fmt.Errorf("%w: %d results for %d jobs (the jobs may have been inserted)", ErrMiddlewareResults, len(res), len(built))
	}
	return res, err
}

func (c *Client) wakeQueues(params []*driver.InsertParams) {
	seen := map[string]bool{}
	for _, p := range params {
		if !seen[p.Queue] {
			seen[p.Queue] = true
			c.wake(p.Queue)
		}
	}
}

// buildInserts validates every job before any SQL; in a batch, a refusal
// names the job's index.
func (c *Client) buildInserts(jobs []InsertManyParams, batch bool) ([]*InsertJob, error) {
	if len(jobs) == 0 {
		return nil, invalid(ErrInvalidArgs, "jobs", "no jobs to insert")
	}
	built := make([]*InsertJob, len(jobs))
	for i, j := range jobs {
		b, err := c.buildInsert(j.Args, j.Opts)
		if err != nil && batch {
			err = atIndex(err, i)
		}
		if err != nil {
			return nil, err
		}
		built[i] = b
	}
	return built, nil
}

func (c *Client) buildInsert(args Args, opts *InsertOpts) (*InsertJob, error) {
	kind, data, err := encodeArgs(args, c.cfg.MaxPayloadBytes)
	if err != nil {
		return nil, err
	}
	j := &InsertJob{Kind: kind, Args: data}
	if opts != nil {
		j.Opts = *opts
	}
	if j.Opts.Queue == "" {
		j.Opts.Queue = DefaultQueue
	}
	if j.Opts.MaxAttempts == 0 {
		j.Opts.MaxAttempts = c.cfg.Workers.maxAttempts(kind)
	}
	if j.Opts.MaxAttempts == 0 {
		j.Opts.MaxAttempts = c.cfg.DefaultMaxAttempts
	}
	if err := validateOpts(&j.Opts, c.cfg.MaxPayloadBytes); err != nil {
		return nil, err
	}
	return j, nil
}

// toInsertParams returns the driver's parameters for checked jobs, each
// with a new UUID.
func toInsertParams(jobs []*InsertJob) []*driver.InsertParams {
	params := make([]*driver.InsertParams, len(jobs))
	for i, j := range jobs {
		o := &j.Opts
		params[i] = &driver.InsertParams{
			Kind: j.Kind, Queue: o.Queue, Args: j.Args, Metadata: o.Metadata, Priority: o.Priority,
			MaxAttempts: o.MaxAttempts, UniqueKey: o.UniqueKey, RunAt: o.RunAt, RunIn: o.RunIn, Notify: true,
			UniqueWhileUnfinished: o.UniqueScope == UniqueWhileUnfinished, UniqueWindow: o.UniqueWindow,
			UUID: newJobUUID(),
		}
	}
	return params
}

// validateOpts checks options with defaults applied, returning an
// *InvalidInputError; metadata, like the arguments, may take up to limit
// bytes.
func validateOpts(o *InsertOpts, limit int) error {
	if err := ValidateQueue(o.Queue); err != nil {
		return err
	}
	switch {
	case o.Priority < 0 || o.Priority > MaxPriority:
		return invalid(ErrInvalidArgs, "priority", "%d not in 0..%d", o.Priority, MaxPriority)
	case o.MaxAttempts < 1 || o.MaxAttempts > MaxMaxAttempts:
		return invalid(ErrInvalidArgs, "max_attempts", "%d not in 1..%d", o.MaxAttempts, MaxMaxAttempts)
	case o.RunIn < 0:
		return invalid(ErrInvalidArgs, "run_at", "negative RunIn %v", o.RunIn)
	case o.RunIn > 0 && !o.RunAt.IsZero():
		return invalid(ErrInvalidArgs, "run_at", "set RunAt or RunIn, not both")
	case !o.RunAt.IsZero() && !storableYear(o.RunAt):
		return invalid(ErrInvalidArgs, "run_at", "RunAt %s is outside the years 1 to 9999", o.RunAt.UTC().Format(time.RFC3339))
	}
	if field, p := uniqueProblem(o); p != "" {
		return invalid(ErrInvalidArgs, field, "%s", p)
	}
	return checkMetadata(o.Metadata, limit)
}

// storableYear reports whether t falls in the years 1 to 9999 UTC. The
// year is read in UTC, not in t's location: the drivers store the instant
// alone, so 9999-12-31T23:00-05:00 is stored as 10000-01-01T04:00Z, which
// time.Time's MarshalJSON refuses (and with it any JSON listing the job).
func storableYear(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 1 && y <= 9999
}
