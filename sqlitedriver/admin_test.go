package sqlitedriver

import (
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

func TestNowIsDatabaseClock(t *testing.T) {
	d := openTest(t)
	now, err := d.Now(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if now.Location() != time.UTC {
		t.Errorf("Now location = %v, want UTC", now.Location())
	}
	if skew := time.Since(now); skew < -2*time.Second || skew > 2*time.Second {
		t.Errorf("database clock %v is %v away from the wall clock", now, skew)
	}
}

func TestRetryJob(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	j := claimOne(t, d, 1)
	if _, err := d.RetryJob(ctx, &driver.RetryParams{ID: j.ID}); !errors.Is(err, leasehold.ErrJobRunning) {
		t.Errorf("RetryJob(processing) err = %v, want ErrJobRunning", err)
	}
	finishOne(t, d, nil, &driver.FinishParams{ID: j.ID, Owner: "w", Attempt: 1,
		Transition: transition(leasehold.OutcomeFailed, "x")})
	got, err := d.RetryJob(ctx, &driver.RetryParams{ID: j.ID})
	if err != nil || got.State != leasehold.StatePending || got.FreeAttempts != 1 ||
		!got.FinishedAt.IsZero() || got.ChargedAttempts() != 0 {
		t.Fatalf("RetryJob = %+v, %v", got, err)
	}
	if _, err := d.RetryJob(ctx, &driver.RetryParams{ID: 424242}); !errors.Is(err, leasehold.ErrJobNotFound) {
		t.Errorf("RetryJob(missing) err = %v, want ErrJobNotFound", err)
	}
}

func TestCancelJob(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	pending := insert(t, d, job(`{}`))[0]
	got, err := d.CancelJob(ctx, pending.ID)
	if err != nil || got.State != leasehold.StateCancelled || got.FinishedAt.IsZero() {
		t.Fatalf("CancelJob(pending) = %+v, %v", got, err)
	}
	got, err = d.CancelJob(ctx, pending.ID)
	if !errors.Is(err, leasehold.ErrJobFinished) || got == nil || got.ID != pending.ID {
		t.Errorf("CancelJob(cancelled) = %+v, %v; want job and ErrJobFinished", got, err)
	}
	running := claimOne(t, d, 3)
	got, err = d.CancelJob(ctx, running.ID)
	if err != nil || got.State != leasehold.StateProcessing || !got.CancelRequested {
		t.Errorf("CancelJob(processing) = %+v, %v", got, err)
	}
	if _, err := d.CancelJob(ctx, 424242); !errors.Is(err, leasehold.ErrJobNotFound) {
		t.Errorf("CancelJob(missing) err = %v, want ErrJobNotFound", err)
	}
}

func TestPurge(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	insertN(t, d, 5)
	js := claim(t, d, "w", 3, time.Minute, false)
	for _, j := range js {
		finishOne(t, d, nil, &driver.FinishParams{ID: j.ID, Owner: "w", Attempt: 1,
			Transition: transition(leasehold.OutcomeCompleted, "")})
	}
	if n, err := d.Purge(ctx, &driver.PurgeParams{OlderThan: time.Hour}); err != nil || n != 0 {
		t.Errorf("Purge(1h) = %d, %v; want 0", n, err)
	}
	if n, err := d.Purge(ctx, &driver.PurgeParams{OlderThan: -time.Second, Limit: 2}); err != nil || n != 2 {
		t.Errorf("Purge(limit 2) = %d, %v; want 2", n, err)
	}
	if n, err := d.Purge(ctx, &driver.PurgeParams{OlderThan: -time.Second}); err != nil || n != 1 {
		t.Errorf("Purge = %d, %v; want 1", n, err)
	}
	for _, j := range js {
		if _, err := d.GetJob(ctx, j.ID); !errors.Is(err, leasehold.ErrJobNotFound) {
			t.Errorf("purged job %d: %v", j.ID, err)
		}
		if as := attempts(t, d, j.ID); len(as) != 0 {
			t.Errorf("purged job %d kept %d attempts", j.ID, len(as))
		}
	}
	left, err := d.ListJobs(ctx, &leasehold.ListParams{})
	if err != nil || len(left) != 2 {
		t.Errorf("left %d jobs, %v; want 2", len(left), err)
	}
}

func TestQueueStatsAndList(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	other := job(`{}`)
	other.Queue = "a"
	insert(t, d, other)
	insertN(t, d, 4)
	claim(t, d, "w", 1, time.Hour, false)
	claim(t, d, "x", 1, -time.Second, false)
	stats, err := d.QueueStats(ctx)
	if err != nil || len(stats) != 2 || stats[0].Queue != "a" || stats[1].Queue != "q" {
		t.Fatalf("QueueStats = %+v, %v", stats, err)
	}
	q := stats[1]
	if q.Counts[leasehold.StatePending] != 2 || q.Counts[leasehold.StateProcessing] != 2 ||
		q.LiveLeases != 1 || q.ExpiredLeases != 1 || q.OldestPending < 0 || q.OldestPending > time.Minute {
		t.Errorf("stats of q = %+v", q)
	}
	for _, c := range []struct {
		p    leasehold.ListParams
		want int
	}{
		{leasehold.ListParams{}, 5},
		{leasehold.ListParams{Queue: "q", States: []leasehold.JobState{leasehold.StatePending}}, 2},
		{leasehold.ListParams{Owner: "w"}, 1},
		{leasehold.ListParams{Expired: true}, 1},
		{leasehold.ListParams{Kind: "nope"}, 0},
		{leasehold.ListParams{AfterID: 3, Limit: 1}, 1},
	} {
		got, err := d.ListJobs(ctx, &c.p)
		if err != nil || len(got) != c.want {
			t.Errorf("ListJobs(%+v) = %d jobs, %v; want %d", c.p, len(got), err, c.want)
		}
	}
}
