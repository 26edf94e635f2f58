package pgdriver

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasehold/leasehold/internal/testdb"
)

// unreachablePool returns a pool whose every statement fails at once
// (nothing listens on port 1), so that a notifier's sends are quick.
func unreachablePool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig("postgres://x@127.0.0.1:1/x?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestNotifierCloseRacesRequests closes notifiers while a burst of
// requests lands on each: a request must neither start a sender that
// close does not wait for nor make close's wait panic.
func TestNotifierCloseRacesRequests(t *testing.T) {
	pool := unreachablePool(t)
	for i := range 5000 {
		n := newNotifier(pool)
		n.request([]string{"q"})
		var wg sync.WaitGroup
		wg.Go(func() {
			for j := range 50 {
				n.request([]string{"q" + strconv.Itoa((i+j)%3)})
			}
		})
		n.close()
		wg.Wait()
		n.mu.Lock()
		running := n.running
		n.mu.Unlock()
		if running {
			t.Fatalf("round %d: a sender runs after close returned", i)
		}
	}
}

// TestNotifierCloseUnderSteadyRequests checks that close returns while
// requests keep arriving: it sends what is pending when called and does
// not wait for the stream to stop. Each send is slowed to 5 ms, so that
// requests always arrive while one is in flight.
func TestNotifierCloseUnderSteadyRequests(t *testing.T) {
	url := testdb.PostgresURL(t)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.PrepareConn = func(context.Context, *pgx.Conn) (bool, error) {
		time.Sleep(5 * time.Millisecond)
		return true, nil
	}
	pool, err := pgxpool.NewWithConfig(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	n := newNotifier(pool)
	// Queue names of this run's own: the channel is database-wide.
	prefix := "steady-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Microsecond):
					n.request([]string{prefix + strconv.Itoa(g*10+i%10)})
				}
			}
		})
	}
	defer wg.Wait()
	defer close(stop)
	time.Sleep(50 * time.Millisecond) // let the sender get going
	closed := make(chan struct{})
	go func() {
		n.close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("close did not return under a steady stream of requests")
	}
}

// TestNotifierRequestAfterClose checks that requests after close are
// dropped: no sender starts and nothing is kept.
func TestNotifierRequestAfterClose(t *testing.T) {
	n := newNotifier(unreachablePool(t))
	n.close()
	n.close() // a second close is harmless
	for i := range 100 {
		n.request([]string{"q" + strconv.Itoa(i)})
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.running || len(n.pending) != 0 {
		t.Fatalf("after close: running %v, %d queues pending; want none", n.running, len(n.pending))
	}
}

// TestNotifierCloseSendsPending checks that close sends the hints
// requested before it, against a real server: each queue asked for before
// close reaches a listener.
func TestNotifierCloseSendsPending(t *testing.T) {
	url := testdb.PostgresURL(t)
	ctx := testCtx(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ln, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close(context.Background())
	if _, err := ln.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		t.Fatal(err)
	}
	// The channel is database-wide: other tests may notify on it too, so
	// the queue names are this run's own.
	prefix := "close-pending-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	want := map[string]bool{}
	n := newNotifier(pool)
	for i := range 20 {
		q := prefix + strconv.Itoa(i)
		want[q] = true
		n.request([]string{q})
	}
	n.close()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for len(want) > 0 {
		note, err := ln.WaitForNotification(wctx)
		if err != nil {
			t.Fatalf("%d hints requested before close never arrived: %v", len(want), err)
		}
		delete(want, note.Payload)
	}
}
