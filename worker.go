package leasehold

import (
	"context"
	"fmt"
	"sort"
	"sync"
)

// Job is a job handed to a typed handler: the stored row and its decoded
// arguments.
type Job[T Args] struct {
	*JobRow
	Args T
}

// Worker runs jobs of one kind. Work's context is cancelled when the lease
// is lost (cause ErrLeaseLost, or ErrLeaseNotRenewed when it could not be
// renewed in time), when an operator cancels the job (cause
// ErrJobCancelled), when the kind's WorkerOptions.Timeout passes (cause
// ErrJobTimeout), or when the client stops and the handler outlives
// ShutdownTimeout (cause ErrShuttingDown); context.Cause tells which.
//
// Work returns nil on success, or an error: Permanent(err) fails the job
// at once, Snooze(d) runs it again later without spending its budget,
// Cancel(err) cancels it, and any other error is retried by the client's
// RetryPolicy (or its kind's, see WorkerOptions) while budget remains. A
// panic is recovered and recorded as a failure with its stack.
//
// Args that do not decode into T fail the job at once, whatever its
// budget (a Permanent error wrapping ErrInvalidArgs): during a rolling
// deploy that changes T's shape, make the new shape decode from the old
// (new fields optional) or give it a new kind, so that jobs enqueued by
// one version are not failed by workers of the other.
type Worker[T Args] interface {
	Work(ctx context.Context, job *Job[T]) error
}

// WorkFunc adapts a function to Worker.
type WorkFunc[T Args] func(ctx context.Context, job *Job[T]) error

// Work calls f.
func (f WorkFunc[T]) Work(ctx context.Context, job *Job[T]) error { return f(ctx, job) }

// Workers is the set of handlers a Client runs, one per kind. A client
// claims only jobs whose kind it has a handler for, so during a rolling
// deploy old workers leave new kinds alone instead of failing them.
//
// The set is frozen when a client starts with it: from then on AddWorker
// returns ErrWorkersFrozen, for every client sharing the value.
type Workers struct {
	mu     sync.Mutex // guards byKind and frozen until frozen is set
	byKind map[string]*handler
	// frozen is set by Client.Start; byKind never changes after that, so
	// the running clients read it without locking.
	frozen bool
}

type handler struct {
	kind string
	opts WorkerOptions
	// run decodes the job's arguments and calls the worker, within the
	// kind's timeout.
	run func(ctx context.Context, row *JobRow) error
}

// NewWorkers returns an empty set of handlers. The zero Workers is one
// too.
func NewWorkers() *Workers { return &Workers{byKind: map[string]*handler{}} }

// AddWorker registers w for the kind of T, which is T's zero value's
// Kind() (so Kind must have a value receiver). Register every worker
// before Client.Start: a client claims the kinds registered when it
// starts, and once any client has started with ws, AddWorker refuses with
// ErrWorkersFrozen (a kind added later would never be claimed). It
// returns ErrInvalidKind for a bad kind name and an error when the kind is
// already registered. It is safe to call from several goroutines. The
// kind takes the client's defaults: no timeout, Config.RetryPolicy and
// Config.DefaultMaxAttempts; AddWorkerWithOptions sets its own.
func AddWorker[T Args](ws *Workers, w Worker[T]) error {
	return AddWorkerWithOptions(ws, w, WorkerOptions{})
}

// add registers h unless its kind is taken or ws is frozen.
func (ws *Workers) add(h *handler) error {
	if ws == nil {
		return fmt.Errorf("%w: nil *Workers (use NewWorkers)", ErrInvalidConfig)
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.byKind == nil { // the zero Workers
		ws.byKind = map[string]*handler{}
	}
	if ws.frozen {
		return fmt.Errorf("%w (kind %s)", ErrWorkersFrozen, h.kind)
	}
	if _, dup := ws.byKind[h.kind]; dup {
		return fmt.Errorf("%w: worker for kind %s registered twice", ErrInvalidConfig, h.kind)
	}
	ws.byKind[h.kind] = h
	return nil
}

// Kinds returns the registered kinds, sorted.
func (ws *Workers) Kinds() []string {
	if ws == nil {
		return nil
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.kindsLocked()
}

func (ws *Workers) kindsLocked() []string {
	kinds := make([]string, 0, len(ws.byKind))
	for k := range ws.byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

// freeze stops ws from accepting workers and returns its kinds. A client
// calls it when it starts, before any of its goroutines reads ws.
func (ws *Workers) freeze() []string {
	if ws == nil {
		return nil
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.frozen = true
	return ws.kindsLocked()
}

// lookup returns the handler of kind. Only a started client calls it: ws
// is frozen then, so the map is read without locking.
func (ws *Workers) lookup(kind string) *handler {
	if ws == nil {
		return nil
	}
	return ws.byKind[kind]
}
