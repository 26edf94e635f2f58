package bench

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// callCounts counts the driver calls of one client, by method. On
// PostgreSQL each of these calls is one statement (Insert with duplicate
// keys is two); on SQLite each is one transaction of a few statements.
type callCounts struct {
	claim, heartbeat, finish, insert, rescue, probe, other atomic.Int64
	// heartbeatRows is the number of leases the heartbeats renewed.
	heartbeatRows atomic.Int64
}

// total returns the number of driver calls counted.
func (c *callCounts) total() int64 {
	return c.claim.Load() + c.heartbeat.Load() + c.finish.Load() + c.insert.Load() +
		c.rescue.Load() + c.probe.Load() + c.other.Load()
}

// countingDriver wraps a driver.Driver and counts its calls.
type countingDriver struct {
	driver.Driver
	n *callCounts
}

// notifyingDriver is a countingDriver whose driver is a driver.Notifier.
type notifyingDriver struct {
	countingDriver
	notifier driver.Notifier
}

// Listen forwards to the wrapped driver.
func (d notifyingDriver) Listen(ctx context.Context, wake func(queue string)) error {
	return d.notifier.Listen(ctx, wake)
}

// counted wraps d so that its calls are counted in n, keeping its
// Notifier implementation when it has one.
func counted(d driver.Driver, n *callCounts) driver.Driver {
	c := countingDriver{Driver: d, n: n}
	if nt, ok := d.(driver.Notifier); ok {
		return notifyingDriver{countingDriver: c, notifier: nt}
	}
	return c
}

// FinishLinger forwards the wrapped driver's (driver.FinishLingerer).
func (d countingDriver) FinishLinger() time.Duration { return driver.FinishLingerOf(d.Driver) }

// Refused forwards the wrapped driver's (driver.Refuser).
func (d countingDriver) Refused(err error) bool { return driver.IsRefused(d.Driver, err) }

// CheckTx forwards the wrapped driver's (driver.TxChecker).
func (d countingDriver) CheckTx(tx any) error { return driver.CheckTxOf(d.Driver, tx) }

func (d countingDriver) Claim(ctx context.Context, p *driver.ClaimParams) ([]*leasehold.JobRow, error) {
	d.n.claim.Add(1)
	return d.Driver.Claim(ctx, p)
}

func (d countingDriver) Heartbeat(ctx context.Context, p *driver.HeartbeatParams) ([]*driver.HeartbeatResult, error) {
	d.n.heartbeat.Add(1)
	d.n.heartbeatRows.Add(int64(len(p.Leases)))
	return d.Driver.Heartbeat(ctx, p)
}

func (d countingDriver) Finish(ctx context.Context, tx any, p []*driver.FinishParams) ([]driver.FinishResult, error) {
	d.n.finish.Add(1)
	return d.Driver.Finish(ctx, tx, p)
}

func (d countingDriver) Insert(ctx context.Context, tx any, p []*driver.InsertParams) ([]*leasehold.InsertResult, error) {
	d.n.insert.Add(1)
	return d.Driver.Insert(ctx, tx, p)
}

func (d countingDriver) InsertBulk(ctx context.Context, p []*driver.InsertParams) (int64, error) {
	d.n.insert.Add(1)
	return d.Driver.InsertBulk(ctx, p)
}

func (d countingDriver) RescueExpired(ctx context.Context, p *driver.RescueParams) ([]*leasehold.RescuedJob, error) {
	d.n.rescue.Add(1)
	return d.Driver.RescueExpired(ctx, p)
}

func (d countingDriver) ClaimableQueues(ctx context.Context, p *driver.ClaimableParams) ([]string, error) {
	d.n.probe.Add(1)
	return d.Driver.ClaimableQueues(ctx, p)
}

func (d countingDriver) ClaimByID(ctx context.Context, p *driver.ClaimByIDParams) (*leasehold.JobRow, error) {
	d.n.other.Add(1)
	return d.Driver.ClaimByID(ctx, p)
}

func (d countingDriver) Now(ctx context.Context) (time.Time, error) {
	d.n.other.Add(1)
	return d.Driver.Now(ctx)
}

// Close does nothing: the scratch database owns the driver.
func (d countingDriver) Close() error { return nil }
