package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/workerproc"
)

// proc is one worker process. Its fields without a lock belong to the
// harness loop.
type proc struct {
	*workerproc.Proc
	slot   int    // 1..K: w1, w2...
	gen    int    // 1 for the first process of the slot, +1 per restart
	owner  string // its lease owner
	stderr tailBuffer

	frozen, stopping bool

	mu     sync.Mutex
	stats  leasehold.Stats // latest report
	calls  CallStats
	final  bool // stats are the final report
	report bool // a report arrived
}

func (p *proc) name() string { return fmt.Sprintf("w%d.%d", p.slot, p.gen) }

// latest returns the latest counters the worker reported.
func (p *proc) latest() (leasehold.Stats, CallStats, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats, p.calls, p.report
}

// workerArgs are the flags of a worker process.
func (h *harness) workerArgs(owner string) []string {
	o := h.o
	return []string{
		"chaos", "worker", "--owner", owner, "--concurrency", strconv.Itoa(o.Concurrency),
		"--ttl", o.TTL.String(), "--watcher-interval", o.WatcherInterval.String(),
		"--poll-interval", o.PollInterval.String(), "--provider", h.provider.URL(),
		"--shutdown-timeout", (o.StallFor + o.TTL).String(),
	}
}

// spawn starts a worker process in slot.
func (h *harness) spawn(slot, gen int) (*proc, error) {
	p := &proc{slot: slot, gen: gen}
	p.owner = fmt.Sprintf("chaos-%s-%s", h.run, p.name())
	p.Proc = workerproc.New(h.o.Executable, h.ns.workerURL(p.owner), h.workerArgs(p.owner)...)
	p.Cmd.Stderr = &p.stderr
	stdout, err := p.Cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("chaos: worker %s: %w", p.name(), err)
	}
	drain := func() { h.read(p, bufio.NewScanner(stdout)) }
	if err := p.Start(drain, func() { h.exits <- p }); err != nil {
		return nil, fmt.Errorf("chaos: start worker %s (%s): %w", p.name(), h.o.Executable, err)
	}
	h.all = append(h.all, p)
	return p, nil
}

// read handles a worker's messages until its output closes.
func (h *harness) read(p *proc, sc *bufio.Scanner) {
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var m message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			_, _ = p.stderr.Write([]byte("chaos: unreadable worker output: " + sc.Text() + "\n"))
			continue
		}
		switch m.Type {
		case msgReport, msgFinal:
			if m.Stats == nil || m.Calls == nil {
				continue
			}
			p.mu.Lock()
			p.stats, p.calls, p.report, p.final = *m.Stats, *m.Calls, true, m.Type == msgFinal
			p.mu.Unlock()
		case msgRefused:
			h.facts.addRefusal(refusal{Job: m.Job, Attempt: m.Attempt, Owner: p.owner})
		case msgRenewed:
			h.facts.addRenewal(m.AtLeast, m.Leases)
		}
	}
}

// signal sends sig to the process; a process that exited is not an error.
func (p *proc) signal(sig syscall.Signal) error {
	if err := p.Cmd.Process.Signal(sig); err != nil && !strings.Contains(err.Error(), "process already finished") {
		return fmt.Errorf("chaos: signal %s to %s: %w", sig, p.name(), err)
	}
	return nil
}

// tailBuffer keeps the last tailBytes of a worker's log.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 16 << 10

// Write implements io.Writer.
func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*tailBytes {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-tailBytes:]...)
	}
	return len(p), nil
}

// Tail returns the last lines of the log on one line.
func (b *tailBuffer) Tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(b.buf)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
