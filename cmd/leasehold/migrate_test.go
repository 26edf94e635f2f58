package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/sqlitedriver"
)

// TestMigrateSaysWhatItDid: the first migrate names the version it reached,
// the second says it was already there, and a schema migrated by a newer
// leasehold is refused by migrate and by work, naming both versions.
func TestMigrateSaysWhatItDid(t *testing.T) {
	db := filepath.Join(t.TempDir(), "m.db")
	known := embeddedVersion(t)
	if out := ok(t, db, "migrate"); !strings.Contains(out, fmt.Sprintf("migrated to version %d", known)) {
		t.Errorf("first migrate said %q, want \"migrated to version %d\"", out, known)
	}
	if out := ok(t, db, "migrate"); !strings.Contains(out, fmt.Sprintf("already at version %d", known)) {
		t.Errorf("second migrate said %q, want \"already at version %d\"", out, known)
	}

	d, err := sqlitedriver.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.DB().ExecContext(context.Background(), `INSERT INTO leasehold_migrations (version, applied_at) VALUES (99, 0)`)
	if cerr := d.Close(); err != nil || cerr != nil {
		t.Fatalf("record migration 99: %v, %v", err, cerr)
	}
	for _, args := range [][]string{{"migrate"}, {"work", "--until-idle"}} {
		r := lh(t, db, args...)
		if r.code == 0 || !strings.Contains(r.stderr, fmt.Sprintf("version 99, this leasehold knows up to %d", known)) {
			t.Errorf("leasehold %s on schema version 99: %s\nwant a failure naming versions 99 and %d", strings.Join(args, " "), r, known)
		}
	}
}

// embeddedVersion returns the highest migration the SQLite driver embeds.
func embeddedVersion(t *testing.T) int {
	t.Helper()
	d, err := sqlitedriver.Open(filepath.Join(t.TempDir(), "v.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	v, err := d.SchemaVersion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v.Known
}
