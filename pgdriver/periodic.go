package pgdriver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
)

// periodicColumns are the columns of a leasehold_periodic row, as
// scanPeriodic reads them.
const periodicColumns = `name, spec, kind, queue, last_slot, coalesce(last_job_id, 0), next_slot,
	coalesce(grace_us, 0), created_at, updated_at`

// periodicRegisterSQL records a schedule, keeping its last slot.
const periodicRegisterSQL = `INSERT INTO leasehold_periodic AS p (name, spec, kind, queue, next_slot, grace_us)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, kind = excluded.kind, queue = excluded.queue,
	next_slot = excluded.next_slot, grace_us = excluded.grace_us, updated_at = now()
RETURNING ` + periodicColumns

// periodicClaimSQL claims slot $5 of schedule $1: it writes only when the
// schedule's last slot is earlier and, when $8 is not NULL, the database
// clock (clock_timestamp(), not the transaction's start) is not past the
// deadline $8. ON CONFLICT DO UPDATE re-checks both after waiting for a
// concurrent claim, on the newest row version, so of many claims of one
// slot exactly one returns a row, and a claim that waited past its
// deadline writes nothing.
const periodicClaimSQL = `INSERT INTO leasehold_periodic AS p (name, spec, kind, queue, last_slot, next_slot, grace_us)
SELECT $1::text, $2::text, $3::text, $4::text, $5::timestamptz, $6::timestamptz, $7::bigint
WHERE $8::timestamptz IS NULL OR clock_timestamp() <= $8::timestamptz
ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, kind = excluded.kind, queue = excluded.queue,
	last_slot = excluded.last_slot, last_job_id = NULL, next_slot = excluded.next_slot,
	grace_us = excluded.grace_us, updated_at = now()
WHERE (p.last_slot IS NULL OR p.last_slot < excluded.last_slot)
	AND ($8::timestamptz IS NULL OR clock_timestamp() <= $8::timestamptz)
RETURNING name`

// periodicTakenSQL reports whether schedule $1's last slot is slot $2 or
// a later one: whether a refused claim with a deadline was refused as
// taken rather than late. FOR SHARE waits for a concurrent claim of the
// schedule that has not committed yet (one that came in time while this
// one came late, its insert left out by the deadline and so never
// waiting on the row), and reads the row as that claim left it. No row
// (a schedule not registered) is not taken.
const periodicTakenSQL = `SELECT last_slot IS NOT NULL AND last_slot >= $2 FROM leasehold_periodic WHERE name = $1 FOR SHARE`

// periodicJobSQL records the job of the slot just claimed.
const periodicJobSQL = `UPDATE leasehold_periodic SET last_job_id = $2 WHERE name = $1`

// periodicListSQL lists the schedules by name in byte order (COLLATE
// "C"), as SQLite does, whatever the database's collation.
const periodicListSQL = `SELECT ` + periodicColumns + ` FROM leasehold_periodic ORDER BY name COLLATE "C"`

const periodicDeleteSQL = `DELETE FROM leasehold_periodic WHERE name = $1`

// PeriodicRegister records a schedule, or updates its spec, kind, queue
// and next slot, and returns its row.
func (d *Driver) PeriodicRegister(ctx context.Context, p *driver.PeriodicRegisterParams) (*leasetype.PeriodicRow, error) {
	rows, err := collect(ctx, pgxQuerier{d.pool}, scanPeriodic, periodicRegisterSQL,
		p.Name, p.Spec, p.Kind, p.Queue, nullTime(p.Next), nullDuration(p.Grace))
	if err != nil {
		return nil, fmt.Errorf("pgdriver: register schedule %s: %w", p.Name, err)
	}
	return rows[0], nil
}

// PeriodicInsert claims p.Slot and inserts p.Job in one transaction when
// the claim wins (see driver.Driver). Other claims of the schedule wait
// on its row until that transaction ends, so the server ends it, rolled
// back, if it sits idle between statements past heldIdleTimeout.
func (d *Driver) PeriodicInsert(ctx context.Context, p *driver.PeriodicInsertParams) (*driver.PeriodicInsertResult, error) {
	if p.Job == nil {
		return nil, fmt.Errorf("pgdriver: periodic insert %s: %w: no job", p.Name, leasehold.ErrInvalidArgs)
	}
	var out *driver.PeriodicInsertResult
	err := beginBounded(ctx, d.pool, d.heldIdle, func(tx pgx.Tx) error {
		var err error
		out, err = d.claimSlot(ctx, tx, p)
		return err
	})
	if err != nil {
		if errors.As(err, new(slotInsertError)) {
			return nil, fmt.Errorf("%w (periodic schedule %s)", err, p.Name)
		}
		return nil, fmt.Errorf("pgdriver: periodic insert %s: %w", p.Name, err)
	}
	return out, nil
}

