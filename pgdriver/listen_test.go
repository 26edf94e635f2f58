package pgdriver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/testdb"
)

func TestListenWakesOnInsert(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	queue := "listen-" + t.Name()
	woken := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- d.Listen(ctx, func(q string) {
			if q == queue {
				select {
				case woken <- struct{}{}:
				default:
				}
			}
		})
	}()
	// The listener may not be listening yet: insert again until a hint
	// arrives (each insert with Notify sends one).
	p := job(queue)
	p.Notify = true
	deadline := time.After(20 * time.Second)
	for got := false; !got; {
		if _, err := d.Insert(ctx, nil, []*driver.InsertParams{p}); err != nil {
			t.Fatalf("Insert: %v", err)
		}
		select {
		case <-woken:
			got = true
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatal("no hint received")
		}
	}
	// InsertBulk notifies too.
	for got := false; !got; {
		if _, err := d.InsertBulk(ctx, []*driver.InsertParams{p}); err != nil {
			t.Fatalf("InsertBulk: %v", err)
		}
		select {
		case <-woken:
			got = true
		case <-deadline:
			t.Fatal("no hint after InsertBulk")
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Listen returned %v, want context.Canceled", err)
	}
}

func TestListenReconnects(t *testing.T) {
	url := testdb.PostgresURL(t)
	app := "lh_listen_" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "_"))
	url += "&application_name=" + app
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	d, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	woken := make(chan string, 16)
	done := make(chan error, 1)
	go func() {
		done <- d.Listen(ctx, func(q string) {
			select {
			case woken <- q:
			default:
			}
		})
	}()
	p := job("reconnect-" + app)
	p.Notify = true
	waitHint := func() {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			if _, err := d.Insert(ctx, nil, []*driver.InsertParams{p}); err != nil {
				t.Fatalf("Insert: %v", err)
			}
			select {
			case q := <-woken:
				if q == p.Queue {
					return
				}
			case <-time.After(100 * time.Millisecond):
			case <-deadline:
				t.Fatal("no hint received")
			}
		}
	}
	waitHint()
	kill := `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND query LIKE 'LISTEN%'`
	var killed int
	if err := d.pool.QueryRow(ctx, kill, app).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminate listener: killed %d, %v", killed, err)
	}
	waitHint()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Listen returned %v", err)
	}
}
