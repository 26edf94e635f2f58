package demo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/workerproc"
	"github.com/leasehold/leasehold/view"
)

// stopWait is how long a worker may take to stop after its stdin closes.
const stopWait = 20 * time.Second

// proc is one worker subprocess (`leasehold work`).
type proc struct {
	*workerproc.Proc
	name   string // w1, w2...
	owner  string // its lease owner
	stdin  io.WriteCloser
	stdout syncBuffer
	stderr syncBuffer

	frozen bool // set by the story (demo goroutine only)
}

// exitEvent reports a worker process that exited.
type exitEvent struct{ p *proc }

// workerArgs are the flags of a demo worker.
func (d *demo) workerArgs(p *proc) []string {
	return []string{
		"work", "--json", "--log-level", "warn", "--stop-on-stdin-eof",
		"--queue", d.queue, "--owner", p.owner,
		"--concurrency", strconv.Itoa(d.o.Concurrency),
		"--ttl", d.o.TTL.String(), "--watcher-interval", d.o.WatcherInterval.String(),
		"--poll-interval", "100ms", "--shutdown-timeout", "5s",
		"--provider", d.provider.URL(),
	}
}

// spawn starts worker i.
func (d *demo) spawn(i int) (*proc, error) {
	p := &proc{name: fmt.Sprintf("w%d", i), owner: fmt.Sprintf("demo-%s-w%d", d.run, i)}
	p.Proc = workerproc.New(d.o.Executable, d.workerDB(), d.workerArgs(p)...)
	p.Cmd.Stdout, p.Cmd.Stderr = &p.stdout, &p.stderr
	stdin, err := p.Cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("worker %s: %w", p.name, err)
	}
	p.stdin = stdin
	if err := p.Start(nil, func() { d.exits <- exitEvent{p} }); err != nil {
		return nil, fmt.Errorf("start worker %s (%s): %w", p.name, d.o.Executable, err)
	}
	return p, nil
}

// workerDB is the database location handed to workers.
func (d *demo) workerDB() string {
	if d.db.Target.Dialect == cli.Postgres {
		return d.db.Target.URL
	}
	return "sqlite:" + d.db.Target.Path
}

// stop asks the worker to stop gracefully (closing its stdin), waits, and
// kills it if it does not exit in time.
func (p *proc) stop() {
	if p.frozen {
		_ = thaw(p.Cmd.Process)
		p.frozen = false
	}
	_ = p.stdin.Close()
	if !p.WaitExit(stopWait) {
		p.Kill()
	}
}

// stats parses the counters the worker printed when it stopped.
func (p *proc) stats() (view.StatsView, error) {
	var s view.StatsView
	if err := json.Unmarshal(p.stdout.Bytes(), &s); err != nil {
		return s, fmt.Errorf("worker %s printed no stats (%v): %s", p.name, err, p.stderrTail())
	}
	return s, nil
}

// stderrTail is the end of the worker's log, on one line.
func (p *proc) stderrTail() string {
	lines := strings.Split(strings.TrimSpace(p.stderr.String()), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, " | ")
}

// syncBuffer is a bytes.Buffer safe for the writer goroutine of os/exec
// and a reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Bytes returns a copy of the contents.
func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// String returns the contents.
func (b *syncBuffer) String() string { return string(b.Bytes()) }
