package main

import (
	"context"
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
	if out := ok(t, db, "migrate"); !strings.Contains(out, "migrated to version 7") {
		t.Errorf("first migrate said %q, want \"migrated to version 7\"", out)
	}
	if out := ok(t, db, "migrate"); !strings.Contains(out, "already at version 7") {
		t.Errorf("second migrate said %q, want \"already at version 7\"", out)
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
		if r.code == 0 || !strings.Contains(r.stderr, "version 99, this leasehold knows up to 7") {
			t.Errorf("leasehold %s on schema version 99: %s\nwant a failure naming versions 99 and 7", strings.Join(args, " "), r)
		}
	}
}
