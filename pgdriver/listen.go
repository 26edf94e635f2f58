package pgdriver

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Reconnect backoff of Listen.
const (
	listenMinBackoff = 100 * time.Millisecond
	listenMaxBackoff = 10 * time.Second
)

// listenConnectTimeout bounds the listener's connect when the pool's
// configuration sets no connect_timeout, as pgxpool bounds its own. The
// pools Open makes set one (connectTimeout, unless the URL sets its own),
// which the listener, copying the pool's configuration, keeps; a pool
// passed to New may have none.
const listenConnectTimeout = 2 * time.Minute

// Listen implements driver.Notifier: on a dedicated connection (not from
// the pools, but made as the main pool makes its own, through its
// BeforeConnect and AfterConnect hooks) it LISTENs on leasehold_insert and
// calls wake with the queue name of each hint. It reconnects with a capped
// exponential backoff after any error and returns only when ctx is done,
// with ctx.Err(). Hints sent while disconnected are lost: they are never
// needed for correctness.
func (d *Driver) Listen(ctx context.Context, wake func(queue string)) error {
	backoff := listenMinBackoff
	for {
		// The error is dropped: driver.Notifier has nowhere to report it,
		// and workers poll meanwhile.
		if listened, _ := d.listenOnce(ctx, wake); listened {
			backoff = listenMinBackoff
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, listenMaxBackoff)
	}
}

// listenOnce connects, listens and delivers hints until an error or ctx is
// done. It reports whether it got as far as listening, and why it stopped.
func (d *Driver) listenOnce(ctx context.Context, wake func(queue string)) (bool, error) {
	cfg := d.pool.Config()
	conn, err := connectLikePool(ctx, cfg)
	if err != nil {
		return false, err
	}
	defer closeLikePool(cfg, conn)
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return false, fmt.Errorf("pgdriver: listen: %w", err)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, fmt.Errorf("pgdriver: listen: wait: %w", err)
		}
		wake(n.Payload)
	}
}

// connectLikePool opens a connection outside the pool configured by cfg
// the way the pool opens its own: BeforeConnect on a copy of the
// connection configuration (it may supply short-lived credentials), then
// AfterConnect (it may set session state). The connection is not taken
// from the pool (Acquire and Hijack): that would wait behind the pool's
// work for a free connection, worst when every worker reconnects after a
// failover, and the hijacked connection would leave the pool's count all
// the same. So the listener is one connection beyond the pool's MaxConns,
// and the pool's other hooks (PrepareConn, AfterRelease) never see it.
func connectLikePool(ctx context.Context, cfg *pgxpool.Config) (*pgx.Conn, error) {
	cc := cfg.ConnConfig.Copy()
	if cc.ConnectTimeout <= 0 {
		cc.ConnectTimeout = listenConnectTimeout
	}
	if cfg.BeforeConnect != nil {
		if err := cfg.BeforeConnect(ctx, cc); err != nil {
			return nil, fmt.Errorf("pgdriver: listen: before connect: %w", err)
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: listen: connect: %w", err)
	}
	if cfg.AfterConnect != nil {
		if err := cfg.AfterConnect(ctx, conn); err != nil {
			closeConn(conn)
			return nil, fmt.Errorf("pgdriver: listen: after connect: %w", err)
		}
	}
	return conn, nil
}

// closeLikePool closes a connection opened by connectLikePool, calling
// the pool's BeforeClose first as the pool does for its own, so that a
// hook pairing AfterConnect with BeforeClose stays balanced.
func closeLikePool(cfg *pgxpool.Config, conn *pgx.Conn) {
	if cfg.BeforeClose != nil {
		cfg.BeforeClose(conn)
	}
	closeConn(conn)
}

// closeConn closes conn, waiting at most 5 s for the server to hear it:
// the caller's context may already be done.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}
