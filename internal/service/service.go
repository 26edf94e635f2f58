// Package service gives every background part of a leasehold client the
// same lifecycle: Start once, Stop any number of times (before Start too),
// and a Stop that returns when the part's goroutines are gone or its
// context is done.
package service

import (
	"context"
	"errors"
	"sync"
)

// Service is one background part of a client. The client starts its
// services from one list and stops them in the list's order, which is the
// order its shutdown contract needs (see docs/design.md).
type Service interface {
	// Start launches the service's goroutines. It returns ErrStarted when
	// the service runs already and ErrStopped after Stop.
	Start(ctx context.Context) error
	// Stop stops the service and waits for its goroutines, or until ctx
	// is done (then it returns ctx's error; the service still stops).
	// It is safe before Start (the service then never starts) and more
	// than once: a later call waits for the first.
	Stop(ctx context.Context) error
}

// Lifecycle errors.
var (
	// ErrStarted is returned by Start on a running service.
	ErrStarted = errors.New("service already started")
	// ErrStopped is returned by Start on a stopped service.
	ErrStopped = errors.New("service stopped")
)

type state int

const (
	stateNew state = iota
	stateRunning
	stateStopped
)

// Lifecycle implements the state machine of a Service for the part that
// embeds it: Begin in Start, Go for each goroutine, Stop (with its halt
// function) in Stop. The zero
// value is a new, unstarted lifecycle.
type Lifecycle struct {
	mu      sync.Mutex
	state   state
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	stopped chan struct{} // closed once the first Stop's halt and the goroutines have returned
}

// Begin moves a new lifecycle to running and returns the context its
// goroutines run on, cancelled by Stop before its halt function runs.
func (l *Lifecycle) Begin() (context.Context, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch l.state {
	case stateRunning:
		return nil, ErrStarted
	case stateStopped:
		return nil, ErrStopped
	}
	l.state = stateRunning
	l.stopped = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	return ctx, nil
}

// Go runs fn on a goroutine that Wait waits for.
func (l *Lifecycle) Go(fn func()) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		fn()
	}()
}

// Wait waits for the goroutines started with Go until ctx is done; it
// reports whether they all returned.
func (l *Lifecycle) Wait(ctx context.Context) bool {
	return WaitGroup(ctx, &l.wg)
}

// Stop cancels the goroutines' context and, on the first Stop of a
// running lifecycle, calls halt (nil to only wait for the goroutines
// until ctx is done). Every later call waits until that first halt has
// returned and every goroutine started with Go has too, or until its own
// ctx is done: a first Stop whose ctx ran out leaves them cancelled, and
// a later one waits for them to be gone. Stop on a lifecycle never
// started marks it stopped and returns at once.
func (l *Lifecycle) Stop(ctx context.Context, halt func(ctx context.Context)) error {
	l.mu.Lock()
	prev := l.state
	l.state = stateStopped
	if prev == stateNew {
		l.stopped = make(chan struct{})
		close(l.stopped) // never started: nothing to wait for
	}
	stopped := l.stopped
	l.mu.Unlock()
	switch prev {
	case stateNew:
		return nil
	case stateRunning:
		l.cancel()
		if halt == nil {
			halt = func(ctx context.Context) { l.Wait(ctx) }
		}
		halt(ctx)
		go func() {
			l.wg.Wait()
			close(stopped)
		}()
		return ctx.Err()
	}
	select {
	case <-stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WaitGroup waits for wg until ctx is done; it reports whether wg
// finished.
func WaitGroup(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}
