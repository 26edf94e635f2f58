package leasehold

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
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
	// RunAt schedules the job for an absolute time. Zero means now.
	RunAt time.Time
	// RunIn schedules the job this long after the database clock's now.
	// Use RunAt or RunIn, not both.
	RunIn time.Duration
	// MaxAttempts is the retry budget. Default Config.DefaultMaxAttempts.
	MaxAttempts int
	// UniqueKey, when set, makes the insert idempotent: a second insert
	// with the same key returns the existing job (InsertResult.Duplicate)
	// instead of adding one, for as long as the job is kept.
	UniqueKey string
	// Metadata is a JSON object stored with the job, for the caller's use.
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
func (c *Client) Insert(ctx context.Context, args Args, opts *InsertOpts) (*InsertResult, error) {
	res, err := c.insert(ctx, nil, []InsertManyParams{{Args: args, Opts: opts}})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// InsertTx adds a job inside the caller's transaction: it exists only if
// tx commits. tx is a transaction type the driver accepts (pgx.Tx or
// *sql.Tx for pgdriver, *sql.Tx for sqlitedriver).
func (c *Client) InsertTx(ctx context.Context, tx any, args Args, opts *InsertOpts) (*InsertResult, error) {
	if tx == nil {
		return nil, fmt.Errorf("%w: nil transaction", ErrUnsupportedTx)
	}
	res, err := c.insert(ctx, tx, []InsertManyParams{{Args: args, Opts: opts}})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// InsertMany adds several jobs in one statement and one transaction (in
// tx when non-nil). Results are in the order of jobs.
func (c *Client) InsertMany(ctx context.Context, tx any, jobs []InsertManyParams) ([]*InsertResult, error) {
	return c.insert(ctx, tx, jobs)
}

// InsertBulk adds many jobs as fast as the database allows (COPY on
// PostgreSQL) without returning them, and reports how many it inserted
// (jobs whose UniqueKey exists are skipped).
func (c *Client) InsertBulk(ctx context.Context, jobs []InsertManyParams) (int64, error) {
	params, err := c.buildInserts(jobs)
	if err != nil {
		return 0, err
	}
	n, err := c.driver.InsertBulk(ctx, params)
	if err != nil {
		return n, fmt.Errorf("leasehold: bulk insert: %w", err)
	}
	c.wakeQueues(params)
	return n, nil
}

func (c *Client) insert(ctx context.Context, tx any, jobs []InsertManyParams) ([]*InsertResult, error) {
	params, err := c.buildInserts(jobs)
	if err != nil {
		return nil, err
	}
	res, err := c.driver.Insert(ctx, tx, params)
	if err != nil {
		return nil, fmt.Errorf("leasehold: insert: %w", err)
	}
	c.wakeQueues(params)
	return res, nil
}

func (c *Client) wakeQueues(params []*InsertParams) {
	seen := map[string]bool{}
	for _, p := range params {
		if !seen[p.Queue] {
			seen[p.Queue] = true
			c.wake(p.Queue)
		}
	}
}

func (c *Client) buildInserts(jobs []InsertManyParams) ([]*InsertParams, error) {
	if len(jobs) == 0 {
		return nil, fmt.Errorf("%w: no jobs to insert", ErrInvalidArgs)
	}
	params := make([]*InsertParams, len(jobs))
	for i, j := range jobs {
		p, err := c.buildInsert(j.Args, j.Opts)
		if err != nil {
			return nil, err
		}
		params[i] = p
	}
	return params, nil
}

func (c *Client) buildInsert(args Args, opts *InsertOpts) (*InsertParams, error) {
	kind, data, err := encodeArgs(args, c.cfg.MaxPayloadBytes)
	if err != nil {
		return nil, err
	}
	o := InsertOpts{}
	if opts != nil {
		o = *opts
	}
	if o.Queue == "" {
		o.Queue = DefaultQueue
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = c.cfg.DefaultMaxAttempts
	}
	if err := validateOpts(&o); err != nil {
		return nil, fmt.Errorf("kind %s: %w", kind, err)
	}
	return &InsertParams{
		Kind: kind, Queue: o.Queue, Args: data, Metadata: o.Metadata, Priority: o.Priority,
		MaxAttempts: o.MaxAttempts, UniqueKey: o.UniqueKey, RunAt: o.RunAt, RunIn: o.RunIn, Notify: true,
	}, nil
}

func validateOpts(o *InsertOpts) error {
	if err := ValidateQueue(o.Queue); err != nil {
		return err
	}
	switch {
	case o.Priority < 0 || o.Priority > MaxPriority:
		return fmt.Errorf("%w: priority %d not in 0..%d", ErrInvalidArgs, o.Priority, MaxPriority)
	case o.MaxAttempts < 1 || o.MaxAttempts > MaxMaxAttempts:
		return fmt.Errorf("%w: max attempts %d not in 1..%d", ErrInvalidArgs, o.MaxAttempts, MaxMaxAttempts)
	case o.RunIn < 0:
		return fmt.Errorf("%w: negative RunIn %v", ErrInvalidArgs, o.RunIn)
	case o.RunIn > 0 && !o.RunAt.IsZero():
		return fmt.Errorf("%w: set RunAt or RunIn, not both", ErrInvalidArgs)
	case len(o.UniqueKey) > MaxUniqueKeyLen:
		return fmt.Errorf("%w: unique key longer than %d bytes", ErrInvalidArgs, MaxUniqueKeyLen)
	case len(o.Metadata) > 0 && (!json.Valid(o.Metadata) || o.Metadata[0] != '{'):
		return fmt.Errorf("%w: metadata must be a JSON object", ErrInvalidArgs)
	}
	return nil
}
