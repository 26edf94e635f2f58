package leasehold

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/maintenance"
)

// DefaultPeriodicGrace is how late a slot may still be enqueued when
// PeriodicJob.Grace is zero.
const DefaultPeriodicGrace = time.Minute

// MinPeriodicGrace is the shortest PeriodicJob.Grace accepted. A slot is
// enqueued some milliseconds after its time even on a healthy system (a
// timer, a read of the database clock, the insert), so a shorter grace
// would miss slots, payouts included, with nothing wrong.
const MinPeriodicGrace = time.Second

// CatchUpPolicy says what a periodic job does with slots that no process
// enqueued in time (see PeriodicJob.Grace), after all its processes were
// down or could not reach the database.
type CatchUpPolicy int

const (
	// CatchUpNone skips missed slots: the schedule goes on with the next
	// slot that is still on time. The default.
	CatchUpNone CatchUpPolicy = iota
	// CatchUpOne enqueues one job for the latest missed slot, however
	// many were missed, then goes on as CatchUpNone does.
	CatchUpOne
)

// PeriodicJob is a job inserted on a schedule. Any number of processes may
// run the same PeriodicJob (the same Name and Schedule): each computes the
// slots, and the database lets exactly one insert win per slot, with no
// leader. A slot is due at its time by the database clock; the process
// that wins it inserts the slot's job in the transaction that records
// the slot (table leasehold_periodic), with InsertOpts.UniqueKey
// PeriodicUniqueKey(Name, slot) unless Args set one.
type PeriodicJob struct {
	// Name identifies the schedule in the database: processes that share
	// a name share its slots. 1-128 of [A-Za-z0-9_.:-/], starting with a
	// letter or digit.
	Name string
	// Schedule gives the slots: Cron or Every.
	Schedule Schedule
	// Args returns the job of a slot: its arguments and insert options
	// (nil for the defaults). It is called once when the job is added (to
	// check the job and record its kind and queue), and once for each slot
	// a process tries to claim, whether or not it wins it. It must be
	// safe to call from several goroutines. A panic in it for a slot is
	// recovered, logged with the stack and counted in Stats.Panics, and
	// the slot is skipped; a panic in the call when the job is added
	// refuses the job (ErrInvalidPeriodic, with the *PanicError).
	Args func(slot time.Time) (Args, *InsertOpts)
	// CatchUp says what to do with missed slots. Default CatchUpNone.
	CatchUp CatchUpPolicy
	// Grace is how long after its time a slot may still be enqueued (a
	// process stalled, a database briefly unreachable, a restart); a slot
	// no process enqueued within Grace is missed. Default
	// DefaultPeriodicGrace; at least MinPeriodicGrace.
	Grace time.Duration
}

// PeriodicUniqueKey is the unique key of the job of one slot of a
// periodic job: "periodic:NAME:SLOT", the slot in RFC 3339 UTC
// (time.RFC3339Nano: fractional seconds only when the slot has them).
func PeriodicUniqueKey(name string, slot time.Time) string {
	return "periodic:" + name + ":" + slot.UTC().Format(time.RFC3339Nano)
}

// AddPeriodic adds a periodic job to the client: before Start, or while
// it runs (the job's slots start at once). A job whose queue a client
// with workers does not work (not in Config.Queues) is accepted, since
// another process may work it, but logged as a warning
// (Config.Logger) when the client starts, or when it is added to a
// running client. It returns an error matching
// ErrInvalidSchedule or ErrInvalidPeriodic for a job that cannot run,
// ErrPeriodicExists when the client has a periodic job of that name, and
// ErrClientStopped after Stop.
func (c *Client) AddPeriodic(job PeriodicJob) error {
	s, err := c.periodicSchedule(job)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == stateStopped {
		return ErrClientStopped
	}
	if !c.enqueuer.Add(s) {
		return fmt.Errorf("%w: %s", ErrPeriodicExists, job.Name)
	}
	if c.state == stateRunning {
		c.warnUnworked(s) // Start warned of the others
	}
	return nil
}

// RemovePeriodic removes the client's periodic job name; once it returns,
// the client claims no slot of it. Other processes running it go on, and
// its record stays in the database (see ForgetPeriodic). The job's own
// Args or an insert middleware may remove it: the slot being built is
// then not claimed, unless the middleware removes it after the claim
// (after next returned). It returns ErrPeriodicNotFound when the client
// has no periodic job of that name.
func (c *Client) RemovePeriodic(name string) error {
	if !c.enqueuer.Remove(name) {
		return fmt.Errorf("%w: %s", ErrPeriodicNotFound, name)
	}
	return nil
}

// ListPeriodic returns every schedule recorded in the database, by any
// process, ordered by name: its spec, kind and queue, last slot and that
// slot's job, and next slot.
func (c *Client) ListPeriodic(ctx context.Context) ([]*PeriodicRow, error) {
	rows, err := c.driver.PeriodicList(ctx)
	if err != nil {
		return nil, fmt.Errorf("leasehold: list periodic jobs: %w", err)
	}
	return rows, nil
}

