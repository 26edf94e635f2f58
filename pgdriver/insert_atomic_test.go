package pgdriver

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasehold/leasehold/driver"
)

// sessionKiller is a pgx tracer that, once armed, has the server end the
// session about to run the next statement whose text contains marker
// (pg_terminate_backend, from another connection): a connection lost
// between two statements of one call.
type sessionKiller struct {
	t      *testing.T
	marker string
	armed  atomic.Bool
	fired  atomic.Bool
	killer *pgxpool.Pool
}

func (k *sessionKiller) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.Contains(data.SQL, k.marker) && k.armed.CompareAndSwap(true, false) {
		if _, err := k.killer.Exec(ctx, "SELECT pg_terminate_backend($1, 10000)", conn.PgConn().PID()); err != nil {
			k.t.Errorf("pg_terminate_backend: %v", err)
		}
		k.fired.Store(true)
	}
	return ctx
}

func (k *sessionKiller) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestInsertKeyedBatchAtomic: a batch without a transaction whose unique
// key another job holds takes a second statement, the read of the
// holder; when the connection is lost there, the call fails and none of
// the batch's jobs stays inserted, so that a caller retrying the error
// inserts them once.
func TestInsertKeyedBatchAtomic(t *testing.T) {
	d, url := newTestDriver(t)
	ctx := testCtx(t)
	held := job("q")
	held.UniqueKey = "order-0"
	if _, err := d.Insert(ctx, nil, []*driver.InsertParams{held}); err != nil {
		t.Fatalf("Insert: %v", err)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	k := &sessionKiller{t: t, marker: "WITH want AS", killer: d.pool}
	cfg.ConnConfig.Tracer = k
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	faulty, err := New(pool)
	if err != nil {
		t.Fatal(err)
	}
	k.armed.Store(true)
	_, err = faulty.Insert(ctx, nil, []*driver.InsertParams{held, job("q"), job("q")})
	if !k.fired.Load() {
		t.Fatal("the read of the key's holder never ran")
	}
	if err == nil {
		t.Fatal("Insert with its connection lost = nil error")
	}
	var n int
	if err := d.pool.QueryRow(ctx, "SELECT count(*) FROM leasehold_jobs").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("%d jobs after the failed insert (%v); want 1, the key's holder: the batch's others were committed", n, err)
	}
}
