package pgdriver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// TestJobUUIDsTableFollowsJobs checks migration 012: leasehold_job_uuids
// holds exactly the UUIDs of the jobs after every path that inserts or
// deletes them (Insert, COPY, the INSERT of InsertBulk, raw SQL with
// another search_path, DeleteJob, Purge, TRUNCATE), and leasehold_jobs
// has no index on uuid any more.
func TestJobUUIDsTableFollowsJobs(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	jobs := insertJobs(t, d, "q", 3)
	keyed := job("q")
	keyed.UniqueKey = "k"
	for _, bulk := range [][]*driver.InsertParams{{job("q"), job("q")}, {job("q"), keyed}} {
		if _, err := d.InsertBulk(ctx, bulk); err != nil {
			t.Fatalf("InsertBulk: %v", err)
		}
	}
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		var schema string
		if err := tx.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SET LOCAL search_path = pg_catalog"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "leasehold_jobs"}.Sanitize()+`
			(kind, queue, max_attempts, args, uuid) VALUES ('k', 'q', 3, '{}', gen_random_uuid())`)
		return err
	})
	if err != nil {
		t.Fatalf("insert with another search_path: %v", err)
	}
	checkUUIDsTable(t, d, 8)

	if _, err := d.CancelJob(ctx, jobs[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := d.DeleteJob(ctx, jobs[0].ID); err != nil {
		t.Fatal(err)
	}
	checkUUIDsTable(t, d, 7)
	if _, err := d.CancelJob(ctx, jobs[1].ID); err != nil {
		t.Fatal(err)
	}
	if n, err := d.Purge(ctx, &driver.PurgeParams{OlderThan: -time.Second}); err != nil || n != 1 {
		t.Fatalf("Purge = %d, %v; want 1", n, err)
	}
	checkUUIDsTable(t, d, 6)
	if _, err := d.pool.Exec(ctx, "TRUNCATE leasehold_jobs"); err != nil {
		t.Fatal(err)
	}
	checkUUIDsTable(t, d, 0)

	var indexed bool
	if err := d.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a
		ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
		WHERE i.indrelid = 'leasehold_jobs'::regclass AND a.attname = 'uuid')`).Scan(&indexed); err != nil {
		t.Fatal(err)
	}
	if indexed {
		t.Error("leasehold_jobs has an index on uuid; want none (the UUIDs are unique in leasehold_job_uuids)")
	}
}

// checkUUIDsTable checks that leasehold_job_uuids holds the UUID and id
// of each of the jobs, which are want, and nothing else.
func checkUUIDsTable(t *testing.T, d *Driver, want int) {
	t.Helper()
	var jobs, both, extra int
	err := d.pool.QueryRow(testCtx(t), `SELECT
		(SELECT count(*) FROM leasehold_jobs),
		(SELECT count(*) FROM leasehold_jobs j JOIN leasehold_job_uuids u ON u.uuid = j.uuid AND u.job_id = j.id),
		(SELECT count(*) FROM leasehold_job_uuids u WHERE NOT EXISTS (
			SELECT 1 FROM leasehold_jobs j WHERE j.uuid = u.uuid))`).Scan(&jobs, &both, &extra)
	if err != nil {
		t.Fatal(err)
	}
	if jobs != want || both != want || extra != 0 {
		t.Fatalf("%d jobs, %d of them in leasehold_job_uuids, %d UUIDs of no job; want %d, %d, 0",
			jobs, both, extra, want, want)
	}
}

// TestSchemaUpgradeFromVersion11 migrates a version 11 schema holding
// jobs with UUIDs and one without (from before version 2): the upgrade
// copies the UUIDs into leasehold_job_uuids, so a job given one of them
// afterwards is refused.
func TestSchemaUpgradeFromVersion11(t *testing.T) {
	var held string
	d := upgradeFrom(t, 11, func(tx pgx.Tx) error {
		ctx := testCtx(t)
		_, err := tx.Exec(ctx, `INSERT INTO leasehold_jobs (kind, queue, max_attempts, args, uuid)
			VALUES ('k', 'q', 3, '{}', gen_random_uuid()), ('k', 'q', 3, '{}', gen_random_uuid()),
				('k', 'q', 3, '{}', NULL)`)
		if err != nil {
			return err
		}
		return tx.QueryRow(ctx, "SELECT min(uuid::text) FROM leasehold_jobs").Scan(&held)
	})
	var copied int
	if err := d.pool.QueryRow(testCtx(t), "SELECT count(*) FROM leasehold_job_uuids").Scan(&copied); err != nil {
		t.Fatal(err)
	}
	if copied != 2 {
		t.Fatalf("leasehold_job_uuids has %d rows after the upgrade, want the 2 UUIDs", copied)
	}
	again := job("q")
	again.UUID = held
	_, err := d.Insert(context.Background(), nil, []*driver.InsertParams{again})
	if !errors.Is(err, leasehold.ErrInvalidArgs) {
		t.Fatalf("Insert of a job with the UUID of a job from before the upgrade: %v; want ErrInvalidArgs", err)
	}
}

// TestJobIdentityCannotBeUpdated checks migration 013: an UPDATE that
// sets a job's uuid or id fails with integrity_constraint_violation and
// changes nothing, so leasehold_job_uuids cannot go stale, while an
// UPDATE of other columns (an operator's, or the driver's own) runs.
func TestJobIdentityCannotBeUpdated(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	jobs := insertJobs(t, d, "q", 2)
	for _, set := range []string{"uuid = gen_random_uuid()", "id = id + 1000", "uuid = NULL", "priority = 5, uuid = uuid"} {
		_, err := d.pool.Exec(ctx, "UPDATE leasehold_jobs SET "+set+" WHERE id = $1", jobs[0].ID)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "23000" || !strings.Contains(pe.Message, "cannot be changed") {
			t.Fatalf("UPDATE leasehold_jobs SET %s: %v; want integrity_constraint_violation (23000), cannot be changed", set, err)
		}
	}
	if got := getJob(t, d, jobs[0].ID); got.UUID != jobs[0].UUID || got.Priority != jobs[0].Priority {
		t.Fatalf("job after the refused updates: uuid %s, priority %d; want %s, %d", got.UUID, got.Priority, jobs[0].UUID, jobs[0].Priority)
	}
	checkUUIDsTable(t, d, 2)
	if _, err := d.pool.Exec(ctx, "UPDATE leasehold_jobs SET priority = 5 WHERE id = $1", jobs[0].ID); err != nil {
		t.Fatalf("UPDATE of the priority: %v", err)
	}
	claimOne(t, d, "q", "w", time.Minute)
}
