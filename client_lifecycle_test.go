package leasehold_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/sqlitedriver"
)

// promptly bounds how long Start and Stop may take in these tests when
// they are meant to return at once.
const promptly = 5 * time.Second

type lifecycleArgs struct{}

func (lifecycleArgs) Kind() string { return "lifecycle" }

// lifecycleSetup opens a migrated SQLite file and returns its driver and a
// client on it, not started, stopped at cleanup.
func lifecycleSetup(t *testing.T, ws *leasehold.Workers) (*sqlitedriver.Driver, *leasehold.Client) {
	t.Helper()
	d, err := sqlitedriver.Open(testdb.SQLitePath(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	if _, err := d.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	c, err := leasehold.NewClient(leasehold.Config{
		Driver: d, Workers: ws, PollInterval: 10 * time.Millisecond, ShutdownTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return d, c
}

// holdConnection begins a transaction on d's single connection, so that
// every other statement waits for it, and returns its rollback, also run
// at cleanup.
func holdConnection(t *testing.T, d *sqlitedriver.Driver) func() {
	t.Helper()
	tx, err := d.DB().BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatalf("BeginTx: %v", err)
	}
	release := func() { _ = tx.Rollback() }
	t.Cleanup(release)
	return release
}

// startAgain checks that c, after a failed Start, starts.
func startAgain(t *testing.T, c *leasehold.Client) {
	t.Helper()
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("Start after the failed Start: %v (want the client left startable)", err)
	}
}

// TestStartTwice: a second Start on a running client returns
// ErrClientStarted and leaves it running; Start after Stop returns
// ErrClientStopped.
func TestStartTwice(t *testing.T) {
	_, c := lifecycleSetup(t, nil)
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := c.Start(t.Context()); !errors.Is(err, leasehold.ErrClientStarted) {
		t.Fatalf("second Start = %v, want ErrClientStarted", err)
	}
	select {
	case <-c.Stopped():
		t.Fatal("Stopped closed by a refused second Start")
	default:
	}
	if err := c.Stop(t.Context()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := c.Start(t.Context()); !errors.Is(err, leasehold.ErrClientStopped) {
		t.Fatalf("Start after Stop = %v, want ErrClientStopped", err)
	}
}

// TestStartCancelledContext: Start with a cancelled ctx returns ctx's
// error, wrapped, and leaves the client startable.
func TestStartCancelledContext(t *testing.T) {
	_, c := lifecycleSetup(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := c.Start(ctx)
	if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "leasehold: start: ") {
		t.Fatalf("Start with a cancelled ctx = %v, want context.Canceled wrapped by leasehold: start", err)
	}
	startAgain(t, c)
}

// TestStartHonoursDeadline: a Start whose schema read waits (another
// transaction holds SQLite's single connection) returns when its ctx
// expires, with an error wrapping context.DeadlineExceeded, and leaves the
// client startable.
func TestStartHonoursDeadline(t *testing.T) {
	d, c := lifecycleSetup(t, nil)
	release := holdConnection(t, d)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	began := time.Now()
	err := c.Start(ctx)
	if took := time.Since(began); took > promptly {
		t.Errorf("Start took %v after its ctx expired at 200ms", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "leasehold: start: ") {
		t.Fatalf("Start with an expiring ctx = %v, want context.DeadlineExceeded wrapped by leasehold: start", err)
	}
	release()
	startAgain(t, c)
}

// TestStopEndsWaitingStart: Stop called while Start waits for the database
// returns at once, without waiting for Start, and Start then returns
// ErrClientStopped.
func TestStopEndsWaitingStart(t *testing.T) {
	d, c := lifecycleSetup(t, nil)
	holdConnection(t, d) // released at cleanup, after the checks
	started := make(chan error, 1)
	go func() { started <- c.Start(context.Background()) }()
	time.Sleep(100 * time.Millisecond) // let Start reach its schema read; either order must pass
	stopped := make(chan error, 1)
	go func() { stopped <- c.Stop(context.Background()) }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Stop = %v", err)
		}
	case <-time.After(promptly):
		t.Fatal("Stop blocked behind a Start waiting for the database")
	}
	select {
	case err := <-started:
		if !errors.Is(err, leasehold.ErrClientStopped) {
			t.Errorf("Start ended by Stop = %v, want ErrClientStopped", err)
		}
	case <-time.After(promptly):
		t.Fatal("Start kept waiting for the database after Stop")
	}
	select {
	case <-c.Stopped():
	default:
		t.Error("Stopped not closed after Stop of a client that never ran")
	}
}

// TestStoppedMeansEverythingStopped: one goroutine stops a client with a
// handler still running; another waits on Stopped (and a second Stop
// returns with it). When Stopped is closed, no handler runs any more and
// the job's outcome is in the database.
func TestStoppedMeansEverythingStopped(t *testing.T) {
	inHandler, finish := make(chan struct{}), make(chan struct{})
	ws := leasehold.NewWorkers()
	err := leasehold.AddWorker(ws, leasehold.WorkFunc[lifecycleArgs](func(context.Context, *leasehold.Job[lifecycleArgs]) error {
		close(inHandler)
		<-finish
		time.Sleep(100 * time.Millisecond) // still running well after Stop began
		return nil
	}))
	if err != nil {
		t.Fatalf("AddWorker: %v", err)
	}
	d, c := lifecycleSetup(t, ws)
	select {
	case <-c.Stopped():
		t.Fatal("Stopped closed before Stop")
	default:
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	res, err := c.Insert(t.Context(), lifecycleArgs{}, nil)
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	waitChan(t, inHandler, "the handler to start")
	stopErr := make(chan error, 1)
	go func() { stopErr <- c.Stop(context.Background()) }()
	close(finish)
	waitChan(t, c.Stopped(), "Stopped")
	if n := c.Stats().Running; n != 0 {
		t.Errorf("Stats().Running = %d once Stopped is closed, want 0", n)
	}
	if row, err := d.GetJob(t.Context(), res.Job.ID); err != nil || row.State != leasehold.StateCompleted {
		t.Errorf("job once Stopped is closed: %+v, %v; want its outcome (completed) written", row, err)
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Errorf("second Stop = %v", err)
	}
	if err := <-stopErr; err != nil {
		t.Errorf("Stop = %v", err)
	}
}

// TestSecondStopWaitsForFirst: a Stop called while another is shutting
// the client down returns only once the client has stopped.
func TestSecondStopWaitsForFirst(t *testing.T) {
	inHandler, finish := make(chan struct{}), make(chan struct{})
	ws := leasehold.NewWorkers()
	err := leasehold.AddWorker(ws, leasehold.WorkFunc[lifecycleArgs](func(context.Context, *leasehold.Job[lifecycleArgs]) error {
		close(inHandler)
		<-finish
		return nil
	}))
	if err != nil {
		t.Fatalf("AddWorker: %v", err)
	}
	_, c := lifecycleSetup(t, ws)
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if _, err := c.Insert(t.Context(), lifecycleArgs{}, nil); err != nil {
		t.Fatalf("Insert: %v", err)
	}
	waitChan(t, inHandler, "the handler to start")
	stops := make(chan error, 2)
	for range 2 {
		go func() { stops <- c.Stop(context.Background()) }()
	}
	select {
	case err := <-stops:
		t.Fatalf("a Stop returned (%v) while the handler still ran", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(finish)
	for range 2 {
		select {
		case err := <-stops:
			if err != nil {
				t.Errorf("Stop = %v", err)
			}
		case <-time.After(promptly):
			t.Fatal("Stop did not return")
		}
	}
}

func waitChan(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
