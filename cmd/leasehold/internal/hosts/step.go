package hosts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/fleet"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/jobkinds"
)

// Step timings.
const (
	insertChunk = 10_000
	startWait   = time.Minute // for every worker to report once
	drainPoll   = 10 * time.Millisecond
	stopWait    = 30 * time.Second
)

// step is one process count of the sweep: a schema of its own on the
// server, the operator's client on it, and the worker processes.
type step struct {
	r      *run
	procs  int
	schema string
	url    string
	db     *cli.DB
	client *leasehold.Client
	fleet  *fleet.Fleet
	hostOf map[string]string // owner -> namespace
	addrOf map[string]string // owner -> the namespace's address
}

// step drains Jobs jobs with p worker processes and checks the result.
func (r *run) step(ctx context.Context, p int) (*Step, error) {
	s := &step{r: r, procs: p, schema: "leasehold_hosts_p" + strconv.Itoa(p),
		hostOf: map[string]string{}, addrOf: map[string]string{}}
	defer s.close()
	if err := s.prepare(ctx); err != nil {
		return nil, err
	}
	if err := s.start(); err != nil {
		return nil, err
	}
	conns, err := s.waitReady(ctx)
	if err != nil {
		return nil, err
	}
	res := &Step{Procs: p, Connections: conns, Load: load1()}
	if err := s.drain(ctx, res); err != nil {
		return nil, err
	}
	s.fleet.StopAll(stopWait)
	if err := s.check(ctx, res); err != nil {
		return nil, err
	}
	r.logf("%2d processes: %d jobs in %.2fs: %.0f jobs/s; exactly once: %v (load %s)",
		p, r.o.Jobs, res.Seconds, res.JobsPerSec, res.Check.OK(), res.Load)
	return res, nil
}