// ForgetPeriodic deletes the database record of schedule name (for one
// that no process runs any more) and reports whether there was one. A
// process still running it records it again, and its slots start over
// after the first one it sees due. A name no schedule could have
// (ValidatePeriodicName) is refused with ErrInvalidPeriodic.
func (c *Client) ForgetPeriodic(ctx context.Context, name string) (bool, error) {
	if err := ValidatePeriodicName(name); err != nil {
		return false, err
	}
	ok, err := c.driver.PeriodicDelete(ctx, name)
	if err != nil {
		return false, fmt.Errorf("leasehold: forget periodic job: %w", err)
	}
	return ok, nil
}

// ValidatePeriodicName checks that name can be a PeriodicJob's Name, by
// the same rule as ValidateKind. It returns an *InvalidInputError matching
// ErrInvalidPeriodic.
func ValidatePeriodicName(name string) error {
	if !validName(name) {
		return invalid(ErrInvalidPeriodic, "periodic name", "%s (%s)", nameProblem(name), nameRule)
	}
	return nil
}

// periodicSchedule checks job and returns it as the enqueuer runs it.
func (c *Client) periodicSchedule(job PeriodicJob) (*maintenance.Schedule, error) {
	if !validName(job.Name) {
		return nil, fmt.Errorf("%w: name %s: %s", ErrInvalidPeriodic, quoteInput(job.Name), nameRule)
	}
	var spec string
	err := c.recovered(func() error { // a panic in Next or String is an invalid job, as one in Args is
		if err := checkSchedule(job.Schedule); err != nil {
			return err
		}
		spec = job.Schedule.String()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidPeriodic, job.Name, err)
	}
	switch {
	case job.Args == nil:
		return nil, fmt.Errorf("%w: %s: no Args function", ErrInvalidPeriodic, job.Name)
	case job.CatchUp != CatchUpNone && job.CatchUp != CatchUpOne:
		return nil, fmt.Errorf("%w: %s: unknown CatchUp policy %d", ErrInvalidPeriodic, job.Name, job.CatchUp)
	case job.Grace < 0:
		return nil, fmt.Errorf("%w: %s: negative Grace %v", ErrInvalidPeriodic, job.Name, job.Grace)
	case job.Grace > 0 && job.Grace < MinPeriodicGrace:
		return nil, fmt.Errorf("%w: %s: Grace %v is below %v: slots enqueued a few milliseconds late would be missed",
			ErrInvalidPeriodic, job.Name, job.Grace, MinPeriodicGrace)
	}
	var probe *InsertJob
	err = c.recovered(func() (err error) { // a panic in Args is an invalid job, not the caller's crash
		probe, err = c.buildPeriodic(job, job.Schedule.Next(time.Now()))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidPeriodic, job.Name, err)
	}
	return &maintenance.Schedule{
		Name: job.Name, Spec: spec, Kind: probe.Kind, Queue: probe.Opts.Queue,
		Next: c.periodicNext(job), Grace: cmp.Or(job.Grace, DefaultPeriodicGrace),
		CatchUp: job.CatchUp == CatchUpOne, Insert: c.periodicInsert(job, spec),
	}, nil
}

// periodicNext returns job's Next for the enqueuer. A panic in it (a
// custom Schedule's bug) stops the schedule in this client, as a Next that
// goes back does: it is logged with its stack and counted in
// Stats.Panics, and from then on Next is the zero time (the schedule never
// fires again) without calling the schedule, instead of taking the
// process and every lease it holds down with it.
func (c *Client) periodicNext(job PeriodicJob) func(time.Time) time.Time {
	var broken atomic.Bool
	return func(t time.Time) (next time.Time) {
		if broken.Load() {
			return time.Time{}
		}
		if err := c.recovered(func() error { next = job.Schedule.Next(t); return nil }); err != nil {
			broken.Store(true)
			c.cfg.Logger.Error("leasehold: periodic schedule stopped: its Next panicked", "schedule", job.Name, "err", err)
			return time.Time{}
		}
		return next
	}
}

// buildPeriodic builds and checks the job of one slot of job.
func (c *Client) buildPeriodic(job PeriodicJob, slot time.Time) (*InsertJob, error) {
	args, opts := job.Args(slot)
	var o InsertOpts
	if opts != nil {
		o = *opts
	}
	if o.UniqueKey == "" {
		o.UniqueKey = PeriodicUniqueKey(job.Name, slot)
	}
	return c.buildInsert(args, &o)
}

