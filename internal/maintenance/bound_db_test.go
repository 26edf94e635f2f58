package maintenance_test

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/maintenance"
	"github.com/leasehold/leasehold/internal/testlog"
	"github.com/leasehold/leasehold/leasetype"
	"github.com/leasehold/leasehold/pgdriver"
	"github.com/leasehold/leasehold/pgdriver/pgtest"
)

// TestWatcherAfterServerVanished: the stuck watcher runs on PostgreSQL
// through a proxy, which then stops moving bytes on every connection
// open, without closing them, as a server host that vanished in a
// failover (powered off, cut off) leaves them; connections opened later
// are served (the new primary). A watcher pass on a pooled connection
// then waits for an answer that never comes: its bound (here 1 s) ends
// it, and a later pass, on a new connection, moves the expired lease.
// Unbounded, it would wait as long as TCP retransmits, a quarter of an
// hour (here forever: the proxy's end keeps the connection alive).
//
// There is no SQLite counterpart: a SQLite database is a file, with no
// connection to a server that could vanish.
func TestWatcherAfterServerVanished(t *testing.T) {
	url := pgtest.URL(t)
	admin := pgtest.OpenURL(t, url)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	p := newFreezeProxy(t, cfg.ConnConfig.Host, cfg.ConnConfig.Port)
	cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Fallbacks = "127.0.0.1", p.port(), nil
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // after the proxy closed its connections (cleanups run last first)
	p.closeAtCleanup(t)
	d, err := pgdriver.New(pool)
	if err != nil {
		t.Fatal(err)
	}

	var logs testlog.Buffer
	rescued := make(chan *leasetype.RescuedJob, 1)
	r := maintenance.NewRescuer(maintenance.RescuerConfig{Driver: d, Interval: 50 * time.Millisecond,
		Logger: logs.Logger(), Emit: func(ev leasetype.Event) {
			if ev.Kind == leasetype.EventRescued {
				rescued <- ev.Rescued
			}
		}})
	r.Timeout = time.Second
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Stop(context.Background()) }()
	for deadline := time.Now().Add(10 * time.Second); pool.Stat().TotalConns() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watcher opened no connection in 10 s")
		}
	}
	time.Sleep(200 * time.Millisecond) // a few passes on the pooled connection
	p.freeze()

	ctx := t.Context()
	res, err := admin.Insert(ctx, nil, []*driver.InsertParams{{Kind: "k", Queue: "q", Args: []byte(`{}`), MaxAttempts: 5}})
	if err != nil {
		t.Fatal(err)
	}
	id := res[0].Job.ID
	if got, err := admin.ClaimByID(ctx, &driver.ClaimByIDParams{ID: id, Owner: "gone", TTL: -time.Second}); err != nil || got == nil {
		t.Fatalf("ClaimByID: %v, %v", got, err)
	}
	const within = 20 * time.Second
	select {
	case j := <-rescued:
		if j.ID != id {
			t.Fatalf("rescued job %d, want %d", j.ID, id)
		}
	case <-time.After(within):
		t.Fatalf("the expired lease was not moved in %v after the server vanished (watcher bound %v); log:\n%s",
			within, r.Timeout, logs.String())
	}
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "stuck watcher pass failed (timed out)") {
		t.Errorf("log:\n%s\nwant the pass on the vanished server's connection reported as timed out", logs.String())
	}
}

// freezeProxy forwards TCP connections to a PostgreSQL server; freeze
// stops moving bytes on every connection open then, without closing it,
// while later connections are forwarded.
type freezeProxy struct {
	ln    net.Listener
	dial  func() (net.Conn, error)
	mu    sync.Mutex
	conns []*proxied
}

// proxied is one forwarded connection: its two ends, and whether it is
// frozen.
type proxied struct {
	client, server net.Conn
	frozen         bool // under freezeProxy.mu
}

// newFreezeProxy listens on a local TCP port and forwards to the server
// at host and port (host a directory: its Unix socket).
func newFreezeProxy(t *testing.T, host string, port uint16) *freezeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezeProxy{ln: ln, dial: func() (net.Conn, error) {
		if strings.HasPrefix(host, "/") {
			return net.Dial("unix", filepath.Join(host, ".s.PGSQL."+strconv.Itoa(int(port))))
		}
		return net.Dial("tcp", net.JoinHostPort(host, strconv.Itoa(int(port))))
	}}
	go p.serve()
	return p
}

// port is the port the proxy listens on.
func (p *freezeProxy) port() uint16 { return uint16(p.ln.Addr().(*net.TCPAddr).Port) }

// serve accepts and forwards connections until the listener closes.
func (p *freezeProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := p.dial()
		if err != nil {
			c.Close()
			continue
		}
		pc := &proxied{client: c, server: s}
		p.mu.Lock()
		p.conns = append(p.conns, pc)
		p.mu.Unlock()
		go p.pipe(pc, s, c)
		go p.pipe(pc, c, s)
	}
}

// pipe copies src to dst until either fails, or drops everything once pc
// is frozen.
func (p *freezeProxy) pipe(pc *proxied, dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		frozen := pc.frozen
		p.mu.Unlock()
		if !frozen && n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // io.EOF too: the other side closed
			return
		}
	}
}

// freeze freezes every connection open now.
func (p *freezeProxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pc := range p.conns {
		pc.frozen = true
	}
}

// closeAtCleanup closes the listener and every connection when t ends,
// so that the pool closes at once and the server ends their sessions.
func (p *freezeProxy) closeAtCleanup(t *testing.T) {
	t.Cleanup(func() {
		p.ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, pc := range p.conns {
			pc.client.Close()
			pc.server.Close()
		}
	})
}
