package leasehold

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// WorkerOptions are the settings of one kind, given with its worker to
// AddWorkerWithOptions. Each zero field takes the client's default.
type WorkerOptions struct {
	// Timeout is the handler's own deadline for each attempt: when it
	// passes, the handler's context is cancelled with cause ErrJobTimeout.
	// A handler that then returns an error ends its attempt with a
	// *TimeoutError (recorded as "timed out after 5s: …", matching
	// ErrJobTimeout), retried after the kind's retry policy's delay while
	// the job has budget left and failed once it is spent, like any
	// error; Permanent, Snooze and Cancel keep their meaning. A handler
	// that returns nil all the same completes the job. 0 means no
	// timeout.
	//
	// The timeout has nothing to do with the lease: heartbeats renew the
	// lease while the handler runs, however long its timeout, and a lost
	// lease (ErrLeaseLost), an operator's cancel (ErrJobCancelled) and a
	// shutdown still cancel the handler with their own cause and end the
	// attempt as they always do, also when they come after the timeout
	// but before the handler returned.
	Timeout time.Duration
	// RetryPolicy chooses the delay before a retry of this kind's jobs.
	// Default Config.RetryPolicy.
	RetryPolicy RetryPolicy
	// MaxAttempts is the retry budget of this kind's jobs inserted with
	// InsertOpts.MaxAttempts 0 by a client whose Workers have this
	// worker. Default Config.DefaultMaxAttempts. The budget is stored
	// with each job when it is inserted, so that every process (the stuck
	// watcher included) agrees on it: a client without this worker, such
	// as a web process that only inserts, uses its own default, so pass
	// InsertOpts.MaxAttempts there or give it the same Workers. 0 to
	// MaxMaxAttempts.
	MaxAttempts int
}

// validate checks o, returning an error matching ErrInvalidConfig.
func (o *WorkerOptions) validate(kind string) error {
	switch {
	case o.Timeout < 0:
		return fmt.Errorf("%w: kind %s: negative Timeout %v", ErrInvalidConfig, kind, o.Timeout)
	case o.MaxAttempts < 0 || o.MaxAttempts > MaxMaxAttempts:
		return fmt.Errorf("%w: kind %s: MaxAttempts %d not in 0..%d", ErrInvalidConfig, kind, o.MaxAttempts, MaxMaxAttempts)
	}
	return nil
}

// AddWorkerWithOptions is AddWorker with the settings of the kind: its
// handler's timeout, its retry policy and its retry budget. It returns an
// error matching ErrInvalidConfig for options out of range.
func AddWorkerWithOptions[T Args](ws *Workers, w Worker[T], opts WorkerOptions) error {
	kind, err := zeroKind[T]()
	if err != nil {
		return err
	}
	if err := ValidateKind(kind); err != nil {
		return err
	}
	if err := opts.validate(kind); err != nil {
		return err
	}
	if w == nil || nilFunc(w) {
		return fmt.Errorf("%w: nil worker for kind %s", ErrInvalidConfig, kind)
	}
	run := func(ctx context.Context, row *JobRow) error {
		job := &Job[T]{JobRow: row}
		if err := json.Unmarshal(row.Args, &job.Args); err != nil {
			return Permanent(fmt.Errorf("%w: decode args of kind %s: %w", ErrInvalidArgs, kind, err))
		}
		return w.Work(ctx, job)
	}
	return ws.add(&handler{kind: kind, opts: opts, run: withTimeout(opts.Timeout, run)})
}

// zeroKind returns the Kind of T's zero value, or ErrInvalidKind when it
// panics: a pointer type whose Kind has a value receiver dereferences nil.
func zeroKind[T Args]() (kind string, err error) {
	var zero T
	defer func() {
		if recover() != nil {
			kind, err = "", fmt.Errorf("%w: Kind of %T's zero value panicked: register the type its pointer points to, or give Kind a pointer receiver",
				ErrInvalidKind, zero)
		}
	}()
	return zero.Kind(), nil
}

// maxAttempts returns the retry budget of kind's worker in ws, or 0 when
// ws has no worker for kind or it sets none.
func (ws *Workers) maxAttempts(kind string) int {
	if ws == nil {
		return 0
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if h := ws.byKind[kind]; h != nil {
		return h.opts.MaxAttempts
	}
	return 0
}

// retryPolicy returns the retry policy of row's kind: its worker's, else
// the client's. Only a started client calls it.
func (c *Client) retryPolicy(row *JobRow) RetryPolicy {
	if h := c.cfg.Workers.lookup(row.Kind); h != nil && h.opts.RetryPolicy != nil {
		return h.opts.RetryPolicy
	}
	return c.cfg.RetryPolicy
}
