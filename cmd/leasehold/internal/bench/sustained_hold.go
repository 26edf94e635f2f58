package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// HeldTransaction describes the transaction a sustained run held open.
type HeldTransaction struct {
	// Opened and Closed are when it began and ended, in seconds since the
	// run started.
	Opened float64 `json:"opened_s"`
	Closed float64 `json:"closed_s"`
	// XID is its transaction id (txid_current()), and Xmin the
	// backend_xmin pg_stat_activity showed for it once it had taken its
	// snapshot: the horizon below which vacuum may not remove rows.
	XID  string `json:"xid"`
	Xmin string `json:"backend_xmin"`
}

// hold waits until r.holdAt, then holds a REPEATABLE READ transaction
// open for r.holdFor on a connection of its own: it takes a transaction
// id and a snapshot (a SELECT of the jobs table, as a report would), and
// checks in pg_stat_activity that the snapshot holds back the cluster's
// xmin horizon.
func (r *sustainRun) hold(ctx context.Context, b *bench, s *scratch) (*HeldTransaction, error) {
	if err := sleep(ctx, time.Until(r.at(r.holdAt))); err != nil {
		return nil, nil // the run ended first
	}
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return nil, fmt.Errorf("held transaction: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	h := &HeldTransaction{Opened: time.Duration(r.now()).Seconds()}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return nil, fmt.Errorf("held transaction: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var n int64
	if err := tx.QueryRow(ctx, "SELECT txid_current()::text").Scan(&h.XID); err != nil {
		return nil, fmt.Errorf("held transaction: txid: %w", err)
	}
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM leasehold_jobs").Scan(&n); err != nil {
		return nil, fmt.Errorf("held transaction: select: %w", err)
	}
	pid := conn.PgConn().PID()
	var xmin *string
	if err := s.pool.QueryRow(ctx, "SELECT backend_xmin::text FROM pg_stat_activity WHERE pid = $1", pid).Scan(&xmin); err != nil {
		return nil, fmt.Errorf("held transaction: pg_stat_activity: %w", err)
	}
	if xmin == nil {
		return nil, fmt.Errorf("held transaction: pg_stat_activity shows no backend_xmin for pid %d", pid)
	}
	h.Xmin = *xmin
	r.heldPID.Store(int32(pid))
	b.logf("sustained: held transaction open at %.0f s: xid %s, backend_xmin %s (pid %d, saw %d jobs)",
		h.Opened, h.XID, h.Xmin, pid, n)
	waitErr := sleep(ctx, time.Until(r.at(r.holdAt+r.holdFor)))
	r.heldPID.Store(0)
	if err := tx.Rollback(context.WithoutCancel(ctx)); err != nil {
		return h, fmt.Errorf("held transaction: rollback: %w", err)
	}
	h.Closed = time.Duration(r.now()).Seconds()
	b.logf("sustained: held transaction closed at %.0f s", h.Closed)
	if waitErr != nil && ctx.Err() == nil {
		return h, waitErr
	}
	return h, nil
}
