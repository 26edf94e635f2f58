package leasehold_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// zeroOutcomeArgs names the outcome error its handler returns.
type zeroOutcomeArgs struct {
	Outcome string `json:"outcome"`
}

func (zeroOutcomeArgs) Kind() string { return "zero_outcome" }

// zeroOutcomes are the outcome errors built as bare structs, with no error
// inside, by zeroOutcomeArgs.Outcome.
var zeroOutcomes = map[string]error{
	"permanent": &leasehold.PermanentError{},
	"cancel":    &leasehold.CancelError{},
}

// TestZeroOutcomeErrorsEndTheJob: a handler that returns
// &PermanentError{} fails its job and one that returns &CancelError{}
// cancels it, on the first attempt, with the texts of Permanent(nil) and
// Cancel(nil), as the errors Permanent and Cancel build do: reading their
// text does not panic, so the attempt is not a retried panic.
func TestZeroOutcomeErrorsEndTheJob(t *testing.T) {
	eachDriver(t, func(t *testing.T, d driver.Driver) {
		c := startOutcomeClient(t, d, leasehold.WorkFunc[zeroOutcomeArgs](
			func(_ context.Context, j *leasehold.Job[zeroOutcomeArgs]) error { return zeroOutcomes[j.Args.Outcome] }))
		for _, tt := range []struct {
			outcome string
			state   leasehold.JobState
			lastErr string
		}{
			{"permanent", leasehold.StateFailed, leasehold.Permanent(nil).Error()},
			{"cancel", leasehold.StateCancelled, leasehold.Cancel(nil).Error()},
		} {
			res, err := c.Insert(t.Context(), zeroOutcomeArgs{Outcome: tt.outcome}, &leasehold.InsertOpts{MaxAttempts: 5})
			if err != nil {
				t.Fatalf("Insert: %v", err)
			}
			row := waitAttemptEnded(t, c, res.Job.ID)
			if row.State != tt.state || row.Attempt != 1 || row.LastError != tt.lastErr {
				t.Errorf("%s: job %s after attempt %d, last error %q; want %s after attempt 1, last error %q",
					tt.outcome, row.State, row.Attempt, row.LastError, tt.state, tt.lastErr)
			}
		}
		if p := c.Stats().Panics; p != 0 {
			t.Errorf("Stats().Panics = %d, want 0", p)
		}
	})
}

// waitAttemptEnded returns job id once its first attempt has ended.
func waitAttemptEnded(t *testing.T, c *leasehold.Client, id int64) *leasehold.JobInfo {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		row, err := c.GetJob(t.Context(), id)
		if err != nil {
			t.Fatalf("GetJob: %v", err)
		}
		if row.Attempt >= 1 && row.State != leasehold.StateProcessing {
			return row
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d still %s after attempt %d", id, row.State, row.Attempt)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestOutcomeErrorTextsWithoutError: the outcome errors read without their
// error, or as nil pointers, give the texts Permanent(nil), Cancel(nil)
// and Snooze(0) give, and unwrap to nil, instead of panicking.
func TestOutcomeErrorTextsWithoutError(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"PermanentError{}", &leasehold.PermanentError{}, leasehold.Permanent(nil).Error()},
		{"nil *PermanentError", (*leasehold.PermanentError)(nil), leasehold.Permanent(nil).Error()},
		{"CancelError{}", &leasehold.CancelError{}, leasehold.Cancel(nil).Error()},
		{"nil *CancelError", (*leasehold.CancelError)(nil), leasehold.Cancel(nil).Error()},
		{"nil *SnoozeError", (*leasehold.SnoozeError)(nil), leasehold.Snooze(0).Error()},
		{"nil *PanicError", (*leasehold.PanicError)(nil), "panic: <nil>"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			if u, ok := tt.err.(interface{ Unwrap() error }); ok && u.Unwrap() != nil {
				t.Errorf("Unwrap() = %v, want nil", u.Unwrap())
			}
		})
	}
}

// snoozeOutcomeArgs names the *SnoozeError its handler returns on its first
// attempt; later attempts succeed.
type snoozeOutcomeArgs struct {
	Outcome string `json:"outcome"`
}

func (snoozeOutcomeArgs) Kind() string { return "snooze_outcome" }

// oddSnoozes are *SnoozeError values a handler may build itself, by
// snoozeOutcomeArgs.Outcome.
var oddSnoozes = map[string]error{
	"nil":      (*leasehold.SnoozeError)(nil),
	"negative": &leasehold.SnoozeError{Delay: -time.Hour},
}

