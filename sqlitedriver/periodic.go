package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
)

// periodicColumns are the columns of a leasehold_periodic row, as
// scanPeriodic reads them.
const periodicColumns = `name, spec, kind, queue, last_slot, coalesce(last_job_id, 0), next_slot,
	coalesce(grace_us, 0), created_at, updated_at`

// periodicRegisterSQL records a schedule at ?1, keeping its last slot.
const periodicRegisterSQL = `INSERT INTO leasehold_periodic (name, spec, kind, queue, next_slot, grace_us, created_at, updated_at)
VALUES (?2, ?3, ?4, ?5, ?6, ?7, ?1, ?1)
ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, kind = excluded.kind, queue = excluded.queue,
	next_slot = excluded.next_slot, grace_us = excluded.grace_us, updated_at = ?1
RETURNING ` + periodicColumns

// periodicClaimSQL claims slot ?6 of schedule ?2 at ?1, the
// transaction's now: it writes only when the schedule's last slot is
// earlier and, when ?9 is not NULL, ?1 is not past the deadline ?9.
// Claims run in write transactions, one at a time, so of many claims of
// one slot exactly one changes a row; ?1 is read in the claim's
// transaction (inTx), after any wait for another one. The SELECT's
// WHERE is also what keeps SQLite from parsing ON CONFLICT as a join
// constraint.
const periodicClaimSQL = `INSERT INTO leasehold_periodic (name, spec, kind, queue, last_slot, next_slot, grace_us, created_at, updated_at)
SELECT ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?1, ?1
WHERE ?9 IS NULL OR ?1 <= ?9
ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, kind = excluded.kind, queue = excluded.queue,
	last_slot = excluded.last_slot, last_job_id = NULL, next_slot = excluded.next_slot,
	grace_us = excluded.grace_us, updated_at = ?1
WHERE leasehold_periodic.last_slot IS NULL OR leasehold_periodic.last_slot < excluded.last_slot`

// periodicTakenSQL reports whether schedule ?1's last slot is slot ?2 or
// a later one: whether a refused claim with a deadline was refused as
// taken rather than late.
const periodicTakenSQL = `SELECT EXISTS (SELECT 1 FROM leasehold_periodic WHERE name = ?1 AND last_slot >= ?2)`

// periodicJobSQL records the job of the slot just claimed.
const periodicJobSQL = `UPDATE leasehold_periodic SET last_job_id = ?2 WHERE name = ?1`

const periodicListSQL = `SELECT ` + periodicColumns + ` FROM leasehold_periodic ORDER BY name`

const periodicDeleteSQL = `DELETE FROM leasehold_periodic WHERE name = ?`

// PeriodicRegister records a schedule, or updates its spec, kind, queue
// and next slot, and returns its row.
func (d *Driver) PeriodicRegister(ctx context.Context, p *driver.PeriodicRegisterParams) (*leasetype.PeriodicRow, error) {
	var row *leasetype.PeriodicRow
	err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
		var err error
		row, err = scanPeriodic(d.queryRow(ctx, tx, periodicRegisterSQL, now, p.Name, p.Spec, p.Kind, p.Queue, nullMicros(p.Next),
			nullDuration(p.Grace)))
		return err
	}, periodicRegisterSQL)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: register schedule %s: %w", p.Name, err)
	}
	return row, nil
}

// PeriodicInsert claims p.Slot and inserts p.Job in one transaction when
// the claim wins (see driver.Driver).
func (d *Driver) PeriodicInsert(ctx context.Context, p *driver.PeriodicInsertParams) (*driver.PeriodicInsertResult, error) {
	if p.Job == nil {
		return nil, fmt.Errorf("sqlitedriver: periodic insert %s: %w: no job", p.Name, leasehold.ErrInvalidArgs)
	}
	var out *driver.PeriodicInsertResult
	err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
		var err error
		out, err = d.claimSlot(ctx, tx, now, p)
		return err
	}, periodicClaimSQL, periodicTakenSQL, periodicJobSQL, insertJobSQL, blockerSQL, scopedBlockerSQL)
	if err != nil {
		if errors.As(err, new(slotInsertError)) {
			return nil, fmt.Errorf("%w (periodic schedule %s)", err, p.Name)
		}
		return nil, fmt.Errorf("sqlitedriver: periodic insert %s: %w", p.Name, err)
	}
	return out, nil
}

// slotInsertError is the failed insert of a claimed slot's job, or the
// failed lookup of the job of a slot another process claimed. Their
// errors already name the driver and what failed, so PeriodicInsert adds
// only the schedule's name to them (also once the transaction explained
// them, as a file error on SQLite).
type slotInsertError struct{ error }

// Unwrap returns the insert's or the lookup's error.
func (e slotInsertError) Unwrap() error { return e.error }

