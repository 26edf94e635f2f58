package pgdriver

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasehold/leasehold/driver"
)

// copyColumns are the leasehold_jobs columns InsertBulk copies; created_at
// (and run_at when every job runs now) take their default, now(). run_at
// must stay last.
var copyColumns = []string{"kind", "queue", "priority", "max_attempts", "args", "metadata", "uuid", "run_at"}

// InsertBulk inserts params with COPY when none has a UniqueKey, and with
// one INSERT ... ON CONFLICT DO NOTHING otherwise (in key order, ids in
// batch order: insertKeyedRows), and returns how many jobs it inserted.
// Afterwards the notifier sends one notification per distinct queue of
// the jobs with Notify set.
func (d *Driver) InsertBulk(ctx context.Context, params []*driver.InsertParams) (int64, error) {
	if len(params) == 0 {
		return 0, nil
	}
	var (
		n   int64
		err error
	)
	if hasUniqueKey(params) {
		var a *insertArrays
		if a, err = newInsertArrays(params); err != nil {
			return 0, err
		}
		n, err = pgxQuerier{d.pool}.exec(ctx, insertBulkSQL, a.params()...)
	} else {
		n, err = d.copyJobs(ctx, params)
	}
	if err != nil {
		return n, fmt.Errorf("pgdriver: insert bulk: %w", uuidTakenError(err))
	}
	d.notes.request(notifyQueues(params))
	return n, nil
}

// copyJobs copies params into leasehold_jobs. A run_at relative to now is
// computed from one reading of the database clock.
func (d *Driver) copyJobs(ctx context.Context, params []*driver.InsertParams) (int64, error) {
	cols := copyColumns
	var now time.Time
	switch {
	case !needsRunAt(params):
		cols = cols[:len(cols)-1]
	case needsNow(params):
		var err error
		if now, err = d.Now(ctx); err != nil {
			return 0, err
		}
	}
	withRunAt := len(cols) == len(copyColumns)
	src := pgx.CopyFromSlice(len(params), func(i int) ([]any, error) {
		p := params[i]
		u, err := jobUUID(p)
		if err == nil {
			err = fitsInt32(p)
		}
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", i, err)
		}
		row := []any{p.Kind, p.Queue, int32(p.Priority), int32(p.MaxAttempts),
			jsonOrEmpty(p.Args), jsonOrEmpty(p.Metadata), u}
		if withRunAt {
			runAt := p.RunAt
			if runAt.IsZero() {
				runAt = now.Add(p.RunIn)
			}
			row = append(row, runAt)
		}
		return row, nil
	})
	return d.pool.CopyFrom(ctx, pgx.Identifier{"leasehold_jobs"}, cols, src)
}

func hasUniqueKey(params []*driver.InsertParams) bool {
	for _, p := range params {
		if p.UniqueKey != "" {
			return true
		}
	}
	return false
}

// needsRunAt reports whether some job does not simply run now.
func needsRunAt(params []*driver.InsertParams) bool {
	for _, p := range params {
		if !p.RunAt.IsZero() || p.RunIn != 0 {
			return true
		}
	}
	return false
}

// needsNow reports whether some job's run_at is relative to now.
func needsNow(params []*driver.InsertParams) bool {
	for _, p := range params {
		if p.RunAt.IsZero() {
			return true
		}
	}
	return false
}
