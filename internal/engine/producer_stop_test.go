package engine

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
)

// abandonedWarning is the start of what Stop logs when it abandons a
// claim in flight.
const abandonedWarning = "a claim still in flight at shutdown was abandoned"

// syncBuf is a log destination safe to write from the producer's
// goroutines while a test reads it.
type syncBuf struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// silentClaimer is a fakeDB whose claims wait until their context ends, as
// against a database that does not answer; entered receives one value
// per claim sent.
type silentClaimer struct {
	*fakeDB
	entered chan struct{}
}

func (c *silentClaimer) Claim(ctx context.Context, _ *driver.ClaimParams) ([]*leasetype.JobRow, error) {
	c.entered <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}

// startProducer starts a producer of one queue "q" claiming from claimer
// and logging to logs; the claims lease nothing, so it needs no executor.
func startProducer(t *testing.T, claimer Claimer, logs *syncBuf) *Producer {
	t.Helper()
	p := NewProducer(ProducerConfig{
		Claimer: claimer, Queues: map[string]QueueConfig{"q": {MaxWorkers: 10, TakeOver: true}},
		Kinds: []string{"k"}, Owner: "w1", TTL: 3 * time.Second, PollInterval: 5 * time.Millisecond,
		FetchBatch: 100, Clock: NewClock(), Emit: func(leasetype.Event) {},
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p
}

// doneCtx returns a context that is done already.
func doneCtx() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// stopWithin runs p.Stop(ctx) and fails t unless it returns within 5 s.
func stopWithin(t *testing.T, p *Producer, ctx context.Context) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- p.Stop(ctx) }()
	select {
	case err := <-errc:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not return")
		return nil
	}
}

// TestStopDoneCtxNoClaimNoWarning: Stop with a context done already (the
// caller stops on its signal's context) while no claim is in flight waits
// for the loops to see the cancel and logs no abandoned claim: the loops
// that had not returned yet were only waiting to be woken.
func TestStopDoneCtxNoClaimNoWarning(t *testing.T) {
	for i := range 10 {
		db := newFakeDB()
		var logs syncBuf
		p := startProducer(t, db, &logs)
		p.Wake("q")
		waitFor(t, "a claim and a probe", func() bool { claims, probes := db.calls(); return claims >= 1 && probes >= 1 })
		if err := stopWithin(t, p, doneCtx()); !errors.Is(err, context.Canceled) {
			t.Fatalf("Stop = %v, want context.Canceled", err)
		}
		if strings.Contains(logs.String(), abandonedWarning) {
			t.Fatalf("round %d: Stop with no claim in flight warned of an abandoned claim:\n%s", i, logs.String())
		}
	}
}

// TestStopAbandonsClaimInFlight: a claim the database does not answer is
// abandoned once Stop's context is done, whether it was done already or
// ran out while Stop waited, and Stop says so.
func TestStopAbandonsClaimInFlight(t *testing.T) {
	for name, mkCtx := range map[string]func() (context.Context, context.CancelFunc){
		"done": func() (context.Context, context.CancelFunc) { return doneCtx(), func() {} },
		"timeout": func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 50*time.Millisecond)
		},
	} {
		t.Run(name, func(t *testing.T) {
			c := &silentClaimer{fakeDB: newFakeDB(), entered: make(chan struct{}, 100)}
			var logs syncBuf
			p := startProducer(t, c, &logs)
			p.Wake("q")
			select {
			case <-c.entered:
			case <-time.After(5 * time.Second):
				t.Fatal("no claim was sent")
			}
			ctx, cancel := mkCtx()
			defer cancel()
			if err := stopWithin(t, p, ctx); err == nil {
				t.Fatal("Stop = nil, want its context's error")
			}
			if !strings.Contains(logs.String(), abandonedWarning) {
				t.Fatalf("Stop abandoned a claim in flight without saying so:\n%s", logs.String())
			}
			if n := p.claimsInFlight(); n != 0 {
				t.Fatalf("%d claims counted in flight after Stop, want 0", n)
			}
		})
	}
}

// TestNoClaimOnceStopping: a claim due after the loops' context is
// cancelled is not sent, and frees the slots it reserved: Stop, having
// found no claim in flight, must not find one started behind its back.
func TestNoClaimOnceStopping(t *testing.T) {
	db := newFakeDB()
	p := NewProducer(ProducerConfig{
		Claimer: db, Queues: map[string]QueueConfig{"q": {MaxWorkers: 10, TakeOver: true}},
		Kinds: []string{"k"}, Owner: "w1", TTL: 3 * time.Second, PollInterval: time.Second,
		FetchBatch: 100, Clock: NewClock(), Emit: func(leasetype.Event) {}, Logger: discard,
	})
	q := p.queues["q"]
	q.inFlight.Add(3) // the slots of a full claim beside the loop
	params := &driver.ClaimParams{Queue: "q", Kinds: []string{"k"}, Owner: "w1", TTL: 3 * time.Second, Limit: 3}
	if got := q.claimWith(doneCtx(), params, true, 3); got != 0 {
		t.Fatalf("claim once stopping leased %d jobs, want 0", got)
	}
	if claims, _ := db.calls(); claims != 0 {
		t.Fatalf("%d claims sent once stopping, want none", claims)
	}
	if n := q.inFlight.Load(); n != 0 {
		t.Fatalf("%d slots still reserved after the claim not sent, want 0", n)
	}
	if n := p.claimsInFlight(); n != 0 {
		t.Fatalf("%d claims counted in flight, want 0", n)
	}
}
