package fleet

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/view"
)

// Spec describes a worker process to start.
type Spec struct {
	// Name is the worker's short name in messages (w1, w2.3).
	Name string
	// Owner is the lease owner the worker runs as: the name the database,
	// the provider and the trap know it by.
	Owner      string
	Executable string
	Args       []string
	// DB is the database location. It is passed in the environment
	// ($LEASEHOLD_DATABASE_URL), not on the command line where other users
	// could read it.
	DB string
	// OnLine, when set, receives every JSON line of the worker's standard
	// output (after the fleet has taken its Report from it), from the
	// goroutine that reads them: the tool's own messages.
	OnLine func(line []byte)
}

// Proc is one worker process. Its methods are safe for concurrent use.
type Proc struct {
	spec  Spec
	cmd   *exec.Cmd
	stdin io.WriteCloser
	log   tailBuffer // the end of its standard error

	killed, stopping, frozen atomic.Bool

	mu       sync.Mutex
	stats    view.StatsView // latest report
	reported bool
	final    bool

	exited chan struct{} // closed once the process has exited
	err    error         // its exit status, once exited
}

// newProc prepares the command of s; start starts it.
func newProc(s Spec) *Proc {
	cmd := exec.Command(s.Executable, s.Args...)
	cmd.Env = append(os.Environ(), cli.EnvDatabaseURL+"="+s.DB)
	p := &Proc{spec: s, cmd: cmd, exited: make(chan struct{})}
	cmd.Stderr = &p.log
	return p
}

// start starts the process; a goroutine reads its output until it
// closes, waits for the exit and calls onExit.
func (p *Proc) start(onExit func(*Proc)) error {
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return p.startErr(err)
	}
	// The worker's standard input stays open while the process runs: a
	// worker that stops at its end (`leasehold work --stop-on-stdin-eof`)
	// stops when Stop closes it, or when this process dies.
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return p.startErr(err)
	}
	if err := p.cmd.Start(); err != nil {
		return p.startErr(err)
	}
	go func() {
		p.read(stdout)
		p.err = p.cmd.Wait()
		close(p.exited)
		onExit(p)
	}()
	return nil
}

func (p *Proc) startErr(err error) error {
	return fmt.Errorf("start worker %s (%s): %w", p.spec.Name, p.spec.Executable, err)
}

// maxLine bounds one line of a worker's output.
const maxLine = 16 << 20

// read handles the worker's output lines until it closes: a Report
// updates the counters, and every line goes to OnLine. A line that is not
// JSON is noted in the log.
func (p *Proc) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		var r Report
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			p.note("unreadable worker output: " + sc.Text())
			continue
		}
		if (r.Type == TypeReport || r.Type == TypeFinal) && r.Stats != nil {
			p.mu.Lock()
			p.stats, p.reported, p.final = *r.Stats, true, r.Type == TypeFinal
			p.mu.Unlock()
		}
		if p.spec.OnLine != nil {
			p.spec.OnLine(sc.Bytes())
		}
	}
	if err := sc.Err(); err != nil {
		p.note(fmt.Sprintf("worker output unread from here on: %v", err))
		_, _ = io.Copy(io.Discard, stdout) // the worker must not block on a full pipe
	}
}

// note adds a line of the fleet's own to the worker's log.
func (p *Proc) note(line string) { _, _ = p.log.Write([]byte("fleet: " + line + "\n")) }

// Name returns the worker's short name.
func (p *Proc) Name() string { return p.spec.Name }

// Owner returns the lease owner the worker runs as.
func (p *Proc) Owner() string { return p.spec.Owner }

// Pid returns the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Stats returns the latest counters the worker reported, and whether it
// reported any.
func (p *Proc) Stats() (view.StatsView, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats, p.reported
}

// FinalStats returns the counters the worker reported as it stopped, and
// whether it did (a killed worker never does).
func (p *Proc) FinalStats() (view.StatsView, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats, p.final
}

// LogTail returns the last n lines of the worker's standard error, on one
// line.
func (p *Proc) LogTail(n int) string { return p.log.Tail(n) }

// Exited is closed once the process has exited.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Err returns the exit status; valid once Exited is closed.
func (p *Proc) Err() error { return p.err }

// Alive reports whether the process runs and was not killed.
func (p *Proc) Alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return !p.killed.Load()
	}
}

// Killed reports whether the fleet killed the process (or is about to).
func (p *Proc) Killed() bool { return p.killed.Load() }

// Frozen reports whether the process is frozen.
func (p *Proc) Frozen() bool { return p.frozen.Load() }

// ExitExpected reports whether the process was killed or asked to stop:
// any other exit is a crash.
func (p *Proc) ExitExpected() bool { return p.killed.Load() || p.stopping.Load() }

// WaitExit waits up to d for the process to exit and reports whether it
// did.
func (p *Proc) WaitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// signal sends sig with send; a process that has exited is not an error.
func (p *Proc) signal(name string, send func(*os.Process) error) error {
	if err := send(p.cmd.Process); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%s %s (pid %d): %w", name, p.spec.Name, p.Pid(), err)
	}
	return nil
}

// kill SIGKILLs the process.
func (p *Proc) kill() error {
	p.killed.Store(true)
	return p.signal("SIGKILL", (*os.Process).Kill)
}

// stop asks the process to stop gracefully, as a deploy would: it thaws
// it if frozen, closes its standard input and sends SIGTERM (where there
// is one), then waits up to wait and kills it if it has not exited.
func (p *Proc) stop(wait time.Duration) {
	p.stopping.Store(true)
	if p.frozen.Swap(false) {
		_ = p.signal("SIGCONT", thaw)
	}
	_ = p.stdin.Close()
	_ = p.signal("SIGTERM", terminate)
	if !p.WaitExit(wait) {
		_ = p.kill()
		<-p.exited
	}
}
