package service

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// loopSvc is a minimal service on a Lifecycle: one goroutine until Stop.
type loopSvc struct {
	life   Lifecycle
	halted atomic.Int32
	exited atomic.Bool
}

func (s *loopSvc) Start(context.Context) error {
	ctx, err := s.life.Begin()
	if err != nil {
		return err
	}
	s.life.Go(func() { <-ctx.Done(); s.exited.Store(true) })
	return nil
}

func (s *loopSvc) Stop(ctx context.Context) error {
	return s.life.Stop(ctx, func(ctx context.Context) {
		s.halted.Add(1)
		s.life.Wait(ctx)
	})
}

var _ Service = (*loopSvc)(nil)

func TestStopBeforeStart(t *testing.T) {
	var s loopSvc
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop before Start: %v", err)
	}
	if err := s.Start(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("Start after Stop = %v, want ErrStopped", err)
	}
	if s.halted.Load() != 0 {
		t.Fatal("halt ran for a service that never started")
	}
}

func TestStartTwice(t *testing.T) {
	var s loopSvc
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Stop(context.Background())
	if err := s.Start(context.Background()); !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start = %v, want ErrStarted", err)
	}
}

func TestStopTwiceHaltsOnce(t *testing.T) {
	var s loopSvc
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := s.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if !s.exited.Load() {
		t.Fatal("goroutine still running after Stop")
	}
	if n := s.halted.Load(); n != 1 {
		t.Fatalf("halt ran %d times, want 1", n)
	}
}

func TestSecondStopWaitsForFirst(t *testing.T) {
	var life Lifecycle
	if _, err := life.Begin(); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	firstDone := make(chan struct{})
	go func() {
		_ = life.Stop(context.Background(), func(context.Context) { <-release })
		close(firstDone)
	}()
	time.Sleep(10 * time.Millisecond) // let the first Stop begin its halt
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := life.Stop(ctx, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Stop during a halt = %v, want it to wait (deadline exceeded)", err)
	}
	close(release)
	<-firstDone
	if err := life.Stop(context.Background(), nil); err != nil {
		t.Fatalf("Stop after the halt ended = %v", err)
	}
}

func TestStopReturnsContextError(t *testing.T) {
	var life Lifecycle
	if _, err := life.Begin(); err != nil {
		t.Fatal(err)
	}
	block := make(chan struct{})
	defer close(block)
	life.Go(func() { <-block }) // ignores cancellation
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := life.Stop(ctx, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop = %v, want deadline exceeded", err)
	}
}

// TestLaterStopWaitsForGoroutines: a first Stop whose ctx is done leaves
// the goroutines cancelled but running; a later Stop waits until they
// are gone.
func TestLaterStopWaitsForGoroutines(t *testing.T) {
	var life Lifecycle
	ctx, err := life.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var gone atomic.Bool
	life.Go(func() {
		<-ctx.Done()
		time.Sleep(100 * time.Millisecond) // a cancelled statement on its way back
		gone.Store(true)
	})
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := life.Stop(done, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("first Stop = %v, want context canceled", err)
	}
	if err := life.Stop(context.Background(), nil); err != nil {
		t.Fatalf("later Stop = %v", err)
	}
	if !gone.Load() {
		t.Fatal("a later Stop returned while a goroutine still ran")
	}
}
