package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// blockerSQL reads the job that holds a plain key: any job of the kind
// with the key, in any state.
const blockerSQL = `SELECT ` + jobCols + ` FROM leasehold_jobs WHERE kind = ? AND unique_key = ?`

// scopedBlockerSQL reads the job that holds a scoped key: the job of the
// kind with the same key, scope and window, while it is in its scope.
const scopedBlockerSQL = `SELECT ` + jobCols + ` FROM leasehold_jobs
WHERE kind = ? AND unique_scoped_key = ? AND unique_scope = ? AND unique_window = ? AND unique_window_start = ?
	AND (unique_scope = 'forever' OR ` + driver.UnfinishedSQL + `)`

// blocker returns the job that holds p's unique key, which kept p from
// being inserted in tx: in SQLite's single write transaction it cannot
// have left the key's scope since.
func (d *Driver) blocker(ctx context.Context, tx *sql.Tx, p *driver.InsertParams, now int64) (*leasehold.JobRow, error) {
	var row *sql.Row
	if scope := p.UniqueScope(); scope == "" {
		row = d.queryRow(ctx, tx, blockerSQL, p.Kind, p.UniqueKey)
	} else {
		row = d.queryRow(ctx, tx, scopedBlockerSQL, p.Kind, p.UniqueKey, scope,
			micros(p.UniqueWindow), driver.WindowStart(now, p.UniqueWindow))
	}
	job, err := scanJob(row)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: read the %s job holding unique key %q: %w", p.Kind, p.UniqueKey, err)
	}
	return job, nil
}

// scopedKeyTaken reports whether err is a violation of the unique index of
// scoped keys (migration 005): a write that would make two jobs hold one
// scoped key.
func scopedKeyTaken(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE &&
		strings.Contains(se.Error(), "unique_scoped_key")
}
