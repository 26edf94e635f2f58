package netfault_test

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/netfault"
	"github.com/leasehold/leasehold/internal/testdb"
)

// proxied starts a proxy in front of the test server and returns it with
// a URL that connects through it.
func proxied(t *testing.T) (*netfault.Proxy, string) {
	t.Helper()
	base := testdb.PostgresURL(t)
	dial, _, err := netfault.PostgresUpstream(base)
	if err != nil {
		t.Fatal(err)
	}
	p, err := netfault.Listen("127.0.0.1:0", dial)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("host", "127.0.0.1")
	q.Set("port", strconv.Itoa(p.Addr().Port))
	u.RawQuery = q.Encode()
	return p, u.String()
}

func connect(t *testing.T, rawURL string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, rawURL)
	if err != nil {
		t.Fatalf("connect through the proxy: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// ping runs one query within d and returns its error and duration.
func ping(c *pgx.Conn, d time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	var one int
	err := c.QueryRow(ctx, "SELECT 1").Scan(&one)
	return time.Since(start), err
}

// TestDelay: replies arrive no sooner than the delay, and on time again
// once the proxy passes.
func TestDelay(t *testing.T) {
	p, u := proxied(t)
	c := connect(t, u)
	const d = 300 * time.Millisecond
	p.Delay(d)
	if took, err := ping(c, 5*time.Second); err != nil || took < d {
		t.Fatalf("delayed query: %v after %s, want success after at least %s", err, took, d)
	}
	p.Pass()
	if took, err := ping(c, 5*time.Second); err != nil || took >= d {
		t.Fatalf("after Pass: %v after %s, want success in less than %s", err, took, d)
	}
}

// TestStall: a query sent during a stall gets no reply while it lasts;
// what it held is delivered once the proxy passes.
func TestStall(t *testing.T) {
	p, u := proxied(t)
	c := connect(t, u)
	p.Stall()
	done := make(chan error, 1)
	go func() { _, err := ping(c, 10*time.Second); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("a stalled query returned: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	p.Pass()
	if err := <-done; err != nil {
		t.Fatalf("the held query failed after the stall: %v", err)
	}
	if s := p.Stats(); s.Up == 0 || s.Down == 0 {
		t.Errorf("stats %+v: nothing forwarded", s)
	}
}

// TestCut: a cut severs open connections and refuses new ones; Pass
// accepts them again.
func TestCut(t *testing.T) {
	p, u := proxied(t)
	c := connect(t, u)
	p.Cut()
	if _, err := ping(c, 5*time.Second); err == nil {
		t.Fatal("a query on a severed connection succeeded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c2, err := pgx.Connect(ctx, u); err == nil {
		_ = c2.Close(ctx)
		t.Fatal("connected through a cut proxy")
	}
	p.Pass()
	c3 := connect(t, u)
	if _, err := ping(c3, 5*time.Second); err != nil {
		t.Fatalf("after Pass: %v", err)
	}
	s := p.Stats()
	if s.Severed != 1 || s.Refused == 0 {
		t.Errorf("stats %+v: want 1 severed and some refused", s)
	}
	if err := p.Close(); err != nil || !errors.Is(p.Close(), netfault.ErrClosed) {
		t.Errorf("Close: %v, then want ErrClosed", err)
	}
}
