package leasehold_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
)

// TestPeriodicMiddlewareErrorAfterWriteLogged: an insert middleware
// that returns an ordinary error once next wrote the slot's job leaves
// the job, and, as a periodic slot has no caller to receive the error,
// it is logged at Warn with the schedule and the slot, not dropped.
func TestPeriodicMiddlewareErrorAfterWriteLogged(t *testing.T) {
	var (
		mu    sync.Mutex
		first string // the unique key of the first slot's job
	)
	audit := leasehold.InsertMiddlewareFunc(func(ctx context.Context, _ any, jobs []*leasehold.InsertJob,
		next func(context.Context) ([]*leasehold.InsertResult, error)) ([]*leasehold.InsertResult, error) {
		mu.Lock()
		if first == "" {
			first = jobs[0].Opts.UniqueKey
		}
		mu.Unlock()
		res, err := next(ctx)
		if err != nil {
			return nil, err
		}
		return res, errors.New("audit row not written")
	})
	var logs lockedLog
	c := startedWithPeriodic(t, leasehold.Config{Driver: sqlitetest.Open(t), Logger: logs.Logger(),
		InsertMiddleware: []leasehold.InsertMiddleware{audit}},
		leasehold.PeriodicJob{Name: "audited", Schedule: leasehold.Every(time.Second), Args: tick, Grace: time.Minute})
	jobs := waitJobs(t, c, &logs, "two jobs", func(jobs []*leasehold.JobRow) bool { return len(jobs) >= 2 })
	text := logs.String()
	mu.Lock()
	defer mu.Unlock()
	if jobs[0].UniqueKey != first {
		t.Errorf("the first job is %s, want the first slot's, %s, written before the middleware failed; log:\n%s",
			jobs[0].UniqueKey, first, text)
	}
	var line string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "audit row not written") {
			line = l
			break
		}
	}
	if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "schedule=audited ") ||
		!strings.Contains(line, "slot=") {
		t.Fatalf("the middleware's error after the write is not logged at Warn with the schedule and slot; log:\n%s", text)
	}
}
