package engine

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPoolBlockedHandlersDoNotHoldBackQueuedJobs runs jobs that each block
// until every one has started: they only all return if the pool gives
// each queued job a worker of its own while the others block.
func TestPoolBlockedHandlersDoNotHoldBackQueuedJobs(t *testing.T) {
	const n = 200
	var started sync.WaitGroup
	started.Add(n)
	release := make(chan struct{})
	var done sync.WaitGroup
	done.Add(n)
	p := newWorkerPool(func(int) {
		started.Done()
		<-release
		done.Done()
	})
	for i := range n {
		p.run(i)
	}
	waitOrFail(t, &started, "every blocking job to start")
	close(release)
	waitOrFail(t, &done, "every job to return")
	p.close()
}

// TestPoolCloseRunsQueuedJobsThenExits closes a pool with jobs still
// queued behind a blocked one: each queued job still runs (the executor
// ends a lease it finds released there), and every worker exits.
func TestPoolCloseRunsQueuedJobsThenExits(t *testing.T) {
	before := runtime.NumGoroutine()
	block := make(chan struct{})
	var ran atomic.Int64
	var done sync.WaitGroup
	done.Add(50)
	p := newWorkerPool(func(i int) {
		if i == 0 {
			<-block
		}
		ran.Add(1)
		done.Done()
	})
	for i := range 50 {
		p.run(i)
	}
	p.close()
	close(block)
	waitOrFail(t, &done, "the queued jobs to run after close")
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := runtime.NumGoroutine(); got > before {
		t.Fatalf("%d goroutines after close, %d before: workers did not exit", got, before)
	}
}

// TestPoolHandlerExitingItsGoroutine checks that a job that ends its
// worker's goroutine (runtime.Goexit) strands none of the jobs queued
// behind it.
func TestPoolHandlerExitingItsGoroutine(t *testing.T) {
	const n = 100
	var done sync.WaitGroup
	done.Add(n)
	p := newWorkerPool(func(i int) {
		done.Done()
		if i%3 == 0 {
			runtime.Goexit()
		}
	})
	for i := range n {
		p.run(i)
	}
	waitOrFail(t, &done, "every job to run")
	p.close()
}

func waitOrFail(t *testing.T, wg *sync.WaitGroup, what string) {
	t.Helper()
	c := make(chan struct{})
	go func() { wg.Wait(); close(c) }()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
