package leasehold_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/sqlitedriver"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
)

type frozenA struct{}

func (frozenA) Kind() string { return "frozen_a" }

type frozenB struct{}

func (frozenB) Kind() string { return "frozen_b" }

// TestAddWorkerAfterStartRefused: once a client has started with a Workers
// value, AddWorker on it is refused with ErrWorkersFrozen, for that client
// and for any other client sharing the value, while the running client
// claims and runs jobs (run with -race: no access to the set races).
func TestAddWorkerAfterStartRefused(t *testing.T) {
	ctx := t.Context()
	d, err := sqlitedriver.Open(testdb.SQLitePath(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	ws := leasehold.NewWorkers()
	var ran sync.WaitGroup
	work := func(context.Context, *leasehold.Job[frozenA]) error { ran.Done(); return nil }
	if err := leasehold.AddWorker(ws, leasehold.WorkFunc[frozenA](work)); err != nil {
		t.Fatalf("AddWorker before Start: %v", err)
	}
	newClient := func() *leasehold.Client {
		c, err := leasehold.NewClient(leasehold.Config{
			Driver: d, Workers: ws, PollInterval: 10 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatalf("NewClient: %v", err)
		}
		t.Cleanup(func() { _ = c.Stop(context.Background()) })
		return c
	}
	running, idle := newClient(), newClient()
	if err := running.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	const jobs = 20
	ran.Add(jobs)
	for range jobs {
		if _, err := running.Insert(ctx, frozenA{}, nil); err != nil {
			t.Fatalf("Insert: %v", err)
		}
	}
	if err := running.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	// While the fetchers claim and the handlers run.
	addB := func() error {
		return leasehold.AddWorker(ws, leasehold.WorkFunc[frozenB](func(context.Context, *leasehold.Job[frozenB]) error { return nil }))
	}
	if err := addB(); !errors.Is(err, leasehold.ErrWorkersFrozen) {
		t.Errorf("AddWorker after Start: err %v, want ErrWorkersFrozen", err)
	}
	waitGroup(t, &ran, "the running client to run every job")
	if err := addB(); !errors.Is(err, leasehold.ErrWorkersFrozen) {
		t.Errorf("AddWorker on Workers shared with a started client: err %v, want ErrWorkersFrozen", err)
	}
	if got := ws.Kinds(); len(got) != 1 || got[0] != "frozen_a" {
		t.Errorf("Kinds after refused AddWorker = %v, want [frozen_a]", got)
	}
	// The second client sharing the value still starts with the frozen set.
	if err := idle.Start(ctx); err != nil {
		t.Fatalf("Start of a second client sharing the Workers: %v", err)
	}
}

func waitGroup(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestAddWorkerMisuse: a nil *Workers, a nil worker (a nil WorkFunc too)
// and a kind registered twice are refused with ErrInvalidConfig, and the
// zero Workers is usable.
func TestAddWorkerMisuse(t *testing.T) {
	w := leasehold.WorkFunc[frozenA](func(context.Context, *leasehold.Job[frozenA]) error { return nil })
	if err := leasehold.AddWorker(nil, w); !errors.Is(err, leasehold.ErrInvalidConfig) {
		t.Errorf("AddWorker(nil, w) = %v, want ErrInvalidConfig", err)
	}
	var ws leasehold.Workers
	if err := leasehold.AddWorker[frozenA](&ws, nil); !errors.Is(err, leasehold.ErrInvalidConfig) {
		t.Errorf("AddWorker(ws, nil) = %v, want ErrInvalidConfig", err)
	}
	if err := leasehold.AddWorker(&ws, leasehold.WorkFunc[frozenA](nil)); !errors.Is(err, leasehold.ErrInvalidConfig) {
		t.Errorf("AddWorker(ws, WorkFunc(nil)) = %v, want ErrInvalidConfig", err)
	}
	if err := leasehold.AddWorker(&ws, w); err != nil {
		t.Errorf("AddWorker on the zero Workers = %v, want nil", err)
	}
	if got := ws.Kinds(); len(got) != 1 || got[0] != "frozen_a" {
		t.Errorf("Kinds of the zero Workers after AddWorker = %v", got)
	}
	if err := leasehold.AddWorker(&ws, w); !errors.Is(err, leasehold.ErrInvalidConfig) {
		t.Errorf("AddWorker of a kind registered already = %v, want ErrInvalidConfig", err)
	}
}

// TestNilJobNotInHandler: CompleteTx and ResolveReconcile given a nil job
// return ErrNotInHandler instead of panicking.
func TestNilJobNotInHandler(t *testing.T) {
	d := sqlitetest.Open(t)
	c, err := leasehold.NewClient(leasehold.Config{Driver: d})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := d.DB().BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := c.CompleteTx(t.Context(), tx, nil); !errors.Is(err, leasehold.ErrNotInHandler) {
		t.Errorf("CompleteTx(nil job) = %v, want ErrNotInHandler", err)
	}
	if err := c.ResolveReconcile(t.Context(), nil, leasehold.Resolution{}); !errors.Is(err, leasehold.ErrNotInHandler) {
		t.Errorf("ResolveReconcile(nil job) = %v, want ErrNotInHandler", err)
	}
}

// TestNilPointerArgs: a typed nil pointer as Args is refused as nil args
// by Insert, and a pointer type by AddWorker, instead of panicking in
// Kind.
func TestNilPointerArgs(t *testing.T) {
	var ws leasehold.Workers
	w := leasehold.WorkFunc[*frozenA](func(context.Context, *leasehold.Job[*frozenA]) error { return nil })
	if err := leasehold.AddWorker(&ws, w); !errors.Is(err, leasehold.ErrInvalidKind) {
		t.Errorf("AddWorker of a pointer type = %v, want ErrInvalidKind", err)
	}
	c, err := leasehold.NewClient(leasehold.Config{Driver: sqlitetest.Open(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Insert(t.Context(), (*frozenA)(nil), nil); !errors.Is(err, leasehold.ErrInvalidArgs) {
		t.Errorf("Insert of a nil *frozenA = %v, want ErrInvalidArgs", err)
	}
}

type pointerKind struct{}

func (*pointerKind) Kind() string { return "pointer_kind" }

// TestPointerKindWorker: a pointer type whose Kind has a pointer receiver
// (nil-safe) registers as before.
func TestPointerKindWorker(t *testing.T) {
	var ws leasehold.Workers
	w := leasehold.WorkFunc[*pointerKind](func(context.Context, *leasehold.Job[*pointerKind]) error { return nil })
	if err := leasehold.AddWorker(&ws, w); err != nil {
		t.Errorf("AddWorker of *pointerKind = %v, want nil", err)
	}
}
