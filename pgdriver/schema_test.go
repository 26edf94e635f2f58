package pgdriver

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/drivertest"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestSchemaUpgradeFromVersion1 migrates a version 1 schema holding jobs:
// Start refuses it until then, existing jobs keep their id-derived
// idempotency key (no UUID), new ones get a version 4 UUID, and unique
// keys become per kind.
func TestSchemaUpgradeFromVersion1(t *testing.T) {
	ctx := testCtx(t)
	d, err := Open(ctx, testdb.PostgresURL(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	startRefused(t, d, 0)

	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, _, err := applyMigration(ctx, tx, ms[0], latestVersion(ms), 0); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO leasehold_jobs (kind, queue, max_attempts, args, unique_key)
			SELECT 'k', 'q', 3, '{}', key FROM unnest(ARRAY['a', 'b', 'c']) AS key`)
		return err
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
	other := job("q")
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
	var verr *leasehold.SchemaVersionError
	if err := c.CheckSchema(testCtx(t)); !errors.Is(err, leasehold.ErrSchemaNotMigrated) || !errors.As(err, &verr) || verr.Database != version {
		t.Fatalf("CheckSchema on schema version %d = %v, want ErrSchemaNotMigrated naming version %d", version, err, version)
	}
	err = c.Start(testCtx(t))
	if !errors.Is(err, leasehold.ErrSchemaNotMigrated) || !errors.As(err, &verr) || verr.Database != version {
		_ = c.Stop(testCtx(t))
		t.Fatalf("Start on schema version %d = %v, want ErrSchemaNotMigrated naming version %d", version, err, version)
	}
}

// TestCheckSchemaTooNew: a client that is never started learns from
// CheckSchema that a newer leasehold migrated the database, as Start
// would refuse it; on the latest version it says nothing.
func TestCheckSchemaTooNew(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	c, err := leasehold.NewClient(leasehold.Config{Driver: d})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckSchema(ctx); err != nil {
		t.Fatalf("CheckSchema on the latest version = %v", err)
	}
	if _, err := d.pool.Exec(ctx, "INSERT INTO leasehold_migrations (version) VALUES (999)"); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckSchema(ctx); !errors.Is(err, leasehold.ErrSchemaTooNew) {
		t.Fatalf("CheckSchema on version 999 = %v, want ErrSchemaTooNew", err)
	}
}

// upgradeFrom opens a driver on a fresh schema at version (the migrations
// up to it), where setup adds what the test needs in the same
// transaction; it checks that Start refuses the schema, migrates it to
// the latest version and returns the driver.
func upgradeFrom(t *testing.T, version int, setup func(tx pgx.Tx) error) *Driver {
	t.Helper()
	ctx := testCtx(t)
	d, err := Open(ctx, testdb.PostgresURL(t))
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
	err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		for _, m := range ms[:applied] {
			if _, _, err := applyMigration(ctx, tx, m, latestVersion(ms), 0); err != nil {
				return err
			}
		}
		return setup(tx)
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

// TestSchemaUpgradeFromVersion2 migrates a version 2 schema holding a
// job: Start refuses it until then; afterwards its queue can be paused
// (no claim takes the job, QueueStats says so) and resumed.
func TestSchemaUpgradeFromVersion2(t *testing.T) {
	d := upgradeFrom(t, 2, func(tx pgx.Tx) error {
		_, err := tx.Exec(testCtx(t), `INSERT INTO leasehold_jobs (kind, queue, max_attempts, args, uuid)
			VALUES ('k', 'q', 3, '{}', gen_random_uuid())`)
		return err
	})
	drivertest.CheckPauseAfterUpgrade(t, d, "q")
}

// TestSchemaUpgradeFromVersion3 migrates a version 3 schema holding a
// completed and a pending job with unique keys: afterwards each still
// holds its key for plain inserts, and scoped keys are apart.
func TestSchemaUpgradeFromVersion3(t *testing.T) {
	d := upgradeFrom(t, 3, func(tx pgx.Tx) error {
		_, err := tx.Exec(testCtx(t), `INSERT INTO leasehold_jobs (kind, queue, status, max_attempts, args, uuid, unique_key, finished_at)
			VALUES ('k', 'q', 'completed', 3, '{}', gen_random_uuid(), 'done', now()),
				('k', 'q', 'pending', 3, '{}', gen_random_uuid(), 'open', NULL)`)
		return err
	})
	drivertest.CheckUniqueAfterUpgrade(t, d)
}

// TestSchemaUpgradeFromVersion7 migrates a version 7 schema holding jobs
// claimed by its code, each with the open history row its claim wrote:
// after the upgrade each attempt keeps that one row, which its end (a
// finish, a takeover, the watcher) ends.
func TestSchemaUpgradeFromVersion7(t *testing.T) {
	d := upgradeFrom(t, 7, func(tx pgx.Tx) error {
		_, err := tx.Exec(testCtx(t), `WITH j AS (
			INSERT INTO leasehold_jobs (kind, queue, status, attempt, max_attempts, args, uuid, lease_owner, lease_until, heartbeat_at)
			VALUES ('k', 'live', 'processing', 1, 3, '{}', gen_random_uuid(), 'old-live', now() + interval '1 hour', now()),
				('k', 'q', 'processing', 1, 3, '{}', gen_random_uuid(), 'old-expired', now() - interval '1 minute', NULL),
				('k', 'r', 'processing', 1, 3, '{}', gen_random_uuid(), 'old-rescued', now() - interval '1 minute',
					now() - interval '2 minutes')
			RETURNING id, attempt, lease_owner)
		INSERT INTO leasehold_attempts (job_id, attempt, owner, claimed_at)
		SELECT id, attempt, lease_owner, now() - interval '5 minutes' FROM j`)
		return err
	})
	drivertest.CheckHistoryAfterUpgrade(t, d)
}

// TestSchemaUpgradeFromVersion15 migrates a version 15 schema holding
// finished jobs of two queues: migration 016 indexes them by queue, and a
// purge of one queue deletes that queue's only.
func TestSchemaUpgradeFromVersion15(t *testing.T) {
	d := upgradeFrom(t, 15, func(tx pgx.Tx) error {
		_, err := tx.Exec(testCtx(t), `INSERT INTO leasehold_jobs (kind, queue, status, attempt, max_attempts, args, uuid, finished_at)
			VALUES ('k', 'a', 'completed', 1, 3, '{}', gen_random_uuid(), now() - interval '1 hour'),
				('k', 'b', 'completed', 1, 3, '{}', gen_random_uuid(), now() - interval '1 hour')`)
		return err
	})
	var def string
	err := d.pool.QueryRow(testCtx(t), `SELECT indexdef FROM pg_indexes
		WHERE tablename = 'leasehold_jobs' AND indexname = 'leasehold_jobs_finished_queue_idx'`).Scan(&def)
	if want := "(queue, finished_at, id) WHERE (status = ANY (ARRAY['completed'::text, 'failed'::text, 'cancelled'::text]))"; err != nil || !strings.HasSuffix(def, want) {
		t.Fatalf("leasehold_jobs_finished_queue_idx after the upgrade: %q, %v; want it ending %q", def, err, want)
	}
	drivertest.CheckPurgeQueuesAfterUpgrade(t, d)
}
