package pgdriver

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Reconnect backoff of Listen.
const (
	listenMinBackoff = 100 * time.Millisecond
	listenMaxBackoff = 10 * time.Second
)

// Listen implements driver.Notifier: on a dedicated connection (not from
// the pools) it LISTENs on leasehold_insert and calls wake with the queue
// name of each hint. It reconnects with a capped exponential backoff after
// any error and returns only when ctx is done, with ctx.Err(). Hints sent
// while disconnected are lost: they are never needed for correctness.
func (d *Driver) Listen(ctx context.Context, wake func(queue string)) error {
	backoff := listenMinBackoff
	for {
		if d.listenOnce(ctx, wake) {
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
// done. It reports whether it got as far as listening.
func (d *Driver) listenOnce(ctx context.Context, wake func(queue string)) bool {
	conn, err := pgx.ConnectConfig(ctx, d.pool.Config().ConnConfig)
	if err != nil {
		return false
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return false
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true
		}
		wake(n.Payload)
	}
}