// prepare creates and migrates the step's schema and fills its paused
// queue.
func (s *step) prepare(ctx context.Context) error {
	r := s.r
	if err := r.exec(ctx, "DROP SCHEMA IF EXISTS "+s.schema+" CASCADE", "CREATE SCHEMA "+s.schema); err != nil {
		return err
	}
	s.url = withParams(r.url, "search_path", s.schema)
	var err error
	if s.db, err = cli.Open(ctx, cli.Target{Dialect: cli.Postgres, URL: s.url}, cli.OpenOptions{}); err != nil {
		return err
	}
	if _, err := s.db.Driver.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	s.client, err = leasehold.NewClient(leasehold.Config{Driver: s.db.Driver, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	// Paused until every worker runs: the step times the drain, not the
	// workers' start.
	if err := s.client.PauseQueue(ctx, leasehold.DefaultQueue); err != nil {
		return err
	}
	chunk := make([]leasehold.InsertManyParams, min(r.o.Jobs, insertChunk))
	for i := range chunk {
		chunk[i] = leasehold.InsertManyParams{Args: jobkinds.SleepArgs{}}
	}
	for left := r.o.Jobs; left > 0; left -= len(chunk) {
		if _, err := s.client.InsertBulk(ctx, chunk[:min(left, len(chunk))]); err != nil {
			return fmt.Errorf("insert: %w", err)
		}
	}
	// Every step starts from the same state (see the bench's settle).
	return r.exec(ctx, "ANALYZE "+s.schema+".leasehold_jobs, "+s.schema+".leasehold_attempts", "CHECKPOINT")
}

// start starts the workers, worker i in namespace i mod hosts.
func (s *step) start() error {
	r := s.r
	s.fleet = fleet.New(nil)
	hosts := r.net.Hosts()
	for i := range s.procs {
		h := hosts[i%len(hosts)]
		name := fmt.Sprintf("w%d", i+1)
		owner := fmt.Sprintf("hosts-p%d-%s-%s", s.procs, name, h.Name)
		argv := h.Argv(r.o.Executable, "work", "--kind", jobkinds.SleepKind, "--owner", owner,
			"--concurrency", strconv.Itoa(r.o.Concurrency), "--report-every", reportEvery.String(), "--log-level", "warn")
		_, err := s.fleet.Start(fleet.Spec{Name: name, Owner: owner, Executable: argv[0], Args: argv[1:],
			DB: withParams(s.url, "application_name", owner)})
		if err != nil {
			return err
		}
		s.hostOf[owner], s.addrOf[owner] = h.Name, h.Addr.String()
	}
	return nil
}

// waitReady waits until every worker has reported once (its client has
// started), then checks where their sessions come from: each worker has
// some, all from its namespace's address. It returns the number of
// sessions.
func (s *step) waitReady(ctx context.Context) (int, error) {
	wctx, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	err := poll(wctx, func() (bool, error) { return s.allReported(), s.exitedEarly() })
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return 0, fmt.Errorf("the workers did not all start within %v", startWait)
	}
	if err != nil {
		return 0, err
	}
	var n int
	seen := map[string]bool{}
	err = s.r.query(ctx, s.r.url, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT application_name, host(client_addr) FROM pg_stat_activity
			WHERE application_name LIKE 'hosts-%' AND client_addr IS NOT NULL`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var owner, addr string
			if err := rows.Scan(&owner, &addr); err != nil {
				return err
			}
			want, ok := s.addrOf[owner]
			if !ok {
				continue // another step's worker, still going away
			}
			if addr != want {
				return fmt.Errorf("worker %s connects from %s, not from its namespace's %s", owner, addr, want)
			}
			seen[owner] = true
			n++
		}
		return rows.Err()
	})
	if err != nil {
		return 0, err
	}
	for owner := range s.addrOf {
		if !seen[owner] {
			return 0, fmt.Errorf("worker %s has no session on the server", owner)
		}
	}
	return n, nil
}

func (s *step) allReported() bool {
	for _, p := range s.fleet.All() {
		if _, ok := p.Stats(); !ok {
			return false
		}
	}
	return true
}

// exitedEarly reports a worker that exited while it should run.
func (s *step) exitedEarly() error {
	for _, p := range s.fleet.All() {
		if !p.Alive() {
			return fmt.Errorf("worker %s exited: %v: %s", p.Name(), p.Err(), p.LogTail(5))
		}
	}
	return nil
}

// drain resumes the queue and waits until no job is left, then times the
// drain by the database clock: from the resume to the last finish.
func (s *step) drain(ctx context.Context, res *Step) error {
	from, err := s.db.Driver.Now(ctx)
	if err != nil {
		return err
	}
	if err := s.client.ResumeQueue(ctx, leasehold.DefaultQueue); err != nil {
		return err
	}
	last, err := s.waitDrained(ctx)
	if err != nil {
		return err
	}
	res.Seconds = last.Sub(from).Seconds()
	res.JobsPerSec = float64(s.r.o.Jobs) / res.Seconds
	return nil
}

// waitDrained waits, for at most StepTimeout, until no job is pending or
// processing, and returns the last finish. A drain that never ends is how
// a lost job usually shows: the error then says how many jobs are left,
// not only that the time ran out.
func (s *step) waitDrained(ctx context.Context) (time.Time, error) {
	timeout := s.r.o.StepTimeout
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last time.Time
	err := s.r.query(wctx, s.url, func(c *pgx.Conn) error {
		err := poll(wctx, func() (bool, error) {
			var left bool
			if err := c.QueryRow(wctx, leftSQL).Scan(&left); err != nil {
				return false, fmt.Errorf("wait for the drain: %w", err)
			}
			return !left, s.exitedEarly()
		})
		if err != nil {
			return err
		}
		return c.QueryRow(wctx, `SELECT max(finished_at) FROM leasehold_jobs`).Scan(&last)
	})
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return last, s.drainTimedOut(ctx, timeout, err)
	}
	return last, err
}

// drainTimedOut describes a drain that did not end within timeout: the
// jobs still pending or processing, counted on a connection of its own
// (the timed-out one may be gone).
func (s *step) drainTimedOut(ctx context.Context, timeout time.Duration, cause error) error {
	var left int64
	err := s.r.query(ctx, s.url, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, leftCountSQL).Scan(&left)
	})
	if err != nil {
		return fmt.Errorf("the drain did not end within %v (%w), and the jobs left could not be counted: %w", timeout, cause, err)
	}
	return fmt.Errorf("%d jobs still pending or processing after %v", left, timeout)
}

// close stops whatever still runs and drops the step's schema.
func (s *step) close() {
	if s.fleet != nil {
		s.fleet.Close()
	}
	if s.db != nil {
		_ = s.db.Close()
	}
	if err := s.r.exec(context.Background(), "DROP SCHEMA IF EXISTS "+s.schema+" CASCADE"); err != nil {
		s.r.logf("hosts: %v", err)
	}
}

// leftSQL asks whether any job is still to be done.
const leftSQL = `SELECT EXISTS (SELECT 1 FROM leasehold_jobs WHERE status IN ('pending', 'processing'))`

// leftCountSQL counts the jobs still to be done.
const leftCountSQL = `SELECT count(*) FROM leasehold_jobs WHERE status IN ('pending', 'processing')`

// poll calls check every drainPoll until it reports done or an error, or
// ctx ends.
func poll(ctx context.Context, check func() (bool, error)) error {
	t := time.NewTicker(drainPoll)
	defer t.Stop()
	for {
		done, err := check()
		if done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
