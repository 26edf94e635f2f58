package hosts

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/bench"
	"github.com/leasehold/leasehold/internal/netns"
	"github.com/leasehold/leasehold/internal/pgctl"
)

// maxConnections is the server's max_connections: each worker process
// opens a pool and a heartbeat pool.
const maxConnections = 400

// run is one run of the sweep.
type run struct {
	o   Options
	net *netns.Network
	srv *pgctl.Server
	url string // the server over TCP on the bridge address
	rep *Report
}

// Run builds the network and the server, runs the sweep and tears both
// down. When an error ends the sweep, the report holds the steps measured
// so far and the error in Aborted (so it is never OK).
func Run(ctx context.Context, o Options) (*Report, error) {
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	r := &run{o: o, rep: &Report{Started: time.Now().UTC(), Jobs: o.Jobs, Concurrency: o.Concurrency, CPUs: runtime.NumCPU()}}
	defer r.close()
	if err := r.setup(ctx); err != nil {
		return nil, err
	}
	r.rep.LoadBefore = loadAvg()
	err := r.sweep(ctx)
	if err != nil {
		r.rep.Aborted = err.Error()
	}
	r.rep.LoadAfter = loadAvg()
	r.rep.finish()
	return r.rep, err
}

// sweep runs the steps, with the ceiling measured before the first and
// after each: each step is compared with the ceilings just before and
// after it, since the machine's speed drifts within a run.
func (r *run) sweep(ctx context.Context) error {
	before, err := r.ceiling(ctx)
	if err != nil {
		return err
	}
	for _, p := range r.o.Procs {
		st, err := r.step(ctx, p)
		if err != nil {
			return fmt.Errorf("hosts: %d processes: %w", p, err)
		}
		after, err := r.ceiling(ctx)
		if err != nil {
			return err
		}
		st.Ceiling, before = (before+after)/2, after
		r.rep.Steps = append(r.rep.Steps, *st)
	}
	return nil
}

func (r *run) logf(format string, args ...any) { fmt.Fprintf(r.o.Progress, format+"\n", args...) }

// setup builds the network and starts the server on its gateway.
func (r *run) setup(ctx context.Context) error {
	var err error
	if r.net, err = netns.Create(ctx, r.o.Network); err != nil {
		return err
	}
	gw := r.net.Gateway().String()
	for _, h := range r.net.Hosts() {
		r.rep.Hosts = append(r.rep.Hosts, HostInfo{Name: h.Name, Addr: h.Addr.String()})
	}
	r.logf("network: %d namespaces on %s, bridge %s", len(r.rep.Hosts), r.net.Subnet(), gw)
	if r.srv, err = startServer(ctx, r.o, gw, r.net.Subnet()); err != nil {
		return err
	}
	r.url = r.srv.URL(gw)
	r.rep.Server, err = r.serverVersion(ctx)
	r.logf("server: %s at %s:%d (data %s, default durability)", r.rep.Server, gw, r.o.Port, r.srv.DataDir)
	return err
}

// startServer starts the run's server, listening on addr, in the
// directory of o's bridge and port (serverDir): a server an interrupted
// run left there is stopped first. pg_ctl start detaches the server, so
// a run killed before its teardown (a second interrupt, SIGKILL, the
// OOM killer) leaves it running, still bound to the bridge address and
// port once the bridge is gone, and the next run's server could not
// bind them when the bridge is made again.
func startServer(ctx context.Context, o Options, addr string, subnet netip.Prefix) (*pgctl.Server, error) {
	srv, err := pgctl.StartServer(ctx, pgctl.ServerOptions{
		Dir: serverDir(o), Reclaim: true, Port: o.Port, ListenAddresses: []string{addr}, HBA: []string{hbaLine(subnet)},
		Settings: []string{fmt.Sprintf("max_connections = %d", maxConnections)}, Durable: true,
	})
	if errors.Is(err, pgctl.ErrAddrInUse) {
		// Not a server of serverDir (that one is stopped by now): the
		// process may be anyone's, so stopping it is the user's call.
		return nil, fmt.Errorf("hosts: another process listens on %s:%d; `ss -ltnp` names it "+
			"(a postgres working in a %s directory may be a server an older leasehold left: "+
			"`pg_ctl stop -D <that directory>/data` stops it), or choose another --port: %w",
			addr, o.Port, filepath.Join(os.TempDir(), "leasehold-pg-*"), err)
	}
	return srv, err
}

// serverDir is the directory of the run's server, named by the bridge
// and the port so that a run finds the server an interrupted run with
// the same network and port left behind.
func serverDir(o Options) string {
	bridge := cmp.Or(o.Network.Bridge, netns.DefaultBridge)
	return filepath.Join(os.TempDir(), fmt.Sprintf("leasehold-hosts-%s-%d", bridge, o.Port))
}

func (r *run) serverVersion(ctx context.Context) (string, error) {
	var v string
	err := r.query(ctx, r.url, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, "SELECT 'PostgreSQL ' || split_part(current_setting('server_version'), ' ', 1)").Scan(&v)
	})
	return v, err
}

// ceiling measures the bare-SQL ceiling of the server with the bench's
// ceiling phase, from the root namespace over the bridge address, and
// returns it (0 with NoCeiling).
func (r *run) ceiling(ctx context.Context) (float64, error) {
	if r.o.NoCeiling {
		return 0, nil
	}
	rep, err := bench.Run(ctx, bench.Options{URL: r.url, Phases: []string{bench.PhaseCeiling}, Jobs: r.o.Jobs,
		CeilingLoops: r.o.CeilingLoops, Timeout: r.o.StepTimeout})
	if err != nil {
		return 0, fmt.Errorf("hosts: ceiling: %w", err)
	}
	c := rep.Ceiling
	r.rep.Ceiling = append(r.rep.Ceiling, c.JobsPerSec)
	r.rep.CeilingLoops, r.rep.CeilingBatch = c.Loops, c.Batch
	r.logf("ceiling: bare SQL, %d loops x %d: %.0f jobs/s", c.Loops, c.Batch, c.JobsPerSec)
	return c.JobsPerSec, nil
}

// close stops the server and removes the network.
func (r *run) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	if r.srv != nil {
		errs = append(errs, r.srv.Stop(ctx))
	}
	if r.net != nil {
		errs = append(errs, r.net.Close(ctx))
	}
	if err := errors.Join(errs...); err != nil {
		r.logf("hosts: teardown: %v", err)
	}
}

// query runs fn on a connection of its own to rawURL.
func (r *run) query(ctx context.Context, rawURL string, fn func(*pgx.Conn) error) error {
	c, err := pgx.Connect(ctx, rawURL)
	if err != nil {
		return fmt.Errorf("hosts: connect: %w", err)
	}
	defer c.Close(context.Background())
	return fn(c)
}

// exec runs statements on a connection of their own.
func (r *run) exec(ctx context.Context, stmts ...string) error {
	return r.query(ctx, r.url, func(c *pgx.Conn) error {
		for _, s := range stmts {
			if _, err := c.Exec(ctx, s); err != nil {
				return fmt.Errorf("hosts: %s: %w", s, err)
			}
		}
		return nil
	})
}

// withParams returns rawURL with query parameters set.
func withParams(rawURL string, kv ...string) string {
	u, _ := url.Parse(rawURL) // built by pgctl
	q := u.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// load1 returns the machine's load average over the last minute, or "".
func load1() string {
	f := strings.Fields(loadAvg())
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// loadAvg returns the machine's load averages (/proc/loadavg), or "".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
