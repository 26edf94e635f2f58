package pgdriver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasehold/leasehold/internal/testdb"
)

// TestListenRunsPoolConnectHooks checks that the listener's connection is
// made the way the pool makes its own: through BeforeConnect (which may
// supply credentials, such as a short-lived token) and AfterConnect
// (which may set session state). BeforeConnect tags each connection with
// an application_name unique to the test and AfterConnect records each
// backend pid; the LISTEN session must carry both.
func TestListenRunsPoolConnectHooks(t *testing.T) {
	url := testdb.PostgresURL(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	app := fmt.Sprintf("lh_hooked_%d_%d", os.Getpid(), time.Now().UnixNano())
	var hooked sync.Map // backend pid → true, for each AfterConnect
	cfg.BeforeConnect = func(_ context.Context, cc *pgx.ConnConfig) error {
		cc.RuntimeParams["application_name"] = app
		return nil
	}
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		hooked.Store(c.PgConn().PID(), true)
		return nil
	}
	pool, done := listenThrough(t, ctx, cfg)

	const find = `SELECT pid FROM pg_stat_activity
		WHERE application_name = $1 AND query = 'LISTEN ` + notifyChannel + `'`
	var pid uint32
	deadline := time.Now().Add(5 * time.Second)
	for pid == 0 && time.Now().Before(deadline) {
		if err := pool.QueryRow(ctx, find, app).Scan(&pid); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		if pid == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if pid == 0 {
		t.Fatalf("no LISTEN session with application_name %q: the listener skipped the pool's BeforeConnect", app)
	}
	if _, ok := hooked.Load(pid); !ok {
		t.Errorf("LISTEN session pid %d: the pool's AfterConnect did not run for it", pid)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Listen returned %v, want context.Canceled", err)
	}
}

// TestListenRetriesFailingBeforeConnect checks that an error of the
// pool's BeforeConnect (a credential source that is down) makes the
// listener back off and try again, and that it listens once the hook
// recovers.
func TestListenRetriesFailingBeforeConnect(t *testing.T) {
	url := testdb.PostgresURL(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	app := fmt.Sprintf("lh_retry_%d_%d", os.Getpid(), time.Now().UnixNano())
	var mu sync.Mutex
	failures := 2 // BeforeConnect calls that fail before it recovers
	calls := 0
	cfg.BeforeConnect = func(_ context.Context, cc *pgx.ConnConfig) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if failures > 0 {
			failures--
			return errors.New("credentials unavailable")
		}
		cc.RuntimeParams["application_name"] = app
		return nil
	}
	_, done := listenThrough(t, ctx, cfg)

	// Query through a plain connection: the pool's own connects go
	// through the failing hook too.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	const count = `SELECT count(*) FROM pg_stat_activity
		WHERE application_name = $1 AND query = 'LISTEN ` + notifyChannel + `'`
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; n == 0; {
		if err := conn.QueryRow(ctx, count, app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 && time.Now().After(deadline) {
			t.Fatal("the listener did not listen after BeforeConnect recovered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	if calls < 3 {
		t.Errorf("BeforeConnect ran %d times, want at least 3 (two failures, then a connect)", calls)
	}
	mu.Unlock()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Listen returned %v, want context.Canceled", err)
	}
}

// listenThrough starts Listen, until ctx ends, on a driver over a pool
// made from cfg, both closed when t ends. It returns the pool, and the
// channel Listen's result arrives on.
func listenThrough(t *testing.T, ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, <-chan error) {
	t.Helper()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	d, err := New(pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	done := make(chan error, 1)
	go func() { done <- d.Listen(ctx, func(string) {}) }()
	return pool, done
}