// periodicInsert returns the enqueuer's Insert for job, whose schedule
// is recorded as spec: it builds the slot's job, runs it through the
// insert middleware (with no caller transaction) and claims the slot
// with it. A slot another process won
// reaches the middleware as a duplicate: the slot's job as found by its
// unique key, or a result with no job when none is found. A job that
// cannot be built, a middleware error that refusesSlot, and a panic in
// Args or a middleware (a *PanicError, with the stack) refuse the slot
// (maintenance.ErrSlotRefused); any other error is retried. The driver's
// claim runs through claim, which refuses it once the schedule was
// removed (maintenance.ErrScheduleRemoved).
func (c *Client) periodicInsert(job PeriodicJob, spec string) func(ctx context.Context, slot, next, deadline time.Time, claim maintenance.Claim) (*driver.PeriodicInsertResult, error) {
	return func(ctx context.Context, slot, next, deadline time.Time, claim maintenance.Claim) (*driver.PeriodicInsertResult, error) {
		var built *InsertJob
		err := c.recovered(func() (err error) {
			built, err = c.buildPeriodic(job, slot)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("%w: %w", maintenance.ErrSlotRefused, err)
		}
		return c.claimPeriodic(ctx, built, driver.PeriodicInsertParams{Name: job.Name, Spec: spec, Slot: slot, Next: next,
			Grace: cmp.Or(job.Grace, DefaultPeriodicGrace), Deadline: deadline}, claim)
	}
}

// claimPeriodic runs built, the job of the slot p claims, through the
// insert middleware, then claims the slot with it (p with Job set)
// through claim (directly when nil). An error or panic of the middleware
// after the claim was written is logged, and the claim's result
// returned.
func (c *Client) claimPeriodic(ctx context.Context, built *InsertJob, p driver.PeriodicInsertParams, claim maintenance.Claim) (*driver.PeriodicInsertResult, error) {
	if claim == nil {
		claim = func(f func() error) error { return f() }
	}
	var (
		out       *driver.PeriodicInsertResult
		driverErr error
	)
	err := c.recovered(func() error {
		_, err := c.intercept(ctx, nil, []*InsertJob{built}, func(ctx context.Context, jobs []*InsertJob) ([]*InsertResult, error) {
			params := toInsertParams(jobs)
			p.Job = params[0]
			driverErr = claim(func() (err error) {
				out, err = c.driver.PeriodicInsert(ctx, &p)
				return err
			})
			if driverErr != nil {
				return nil, fmt.Errorf("leasehold: periodic insert: %w", driverErr)
			}
			if out.Claimed {
				c.wakeQueues(params)
			}
			if out.Job == nil {
				return []*InsertResult{{Duplicate: true}}, nil
			}
			return []*InsertResult{out.Job}, nil
		})
		return err
	})
	var panicked *PanicError
	switch {
	case driverErr != nil:
		return nil, fmt.Errorf("leasehold: periodic insert: %w", driverErr) // retried
	case out != nil:
		// Written, whatever the middleware returned afterwards: a retry
		// would be refused, as the slot is taken. A periodic slot has no
		// caller to receive the middleware's error, so it is logged.
		switch {
		case errors.As(err, &panicked):
			c.cfg.Logger.Error("leasehold: insert middleware panicked after the periodic slot's job was written",
				"schedule", p.Name, "slot", p.Slot, "err", err)
		case err != nil:
			c.cfg.Logger.Warn("leasehold: insert middleware failed after the periodic slot's job was written",
				"schedule", p.Name, "slot", p.Slot, "err", err)
		}
		return out, nil
	case err == nil:
		return nil, fmt.Errorf("%w: %w", maintenance.ErrSlotRefused, ErrMiddlewareResults)
	case errors.As(err, &panicked) || refusesSlot(err):
		return nil, fmt.Errorf("%w: %w", maintenance.ErrSlotRefused, err)
	default:
		return nil, fmt.Errorf("leasehold: periodic insert: insert middleware: %w", err) // retried
	}
}

// recovered returns what f returns, or a *PanicError with the value and
// the stack when f panics, counted in Stats.Panics: Args and insert
// middleware run on the enqueuer's goroutine for periodic slots, where a
// panic would end the process.
func (c *Client) recovered(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			c.events.stats.panics.Add(1)
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return f()
}

// refusesSlot reports whether err, returned by the insert middleware of a
// periodic slot, refuses the slot for good rather than for now: a job the
// client refuses (a bad kind, queue, arguments or options, a payload too
// large: the same Args and middleware build it again on a retry), results
// missing (ErrMiddlewareResults), or an error the middleware marked
// Permanent. Any other error may pass on a retry (a lookup that timed
// out), so the slot is retried while its grace lasts.
func refusesSlot(err error) bool {
	var (
		bad  *InvalidInputError
		perm *PermanentError
	)
	return errors.As(err, &bad) || errors.As(err, &perm) ||
		errors.Is(err, ErrInvalidKind) || errors.Is(err, ErrInvalidQueue) ||
		errors.Is(err, ErrInvalidArgs) || errors.Is(err, ErrPayloadTooLarge) ||
		errors.Is(err, ErrMiddlewareResults)
}
