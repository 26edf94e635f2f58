package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/service"
	"github.com/leasehold/leasehold/leasetype"
)

// Defaults of the enqueuer.
const (
	// enqueuerRetry is the first wait after a failed statement; it
	// doubles while the failures go on, up to the schedule's retryLimit.
	enqueuerRetry    = 500 * time.Millisecond
	enqueuerMaxRetry = 30 * time.Second
	// enqueuerGraceRetries is how many times at least a schedule whose
	// statements fail looks again within its grace (see retryLimit).
	enqueuerGraceRetries = 8
	// enqueuerMaxSleep bounds one wait for a slot, so that the database
	// clock is read again at least this often.
	enqueuerMaxSleep = time.Minute
)

// ErrSlotRefused is wrapped by a Schedule's Insert when the slot's job
// cannot be built, or an insert middleware refused it for good (a retry
// would fail the same way), or either panicked: the enqueuer logs it and
// goes on with the next slot rather than retrying this one. Insert
// returns any other error unwrapped, and the slot is retried while its
// grace lasts.
var ErrSlotRefused = errors.New("periodic slot refused")

// ErrScheduleRemoved is returned by a Claim of a schedule that was
// removed (Enqueuer.Remove): the slot is not claimed.
var ErrScheduleRemoved = errors.New("periodic schedule removed")

// Claim runs claim, the driver's claim of a slot (Driver.PeriodicInsert),
// for a Schedule's Insert, unless the schedule was removed: it then
// returns ErrScheduleRemoved without running it. Remove waits for a
// claim under way, so that none is under way or starts once it returned,
// without waiting for the schedule's goroutine, which may be the one
// calling it (from Args or an insert middleware).
type Claim func(claim func() error) error

// PeriodicDriver is the part of the driver the enqueuer calls itself
// (slots are claimed through each Schedule's Insert).
type PeriodicDriver interface {
	Now(ctx context.Context) (time.Time, error)
	PeriodicRegister(ctx context.Context, p *driver.PeriodicRegisterParams) (*leasetype.PeriodicRow, error)
	PeriodicList(ctx context.Context) ([]*leasetype.PeriodicRow, error)
}

// Schedule is one periodic job as the enqueuer runs it.
type Schedule struct {
	Name  string
	Spec  string
	Kind  string
	Queue string
	// Next returns the first slot after t (zero: none).
	Next func(t time.Time) time.Time
	// Grace is how late a slot may still be enqueued; older slots are
	// missed.
	Grace time.Duration
	// CatchUp enqueues one job for the latest missed slot, instead of
	// skipping the missed slots.
	CatchUp bool
	// Insert builds slot's job and claims slot with it
	// (Driver.PeriodicInsert), called through claim; next is the slot
	// after it. deadline, by the database clock, is slot + Grace for an
	// on-time slot and zero (none) for a catch-up slot: Insert gives it to
	// the driver as PeriodicInsertParams.Deadline, so that a claim delayed
	// past the slot's grace (a slow insert middleware, a lock wait, a
	// pause) is refused (PeriodicInsertResult.Late) and the slot missed.
	Insert func(ctx context.Context, slot, next, deadline time.Time, claim Claim) (*driver.PeriodicInsertResult, error)
}

// EnqueuerConfig is what an Enqueuer needs.
type EnqueuerConfig struct {
	Driver PeriodicDriver
	Logger *slog.Logger
	// Sleep waits d or until ctx is done, and reports whether it waited
	// the whole d. Default: a timer. Tests give a fake clock's.
	Sleep func(ctx context.Context, d time.Duration) bool
	// Timeout bounds each call the enqueuer makes to the database: Now,
	// PeriodicRegister, PeriodicList, and a Schedule's Insert (the claim
	// of one slot, with its job). A call on a connection that stopped
	// answering ends by then, logged as timed out, and is retried as any
	// failed call is; a slot claim cut off after it committed is refused
	// when retried, as taken already. Default (zero): passTimeout.
	Timeout time.Duration
}

