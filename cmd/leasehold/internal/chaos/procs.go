package chaos

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/fleet"
)

// slot is one of the K workers: its current process, and how many it has
// had (a killed or crashed worker is restarted in its slot). The harness
// loop owns it.
type slot struct {
	n, gen int
	p      *fleet.Proc
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

// spawn starts the next process of slot s: w<slot>.<generation>.
func (h *harness) spawn(s *slot) error {
	name := fmt.Sprintf("w%d.%d", s.n, s.gen+1)
	owner := fmt.Sprintf("chaos-%s-%s", h.run, name)
	db, argv := h.ns.workerURL(owner), append([]string{h.o.Executable}, h.workerArgs(owner)...)
	if h.net != nil && s.n <= h.o.NetWorkers {
		db = h.proxiedURL(owner)
		if h.hosts != nil { // in the worker host, which reaches the server only through the proxy
			argv = h.hosts.workers.Argv(argv[0], argv[1:]...)
		}
	}
	p, err := h.fleet.Start(fleet.Spec{
		Name: name, Owner: owner, Executable: argv[0], Args: argv[1:],
		DB: db, OnLine: func(line []byte) { h.read(owner, line) },
	})
	if err != nil {
		return fmt.Errorf("chaos: %w", err)
	}
	s.p, s.gen = p, s.gen+1
	return nil
}

// read handles what a worker reports besides the counters the fleet
// keeps: its database calls, refused completions and renewed leases.
func (h *harness) read(owner string, line []byte) {
	var m message
	if json.Unmarshal(line, &m) != nil {
		return // the fleet noted it in the worker's log
	}
	switch m.Type {
	case fleet.TypeReport, fleet.TypeFinal:
		if m.Calls != nil {
			h.facts.setCalls(owner, *m.Calls)
		}
	case msgRefused:
		h.facts.addRefusal(refusal{Job: m.Job, Attempt: m.Attempt, Owner: owner})
	case msgRenewed:
		h.facts.addRenewal(m.AtLeast, m.Leases)
	}
}

// calls returns the database call counters p reported last.
func (h *harness) calls(p *fleet.Proc) CallStats { return h.facts.calls(p.Owner()) }

// slotOf returns the slot whose current process is p, or nil.
func (h *harness) slotOf(p *fleet.Proc) *slot {
	for _, s := range h.slots {
		if s.p == p {
			return s
		}
	}
	return nil
}

// current returns the slots' processes that run and are not frozen.
func (h *harness) current() []*fleet.Proc {
	var ps []*fleet.Proc
	for _, s := range h.slots {
		if s.p.Alive() && !s.p.Frozen() {
			ps = append(ps, s.p)
		}
	}
	return ps
}

func (h *harness) procNames() string {
	names := make([]string, len(h.slots))
	for i, s := range h.slots {
		names[i] = fmt.Sprintf("%s pid %d", s.p.Name(), s.p.Pid())
	}
	return strings.Join(names, ", ")
}
