package chaos

import (
	"context"
	"database/sql"
	"slices"
	"time"
)

// A worker frozen on PostgreSQL inside a transaction of its own keeps
// the row locks that transaction took. The one that matters to the
// reclaim bound is the stuck watcher's rescue: it locks jobs whose lease
// ran out, every claim and every other watcher skips them (SKIP LOCKED)
// until the transaction ends, and the watcher tick that would have
// returned them is spent. pgdriver ends such a transaction after a short
// idle time (docs/design.md, step 7 "Rescue"), but that time and the
// watcher's next tick come on top of the bound. The harness therefore
// reads, once the worker has stopped, which job rows its open
// transaction holds, and waits in the background for them to be free
// again; reclaims allows each of those jobs that span.

// heldRowsSQL lists the jobs whose row the open transaction of a
// session named $1 has updated or locked (its xid is their xmax), with
// the database clock.
const heldRowsSQL = `SELECT j.id, (extract(epoch FROM clock_timestamp()) * 1e6)::bigint
FROM leasehold_jobs j JOIN pg_stat_activity a ON j.xmax = a.backend_xid
WHERE a.application_name = $1 AND a.pid <> pg_backend_pid()`

// waitFreeSQL waits for the rows of the jobs $1 to be free (the holder
// committed or was rolled back) and reads the database clock once it has
// locked the last of them; the aggregate makes it lock every row.
const waitFreeSQL = `SELECT (extract(epoch FROM max(clock_timestamp())) * 1e6)::bigint
FROM (SELECT id FROM leasehold_jobs WHERE id = ANY($1) FOR UPDATE) s`

// heldRows is what a PostgreSQL freeze kept locked.
type heldRows struct {
	// Jobs are the jobs whose row the frozen worker's open transaction
	// held as it stopped; AtUS is the database clock then.
	Jobs []int64 `json:"jobs"`
	AtUS int64   `json:"at_db_us"`
	// FreeUS is the database clock once every row was free again, 0 if
	// the harness could not tell (the freeze's end is used then).
	FreeUS int64 `json:"free_db_us"`
	done   chan struct{}
}

// readHeld records, for the freeze f of a PostgreSQL worker, the job
// rows its open transaction holds, and starts waiting for them to be
// free. It does nothing when there are none, and logs a failed read.
func (h *harness) readHeld(ctx context.Context, f *freezeEvent, owner string) {
	db, err := h.db.SQL()
	if err != nil {
		return
	}
	qctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	hr := &heldRows{done: make(chan struct{})}
	if err := scanHeld(qctx, db, owner, hr); err != nil {
		h.logf("chaos: cannot read the rows %s holds (no allowance for them): %v", f.Worker, err)
		return
	}
	if len(hr.Jobs) == 0 {
		return
	}
	f.Held = hr
	h.logf("%s stopped inside a transaction that holds job rows locked: %v", f.Worker, hr.Jobs)
	go func() {
		defer close(hr.done)
		hr.FreeUS = waitFree(context.WithoutCancel(ctx), db, hr.Jobs, h.o.FreezeFor+5*time.Second)
	}()
}

// scanHeld reads heldRowsSQL for owner into hr.
func scanHeld(ctx context.Context, db *sql.DB, owner string, hr *heldRows) error {
	rows, err := db.QueryContext(ctx, heldRowsSQL, owner)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id, &hr.AtUS); err != nil {
			return err
		}
		hr.Jobs = append(hr.Jobs, id)
	}
	return rows.Err()
}

// waitFree blocks until the rows of jobs are free, for at most d, and
// returns the database clock then (0 on error). Its own locks last only
// as long as the statement.
func waitFree(ctx context.Context, db *sql.DB, jobs []int64, d time.Duration) int64 {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var at sql.NullInt64 // NULL if every job is gone
	if err := db.QueryRowContext(ctx, waitFreeSQL, jobs).Scan(&at); err != nil {
		return 0
	}
	return at.Int64
}

// heldExtra is how much longer than the bound the claim at claimed of
// job, whose worker died at death, may come because a transaction frozen
// after the death held its row: from death + TTL, when the lease had run
// out at the latest, until the row was free, when the watcher's interval
// starts over. 0 when no freeze held it.
func (h *harness) heldExtra(job, death, claimed int64) int64 {
	expiry := death + h.o.TTL.Microseconds()
	var extra int64
	for _, f := range h.sched.freezes {
		hr := f.Held
		if hr == nil || hr.AtUS < death || hr.AtUS > claimed || !holds(hr, job) {
			continue
		}
		free := hr.FreeUS
		if free == 0 {
			free = hr.AtUS + f.For.Microseconds()
		}
		extra = max(extra, free-expiry)
	}
	return extra
}

// heldSettled waits for every wait for held rows to end, so that the
// report reads their figures.
func (h *harness) heldSettled() {
	for _, f := range h.sched.freezes {
		if f.Held != nil {
			<-f.Held.done
		}
	}
}

func holds(hr *heldRows, job int64) bool { return slices.Contains(hr.Jobs, job) }