// claimSlot is PeriodicInsert inside its transaction.
func (d *Driver) claimSlot(ctx context.Context, tx *sql.Tx, now int64, p *driver.PeriodicInsertParams) (*driver.PeriodicInsertResult, error) {
	res, err := d.exec(ctx, tx, periodicClaimSQL, now, p.Name, p.Spec, p.Job.Kind, p.Job.Queue,
		p.Slot.UnixMicro(), nullMicros(p.Next), nullDuration(p.Grace), nullMicros(p.Deadline))
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		if err != nil {
			return nil, err
		}
		return d.refusedSlot(ctx, tx, now, p)
	}
	ins, err := d.insertAll(ctx, tx, now, []*driver.InsertParams{p.Job})
	if err != nil {
		return nil, slotInsertError{err}
	}
	if !ins[0].Duplicate {
		if _, err := d.exec(ctx, tx, periodicJobSQL, p.Name, ins[0].Job.ID); err != nil {
			return nil, err
		}
	}
	return &driver.PeriodicInsertResult{Claimed: true, Job: ins[0]}, nil
}

// refusedSlot is the result of p's claim, refused at now: late when p
// has a deadline and the schedule's last slot is still before p.Slot
// (the deadline refused it), else taken, with the slot's job.
func (d *Driver) refusedSlot(ctx context.Context, tx *sql.Tx, now int64, p *driver.PeriodicInsertParams) (*driver.PeriodicInsertResult, error) {
	if !p.Deadline.IsZero() {
		var taken bool
		if err := d.queryRow(ctx, tx, periodicTakenSQL, p.Name, p.Slot.UnixMicro()).Scan(&taken); err != nil {
			return nil, err
		}
		if !taken {
			return &driver.PeriodicInsertResult{Late: true}, nil
		}
	}
	job, err := d.slotJob(ctx, tx, p.Job, now)
	return &driver.PeriodicInsertResult{Job: job}, err
}

// slotJob finds the job of a slot another process claimed: the job that
// holds its unique key, found as an insert finds a skipped key's holder
// (blocker), so a scoped key is looked up in unique_scoped_key, in its
// scope and the window of now; nil when it has no key or no job holds the
// key any more.
func (d *Driver) slotJob(ctx context.Context, tx *sql.Tx, job *driver.InsertParams, now int64) (*leasehold.InsertResult, error) {
	if job.UniqueKey == "" {
		return nil, nil
	}
	found, err := d.blocker(ctx, tx, job, now)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, slotInsertError{err}
	}
	return &leasehold.InsertResult{Job: found, Duplicate: true}, nil
}

// PeriodicList returns every recorded schedule, ordered by name.
func (d *Driver) PeriodicList(ctx context.Context) ([]*leasetype.PeriodicRow, error) {
	rows, err := d.dbQuery(ctx, periodicListSQL)
	if err != nil {
		return nil, d.wrapErr(fmt.Errorf("sqlitedriver: list schedules: %w", err))
	}
	out, err := scanAll(rows, scanPeriodic)
	if err != nil {
		return nil, d.wrapErr(fmt.Errorf("sqlitedriver: list schedules: %w", err))
	}
	return out, nil
}

// PeriodicDelete deletes the record of a schedule.
func (d *Driver) PeriodicDelete(ctx context.Context, name string) (bool, error) {
	var n int64
	err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, _ int64) error {
		res, err := d.exec(ctx, tx, periodicDeleteSQL, name)
		if err == nil {
			n, err = res.RowsAffected()
		}
		return err
	}, periodicDeleteSQL)
	if err != nil {
		return false, fmt.Errorf("sqlitedriver: delete schedule %s: %w", name, err)
	}
	return n > 0, nil
}

// scanPeriodic scans periodicColumns.
func scanPeriodic(s scanner) (*leasetype.PeriodicRow, error) {
	var (
		p                  leasetype.PeriodicRow
		last, next         sql.NullInt64
		grace              int64
		created, updatedAt int64
	)
	err := s.Scan(&p.Name, &p.Spec, &p.Kind, &p.Queue, &last, &p.LastJobID, &next, &grace, &created, &updatedAt)
	if err != nil {
		return nil, err
	}
	p.LastSlot, p.NextSlot, p.Grace = nullTime(last), nullTime(next), time.Duration(grace)*time.Microsecond
	p.CreatedAt, p.UpdatedAt = fromMicros(created), fromMicros(updatedAt)
	return &p, nil
}

// nullDuration binds a duration in microseconds, zero as NULL.
func nullDuration(d time.Duration) sql.NullInt64 {
	return sql.NullInt64{Int64: d.Microseconds(), Valid: d > 0}
}

// nullMicros binds t as Unix microseconds, the zero time as NULL.
func nullMicros(t time.Time) sql.NullInt64 {
	return sql.NullInt64{Int64: t.UnixMicro(), Valid: !t.IsZero()}
}
