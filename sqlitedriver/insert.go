package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

const insertCols = `kind, queue, status, priority, max_attempts, args, metadata, unique_key, run_at, created_at, uuid,
	unique_scoped_key, unique_scope, unique_window, unique_window_start`

// insertValues skips a job whose unique key another job holds. The
// conflict has no target: a plain key conflicts on one partial unique
// index, a scoped key on another, and the caller reads the job that holds
// a skipped key (blockerSQL, scopedBlockerSQL).
const insertValues = `VALUES (?1, ?2, 'pending', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
ON CONFLICT DO NOTHING`

const insertJobSQL = `INSERT INTO leasehold_jobs (` + insertCols + `) ` + insertValues +
	` RETURNING ` + jobCols

const insertBulkSQL = `INSERT INTO leasehold_jobs (` + insertCols + `) ` + insertValues

// Insert inserts jobs in tx (a *sql.Tx on this database file, see the
// package documentation) when tx is
// non-nil, else in its own transaction. A job whose unique key another job
// holds is not inserted: that job is returned with Duplicate set. Notify is
// ignored: SQLite has no cross-process notification, the client signals its
// own inserts and other processes poll.
func (d *Driver) Insert(ctx context.Context, tx any, params []*driver.InsertParams) ([]*leasehold.InsertResult, error) {
	t, err := asTx(tx)
	if err != nil {
		return nil, err
	}
	if len(params) == 0 {
		return nil, nil
	}
	var results []*leasehold.InsertResult
	err = d.withTx(ctx, t, func(ctx context.Context, tx *sql.Tx, now int64) error {
		results, err = d.insertAll(ctx, tx, now, params)
		return err
	}, insertJobSQL, blockerSQL, scopedBlockerSQL)
	if err != nil {
		return nil, err
	}
	return results, nil
}

// insertAll inserts params one by one with a prepared statement.
func (d *Driver) insertAll(ctx context.Context, tx *sql.Tx, now int64, params []*driver.InsertParams) ([]*leasehold.InsertResult, error) {
	stmt, err := d.txStmt(ctx, tx, insertJobSQL)
	if err != nil {
		return nil, err
	}
	results := make([]*leasehold.InsertResult, len(params))
	for i, p := range params {
		args, err := insertArgs(p, now)
		if err != nil {
			return nil, fmt.Errorf("sqlitedriver: insert job %d: %w", i, err)
		}
		job, err := scanJob(stmt.QueryRowContext(ctx, args...))
		switch {
		case err == nil:
			results[i] = &leasehold.InsertResult{Job: job}
			continue
		case !errors.Is(err, sql.ErrNoRows):
			return nil, fmt.Errorf("sqlitedriver: insert %s job: %w", p.Kind, err)
		}
		if job, err = d.skipped(ctx, tx, p, i, now, args[9]); err != nil {
			return nil, err
		}
		results[i] = &leasehold.InsertResult{Job: job, Duplicate: true}
	}
	return results, nil
}

// uuidTakenSQL reports whether a job holds a UUID.
const uuidTakenSQL = `SELECT EXISTS (SELECT 1 FROM leasehold_jobs WHERE uuid = ?)`

// skipped explains why params[i], p, with UUID u, was not inserted: the
// job that holds its unique key, as on PostgreSQL, where a held key skips
// the row before its UUID is checked (a keyed job inserted again with its
// own UUID is a duplicate); else its UUID is another job's, an error
// wrapping leasehold.ErrInvalidArgs.
func (d *Driver) skipped(ctx context.Context, tx *sql.Tx, p *driver.InsertParams, i int, now int64, u any) (*leasehold.JobRow, error) {
	if p.UniqueKey != "" {
		job, err := d.blocker(ctx, tx, p, now)
		if !errors.Is(err, sql.ErrNoRows) {
			return job, err
		}
	}
	var taken bool
	if err := d.queryRow(ctx, tx, uuidTakenSQL, u).Scan(&taken); err != nil {
		return nil, fmt.Errorf("sqlitedriver: insert %s job: %w", p.Kind, err)
	}
	if taken {
		return nil, fmt.Errorf("sqlitedriver: insert: %w: %s job %d was not inserted: its UUID %s is another job's",
			leasehold.ErrInvalidArgs, p.Kind, i, u)
	}
	return nil, fmt.Errorf("sqlitedriver: insert: %s job %d was not inserted, and no job holds its unique key or UUID", p.Kind, i)
}

// InsertBulk inserts params in one transaction with a prepared statement and
// returns how many rows it inserted (jobs whose unique key another job
// holds are skipped).
func (d *Driver) InsertBulk(ctx context.Context, params []*driver.InsertParams) (int64, error) {
	if len(params) == 0 {
		return 0, nil
	}
	var total int64
	err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
		total = 0
		stmt, err := d.txStmt(ctx, tx, insertBulkSQL)
		if err != nil {
			return err
		}
		for i, p := range params {
			args, err := insertArgs(p, now)
			if err != nil {
				return fmt.Errorf("sqlitedriver: insert job %d: %w", i, err)
			}
			res, err := stmt.ExecContext(ctx, args...)
			if err != nil {
				return fmt.Errorf("sqlitedriver: insert %s job: %w", p.Kind, err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return fmt.Errorf("sqlitedriver: insert %s job: %w", p.Kind, err)
			}
			total += n
		}
		return nil
	}, insertBulkSQL)
	if err != nil {
		return 0, err
	}
	return total, nil
}

// insertArgs returns the parameters of insertValues for p.
func insertArgs(p *driver.InsertParams, now int64) ([]any, error) {
	runAt := now + micros(p.RunIn)
	if !p.RunAt.IsZero() {
		runAt = p.RunAt.UnixMicro()
	}
	u, err := jobUUID(p)
	if err != nil {
		return nil, err
	}
	plain, scoped, scope, window, start := nullString(p.UniqueKey), nullString(""), nullString(""), int64(0), int64(0)
	if p.UniqueScoped() {
		plain, scoped, scope = nullString(""), nullString(p.UniqueKey), nullString(p.UniqueScope())
		window, start = micros(p.UniqueWindow), driver.WindowStart(now, p.UniqueWindow)
	}
	return []any{
		p.Kind, p.Queue, p.Priority, p.MaxAttempts,
		jsonText(p.Args), jsonText(p.Metadata), plain,
		runAt, now, u, scoped, scope, window, start,
	}, nil
}

// jobUUID returns p.UUID in canonical form, or a new random UUID when it
// is empty.
func jobUUID(p *driver.InsertParams) (string, error) {
	if p.UUID == "" {
		return uuid.NewString(), nil
	}
	u, err := uuid.Parse(p.UUID)
	if err != nil {
		return "", fmt.Errorf("%w: invalid UUID %q: %v", leasehold.ErrInvalidArgs, p.UUID, err)
	}
	return u.String(), nil
}

// jsonText binds JSON as TEXT (a BLOB would be read as SQLite JSONB); empty
// is the empty object.
func jsonText(b []byte) string {
	if len(b) == 0 {
		return "{}"
	}
	return string(b)
}
