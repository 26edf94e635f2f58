package drivertest

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// testPausedQueueFinishesRunning: a queue paused by another process while
// one of its jobs runs lets that job complete; a job inserted meanwhile
// waits, unclaimed, over many poll intervals; QueueStats shows the queue
// paused; once resumed, the waiting job runs.
func testPausedQueueFinishesRunning(e *clientEnv) {
	g := newGate()
	c := e.newClient(e.d, e.workers(func(_ context.Context, job *leasehold.Job[testArgs]) error {
		if job.Args.N == 1 {
			g.markStarted()
			<-g.release
		}
		return nil
	}), nil)
	op := e.newClient(e.h.OpenSecond(e.T, e.d), nil, nil)
	running := e.insertOpts(c, nil)
	e.waitGate(g.started, "the first job to start")

	for range 2 {
		if err := op.PauseQueue(e.ctx, leasehold.DefaultQueue); err != nil {
			e.Fatalf("PauseQueue: %v", err)
		}
	}
	waiting, err := c.Insert(e.ctx, testArgs{N: 2}, nil)
	if err != nil {
		e.Fatalf("Insert: %v", err)
	}
	close(g.release)
	e.waitState(running, leasehold.StateCompleted, 30*time.Second)
	time.Sleep(20 * 20 * time.Millisecond) // twenty poll intervals
	if row, _ := e.d.GetJob(e.ctx, waiting.Job.ID); row.State != leasehold.StatePending || row.Attempt != 0 {
		e.Fatalf("job inserted into the paused queue is %s at attempt %d, want pending and never claimed", row.State, row.Attempt)
	}
	e.wantPaused(op, leasehold.DefaultQueue, true)

	if err := op.ResumeQueue(e.ctx, leasehold.DefaultQueue); err != nil {
		e.Fatalf("ResumeQueue: %v", err)
	}
	e.waitState(waiting.Job.ID, leasehold.StateCompleted, 30*time.Second)
	e.wantPaused(op, leasehold.DefaultQueue, false)
}

// testResumedQueueClaimedPromptly: a queue resumed by another process is
// claimed from by idle workers at once on a driver with notifications
// (their poll interval is an hour: only the resume's wake-up can reach
// them), and within about one poll interval otherwise.
func testResumedQueueClaimedPromptly(e *clientEnv) {
	_, notifies := e.d.(driver.Notifier)
	poll := 300 * time.Millisecond
	if notifies {
		poll = time.Hour
	}
	picked := make(chan int64, 100)
	e.newClient(e.d, e.workers(func(_ context.Context, job *leasehold.Job[testArgs]) error {
		picked <- job.ID
		return nil
	}), func(c *leasehold.Config) { c.PollInterval = poll })
	op := e.newClient(e.h.OpenSecond(e.T, e.d), nil, nil)
	if notifies {
		e.waitListening(op, picked)
	}

	if err := op.PauseQueue(e.ctx, leasehold.DefaultQueue); err != nil {
		e.Fatalf("PauseQueue: %v", err)
	}
	waiting := e.insertOpts(op, nil)
	time.Sleep(min(poll, time.Second) + 300*time.Millisecond) // a poll, or the insert's wake-up, claims nothing
	select {
	case id := <-picked:
		e.Fatalf("job %d of a paused queue was claimed", id)
	default:
	}
	resumed := time.Now()
	if err := op.ResumeQueue(e.ctx, leasehold.DefaultQueue); err != nil {
		e.Fatalf("ResumeQueue: %v", err)
	}
	bound := poll + 2*time.Second
	if notifies {
		bound = 10 * time.Second
	}
	select {
	case id := <-picked:
		if id != waiting {
			e.Fatalf("picked job %d after resume, want %d", id, waiting)
		}
		e.Logf("claimed %v after resume", time.Since(resumed))
	case <-time.After(bound):
		e.Fatalf("job of the resumed queue not claimed within %v (poll interval %v)", bound, poll)
	}
}

