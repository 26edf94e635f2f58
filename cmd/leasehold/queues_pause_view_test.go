package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/view"
)

// TestQueuesPauseViewReadFails: once a pause (or resume) has committed,
// failing to read the queue's statistics, which are only displayed (here
// the context is cancelled after the commit, as a Ctrl-C does), still
// says what was done and succeeds, with a warning on stderr; the queue is
// paused.
func TestQueuesPauseViewReadFails(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		c, err := leasehold.NewClient(leasehold.Config{Driver: openDB(t, db).Driver})
		if err != nil {
			t.Fatal(err)
		}
		for _, pause := range []bool{true, false} {
			ctx, cancel := context.WithCancel(t.Context())
			cutAfterCommit := func(ctx context.Context, n int) ([]*leasehold.QueueStats, error) {
				cancel()
				return c.ActiveQueueStats(ctx, n)
			}
			var stdout, stderr bytes.Buffer
			a := &app{stdout: &stdout, stderr: &stderr}
			if err := a.setQueuePaused(ctx, c, "w", pause, cutAfterCommit); err != nil {
				t.Fatalf("pause %v: the change committed, but the command failed: %v", pause, err)
			}
			want := "queue w " + pausedWord(pause) + ":"
			if !strings.Contains(stdout.String(), want) || !strings.Contains(stderr.String(), "warning") ||
				!strings.Contains(stderr.String(), "context canceled") {
				t.Errorf("pause %v: stdout %q, stderr %q; want %q and a warning naming the failed read", pause, stdout.String(), stderr.String(), want)
			}
			var qs []view.QueueView
			okJSON(t, db, &qs, "queues")
			if paused := len(qs) == 1 && qs[0].Paused; paused != pause {
				t.Errorf("after pause %v, queues --json = %+v", pause, qs)
			}
		}
	})
}

// TestQueuesPauseViewCountsUnfinished: the queue printed by `queues pause
// --json` counts its unfinished jobs only (ActiveQueueStats, whose cost the
// finished jobs do not grow) and names no finished state rather than a
// false zero.
func TestQueuesPauseViewCountsUnfinished(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		ok(t, db, "jobs", "cancel", itoa(enqueueID(t, db, "k", "--queue", "w")))
		enqueueID(t, db, "k", "--queue", "w")
		var v view.QueueView
		okJSON(t, db, &v, "queues", "pause", "w")
		if !v.Paused || v.Counts["pending"] != 1 {
			t.Errorf("queues pause --json = %+v, want paused with 1 pending job", v)
		}
		if n, named := v.Counts["cancelled"]; named {
			t.Errorf("queues pause --json counts %d cancelled jobs; the finished jobs are not read, want no count", n)
		}
	})
}
