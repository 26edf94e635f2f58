package pgdriver

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasehold/leasehold/driver"
)

// pingTimeout bounds the health check pgxpool makes of a connection idle
// for more than a second before it hands it out, in the pools Open makes,
// unless the URL sets pool_ping_timeout. pgxpool's own default is no
// bound: on a connection to a server that vanished without resetting it
// (a failover whose old primary was powered off or cut off), a call whose
// context has no deadline would wait as long as TCP retransmits, a
// quarter of an hour, before it got a new connection.
const pingTimeout = 5 * time.Second

// heartbeatPoolSize is the connection budget reserved for Heartbeat.
const heartbeatPoolSize = 2

// finishLinger is how long a client's outcomes may gather under load
// before a finish statement (FinishLinger). In a drain of 100,000 no-op
// jobs it cut the finish statements from about 100 to about 30, for no
// loss of throughput (docs/benchmarks.md, "Fewer statements per job").
const finishLinger = 20 * time.Millisecond

// Compile-time checks.
var (
	_ driver.Driver         = (*Driver)(nil)
	_ driver.Notifier       = (*Driver)(nil)
	_ driver.FinishLingerer = (*Driver)(nil)
	_ driver.EndedReader    = (*Driver)(nil)
)

// Driver is the PostgreSQL implementation of driver.Driver,
// driver.Notifier, driver.FinishLingerer and driver.EndedReader. It is
// safe for concurrent use. Create it with New or Open and release it with
// Close.
type Driver struct {
	pool     *pgxpool.Pool // main pool: every statement but Heartbeat
	hbPool   *pgxpool.Pool // small pool used only by Heartbeat
	ownsPool bool          // pool was opened by Open and is closed by Close
	notes    *notifier     // coalesced insert hints
	names    names         // interned kinds, queues, states and owners
	heldIdle time.Duration // heldIdleTimeout; shorter in tests
	migLock  migrationLock // how Migrate waits for a table's lock
	// claims are the claim statements (defaultClaims; tests change them).
	claims claimSets
	// plainCursor is set once the server refused what untouchedCond
	// reads: cursor claims then run without it (claimStatements).
	plainCursor atomic.Bool
	closeOnce   sync.Once
}

// New returns a driver using pool. The caller keeps owning pool: Close does
// not close it. New also creates the driver's small heartbeat pool from a copy
// of pool's configuration (it connects lazily).
func New(pool *pgxpool.Pool) (*Driver, error) {
	if pool == nil {
		return nil, fmt.Errorf("pgdriver: new: nil pool")
	}
	return newDriver(pool, false)
}

// Open opens a pool on url (a PostgreSQL URL or DSN, as pgxpool.ParseConfig
// accepts) and returns a driver that owns it: Close closes it. The pool's
// health check of an idle connection gives up after 5 s unless url sets
// pool_ping_timeout (pgxpool's default is no bound).
func Open(ctx context.Context, url string) (*Driver, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: open: %w", err)
	}
	if !strings.Contains(url, "pool_ping_timeout") {
		cfg.PingTimeout = pingTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: open: %w", err)
	}
	d, err := newDriver(pool, true)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return d, nil
}

func newDriver(pool *pgxpool.Pool, owns bool) (*Driver, error) {
	cfg := pool.Config().Copy()
	cfg.MaxConns = heartbeatPoolSize
	cfg.MinConns = 0
	cfg.MinIdleConns = 0
	hb, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: heartbeat pool: %w", err)
	}
	d := &Driver{pool: pool, hbPool: hb, ownsPool: owns, notes: newNotifier(pool), heldIdle: heldIdleTimeout,
		migLock: migrationLock{Timeout: migrationLockTimeout, Pause: migrationLockPause, Tries: migrationLockTries},
		claims:  defaultClaims}
	return d, nil
}

// Pool returns the driver's main pool, for the application's own queries
// and transactions (for example a pgx.Tx to pass to InsertTx or
// CompleteTx).
func (d *Driver) Pool() *pgxpool.Pool { return d.pool }

// Close closes the heartbeat pool and, when the driver was created by Open,
// the main pool. It is safe to call more than once.
func (d *Driver) Close() error {
	d.closeOnce.Do(func() {
		d.notes.close()
		d.hbPool.Close()
		if d.ownsPool {
			d.pool.Close()
		}
	})
	return nil
}

// Now returns the database clock.
func (d *Driver) Now(ctx context.Context) (time.Time, error) {
	var now time.Time
	if err := d.pool.QueryRow(ctx, "SELECT now()").Scan(&now); err != nil {
		return time.Time{}, fmt.Errorf("pgdriver: now: %w", err)
	}
	return now, nil
}

// FinishLinger implements driver.FinishLingerer: under load a client's
// outcomes gather for up to 20 ms before their finish statement, each
// statement a round trip and a commit fewer.
func (d *Driver) FinishLinger() time.Duration { return finishLinger }
