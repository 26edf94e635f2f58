package pgdriver

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/leasehold/leasehold/internal/testdb"
)

// silentHost listens on a local port that accepts connections and never
// answers them, as a primary that froze or was cut off after the
// handshake does, and returns its port. The connections close when t
// ends.
func silentHost(t *testing.T) uint16 {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	return uint16(ln.Addr().(*net.TCPAddr).Port)
}

// quoteDSN quotes v as a keyword/value connection string's value.
func quoteDSN(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// TestOpenFailsOverPastSilentHost: the first host of a multi-host DSN
// accepts connections and never answers (an old primary after a
// failover), the second is the test server. Each new connection of the
// main pool, of the heartbeat pool and of the listener gives up on the
// first host after connectTimeout and connects to the second, instead of
// waiting pgxpool's default of 2 min.
func TestOpenFailsOverPastSilentHost(t *testing.T) {
	real, err := pgconn.ParseConfig(testdb.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	dsn := fmt.Sprintf("host=%s port=%d,%d user=%s password=%s dbname=%s sslmode=disable target_session_attrs=read-write",
		quoteDSN("127.0.0.1,"+real.Host), silentHost(t), real.Port, quoteDSN(real.User), quoteDSN(real.Password), quoteDSN(real.Database))
	d, err := Open(testCtx(t), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })

	const wait = 12 * time.Second // past connectTimeout, short of 2 min
	conns := map[string]func(context.Context) error{
		"main pool": func(ctx context.Context) error {
			_, err := d.Now(ctx)
			return err
		},
		"heartbeat pool": func(ctx context.Context) error {
			_, err := d.hbPool.Exec(ctx, "SELECT 1")
			return err
		},
		"listener": func(ctx context.Context) error {
			conn, err := connectLikePool(ctx, d.pool.Config())
			if err == nil {
				closeLikePool(d.pool.Config(), conn)
			}
			return err
		},
	}
	var wg sync.WaitGroup
	for name, connect := range conns {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(testCtx(t), wait)
			defer cancel()
			start := time.Now()
			if err := connect(ctx); err != nil {
				t.Errorf("%s, first host silent: after %s: %v (want the second host within %s)",
					name, time.Since(start).Round(time.Millisecond), err, connectTimeout)
			}
		})
	}
	wg.Wait()
}

// TestOpenConnectTimeout: Open bounds a connect to connectTimeout unless
// the connection string or the environment sets connect_timeout, 0
// included, in URL or keyword/value form; the heartbeat pool has the
// same bound. The pools connect lazily: no server is needed.
func TestOpenConnectTimeout(t *testing.T) {
	for _, c := range []struct {
		conn, env string
		want      time.Duration
	}{
		{conn: "postgres://u@127.0.0.1:1/db", want: connectTimeout},
		{conn: "postgres://u@127.0.0.1:1/db?connect_timeout=2", want: 2 * time.Second},
		{conn: "postgres://u@127.0.0.1:1/db?connect_timeout=0", want: 0},
		{conn: "postgres://u@127.0.0.1:1/db?application_name=connect_timeout", want: connectTimeout},
		// URLs pgconn reads and net/url does not: a port on a host that
		// is not the last, IPv6 hosts, a raw '#' in the password.
		{conn: "postgres://u@127.0.0.1:1,127.0.0.2/db?connect_timeout=0", want: 0},
		{conn: "postgres://u@[::1]:1,[::2]/db?connect_timeout=0", want: 0},
		{conn: "postgres://u:p#w@127.0.0.1:1/db?connect_timeout=0", want: 0},
		{conn: "postgres://u:p?w@127.0.0.1:1/db", want: connectTimeout},
		{conn: "host=127.0.0.1 port=1 user=u", want: connectTimeout},
		{conn: "host=127.0.0.1 port=1 user=u connect_timeout=3", want: 3 * time.Second},
		{conn: "host=127.0.0.1 port=1 user=u connect_timeout = 0", want: 0},
		{conn: `host=127.0.0.1 port=1 user=u password='x connect_timeout=0 \' connect_timeout=0'`, want: connectTimeout},
		{conn: `host=127.0.0.1 port=1 user=u password=x\ connect_timeout=0`, want: connectTimeout},
		{conn: "host=127.0.0.1 port=1 user=u", env: "0", want: 0},
		{conn: "host=127.0.0.1 port=1 user=u", env: "4", want: 4 * time.Second},
	} {
		t.Run("", func(t *testing.T) {
			t.Setenv("PGCONNECT_TIMEOUT", c.env)
			d, err := Open(testCtx(t), c.conn)
			if err != nil {
				t.Fatalf("Open(%q): %v", c.conn, err)
			}
			defer d.Close()
			if got := d.pool.Config().ConnConfig.ConnectTimeout; got != c.want {
				t.Errorf("Open(%q), PGCONNECT_TIMEOUT=%q: ConnectTimeout %v, want %v", c.conn, c.env, got, c.want)
			}
			if got := d.hbPool.Config().ConnConfig.ConnectTimeout; got != c.want {
				t.Errorf("Open(%q), PGCONNECT_TIMEOUT=%q: heartbeat pool's ConnectTimeout %v, want %v", c.conn, c.env, got, c.want)
			}
		})
	}
}

// TestOpenKeepsURLPingTimeout: a pool_ping_timeout the URL sets is kept,
// in the URL forms pgconn reads and net/url does not.
func TestOpenKeepsURLPingTimeout(t *testing.T) {
	for _, conn := range []string{
		"postgres://u@127.0.0.1:1,127.0.0.2/db?pool_ping_timeout=30s",
		"postgres://u:p#w@127.0.0.1:1/db?pool_ping_timeout=30s",
	} {
		d, err := Open(testCtx(t), conn)
		if err != nil {
			t.Fatalf("Open(%q): %v", conn, err)
		}
		if got := d.pool.Config().PingTimeout; got != 30*time.Second {
			t.Errorf("Open(%q): PingTimeout %v, want 30s", conn, got)
		}
		d.Close()
	}
}
