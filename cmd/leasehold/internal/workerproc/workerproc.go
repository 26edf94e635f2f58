// Package workerproc runs the worker subprocesses of the demo and the
// chaos harness (`leasehold work`, `leasehold chaos worker`) and tracks
// their exit.
package workerproc

import (
	"os"
	"os/exec"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

// Proc is one worker subprocess. Its owner sets Killed (from one
// goroutine) when it SIGKILLs the process.
type Proc struct {
	Cmd    *exec.Cmd
	Killed bool
	exited chan struct{} // closed once the process has exited
	err    error         // its exit status, once exited
}

// New prepares a worker: executable with args, and the database location
// in the environment, not on the command line where other users could
// read it. Set up Cmd's output, then Start it.
func New(executable, db string, args ...string) *Proc {
	cmd := exec.Command(executable, args...)
	cmd.Env = append(os.Environ(), cli.EnvDatabaseURL+"="+db)
	return &Proc{Cmd: cmd, exited: make(chan struct{})}
}

// Start starts the process. A goroutine then runs drain, when non-nil
// (reading an output pipe, which must end before the process is waited
// for), waits for the exit, and calls onExit.
func (p *Proc) Start(drain, onExit func()) error {
	if err := p.Cmd.Start(); err != nil {
		return err
	}
	go func() {
		if drain != nil {
			drain()
		}
		p.err = p.Cmd.Wait()
		close(p.exited)
		onExit()
	}()
	return nil
}

// Pid returns the process id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// Exited is closed once the process has exited.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Err returns the exit status; valid once Exited is closed.
func (p *Proc) Err() error { return p.err }

// Alive reports whether the process runs and was not killed by its owner.
func (p *Proc) Alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return !p.Killed
	}
}

// WaitExit waits up to d for the process to exit and reports whether it
// did.
func (p *Proc) WaitExit(d time.Duration) bool {
	select {
	case <-p.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// Kill kills the process and waits for its exit.
func (p *Proc) Kill() {
	_ = p.Cmd.Process.Kill()
	<-p.exited
}