// TestOddSnoozeErrorsSnooze: a handler that returns a nil *SnoozeError,
// or one with a negative Delay, snoozes its job at once, as Snooze(0) and
// Snooze(-time.Hour) do, instead of the attempt being recorded as a
// panic (reading a nil pointer's Delay) or the job put back an hour in the
// past.
func TestOddSnoozeErrorsSnooze(t *testing.T) {
	eachDriver(t, func(t *testing.T, d driver.Driver) {
		c := startOutcomeClient(t, d, leasehold.WorkFunc[snoozeOutcomeArgs](
			func(_ context.Context, j *leasehold.Job[snoozeOutcomeArgs]) error {
				if j.Attempt == 1 {
					return oddSnoozes[j.Args.Outcome]
				}
				return nil
			}))
		for outcome := range oddSnoozes {
			res, err := c.Insert(t.Context(), snoozeOutcomeArgs{Outcome: outcome}, &leasehold.InsertOpts{MaxAttempts: 1})
			if err != nil {
				t.Fatalf("Insert: %v", err)
			}
			info := waitFinished(t.Context(), c, res.Job.ID)
			if info.State != leasehold.StateCompleted || len(info.Attempts) != 2 ||
				info.Attempts[0].Outcome != leasehold.OutcomeSnoozed {
				t.Errorf("%s: job %s with %d attempts, first %+v; want completed after a snoozed attempt",
					outcome, info.State, len(info.Attempts), info.Attempts[0])
			}
			if info.RunAt.Before(info.Attempts[0].EndedAt) {
				t.Errorf("%s: run_at %v before the snoozed attempt ended (%v)", outcome, info.RunAt, info.Attempts[0].EndedAt)
			}
		}
		if p := c.Stats().Panics; p != 0 {
			t.Errorf("Stats().Panics = %d, want 0", p)
		}
	})
}

// startOutcomeClient starts a client on d working T's jobs with w, polling
// every 10 ms, with the config changed by each of opts, and stops it when
// the test ends.
func startOutcomeClient[T leasehold.Args](t *testing.T, d driver.Driver, w leasehold.Worker[T], opts ...func(*leasehold.Config)) *leasehold.Client {
	t.Helper()
	ws := leasehold.NewWorkers()
	if err := leasehold.AddWorker(ws, w); err != nil {
		t.Fatalf("AddWorker: %v", err)
	}
	cfg := leasehold.Config{Driver: d, Workers: ws, PollInterval: 10 * time.Millisecond, ShutdownTimeout: 5 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := leasehold.NewClient(cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return c
}

// pastRetries is a RetryPolicy that asks for a negative delay.
type pastRetries struct{}

func (pastRetries) NextRetry(*leasehold.JobRow, error) time.Duration { return -time.Hour }

// TestNegativeRetryDelayRetriesNow: a RetryPolicy that returns a negative
// delay retries the job at once, as a delay of 0 does, instead of putting
// its run_at in the past, ahead of the jobs due before it.
func TestNegativeRetryDelayRetriesNow(t *testing.T) {
	eachDriver(t, func(t *testing.T, d driver.Driver) {
		c := startOutcomeClient(t, d, leasehold.WorkFunc[snoozeOutcomeArgs](
			func(_ context.Context, j *leasehold.Job[snoozeOutcomeArgs]) error {
				if j.Attempt == 1 {
					return errors.New("try again")
				}
				return nil
			}), func(cfg *leasehold.Config) { cfg.RetryPolicy = pastRetries{} })
		res, err := c.Insert(t.Context(), snoozeOutcomeArgs{}, &leasehold.InsertOpts{MaxAttempts: 2})
		if err != nil {
			t.Fatalf("Insert: %v", err)
		}
		info := waitFinished(t.Context(), c, res.Job.ID)
		if info.State != leasehold.StateCompleted || len(info.Attempts) != 2 || info.Attempts[0].Outcome != leasehold.OutcomeRetried {
			t.Fatalf("job %s with %d attempts; want completed after a retried attempt", info.State, len(info.Attempts))
		}
		if info.RunAt.Before(info.Attempts[0].EndedAt) {
			t.Errorf("run_at %v is %v before the retried attempt ended", info.RunAt, info.Attempts[0].EndedAt.Sub(info.RunAt))
		}
	})
}