// Enqueuer inserts the jobs of periodic schedules without a leader: every
// process running a schedule computes its slots, waits until each is due
// by the database clock, and claims it with its job in one transaction
// that exactly one process wins (Driver.PeriodicInsert). Each schedule
// runs on a goroutine of its own. Schedules may be added and removed
// before Start and while it runs.
type Enqueuer struct {
	cfg  EnqueuerConfig
	life service.Lifecycle

	mu sync.Mutex
	// ctx is the running service's context; nil before Start.
	ctx       context.Context
	schedules map[string]*runner
}

// runner is one schedule and, once started, its goroutine.
type runner struct {
	s      *Schedule
	cancel context.CancelFunc // nil until started
	done   chan struct{}

	// claiming is held by a claim of a slot with the driver (see
	// claim), and by Remove while it marks the runner removed.
	claiming sync.Mutex
	removed  bool // under claiming
	// inserting is set while the goroutine runs the schedule's Insert,
	// whose Args and insert middleware may call Remove themselves.
	inserting atomic.Bool
}

// claim is the runner's Claim: it runs c unless the schedule was
// removed.
func (r *runner) claim(c func() error) error {
	r.claiming.Lock()
	defer r.claiming.Unlock()
	if r.removed {
		return ErrScheduleRemoved
	}
	return c()
}

// NewEnqueuer returns an enqueuer with no schedules.
func NewEnqueuer(cfg EnqueuerConfig) *Enqueuer {
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = passTimeout
	}
	return &Enqueuer{cfg: cfg, schedules: map[string]*runner{}}
}

// Add adds s, and starts it when the enqueuer runs. It reports false,
// adding nothing, when a schedule of that name exists.
func (e *Enqueuer) Add(s *Schedule) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.schedules[s.Name]; ok {
		return false
	}
	r := &runner{s: s}
	e.schedules[s.Name] = r
	if e.ctx != nil && e.ctx.Err() == nil { // running, not stopped
		e.launch(r)
	}
	return true
}

// Remove removes the schedule name, so that this process claims no slot
// of it once Remove returns: it waits for a claim under way, then until
// the schedule's goroutine has ended, unless that goroutine is running
// the schedule's Insert (its Args or insert middleware), which may be
// the caller: it would wait for itself. That goroutine then ends without
// claiming the slot it is building, unless the slot's claim was done
// before Remove. Remove reports false when there is no such schedule.
func (e *Enqueuer) Remove(name string) bool {
	e.mu.Lock()
	r, ok := e.schedules[name]
	delete(e.schedules, name)
	e.mu.Unlock()
	if !ok {
		return false
	}
	if r.cancel != nil {
		r.cancel()
	}
	r.claiming.Lock()
	r.removed = true
	r.claiming.Unlock()
	if r.cancel != nil && !r.inserting.Load() {
		<-r.done
	}
	return true
}

// Names returns the names of the schedules, in no order.
func (e *Enqueuer) Names() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	names := make([]string, 0, len(e.schedules))
	for n := range e.schedules {
		names = append(names, n)
	}
	return names
}

