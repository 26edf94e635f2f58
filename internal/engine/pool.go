package engine

import "sync"

// workerPool runs jobs on goroutines that outlive one job. A fresh
// goroutine starts with a small stack, and the first job on it (decoding
// its arguments, say) grows that stack by copying it, which cost a fifth
// of the engine's CPU time in a drain of no-op jobs. A goroutine that runs
// job after job keeps its grown stack (the garbage collector shrinks the
// stacks of idle ones). The fetchers' slots bound how many jobs run at
// once, so the pool never holds many more goroutines than the client has
// worker slots; they all exit at Stop.
//
// Jobs wait in a queue, and a worker whose job has returned takes the
// next one from it without parking. Waking a parked goroutine for every
// job (its thread often woken on the other processor) cost a drain of
// no-op jobs on PostgreSQL over a quarter of its client's CPU time (8.5
// µs a job, against 6.0 with the queue; docs/benchmarks.md). So the pool
// keeps one worker searching, no more: run wakes a worker only when none
// is searching, and a searching worker that takes a job wakes the next
// one only if jobs are still queued. Whenever the queue holds a job, a
// searching worker is on its way to it, so a job never waits behind a
// handler that blocks.
//
// A parked worker waits on the wake channel alone: a select over a second
// channel (a timer, a quit signal) locks both on every wake-up and cost a
// tenth of the engine's time.
type workerPool[T any] struct {
	fn   func(T)
	wake chan struct{} // unbuffered: a send succeeds only if a worker is parked

	mu        sync.Mutex
	queue     []T // jobs not taken yet, oldest at head
	head      int
	searching bool // a worker is woken or started to take a job
	closed    bool
}

func newWorkerPool[T any](fn func(T)) *workerPool[T] {
	return &workerPool[T]{fn: fn, wake: make(chan struct{})}
}

// run queues job for a worker, and wakes or starts one unless one is
// searching already. It must not be called after close.
func (p *workerPool[T]) run(job T) {
	p.mu.Lock()
	p.queue = append(p.queue, job)
	p.search()
	p.mu.Unlock()
}

// search wakes a parked worker to take a queued job, or starts one when
// none is parked, unless one is searching already or the pool is closed
// (close wakes every parked worker). p.mu is held, so that close cannot
// close the channel under the send, which never blocks.
func (p *workerPool[T]) search() {
	if p.searching || p.closed {
		return
	}
	p.searching = true
	select {
	case p.wake <- struct{}{}:
	default:
		go p.worker()
	}
}

// worker takes jobs from the queue and runs them, parking when it is
// empty, until the pool is closed and the queue drained. It starts
// searching.
func (p *workerPool[T]) worker() {
	searching := true
	for {
		job, ok := p.take(searching)
		if !ok {
			if _, open := <-p.wake; !open && p.drained() {
				return
			}
			searching = true // counted by the waker, or a closed pool's last search
			continue
		}
		searching = false
		p.fn(job)
	}
}

// take returns the oldest queued job, if any. A searching worker stops
// searching either way, and one that takes a job while more wait hands
// the search on to another worker, so that the jobs behind it do not wait
// for its handler.
func (p *workerPool[T]) take(searching bool) (job T, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if searching {
		p.searching = false
	}
	if p.head == len(p.queue) {
		return job, false
	}
	var zero T
	job, p.queue[p.head] = p.queue[p.head], zero
	p.head++
	if p.head == len(p.queue) {
		p.queue, p.head = p.queue[:0], 0
	} else {
		p.search()
	}
	return job, true
}

// drained reports whether the queue is empty.
func (p *workerPool[T]) drained() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.head == len(p.queue)
}

// close lets the workers exit once the queue is empty, each after its
// current job. The fetchers, the only callers of run, have stopped by
// then.
func (p *workerPool[T]) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	close(p.wake)
}