// slotInsertError is the failed insert of a claimed slot's job. The
// insert's error already names the driver and the insert, so
// PeriodicInsert adds only the schedule's name to it (also once the
// transaction explained it, as a file error on SQLite).
type slotInsertError struct{ error }

// Unwrap returns the insert's error.
func (e slotInsertError) Unwrap() error { return e.error }

// claimSlot is PeriodicInsert inside its transaction.
func (d *Driver) claimSlot(ctx context.Context, tx pgx.Tx, p *driver.PeriodicInsertParams) (*driver.PeriodicInsertResult, error) {
	var name string
	err := tx.QueryRow(ctx, periodicClaimSQL, p.Name, p.Spec, p.Job.Kind, p.Job.Queue, p.Slot, nullTime(p.Next),
		nullDuration(p.Grace), nullTime(p.Deadline)).Scan(&name)
	if errors.Is(err, pgx.ErrNoRows) {
		return d.refusedSlot(ctx, tx, p)
	}
	if err != nil {
		return nil, err
	}
	res, err := d.Insert(ctx, tx, []*driver.InsertParams{p.Job})
	if err != nil {
		return nil, slotInsertError{err}
	}
	if !res[0].Duplicate {
		if _, err := tx.Exec(ctx, periodicJobSQL, p.Name, res[0].Job.ID); err != nil {
			return nil, err
		}
	}
	return &driver.PeriodicInsertResult{Claimed: true, Job: res[0]}, nil
}

// refusedSlot is the result of p's claim, refused: late when p has a
// deadline and the schedule's last slot is still before p.Slot (the
// deadline refused it), else taken, with the slot's job.
func (d *Driver) refusedSlot(ctx context.Context, tx pgx.Tx, p *driver.PeriodicInsertParams) (*driver.PeriodicInsertResult, error) {
	if !p.Deadline.IsZero() {
		var taken bool
		err := tx.QueryRow(ctx, periodicTakenSQL, p.Name, p.Slot).Scan(&taken)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, err
		}
		if !taken {
			return &driver.PeriodicInsertResult{Late: true}, nil
		}
	}
	job, err := d.slotJob(ctx, tx, p.Job)
	return &driver.PeriodicInsertResult{Job: job}, err
}

// slotJob finds the job of a slot another process claimed: the job that
// holds its unique key, found as Insert finds a skipped key's holder
// (blockersSQL), so a scoped key is looked up in unique_scoped_key, in
// its scope and current window; nil when it has no key or no job holds
// the key any more.
func (d *Driver) slotJob(ctx context.Context, tx pgx.Tx, job *driver.InsertParams) (*leasehold.InsertResult, error) {
	if job.UniqueKey == "" {
		return nil, nil
	}
	scope, window := job.UniqueScope(), int64(0)
	if scope != "" {
		window = micros(job.UniqueWindow)
	}
	js := newJobScan(&d.names)
	found, err := collect(ctx, pgxQuerier{tx}, func(r scanner) (*leasehold.JobRow, error) {
		var ord int64
		return js.scan(prefixScanner{r, &ord})
	}, blockersSQL, []string{job.Kind}, []string{job.UniqueKey}, []string{scope}, []int64{window})
	if err != nil || len(found) == 0 {
		return nil, err
	}
	return &leasehold.InsertResult{Job: found[0], Duplicate: true}, nil
}

// PeriodicList returns every recorded schedule, ordered by name.
func (d *Driver) PeriodicList(ctx context.Context) ([]*leasetype.PeriodicRow, error) {
	rows, err := collect(ctx, pgxQuerier{d.pool}, scanPeriodic, periodicListSQL)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: list schedules: %w", err)
	}
	return rows, nil
}

// PeriodicDelete deletes the record of a schedule.
func (d *Driver) PeriodicDelete(ctx context.Context, name string) (bool, error) {
	tag, err := d.pool.Exec(ctx, periodicDeleteSQL, name)
	if err != nil {
		return false, fmt.Errorf("pgdriver: delete schedule %s: %w", name, err)
	}
	return tag.RowsAffected() > 0, nil
}

// scanPeriodic scans periodicColumns.
func scanPeriodic(r scanner) (*leasetype.PeriodicRow, error) {
	var (
		p          leasetype.PeriodicRow
		last, next *time.Time
		grace      int64
	)
	err := r.Scan(&p.Name, &p.Spec, &p.Kind, &p.Queue, &last, &p.LastJobID, &next, &grace, &p.CreatedAt, &p.UpdatedAt)
	if err != nil {
		return nil, err
	}
	p.LastSlot, p.NextSlot, p.Grace = deref(last), deref(next), time.Duration(grace)*time.Microsecond
	return &p, nil
}

// nullDuration binds a duration in microseconds, zero as NULL.
func nullDuration(d time.Duration) pgtype.Int8 {
	return pgtype.Int8{Int64: d.Microseconds(), Valid: d > 0}
}

// nullTime binds the zero time as NULL.
func nullTime(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
}
