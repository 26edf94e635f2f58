package sqlitedriver

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
)

// TestOpenRefusesMemory checks that Open refuses the paths that give each
// of its connections a database of its own: on them Migrate and Insert
// succeed on the writer's database and every claim fails on a reader's
// ("no such table").
func TestOpenRefusesMemory(t *testing.T) {
	for _, path := range []string{":memory:", ""} {
		d, err := Open(path)
		if err == nil {
			t.Errorf("Open(%q) succeeded; %s", path, claimOnOwnDatabases(t, d))
			_ = d.Close()
			continue
		}
		if !errors.Is(err, ErrNotWAL) {
			t.Errorf("Open(%q) = %v; want an error matching ErrNotWAL", path, err)
		}
	}
}

// claimOnOwnDatabases says what a Driver on connections with databases
// of their own does with a job it inserts.
func claimOnOwnDatabases(t *testing.T, d *Driver) string {
	ctx := testCtx(t)
	if _, err := d.Migrate(ctx); err != nil {
		return "Migrate: " + err.Error()
	}
	if _, err := d.Insert(ctx, nil, []*driver.InsertParams{job(`{}`)}); err != nil {
		return "Insert: " + err.Error()
	}
	jobs, err := d.Claim(ctx, &driver.ClaimParams{Queue: "q", Kinds: []string{"k"}, Owner: "w", TTL: time.Minute, Limit: 1})
	if err != nil {
		return "Claim of the job it inserted: " + err.Error()
	}
	return fmt.Sprintf("Claim leased %d job(s)", len(jobs))
}

// TestCheckWAL checks the journal mode check Open makes on its writer
// after the ping: it refuses a database with no file and a file SQLite
// left out of WAL mode, and accepts DSN's file.
func TestCheckWAL(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		dsn  string
		want error
	}{
		"in memory":      {DSN(":memory:"), ErrNotWAL},
		"temporary":      {DSN(""), ErrNotWAL},
		"rollback mode":  {"file:" + filepath.Join(dir, "delete.db") + "?_pragma=journal_mode(DELETE)", ErrNotWAL},
		"DSN's WAL file": {DSN(filepath.Join(dir, "wal.db")), nil},
	} {
		t.Run(name, func(t *testing.T) {
			db, err := sql.Open("sqlite", tc.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			err = checkWAL(testCtx(t), db, "p.db")
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("checkWAL = %v; want %v", err, tc.want)
			}
		})
	}
}
