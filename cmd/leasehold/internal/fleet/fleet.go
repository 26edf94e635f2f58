package fleet

import (
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// ErrCannotFreeze is returned by Freeze where processes cannot be frozen
// (see CanFreeze).
var ErrCannotFreeze = errors.New("freezing a process needs a Unix system (SIGSTOP)")

// killWait bounds the wait for a SIGKILLed process to exit.
const killWait = 10 * time.Second

// Fleet is the worker processes of one run. Its methods are safe for
// concurrent use; Close ends it.
type Fleet struct {
	trap      *Trap
	exits     chan *Proc
	closed    chan struct{}
	closeOnce sync.Once

	mu  sync.Mutex
	all []*Proc
}

// New returns an empty fleet. trap, when not nil, is kept told which
// workers it may catch.
func New(trap *Trap) *Fleet {
	return &Fleet{trap: trap, exits: make(chan *Proc, 64), closed: make(chan struct{})}
}

// Start starts a worker process.
func (f *Fleet) Start(s Spec) (*Proc, error) {
	p := newProc(s)
	if err := p.start(f.exited); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.all = append(f.all, p)
	f.mu.Unlock()
	f.trap.setEligible(s.Owner, true)
	return p, nil
}

// exited hands an exited process to Exits, unless the fleet is closed.
func (f *Fleet) exited(p *Proc) {
	f.trap.setEligible(p.Owner(), false)
	select {
	case f.exits <- p:
	case <-f.closed:
	}
}

// Exits receives each process once it has exited, whether it was killed,
// stopped or crashed (see Proc.ExitExpected), until Close.
func (f *Fleet) Exits() <-chan *Proc { return f.exits }

// All returns every process started, in start order.
func (f *Fleet) All() []*Proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.all)
}

// ByOwner returns the process that ran as the lease owner, whatever its
// state, or nil.
func (f *Fleet) ByOwner(owner string) *Proc {
	for _, p := range f.All() {
		if p.Owner() == owner {
			return p
		}
	}
	return nil
}

// Running returns the process of the lease owner if it runs and is
// neither killed nor frozen, else nil.
func (f *Fleet) Running(owner string) *Proc {
	if p := f.ByOwner(owner); p != nil && p.Alive() && !p.Frozen() {
		return p
	}
	return nil
}

// Pick returns a random process that runs and is neither killed nor
// frozen, or nil when there is none.
func (f *Fleet) Pick(rng *rand.Rand) *Proc {
	var cands []*Proc
	for _, p := range f.All() {
		if p.Alive() && !p.Frozen() {
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	return cands[rng.IntN(len(cands))]
}

// Kill SIGKILLs p and waits for it to exit.
func (f *Fleet) Kill(p *Proc) error {
	done := make(chan error, 1)
	f.KillLater(p, nil, func(err error) { done <- err })
	return <-done
}

// KillLater counts p as killed at once (no longer picked, caught or
// frozen, its exit expected); then, in a goroutine, it calls before when
// not nil (the chaos harness reads the database clock there), SIGKILLs p,
// waits for it to exit and calls after, when not nil, with the signal's
// error.
func (f *Fleet) KillLater(p *Proc, before func(), after func(error)) {
	p.killed.Store(true)
	f.trap.setEligible(p.Owner(), false)
	go func() {
		if before != nil {
			before()
		}
		err := p.kill()
		if err == nil {
			p.WaitExit(killWait)
		}
		if after != nil {
			after(err)
		}
	}()
}

// Freeze SIGSTOPs p: it keeps its leases and its sockets but runs
// nothing, so its heartbeats stop and its leases run out while it still
// believes it holds them.
func (f *Fleet) Freeze(p *Proc) error {
	f.trap.setEligible(p.Owner(), false)
	if err := p.signal("SIGSTOP", freeze); err != nil {
		f.trap.setEligible(p.Owner(), p.Alive())
		return err
	}
	p.frozen.Store(true)
	return nil
}

// Thaw SIGCONTs a frozen p: it wakes believing it still owns its jobs.
func (f *Fleet) Thaw(p *Proc) error {
	if err := p.signal("SIGCONT", thaw); err != nil {
		return err
	}
	p.frozen.Store(false)
	f.trap.setEligible(p.Owner(), p.Alive())
	return nil
}

// StopAll stops every process still alive, all at once: each is thawed
// if frozen, asked to stop (its standard input closed, SIGTERM) and given
// wait to exit before it is killed.
func (f *Fleet) StopAll(wait time.Duration) {
	var wg sync.WaitGroup
	for _, p := range f.All() {
		if !p.Alive() {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); p.stop(wait) }()
	}
	wg.Wait()
}

// Close kills whatever still runs (thawing it first, so that the kill is
// not held up) and waits for it; Exits receives nothing more. Calling it
// again does nothing.
func (f *Fleet) Close() {
	f.closeOnce.Do(func() {
		close(f.closed)
		for _, p := range f.All() {
			select {
			case <-p.exited:
				continue
			default:
			}
			_ = p.signal("SIGCONT", thaw)
			if p.kill() == nil {
				p.WaitExit(killWait)
			}
		}
	})
}
