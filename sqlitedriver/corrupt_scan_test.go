package sqlitedriver

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestCorruptPagesMidScanAreErrCorrupt: a listing whose first rows read
// well and whose later rows are on damaged pages fails with ErrCorrupt,
// as one that fails at its first row does, so that the caller can tell
// the damage from a passing failure.
func TestCorruptPagesMidScanAreErrCorrupt(t *testing.T) {
	pad := `{"pad":"` + strings.Repeat("x", 2000) + `"}`
	t.Run("ListJobs", func(t *testing.T) {
		path := testdb.SQLitePath(t)
		d := openPath(t, path)
		for range 200 {
			insert(t, d, job(pad))
		}
		d = reopenDamaged(t, d, path)
		jobs, err := d.ListJobs(testCtx(t), &leasehold.ListParams{Limit: 1000})
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("ListJobs on a file damaged at its end: %d jobs, %v; want ErrCorrupt", len(jobs), err)
		}
	})
	t.Run("Checkpoints", func(t *testing.T) {
		path := testdb.SQLitePath(t)
		d := openPath(t, path)
		insert(t, d, job(`{}`))
		held := claim(t, d, "w", 1, time.Hour, false)[0]
		for range 200 {
			if _, err := d.Checkpoint(testCtx(t), nil, &driver.CheckpointParams{
				Lease: fenceOf(held), Name: "step", Data: []byte(pad)}); err != nil {
				t.Fatalf("Checkpoint: %v", err)
			}
		}
		d = reopenDamaged(t, d, path)
		rows, err := d.Checkpoints(testCtx(t), held.ID)
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Checkpoints on a file damaged at its end: %d rows, %v; want ErrCorrupt", len(rows), err)
		}
	})
}

// reopenDamaged closes d, overwrites the last fifth of the file at path
// with garbage (where the rows written last went; the schema and the
// first rows, at its start, stay readable) and opens it again.
func reopenDamaged(t *testing.T, d *Driver, path string) *Driver {
	t.Helper()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	from := len(data) * 4 / 5 / 4096 * 4096
	copy(data[from:], bytes.Repeat([]byte{0xA5}, len(data)-from))
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return openPath(t, path)
}
