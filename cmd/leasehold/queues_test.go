package main

import (
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/view"
)

// TestQueuesPauseResume: `queues pause` stops a running worker from
// claiming the queue's jobs while the job it runs finishes; `queues` shows
// the pause (a paused queue with no jobs too); `queues resume` lets the
// worker claim again. Both are idempotent; a bad name is a usage error.
func TestQueuesPauseResume(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		if out := ok(t, db, "queues", "pause", "empty"); !strings.Contains(out, "queue empty paused") {
			t.Errorf("queues pause said %q", out)
		}
		var empty view.QueueView
		okJSON(t, db, &empty, "queues", "pause", "empty")
		if !empty.Paused || empty.PausedAt == nil || empty.Queue != "empty" {
			t.Errorf("queues pause --json of a paused queue = %+v, want it paused", empty)
		}

		running := enqueueID(t, db, "leasehold.sleep", "--queue", "q1", "--args", `{"duration":"1500ms"}`)
		start(t, db, "work", "--queue", "q1", "--poll-interval", "50ms")
		waitFor(t, 30*time.Second, "the first job to run", func() bool { return showJob(t, db, running).Status == "processing" })
		ok(t, db, "queues", "pause", "q1")
		waiting := enqueueID(t, db, "leasehold.sleep", "--queue", "q1", "--args", `{"duration":"0s"}`)
		waitFor(t, 30*time.Second, "the running job to complete", func() bool { return showJob(t, db, running).Status == "completed" })
		time.Sleep(500 * time.Millisecond) // ten poll intervals
		if got := showJob(t, db, waiting); got.Status != "pending" || got.Attempt != 0 {
			t.Fatalf("job of the paused queue is %s at attempt %d, want pending, never claimed", got.Status, got.Attempt)
		}
		var qs []view.QueueView
		okJSON(t, db, &qs, "queues")
		if len(qs) != 2 || qs[0].Queue != "empty" || !qs[0].Paused || qs[1].Queue != "q1" || !qs[1].Paused {
			t.Fatalf("queues --json = %+v, want empty and q1, both paused", qs)
		}
		if out := ok(t, db, "queues"); !strings.Contains(out, "PAUSED") || strings.Count(out, "yes") != 2 {
			t.Errorf("queues output shows no pause:\n%s", out)
		}

		for range 2 {
			if out := ok(t, db, "queues", "resume", "q1"); !strings.Contains(out, "queue q1 resumed") {
				t.Errorf("queues resume said %q", out)
			}
		}
		waitFor(t, 30*time.Second, "the job of the resumed queue to complete", func() bool {
			return showJob(t, db, waiting).Status == "completed"
		})
		var resumed view.QueueView
		okJSON(t, db, &resumed, "queues", "resume", "empty")
		if resumed.Paused || resumed.PausedAt != nil {
			t.Errorf("queues resume --json = %+v, want not paused", resumed)
		}

		for _, args := range [][]string{{"queues", "pause", "bad name"}, {"queues", "resume", ""}, {"queues", "pause"}} {
			if r := lh(t, db, args...); r.code != cli.ExitUsage {
				t.Errorf("leasehold %q: %s, want exit %d", args, r, cli.ExitUsage)
			}
		}
	})
}
