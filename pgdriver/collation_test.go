package pgdriver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestListsInByteOrderUnderICUCollation: on a database whose collation
// is not byte order (ICU "en", which ignores case and punctuation at
// first), the queue statistics, their never-claimed kinds, the periodic
// schedules and the throughput buckets still come in byte order, as on
// SQLite and as ActiveQueueStats sorts them, so listings do not depend
// on where the database was created.
func TestListsInByteOrderUnderICUCollation(t *testing.T) {
	d := openICUDatabase(t)
	ctx := testCtx(t)
	names := []string{"B", "a", "a-c", "ab"} // byte order; "en" sorts a, a-c, ab, B
	for _, n := range names {
		if _, err := d.Insert(ctx, nil, []*driver.InsertParams{
			{Kind: n, Queue: n, Args: []byte(`{}`), MaxAttempts: 1},
			{Kind: "z" + n, Queue: "q", Args: []byte(`{}`), MaxAttempts: 1},
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := d.PeriodicRegister(ctx, &driver.PeriodicRegisterParams{Name: n, Spec: "@every 1h", Kind: n, Queue: n,
			Next: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	counts := make([]leasehold.ThroughputCount, 0, len(names))
	for _, n := range slices.Backward(names) {
		counts = append(counts, leasehold.ThroughputCount{Queue: n, Outcome: leasehold.OutcomeCompleted, Jobs: 1})
	}
	if err := d.RecordThroughput(ctx, &driver.ThroughputParams{Counts: counts}); err != nil {
		t.Fatal(err)
	}

	qs, err := d.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var queues, kinds []string
	for _, q := range qs {
		queues = append(queues, q.Queue)
		if q.Queue == "q" {
			for _, k := range q.NeverClaimed {
				kinds = append(kinds, k.Kind)
			}
		}
	}
	byteOrder(t, "QueueStats' queues", queues, append(slices.Clone(names), "q"))
	byteOrder(t, "never-claimed kinds", kinds, []string{"zB", "za", "za-c", "zab"})
	rows, err := d.PeriodicList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var schedules []string
	for _, r := range rows {
		schedules = append(schedules, r.Name)
	}
	byteOrder(t, "PeriodicList", schedules, names)
	buckets, err := d.Throughput(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var tq []string
	for _, b := range buckets {
		tq = append(tq, b.Queue)
	}
	byteOrder(t, "Throughput's queues", tq, names)
}

// byteOrder fails t unless got is want.
func byteOrder(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s = %q, want byte order %q", what, got, want)
	}
}

// openICUDatabase returns a migrated driver on a new database of the test
// server whose collation is ICU "en", dropped when t ends; it skips t when
// the server has no ICU.
func openICUDatabase(t *testing.T) *Driver {
	t.Helper()
	base := os.Getenv(testdb.EnvURL)
	if base == "" {
		testdb.PostgresURL(t) // skips, or fails when PostgreSQL is required
	}
	ctx := testCtx(t)
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "lh_icu_" + hex.EncodeToString(b)
	_, err = admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en' LOCALE 'C.UTF-8'")
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "0A000" {
		t.Skipf("no ICU collation on the test server: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, base); err == nil {
			_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			_ = c.Close(ctx)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	d, err := Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	if _, err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return d
}
