package leasehold

import (
	"context"
	"encoding/json"
)

// InsertJob is one job about to be inserted, as insert middleware sees
// it: its kind, encoded arguments and options, defaults applied. A
// middleware may change any field (add metadata such as a trace context,
// set a priority); the client checks the result again, as it checked the
// caller's input, before anything is written.
type InsertJob struct {
	Kind string
	Args json.RawMessage
	Opts InsertOpts
}

// InsertMiddleware sees every insert of a client (Insert, InsertTx,
// InsertMany, InsertBulk, and each slot of a PeriodicJob the client
// tries to claim), before the jobs are written: in the inserting
// transaction tx when the caller gave one (nil otherwise, and always nil
// for InsertBulk and periodic slots), so a middleware that writes with tx
// commits or rolls back with the jobs. A periodic slot another process
// won comes back from next as a Duplicate result. It may change jobs, then calls next to insert them
// and returns next's results (nil for InsertBulk, which returns a count),
// or returns an error instead to refuse the insert. For a periodic slot,
// an error is retried while the slot's grace lasts, unless a retry would
// fail the same way (an *InvalidInputError, ErrMiddlewareResults, or an
// error wrapped with Permanent): then the slot is skipped, as it is when
// the middleware panics before the slot's job is written (the panic is
// recovered, logged and counted in Stats.Panics).
type InsertMiddleware interface {
	Insert(ctx context.Context, tx any, jobs []*InsertJob, next func(ctx context.Context) ([]*InsertResult, error)) ([]*InsertResult, error)
}

// InsertMiddlewareFunc adapts a function to InsertMiddleware.
type InsertMiddlewareFunc func(ctx context.Context, tx any, jobs []*InsertJob, next func(ctx context.Context) ([]*InsertResult, error)) ([]*InsertResult, error)

// Insert calls f.
func (f InsertMiddlewareFunc) Insert(ctx context.Context, tx any, jobs []*InsertJob, next func(ctx context.Context) ([]*InsertResult, error)) ([]*InsertResult, error) {
	return f(ctx, tx, jobs, next)
}

// WorkMiddleware wraps every handler call of a client. It sees the job
// as claimed, with its lease: job's Attempt, LeaseOwner and LeaseUntil,
// and ctx, which carries the lease for CheckLease and ends when the lease
// is lost, the job is cancelled or the client stops. It calls next to run
// the handler, with ctx or a context derived from it (never an unrelated
// one: the handler would lose its lease's cancellation), and returns the
// attempt's error: next's, or one of its own, which the client treats like
// a handler's (Permanent, Snooze, Cancel and retries apply). A panic in a
// middleware is recovered like a handler's.
type WorkMiddleware interface {
	Work(ctx context.Context, job *JobRow, next func(ctx context.Context) error) error
}

// WorkMiddlewareFunc adapts a function to WorkMiddleware.
type WorkMiddlewareFunc func(ctx context.Context, job *JobRow, next func(ctx context.Context) error) error

// Work calls f.
func (f WorkMiddlewareFunc) Work(ctx context.Context, job *JobRow, next func(ctx context.Context) error) error {
	return f(ctx, job, next)
}

// work runs h for row through the work middleware, the first one
// outermost.
func (c *Client) work(ctx context.Context, row *JobRow, h *handler) error {
	mw := c.cfg.WorkMiddleware
	if len(mw) == 0 {
		return h.run(ctx, row)
	}
	var call func(i int, ctx context.Context) error
	call = func(i int, ctx context.Context) error {
		if i == len(mw) {
			return h.run(ctx, row)
		}
		return mw[i].Work(ctx, row, func(ctx context.Context) error { return call(i+1, ctx) })
	}
	return call(0, ctx)
}

// intercept runs insert through the insert middleware for a single
// insert that is not a batch (Insert, InsertTx, a periodic slot); see
// interceptJobs.
func (c *Client) intercept(ctx context.Context, tx any, jobs []*InsertJob,
	insert func(ctx context.Context, jobs []*InsertJob) ([]*InsertResult, error)) ([]*InsertResult, error) {
	return c.interceptJobs(ctx, tx, jobs, false, insert)
}

// interceptJobs runs insert through the insert middleware, the first one
// outermost, for jobs (built from the caller's input and checked); with
// middleware, the jobs are checked again after it has run. batch says
// whether jobs came from InsertMany or InsertBulk, whose refusals name
// the job's index.
func (c *Client) interceptJobs(ctx context.Context, tx any, jobs []*InsertJob, batch bool,
	insert func(ctx context.Context, jobs []*InsertJob) ([]*InsertResult, error)) ([]*InsertResult, error) {
	mw := c.cfg.InsertMiddleware
	if len(mw) == 0 {
		return insert(ctx, jobs)
	}
	var call func(i int, ctx context.Context) ([]*InsertResult, error)
	call = func(i int, ctx context.Context) ([]*InsertResult, error) {
		if i == len(mw) {
			if err := c.recheck(jobs, batch); err != nil {
				return nil, err
			}
			return insert(ctx, jobs)
		}
		return mw[i].Insert(ctx, tx, jobs, func(ctx context.Context) ([]*InsertResult, error) { return call(i+1, ctx) })
	}
	return call(0, ctx)
}

// recheck checks jobs as insert middleware left them. In a batch, a
// refusal names the job's index, as buildInserts does before the
// middleware, even when the batch holds one job.
func (c *Client) recheck(jobs []*InsertJob, batch bool) error {
	for i, j := range jobs {
		err := c.recheckJob(j)
		if err != nil && batch {
			err = atIndex(err, i)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// recheckJob checks one job as insert middleware left it.
func (c *Client) recheckJob(j *InsertJob) error {
	if j == nil {
		return invalid(ErrInvalidArgs, "jobs", "insert middleware left no job")
	}
	if err := ValidateKind(j.Kind); err != nil {
		return err
	}
	if err := checkArgs(j.Kind, j.Args, c.cfg.MaxPayloadBytes); err != nil {
		return err
	}
	return validateOpts(&j.Opts, c.cfg.MaxPayloadBytes)
}
