package sqlitedriver

import (
	"strings"
	"testing"
)

// TestMigration6LoosensStatusCheck: migration 006 edits the stored
// definition of leasehold_jobs in place: every connection, the migrating
// one and a new one, accepts 'reconciling' and still refuses an unknown
// state; the table keeps its indexes; the database passes integrity_check.
func TestMigration6LoosensStatusCheck(t *testing.T) {
	path := t.TempDir() + "/m.db"
	d := openPath(t, path) // migrated by this connection
	ctx := testCtx(t)
	var indexes int
	q := `SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'leasehold_jobs'`
	if err := d.DB().QueryRowContext(ctx, q).Scan(&indexes); err != nil || indexes < 5 {
		t.Fatalf("leasehold_jobs has %d indexes (%v), want its indexes kept", indexes, err)
	}
	for _, dr := range []*Driver{d, openPath(t, path)} {
		j := insert(t, dr, job(`{}`))[0]
		if _, err := dr.DB().ExecContext(ctx, `UPDATE leasehold_jobs SET status = 'reconciling' WHERE id = ?`, j.ID); err != nil {
			t.Errorf("status reconciling refused: %v", err)
		}
		_, err := dr.DB().ExecContext(ctx, `UPDATE leasehold_jobs SET status = 'bogus' WHERE id = ?`, j.ID)
		if err == nil || !strings.Contains(err.Error(), "CHECK") {
			t.Errorf("status bogus: %v, want a CHECK constraint failure", err)
		}
	}
	var res string
	if err := d.DB().QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&res); err != nil || res != "ok" {
		t.Errorf("integrity_check = %q, %v", res, err)
	}
}
