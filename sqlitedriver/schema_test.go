package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/drivertest"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestSchemaUpgradeFromVersion1 migrates a version 1 database holding jobs:
// Start refuses it until then, existing jobs keep their id-derived
// idempotency key (no UUID), new ones get a version 4 UUID, and unique
// keys become per kind.
func TestSchemaUpgradeFromVersion1(t *testing.T) {
	ctx := testCtx(t)
	d, err := Open(testdb.SQLitePath(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	startRefused(t, d, 0)

	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	err = d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
		if _, _, err := applyMigration(ctx, tx, now, ms[0], latestVersion(ms)); err != nil {
			return err
		}
		for _, key := range []string{"a", "b", "c"} {
			_, err := tx.ExecContext(ctx, `INSERT INTO leasehold_jobs
				(kind, queue, status, max_attempts, args, unique_key, run_at, created_at)
				VALUES ('k', 'q', 'pending', 3, '{}', ?, ?, ?)`, key, now, now)
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("set up version 1: %v", err)
	}
	startRefused(t, d, 1)

	res, err := d.Migrate(ctx)
	if err != nil {
		t.Fatalf("Migrate from version 1: %v", err)
	}
	if want := (driver.MigrateResult{From: 1, To: latestVersion(ms), Applied: len(ms) - 1}); *res != want {
		t.Fatalf("Migrate from version 1 = %+v, want %+v", *res, want)
	}
	jobs, err := d.ListJobs(ctx, &leasehold.ListParams{})
	if err != nil || len(jobs) != 3 {
		t.Fatalf("ListJobs = %d jobs, %v; want 3", len(jobs), err)
	}
	for _, j := range jobs {
		if want := fmt.Sprintf("leasehold-job-%d", j.ID); j.UUID != "" || j.IdempotencyKey() != want {
			t.Errorf("job %d from before the upgrade: UUID %q, key %q; want no UUID and its old key %q",
				j.ID, j.UUID, j.IdempotencyKey(), want)
		}
	}
	other := job(`{}`)
	other.Kind, other.UniqueKey = "other", "a"
	got, err := d.Insert(ctx, nil, []*driver.InsertParams{other})
	if err != nil || got[0].Duplicate {
		t.Fatalf("Insert of key a for another kind after the upgrade = %+v, %v; want a new job", got, err)
	}
	if u, err := uuid.Parse(got[0].Job.UUID); err != nil || u.Version() != 4 {
		t.Errorf("job inserted after the upgrade has UUID %q, want a version 4 UUID", got[0].Job.UUID)
	}
}

// startRefused checks that a client on d refuses to start, naming version.
func startRefused(t *testing.T, d *Driver, version int) {
	t.Helper()
	c, err := leasehold.NewClient(leasehold.Config{Driver: d})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Start(testCtx(t))
	var verr *leasehold.SchemaVersionError
	if !errors.Is(err, leasehold.ErrSchemaNotMigrated) || !errors.As(err, &verr) || verr.Database != version {
		_ = c.Stop(testCtx(t))
		t.Fatalf("Start on schema version %d = %v, want ErrSchemaNotMigrated naming version %d", version, err, version)
	}
}

// upgradeFrom opens a driver on a fresh file at version (the migrations
// up to it), where setup adds what the test needs in the same
// transaction (now is the database clock); it checks that Start refuses
// the schema, migrates it to the latest version and returns the driver.
func upgradeFrom(t *testing.T, version int, setup func(tx *sql.Tx, now int64) error) *Driver {
	t.Helper()
	ctx := testCtx(t)
	d, err := Open(testdb.SQLitePath(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	applied := 0 // migrations up to version (their versions have gaps)
	for applied < len(ms) && ms[applied].version <= version {
		applied++
	}
	err = d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
		for _, m := range ms[:applied] {
			if _, _, err := applyMigration(ctx, tx, now, m, latestVersion(ms)); err != nil {
				return err
			}
		}
		return setup(tx, now)
	})
	if err != nil {
		t.Fatalf("set up version %d: %v", version, err)
	}
	startRefused(t, d, version)
	res, err := d.Migrate(ctx)
	if err != nil {
		t.Fatalf("Migrate from version %d: %v", version, err)
	}
	if want := (driver.MigrateResult{From: version, To: latestVersion(ms), Applied: len(ms) - applied}); *res != want {
		t.Fatalf("Migrate from version %d = %+v, want %+v", version, *res, want)
	}
	return d
}

// TestSchemaUpgradeFromVersion2 migrates a version 2 database holding a
// job: Start refuses it until then; afterwards its queue can be paused
// (no claim takes the job, QueueStats says so) and resumed.
func TestSchemaUpgradeFromVersion2(t *testing.T) {
	d := upgradeFrom(t, 2, func(tx *sql.Tx, now int64) error {
		_, err := tx.ExecContext(testCtx(t), `INSERT INTO leasehold_jobs
			(kind, queue, status, max_attempts, args, run_at, created_at, uuid)
			VALUES ('k', 'q', 'pending', 3, '{}', ?, ?, 'c0ffee00-0000-4000-8000-000000000000')`, now, now)
		return err
	})
	drivertest.CheckPauseAfterUpgrade(t, d, "q")
}

// TestSchemaUpgradeFromVersion3 migrates a version 3 database holding a
// completed and a pending job with unique keys: afterwards each still
// holds its key for plain inserts, and scoped keys are apart.
func TestSchemaUpgradeFromVersion3(t *testing.T) {
	d := upgradeFrom(t, 3, func(tx *sql.Tx, now int64) error {
		_, err := tx.ExecContext(testCtx(t), `INSERT INTO leasehold_jobs
			(kind, queue, status, max_attempts, args, run_at, created_at, uuid, unique_key, finished_at)
			VALUES ('k', 'q', 'completed', 3, '{}', ?1, ?1, 'c0ffee00-0000-4000-8000-000000000001', 'done', ?1),
				('k', 'q', 'pending', 3, '{}', ?1, ?1, 'c0ffee00-0000-4000-8000-000000000002', 'open', NULL)`, now)
		return err
	})
	drivertest.CheckUniqueAfterUpgrade(t, d)
}

// TestSchemaUpgradeFromVersion7 migrates a version 7 database holding jobs
// claimed by its code, each with the open history row its claim wrote:
// after the upgrade each attempt keeps that one row, which its end (a
// finish, a takeover, the watcher) ends.
func TestSchemaUpgradeFromVersion7(t *testing.T) {
	d := upgradeFrom(t, 7, func(tx *sql.Tx, now int64) error {
		ctx := testCtx(t)
		const hour, minute = 3600000000, 60000000
		_, err := tx.ExecContext(ctx, `INSERT INTO leasehold_jobs
			(kind, queue, status, attempt, max_attempts, args, run_at, created_at, uuid, lease_owner, lease_until, heartbeat_at)
			VALUES ('k', 'live', 'processing', 1, 3, '{}', ?1, ?1, 'c0ffee00-0000-4000-8000-000000000001', 'old-live', ?1 + ?2, ?1),
				('k', 'q', 'processing', 1, 3, '{}', ?1, ?1, 'c0ffee00-0000-4000-8000-000000000002', 'old-expired', ?1 - ?3, NULL),
				('k', 'r', 'processing', 1, 3, '{}', ?1, ?1, 'c0ffee00-0000-4000-8000-000000000003', 'old-rescued', ?1 - ?3, ?1 - 2 * ?3)`,
			now, hour, minute)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO leasehold_attempts (job_id, attempt, owner, claimed_at)
			SELECT id, attempt, lease_owner, ?1 - 5 * ?2 FROM leasehold_jobs`, now, minute)
		return err
	})
	drivertest.CheckHistoryAfterUpgrade(t, d)
}

// TestSchemaUpgradeFromVersion15 migrates a version 15 database holding
// finished jobs of two queues: migration 016 indexes them by queue, and a
// purge of one queue deletes that queue's only.
func TestSchemaUpgradeFromVersion15(t *testing.T) {
	d := upgradeFrom(t, 15, func(tx *sql.Tx, now int64) error {
		_, err := tx.ExecContext(testCtx(t), `INSERT INTO leasehold_jobs
			(kind, queue, status, attempt, max_attempts, args, run_at, created_at, uuid, finished_at)
			VALUES ('k', 'a', 'completed', 1, 3, '{}', ?1, ?1, 'c0ffee00-0000-4000-8000-000000000001', ?1 - ?2),
				('k', 'b', 'completed', 1, 3, '{}', ?1, ?1, 'c0ffee00-0000-4000-8000-000000000002', ?1 - ?2)`,
			now, int64(3600000000))
		return err
	})
	var n int
	err := d.DB().QueryRowContext(testCtx(t), `SELECT count(*) FROM sqlite_schema
		WHERE type = 'index' AND name = 'leasehold_jobs_finished_queue_idx'`).Scan(&n)
	if err != nil || n != 1 {
		t.Fatalf("leasehold_jobs_finished_queue_idx after the upgrade: %d, %v; want it", n, err)
	}
	drivertest.CheckPurgeQueuesAfterUpgrade(t, d)
}
