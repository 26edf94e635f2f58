package engine

// workerPool runs jobs on goroutines that outlive one job. A fresh
// goroutine starts with a small stack, and the first job on it (decoding
// its arguments, say) grows that stack by copying it, which cost a fifth
// of the engine's CPU time in a drain of no-op jobs. A goroutine that runs
// job after job keeps its grown stack (the garbage collector shrinks the
// stacks of idle ones). The fetchers' slots bound how many jobs run at
// once, so the pool never holds more goroutines than the client has
// worker slots; they all exit at Stop.
//
// An idle worker waits on the work channel alone: a select over a second
// channel (a timer, a quit signal) locks both on every job and cost a
// tenth of the engine's time.
type workerPool[T any] struct {
	fn   func(T)
	work chan T // unbuffered: a send succeeds only if a worker is idle
}

func newWorkerPool[T any](fn func(T)) *workerPool[T] {
	return &workerPool[T]{fn: fn, work: make(chan T)}
}

// run runs fn(job) on an idle worker, or on a new one when none is idle.
// It must not be called after close.
func (p *workerPool[T]) run(job T) {
	select {
	case p.work <- job:
	default:
		go p.worker(job)
	}
}

// worker runs job, then every job handed to it, until the pool is closed.
func (p *workerPool[T]) worker(job T) {
	p.fn(job)
	for job := range p.work {
		p.fn(job)
	}
}

// close lets the workers exit, each after its current job. The fetchers,
// the only callers of run, have stopped by then.
func (p *workerPool[T]) close() { close(p.work) }
