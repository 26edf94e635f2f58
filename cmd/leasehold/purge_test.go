package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

// purgeBatch is how many jobs a purge deletes, and commits, at a time
// (internal/maintenance).
const purgeBatch = 10_000

// TestPurgeFailingPartwaySaysWhatItDeleted: a purge that fails after a
// batch was committed says how many jobs it deleted before the failure,
// which it still reports, with exit code 1. An SQLite trigger refuses to
// delete the job finished last, alone in the second batch.
func TestPurgeFailingPartwaySaysWhatItDeleted(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "purge.db")
	ok(t, db, "migrate")
	sqlDB, err := openDB(t, db).SQL()
	if err != nil {
		t.Fatal(err)
	}
	last := purgeBatch + 1
	for _, stmt := range []string{
		fmt.Sprintf(`INSERT INTO leasehold_jobs (kind, queue, status, max_attempts, args, run_at, created_at, finished_at)
			WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
			SELECT 'leasehold.sleep', 'default', 'completed', 1, '{}', i, i, i FROM n`, last),
		fmt.Sprintf(`CREATE TRIGGER purge_refused BEFORE DELETE ON leasehold_jobs WHEN old.finished_at = %d
			BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`, last),
	} {
		if _, err := sqlDB.ExecContext(t.Context(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	r := lh(t, db, "purge", "--older-than", "0s")
	checkOneLineError(t, "purge failing partway", r, cli.ExitFailure,
		fmt.Sprintf("leasehold: purged %d finished jobs, then: ", purgeBatch))
	if !strings.Contains(r.stderr, "refused by the test") {
		t.Errorf("purge failing partway: stderr %q lacks the failure", r.stderr)
	}
	var left int
	if err := sqlDB.QueryRowContext(t.Context(), `SELECT count(*) FROM leasehold_jobs`).Scan(&left); err != nil || left != 1 {
		t.Errorf("%d jobs left (%v), want the one refused", left, err)
	}
}

// TestPurgeErrorCutOff: a purge cut off by an interrupt or a timeout says
// its count is a lower bound, since the batch it was waiting on may have
// committed; one that failed otherwise gives its exact count.
func TestPurgeErrorCutOff(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		err  error
		want string
	}{
		{20000, context.Canceled, "purged at least 20000 finished jobs (the batch being deleted when the purge was cut off may be deleted too), then: context canceled"},
		{0, fmt.Errorf("purge: %w", context.DeadlineExceeded), "purged at least 0 finished jobs"},
		{10000, errors.New("disk full"), "purged 10000 finished jobs, then: disk full"},
		{0, errors.New("disk full"), "disk full"},
	} {
		got := purgeError(tc.n, tc.err)
		if !strings.HasPrefix(got.Error(), tc.want) || !errors.Is(got, tc.err) {
			t.Errorf("purgeError(%d, %v) = %q, want it to start %q and wrap the error", tc.n, tc.err, got, tc.want)
		}
	}
}
