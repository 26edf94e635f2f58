package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/payments"
)

// setup prepares the database, enqueues the payments and starts the
// provider.
func (d *demo) setup(ctx context.Context) error {
	o := d.o
	d.scr.Line("leasehold demo: %d payments, %d worker processes, lease TTL %s, provider stalls of %s",
		o.Payments, o.Workers, cli.FormatDuration(o.TTL), cli.FormatDuration(o.StallFor))
	if err := d.openDB(ctx); err != nil {
		return err
	}
	if err := d.enqueue(ctx); err != nil {
		return err
	}
	p, err := payments.StartProvider(payments.ProviderConfig{
		MinLatency: 300 * time.Millisecond, MaxLatency: time.Second,
		Stall: d.trap.Stall, StallFor: o.StallFor, Seed: rand.Uint64(),
	})
	if err != nil {
		return err
	}
	d.provider = p
	d.scr.Line("  provider  %s, an in-process stand-in: one charge per idempotency key", p.URL())
	d.scr.Line("  queue     %s: %d payment jobs enqueued", d.queue, o.Payments)
	d.scr.Line("")
	return nil
}

func (d *demo) openDB(ctx context.Context) error {
	t := d.o.Target
	fresh := ""
	if t.Dialect == cli.SQLite && d.o.Fresh {
		if err := removeSQLite(t.Path); err != nil {
			return err
		}
		fresh = " (a fresh file)"
	}
	db, err := cli.Open(ctx, t, cli.OpenOptions{Create: true})
	if err != nil {
		return err
	}
	d.db = db
	d.scr.Line("  database  %s%s", t, fresh)
	if _, err := db.Driver.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate %s: %w", t, err)
	}
	sqlDB, err := db.SQL()
	if err != nil {
		return err
	}
	if d.ledger, err = payments.NewLedger(sqlDB, payments.Dialect(t.Dialect)); err != nil {
		return err
	}
	if err := d.ledger.Migrate(ctx); err != nil {
		return err
	}
	d.client, err = leasehold.NewClient(leasehold.Config{
		Driver: db.Driver, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	return err
}

// removeSQLite deletes a database file and its WAL and shared-memory files.
func removeSQLite(path string) error {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove old demo database: %w", err)
		}
	}
	return nil
}

// paymentPrefix starts the id of every payment of this run.
func (d *demo) paymentPrefix() string { return "pay-" + d.run + "-" }

func (d *demo) enqueue(ctx context.Context) error {
	jobs := make([]leasehold.InsertManyParams, d.o.Payments)
	for i := range jobs {
		id := fmt.Sprintf("%s%04d", d.paymentPrefix(), i+1)
		jobs[i] = leasehold.InsertManyParams{
			Args: payments.ChargeArgs{PaymentID: id, AmountCents: 500 + rand.Int64N(20000), Currency: "EUR"},
			Opts: &leasehold.InsertOpts{Queue: d.queue, UniqueKey: id, MaxAttempts: 10},
		}
	}
	res, err := d.client.InsertMany(ctx, nil, jobs)
	if err != nil {
		return fmt.Errorf("enqueue payments: %w", err)
	}
	d.payments = idRange{first: res[0].Job.ID, last: res[0].Job.ID}
	for _, r := range res {
		d.payments.first = min(d.payments.first, r.Job.ID)
		d.payments.last = max(d.payments.last, r.Job.ID)
	}
	return nil
}

// warmUp is how many charges pass before the story kills and freezes.
func (d *demo) warmUp() int { return d.o.Payments / 5 }

// onStall is the trap's report of a stalled charge: every one is logged
// (for the summary), and those it did not catch are told. It must not
// block.
func (d *demo) onStall(req payments.ChargeRequest, caught bool) {
	d.stallMu.Lock()
	d.stallLog = append(d.stallLog, req)
	d.stallMu.Unlock()
	if caught {
		return
	}
	select {
	case d.stalls <- req:
	default:
	}
}