// testResumeWakesOwnWorkers: ResumeQueue wakes the resuming client's own
// idle workers at once, on every driver: their poll interval is an hour
// and they hear no notifications (PollOnly), so only the client's own
// wake-up can reach them.
func testResumeWakesOwnWorkers(e *clientEnv) {
	picked := make(chan int64, 10)
	c := e.newClient(e.d, e.workers(func(_ context.Context, job *leasehold.Job[testArgs]) error {
		picked <- job.ID
		return nil
	}), func(c *leasehold.Config) { c.PollInterval, c.PollOnly = time.Hour, true })

	if err := c.PauseQueue(e.ctx, leasehold.DefaultQueue); err != nil {
		e.Fatalf("PauseQueue: %v", err)
	}
	waiting := e.insertOpts(c, nil)
	time.Sleep(300 * time.Millisecond) // the insert's wake-up claims nothing
	select {
	case id := <-picked:
		e.Fatalf("job %d of a paused queue was claimed", id)
	default:
	}
	if err := c.ResumeQueue(e.ctx, leasehold.DefaultQueue); err != nil {
		e.Fatalf("ResumeQueue: %v", err)
	}
	const bound = 5 * time.Second
	select {
	case id := <-picked:
		if id != waiting {
			e.Fatalf("picked job %d after resume, want %d", id, waiting)
		}
	case <-time.After(bound):
		e.Fatalf("job not claimed within %v of ResumeQueue by the client that resumed it (poll interval 1h, PollOnly)", bound)
	}
}

// waitListening inserts jobs through op until a worker picks one up: a
// worker whose poll interval is an hour then listens for wake-ups. It
// drains picked.
func (e *clientEnv) waitListening(op *leasehold.Client, picked chan int64) {
	e.Helper()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		e.insertOpts(op, nil)
		select {
		case <-picked:
			time.Sleep(200 * time.Millisecond) // the rest of the inserts' jobs
			for len(picked) > 0 {
				<-picked
			}
			return
		case <-deadline:
			e.Fatalf("no job picked up: the worker does not hear wake-ups")
		case <-tick.C:
		}
	}
}

// testPauseQueueBadName: PauseQueue and ResumeQueue refuse a malformed
// queue name with an *InvalidInputError matching ErrInvalidQueue, and
// record nothing.
func testPauseQueueBadName(e *clientEnv) {
	c := e.newClient(e.d, nil, nil)
	for _, name := range []string{"", "bad name", "-dash", strings.Repeat("q", 200), "nul\x00"} {
		for what, call := range map[string]func(context.Context, string) error{
			"PauseQueue": c.PauseQueue, "ResumeQueue": c.ResumeQueue,
		} {
			err := call(e.ctx, name)
			var bad *leasehold.InvalidInputError
			if !errors.Is(err, leasehold.ErrInvalidQueue) || !errors.As(err, &bad) || bad.Field != "queue" {
				e.Errorf("%s(%q) = %v, want an *InvalidInputError for queue matching ErrInvalidQueue", what, name, err)
			}
		}
	}
	qs, err := c.QueueStats(e.ctx)
	if err != nil || len(qs) != 0 {
		e.Fatalf("QueueStats after refused pauses = %d queues, %v; want none", len(qs), err)
	}
}

// wantPaused checks QueueStats' Paused flag of queue.
func (e *clientEnv) wantPaused(c *leasehold.Client, queue string, want bool) {
	e.Helper()
	qs, err := c.QueueStats(e.ctx)
	if err != nil {
		e.Fatalf("QueueStats: %v", err)
	}
	for _, q := range qs {
		if q.Queue == queue {
			if q.Paused != want || q.PausedAt.IsZero() == want {
				e.Fatalf("QueueStats of %s: Paused %v, PausedAt %v; want paused %v", queue, q.Paused, q.PausedAt, want)
			}
			return
		}
	}
	e.Fatalf("QueueStats has no queue %s", queue)
}