// Schedules returns the schedules, by name.
func (e *Enqueuer) Schedules() []*Schedule {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]*Schedule, 0, len(e.schedules))
	for _, r := range e.schedules {
		out = append(out, r.s)
	}
	slices.SortFunc(out, func(a, b *Schedule) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Start launches every schedule added so far.
func (e *Enqueuer) Start(context.Context) error {
	ctx, err := e.life.Begin()
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ctx = ctx
	for _, r := range e.schedules {
		e.launch(r)
	}
	return nil
}

// Stop ends every schedule's goroutine.
func (e *Enqueuer) Stop(ctx context.Context) error { return e.life.Stop(ctx, nil) }

// launch starts r's goroutine. e.mu is held.
func (e *Enqueuer) launch(r *runner) {
	ctx, cancel := context.WithCancel(e.ctx)
	r.cancel, r.done = cancel, make(chan struct{})
	e.life.Go(func() {
		defer close(r.done)
		e.run(ctx, r)
	})
}

// run enqueues r's slots until ctx is done. A step that fails still
// returns the last slot it dealt with (a gap it reported, a catch-up slot
// it claimed), and the retry starts after it, so that it neither reports
// that gap again nor claims that slot again.
func (e *Enqueuer) run(ctx context.Context, r *runner) {
	s := e.strict(r.s)
	cursor, ok := e.begin(ctx, s)
	retry, limit := enqueuerRetry, retryLimit(s.Grace)
	for ok && ctx.Err() == nil {
		next, err := e.step(ctx, r, s, cursor)
		cursor = next
		if err != nil {
			e.failed(ctx, s, err)
			ok = e.cfg.Sleep(ctx, retry)
			retry = min(2*retry, limit)
			continue
		}
		retry = enqueuerRetry
	}
}

// retryLimit returns the longest wait of a schedule of grace grace
// after a failed statement: an eighth of the grace, at least
// enqueuerRetry and at most enqueuerMaxRetry. A wait as long as the
// grace (30 s against a 5 s grace, after an outage of a minute) would
// have the process look again only once slots still on time when the
// database came back are past their grace, and skip them as missed; with
// this bound, a slot is claimed when the database answers for the last
// eighth of its grace.
func retryLimit(grace time.Duration) time.Duration {
	return min(max(grace/enqueuerGraceRetries, enqueuerRetry), enqueuerMaxRetry)
}

// strict returns a copy of s whose Next keeps the contract of a slot
// strictly after its input: a slot that is not (a Next that repeats t or
// goes back) would have the enqueuer claim the same or earlier slots in a
// loop, so the schedule is taken as never firing again instead, and the
// first broken slot is logged.
func (e *Enqueuer) strict(s *Schedule) *Schedule {
	c, next, reported := *s, s.Next, false
	c.Next = func(t time.Time) time.Time {
		n := next(t)
		if n.IsZero() || n.After(t) {
			return n
		}
		if !reported {
			reported = true
			e.cfg.Logger.Error("leasehold: periodic schedule stopped: its Next returned a slot not after its input",
				"schedule", s.Name, "input", t, "slot", n)
		}
		return time.Time{}
	}
	return &c
}

// begin registers s and returns the cursor its slots start after: the
// schedule's last slot when it has one (so that slots missed meanwhile
// are caught up or skipped, see step); else, when its row existed before
// this registration (a process registered it, and no slot was claimed
// since), the database's time of that first registration (the row's
// created_at), so that slots missed since are caught up or skipped too;
// else (a row this registration created) the database's now. It retries
// until it succeeds or ctx is done.
func (e *Enqueuer) begin(ctx context.Context, s *Schedule) (time.Time, bool) {
	limit := retryLimit(s.Grace)
	for retry := enqueuerRetry; ; retry = min(2*retry, limit) {
		now, err := e.now(ctx)
		var row *leasetype.PeriodicRow
		if err == nil {
			row, err = e.register(ctx, &driver.PeriodicRegisterParams{
				Name: s.Name, Spec: s.Spec, Kind: s.Kind, Queue: s.Queue, Next: s.Next(now), Grace: s.Grace,
			})
		}
		if err == nil {
			return startAfter(row, now), true
		}
		e.failed(ctx, s, fmt.Errorf("register: %w", err))
		if !e.cfg.Sleep(ctx, retry) {
			return time.Time{}, false
		}
	}
}

// startAfter returns the cursor of a schedule whose row, as its
// registration returned it, is row, now being the database's time read
// before that registration (see begin). A row created by the
// registration has a created_at not before now.
func startAfter(row *leasetype.PeriodicRow, now time.Time) time.Time {
	switch {
	case !row.LastSlot.IsZero():
		if row.LastSlot.Before(now) {
			return row.LastSlot
		}
		return now
	case !row.CreatedAt.IsZero() && row.CreatedAt.Before(now):
		return row.CreatedAt
	default:
		return now
	}
}

// step waits until the slot after cursor is due (database clock), then
// claims, in order, the due slots still within the grace period, after
// the catch-up slot when the schedule catches up missed ones, and
// returns the new cursor: the last slot it dealt with. Each on-time
// claim carries its slot's deadline (slot + Grace): one the driver
// refuses as late, its grace having run out since now was read, ends
// the step without moving the cursor past it, so that the next step
// finds it missed, reports it and applies CatchUp.
func (e *Enqueuer) step(ctx context.Context, r *runner, s *Schedule, cursor time.Time) (time.Time, error) {
	slot := s.Next(cursor)
	if slot.IsZero() {
		<-ctx.Done() // the schedule never fires again
		return cursor, nil
	}
	now, err := e.now(ctx)
	if err != nil {
		return cursor, fmt.Errorf("read the database clock: %w", err)
	}
	if now.Before(slot) {
		e.cfg.Sleep(ctx, min(slot.Sub(now), enqueuerMaxSleep))
		return cursor, nil
	}
	if passed := LatestSlot(s.Next, cursor, now.Add(-s.Grace)); !passed.IsZero() {
		if err := e.pass(ctx, r, s, passed); err != nil {
			return cursor, err
		}
		cursor = passed
	}
	for slot = s.Next(cursor); !slot.IsZero() && !slot.After(now) && ctx.Err() == nil; slot = s.Next(cursor) {
		got, err := e.claim(ctx, r, s, slot, slot.Add(s.Grace))
		if err != nil {
			return cursor, err
		}
		if got == claimLate {
			e.cfg.Logger.Debug("leasehold: periodic slot claimed past its grace: refused", "schedule", s.Name, "slot", slot)
			return cursor, nil
		}
		cursor = slot
	}
	return cursor, nil
}

// pass deals with the slots after this process's cursor up to passed,
// the latest of them whose grace has run out: it claims passed when s
// catches up, and reports the slots missed only when they were, when no
// process enqueued them: the schedule's last slot is still before passed.
// A last slot at or after it means that other processes kept the
// schedule going while this one fell behind (a long pause, a database
// cut off from this process alone), or that one of them found the gap
// first and reported it; this process then only says, at Debug, that it
// fell behind. When s catches up, the claim of passed tells which (it is
// refused when the last slot is at or after it); else the schedule's
// row is read, only on this path, as no claim is made.
func (e *Enqueuer) pass(ctx context.Context, r *runner, s *Schedule, passed time.Time) error {
	var taken bool
	var err error
	if s.CatchUp {
		var got claimResult
		got, err = e.claim(ctx, r, s, passed, time.Time{}) // no deadline: it is past its grace already
		taken = got == claimTaken
	} else {
		taken, err = e.recorded(ctx, s.Name, passed)
	}
	if err != nil {
		return err
	}
	if taken {
		e.cfg.Logger.Debug("leasehold: periodic schedule fell behind in this process; other processes enqueued its slots",
			"schedule", s.Name, "latest_passed", passed)
		return nil
	}
	e.cfg.Logger.Warn("leasehold: periodic slots missed", "schedule", s.Name,
		"latest_missed", passed, "catch_up", s.CatchUp)
	return nil
}

// recorded reports whether the recorded last slot of the schedule name
// is at or after slot. A schedule with no row (forgotten meanwhile) has
// none.
func (e *Enqueuer) recorded(ctx context.Context, name string, slot time.Time) (bool, error) {
	rows, err := e.list(ctx)
	if err != nil {
		return false, fmt.Errorf("read the schedule's last slot: %w", err)
	}
	for _, row := range rows {
		if row.Name == name {
			return !row.LastSlot.IsZero() && !row.LastSlot.Before(slot), nil
		}
	}
	return false, nil
}

// claimResult is what came of a slot's claim.
type claimResult int

const (
	// claimDone: the slot is dealt with: claimed with its job, or its
	// job refused (ErrSlotRefused, logged).
	claimDone claimResult = iota
	// claimTaken: refused, the schedule's last slot being this slot or
	// a later one.
	claimTaken
	// claimLate: refused, the database clock being past the claim's
	// deadline while the slot was not taken.
	claimLate
)

// claim claims slot of r's schedule s with its job, by deadline (zero:
// none), and reports what came of it. A refused job is logged and
// counts as dealt with.
func (e *Enqueuer) claim(ctx context.Context, r *runner, s *Schedule, slot, deadline time.Time) (claimResult, error) {
	next := s.Next(slot)
	r.inserting.Store(true)
	res, err := e.insert(ctx, r, s, slot, next, deadline)
	r.inserting.Store(false)
	switch {
	case errors.Is(err, ErrSlotRefused):
		e.cfg.Logger.Error("leasehold: periodic job refused: slot skipped", "schedule", s.Name, "slot", slot, "err", err)
		return claimDone, nil
	case err != nil:
		return claimDone, fmt.Errorf("claim slot %v: %w", slot, err)
	case res == nil:
		return claimDone, nil
	case res.Late:
		return claimLate, nil
	case !res.Claimed:
		return claimTaken, nil
	case res.Job != nil && res.Job.Job != nil:
		e.cfg.Logger.Debug("leasehold: periodic job enqueued", "schedule", s.Name, "slot", slot,
			"job", res.Job.Job.ID, "duplicate", res.Job.Duplicate)
	}
	return claimDone, nil
}

// now reads the database clock, bounded by the enqueuer's Timeout.
func (e *Enqueuer) now(ctx context.Context) (time.Time, error) {
	ctx, cancel := bound(ctx, e.cfg.Timeout)
	defer cancel()
	t, err := e.cfg.Driver.Now(ctx)
	return t, timedOut(ctx, err)
}

// register registers a schedule, bounded by the enqueuer's Timeout.
func (e *Enqueuer) register(ctx context.Context, p *driver.PeriodicRegisterParams) (*leasetype.PeriodicRow, error) {
	ctx, cancel := bound(ctx, e.cfg.Timeout)
	defer cancel()
	row, err := e.cfg.Driver.PeriodicRegister(ctx, p)
	return row, timedOut(ctx, err)
}

// list reads the schedules' rows, bounded by the enqueuer's Timeout.
func (e *Enqueuer) list(ctx context.Context) ([]*leasetype.PeriodicRow, error) {
	ctx, cancel := bound(ctx, e.cfg.Timeout)
	defer cancel()
	rows, err := e.cfg.Driver.PeriodicList(ctx)
	return rows, timedOut(ctx, err)
}

// insert runs s's Insert of slot, by deadline, through r's claim,
// bounded by the enqueuer's Timeout.
func (e *Enqueuer) insert(ctx context.Context, r *runner, s *Schedule, slot, next, deadline time.Time) (*driver.PeriodicInsertResult, error) {
	ctx, cancel := bound(ctx, e.cfg.Timeout)
	defer cancel()
	res, err := s.Insert(ctx, slot, next, deadline, r.claim)
	return res, timedOut(ctx, err)
}

// failed logs a failed statement of s, unless the enqueuer is stopping.
func (e *Enqueuer) failed(ctx context.Context, s *Schedule, err error) {
	logFailure(ctx, e.cfg.Logger, "leasehold: periodic schedule "+s.Name+" failed; retrying", err)
}

// LatestSlot returns the latest slot of next that is after after and not
// after upTo, or the zero time when there is none. It looks back from
// upTo over windows that double in length, so a long gap (a schedule
// every second, down for a year) costs a few hundred calls of next, not
// one per slot.
func LatestSlot(next func(time.Time) time.Time, after, upTo time.Time) time.Time {
	if !after.Before(upTo) {
		return time.Time{}
	}
	for w := time.Millisecond; ; w *= 2 {
		from := upTo.Add(-w)
		if !from.After(after) {
			from = after
		}
		if s := next(from); !s.IsZero() && !s.After(upTo) {
			for n := next(s); !n.IsZero() && !n.After(upTo); n = next(s) {
				s = n
			}
			return s
		}
		if from.Equal(after) || w > 200*365*24*time.Hour {
			return time.Time{}
		}
	}
}

// sleep waits d or until ctx is done, and reports whether it waited d.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
