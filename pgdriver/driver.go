package pgdriver

import (
	"context"
	"fmt"
	neturl "net/url"
	"os"
	"slices"
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

// connectTimeout bounds each connect of the pools Open makes, and of the
// listener, to each host of the URL, unless the URL sets connect_timeout.
// pgxpool's own default is 2 min: after a failover whose old primary was
// powered off or cut off (its SYNs unanswered, or its connections
// accepted and never answered), every new connection would wait that
// long on the old primary before it tried the next host of a multi-host
// URL, the promoted one.
const connectTimeout = 5 * time.Second

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
// accepts) and returns a driver that owns it: Close closes it.
//
// Two bounds differ from pgxpool's defaults, each unless url sets its
// own. The pool's health check of an idle connection gives up after 5 s
// unless url sets pool_ping_timeout (pgxpool's default is no bound). A
// connect gives up on a host after 5 s, and tries the URL's next host,
// unless url (or PGCONNECT_TIMEOUT) sets connect_timeout (pgxpool's
// default is 2 min, which a failover to the second host of a multi-host
// URL would spend on a silent first host for each new connection). The
// heartbeat pool and the listener connect with the same bound.
//
// The pool's size stays pgxpool's (pool_max_conns in url sets it). A
// handler that holds a transaction on Pool holds one of its connections:
// give the pool more than the handlers that run at once, or give the
// application's transactions a pool of their own (README, "Drivers").
func Open(ctx context.Context, url string) (*Driver, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: open: %w", err)
	}
	if !connStringSets(url, "pool_ping_timeout") {
		cfg.PingTimeout = pingTimeout
	}
	if cfg.ConnConfig.ConnectTimeout == 0 && !setsConnectTimeout(url) {
		cfg.ConnConfig.ConnectTimeout = connectTimeout
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

// setsConnectTimeout reports whether connString or the environment sets
// connect_timeout, 0 included: a connect_timeout of 0 (no bound, which
// pgxpool makes 2 min) parses to the same ConnectTimeout as none.
func setsConnectTimeout(connString string) bool {
	return os.Getenv("PGCONNECT_TIMEOUT") != "" || connStringSets(connString, "connect_timeout")
}

// connStringSets reports whether connString, a URL or a keyword/value
// string that pgxpool.ParseConfig accepted, sets key: as a URL's query
// parameter, or as a keyword (not inside another keyword's value, such as
// a quoted password).
func connStringSets(connString, key string) bool {
	if rest, ok := cutURLScheme(connString); ok {
		return urlQuery(rest).Has(key)
	}
	return slices.Contains(keywords(connString), key)
}

// cutURLScheme returns connString without its postgres:// or
// postgresql:// scheme, and whether it had one.
func cutURLScheme(connString string) (string, bool) {
	if rest, ok := strings.CutPrefix(connString, "postgresql://"); ok {
		return rest, true
	}
	return strings.CutPrefix(connString, "postgres://")
}

// urlQuery returns the query parameters of a PostgreSQL URL without its
// scheme, found as pgconn finds them, not as net/url would: net/url
// refuses a multi-host list with a port on any host but the last, and
// takes a raw '#' in a password for a fragment. The user and password
// end at an '@' met before any '/'; the query starts at the first '?'
// after them (no host, port or database name holds one). Parameters
// that do not decode are left out, as url.ParseQuery leaves them.
func urlQuery(rest string) neturl.Values {
	if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
		rest = rest[i+1:]
	}
	_, query, ok := strings.Cut(rest, "?")
	if !ok {
		return nil
	}
	values, _ := neturl.ParseQuery(query)
	return values
}

// connSpaces are the characters that separate a keyword/value string's
// settings.
const connSpaces = " \t\n\r\v\f"

// keywords returns the keywords of a keyword/value connection string
// (host=h port=5432 ...), read as pgconn reads them: a value runs to the
// next space, or is quoted in single quotes, and a backslash escapes the
// character after it.
func keywords(s string) []string {
	var keys []string
	for {
		s = strings.TrimLeft(s, connSpaces)
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return keys
		}
		keys = append(keys, strings.TrimRight(s[:eq], connSpaces))
		s = strings.TrimLeft(s[eq+1:], connSpaces)
		quoted := strings.HasPrefix(s, "'")
		if quoted {
			s = s[1:]
		}
		end := 0
		for ; end < len(s); end++ {
			if s[end] == '\\' {
				end++
				continue
			}
			if quoted && s[end] == '\'' || !quoted && strings.IndexByte(connSpaces, s[end]) >= 0 {
				break
			}
		}
		s = s[min(end+1, len(s)):]
	}
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
