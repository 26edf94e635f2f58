//go:build chaos_unfenced

package chaos

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/driver"
)

// Unfenced reports whether this build completes jobs without the fence.
// This is the deliberately broken test-only build (tag chaos_unfenced)
// that proves the harness's checks fail when fencing is off.
const Unfenced = true

// Plain completions that ignore lease_owner and attempt.
const (
	pgUnfencedSQL = `UPDATE leasehold_jobs SET status = 'completed', finished_at = statement_timestamp(),
	lease_owner = NULL, lease_until = NULL WHERE id = $1`
	sqliteUnfencedSQL = `UPDATE leasehold_jobs SET status = 'completed',
	finished_at = CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) * 1000,
	lease_owner = NULL, lease_until = NULL WHERE id = ?1`
)

// refusedInTx ignores the fence's refusal: it marks the job completed with
// plain SQL in the handler's transaction and reports the completion as
// applied, so the handler commits its ledger row.
func (r *recorder) refusedInTx(ctx context.Context, tx *sql.Tx, p *driver.FinishParams) ([]driver.FinishResult, error) {
	q := pgUnfencedSQL
	if r.dialect == cli.SQLite {
		q = sqliteUnfencedSQL
	}
	if _, err := tx.ExecContext(ctx, q, p.ID); err != nil {
		return nil, fmt.Errorf("chaos: unfenced completion of job %d: %w", p.ID, err)
	}
	return []driver.FinishResult{{ID: p.ID}}, nil
}
