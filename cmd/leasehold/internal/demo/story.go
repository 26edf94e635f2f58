package demo

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/fleet"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/payments"
	"github.com/leasehold/leasehold/view"
)

// reportEvery is how often the demo's workers report their counters.
const reportEvery = 200 * time.Millisecond

// story is what the script did to the workers, and what it follows. The
// demo's loop owns it.
type story struct {
	caught   []payments.ChargeRequest // charges the trap caught, not acted on yet
	next     *caughtCharge            // the charge the next fault acts on
	killed   *fleet.Proc
	frozen   *fleet.Proc // frozen, then thawed
	frozenAt time.Time
	held     map[int64]int  // the frozen worker's leases: job -> attempt
	thawedAt time.Time      // zero until thawed
	before   view.StatsView // the frozen worker's counters before it woke
	tracked  map[int64]trackedLease
	finished bool // every payment is finished
}

// caughtCharge is a charge the trap stalled, and the worker making it.
type caughtCharge struct {
	req payments.ChargeRequest
	p   *fleet.Proc
}

// trackedLease is a lease of a killed or frozen worker, followed until the
// job moves on.
type trackedLease struct {
	p       *fleet.Proc
	attempt int
}

// workerArgs are the flags of a demo worker.
func (d *demo) workerArgs(owner string) []string {
	args := []string{
		"work", "--report-every", reportEvery.String(), "--log-level", "warn", "--stop-on-stdin-eof",
		"--queue", d.queue, "--owner", owner,
		"--concurrency", strconv.Itoa(d.o.Concurrency),
		"--ttl", d.o.TTL.String(), "--watcher-interval", d.o.WatcherInterval.String(),
		"--poll-interval", "100ms", "--shutdown-timeout", "5s",
		"--provider", d.provider.URL(),
	}
	if d.rec != nil {
		args = append(args, "--reconcile-into", d.rec.queue,
			"--scan-every", scanEvery.String(), "--scan-pending-after", d.rec.pendingAfter.String())
	}
	return args
}

// workerDB is the database location handed to workers.
func (d *demo) workerDB() string {
	if d.db.Target.Dialect == cli.Postgres {
		return d.db.Target.URL
	}
	return "sqlite:" + d.db.Target.Path
}

// startWorkers arms the trap for the story's faults, past the warm-up,
// and starts the workers.
func (d *demo) startWorkers(ctx context.Context) error {
	faults := 1
	if fleet.CanFreeze {
		faults = 2
	}
	d.trap.ArmAfter(d.warmUp(), faults)
	return d.startFleet(ctx, "")
}

// startFleet starts the workers; note ends the line told for each.
func (d *demo) startFleet(_ context.Context, note string) error {
	for i := 1; i <= d.o.Workers; i++ {
		name := fmt.Sprintf("w%d", i)
		owner := fmt.Sprintf("demo-%s-%s", d.run, name)
		p, err := d.fleet.Start(fleet.Spec{
			Name: name, Owner: owner, Executable: d.o.Executable, Args: d.workerArgs(owner), DB: d.workerDB(),
		})
		if err != nil {
			return err
		}
		d.scr.Event("started worker %s (pid %d): leasehold work --queue %s --ttl %s%s", p.Name(), p.Pid(), d.queue, d.o.TTL, note)
	}
	return nil
}

// stallCaught reports whether the trap caught the charge of a running
// worker for the next fault, or every payment finished first.
func (d *demo) stallCaught() bool {
	for len(d.story.caught) > 0 {
		req := d.story.caught[0]
		d.story.caught = d.story.caught[1:]
		if p := d.fleet.Running(req.Owner); p != nil {
			d.story.next = &caughtCharge{req: req, p: p}
			return true
		}
		d.trap.Arm(1) // that worker is gone: catch another
	}
	return d.story.finished
}

// takeCaught returns the caught charge for a fault, or nil (telling why)
// when every payment finished first.
func (d *demo) takeCaught(fault string) *caughtCharge {
	c := d.story.next
	d.story.next = nil
	if c == nil {
		d.scr.Event("every payment finished before a charge stalled: nothing to %s", fault)
	}
	return c
}

// killCaught SIGKILLs the worker whose charge was caught.
func (d *demo) killCaught(ctx context.Context) error {
	c := d.takeCaught("kill")
	if c == nil {
		return nil
	}
	p := c.p
	d.scr.Event("provider: %s's charge for job %d stalls %s, longer than its %s lease", p.Name(), c.req.JobID,
		cli.FormatDuration(d.o.StallFor), cli.FormatDuration(d.o.TTL))
	if err := d.fleet.Kill(p); err != nil {
		d.scr.Event("could not kill %s: %v", p.Name(), err)
		return nil
	}
	d.story.killed = p
	held := d.track(ctx, p)
	d.scr.Event("SIGKILL %s (pid %d) in the middle of job %d; it held %s (jobs %s) that come back once they expire",
		p.Name(), p.Pid(), c.req.JobID, plural(len(held), "lease"), idList(held))
	return nil
}

// freezeCaught SIGSTOPs the worker whose charge was caught.
func (d *demo) freezeCaught(ctx context.Context) error {
	c := d.takeCaught("freeze")
	if c == nil {
		return nil
	}
	p := c.p
	d.scr.Event("provider: %s's charge for job %d stalls %s", p.Name(), c.req.JobID, cli.FormatDuration(d.o.StallFor))
	if err := d.fleet.Freeze(p); err != nil {
		d.scr.Event("could not freeze %s: %v", p.Name(), err)
		return nil
	}
	d.story.frozen, d.story.frozenAt = p, time.Now()
	held := d.track(ctx, p)
	d.story.held = map[int64]int{}
	for _, id := range held {
		d.story.held[id] = d.story.tracked[id].attempt
	}
	d.scr.Event("SIGSTOP %s (pid %d) in the middle of job %d: frozen, it stops heartbeating its %s (jobs %s)",
		p.Name(), p.Pid(), c.req.JobID, plural(len(held), "lease"), idList(held))
	return nil
}

// maxFreeze bounds a freeze, in case its leases cannot move (another
// process of an SQLite database may be frozen holding the write lock). The
// other running workers take them over otherwise: the story has at least
// MinWorkers, so one is left besides the killed and the frozen worker.
func (d *demo) maxFreeze() time.Duration { return 5 * d.o.TTL }

// leasesMoved reports whether the frozen worker's leases were taken over
// (or the freeze lasted maxFreeze).
func (d *demo) leasesMoved() bool {
	p := d.story.frozen
	return p == nil || d.pendingOf(p) == 0 || time.Since(d.story.frozenAt) >= d.maxFreeze()
}

// pendingOf counts the tracked leases of p that did not move on yet.
func (d *demo) pendingOf(p *fleet.Proc) int {
	n := 0
	for _, t := range d.story.tracked {
		if t.p == p {
			n++
		}
	}
	return n
}

// thaw resumes the frozen worker.
func (d *demo) thaw(context.Context) error {
	p := d.story.frozen
	if p == nil {
		return nil
	}
	pending := d.pendingOf(p)
	d.story.before, _ = p.Stats() // all it reported before it froze
	if err := d.fleet.Thaw(p); err != nil {
		d.scr.Event("could not resume %s: %v", p.Name(), err)
		return nil
	}
	d.story.thawedAt = time.Now()
	frozenFor := cli.FormatDuration(time.Since(d.story.frozenAt))
	if pending > 0 {
		// Nobody took them over, so its fence still holds: it may finish
		// them on its own lease as well as give them up.
		d.scr.Event("SIGCONT %s after %s: no worker could take its leases over; it may still finish them on its own lease",
			p.Name(), frozenFor)
		return nil
	}
	d.scr.Event("SIGCONT %s after %s frozen: its leases were taken over, so the fence refuses what it writes for them now",
		p.Name(), frozenFor)
	return nil
}

// lateWait bounds the wait for the thawed worker to report what became
// of the leases it lost.
func (d *demo) lateWait() time.Duration { return d.o.TTL + 4*reportEvery }

// lateWritesShown tells, once the thawed worker's counters show it, how
// its late handlers were stopped and its late writes refused; it holds at
// once when nobody was thawed.
func (d *demo) lateWritesShown() bool {
	p := d.story.frozen
	if p == nil || d.story.thawedAt.IsZero() {
		return true
	}
	s, _ := p.Stats()
	lost, refused := s.LeaseLost-d.story.before.LeaseLost, s.FinishRefused-d.story.before.FinishRefused
	if lost+refused < int64(len(d.story.held)) && p.Alive() && time.Since(d.story.thawedAt) < d.lateWait() {
		return false
	}
	var did []string
	if lost > 0 {
		did = append(did, "it stopped "+plural(int(lost), "handler")+" on finding the lease gone or not renewed in time")
	}
	if refused > 0 {
		did = append(did, "the database refused "+plural(int(refused), "late write")+" (fenced: it no longer holds the lease)")
	}
	if len(did) == 0 {
		d.scr.Event("%s woke and has reported no late write so far", p.Name())
		return true
	}
	d.scr.Event("%s woke believing it still held %s; %s", p.Name(), jobList(d.frozenJobs()), strings.Join(did, "; "))
	return true
}

// frozenJobs are the jobs the frozen worker held, in order.
func (d *demo) frozenJobs() []int64 {
	ids := make([]int64, 0, len(d.story.held))
	for id := range d.story.held {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// tellStall tells a stalled charge the trap did not catch.
func (d *demo) tellStall(req payments.ChargeRequest) {
	p := d.fleet.ByOwner(req.Owner)
	if p == nil || !p.Alive() || p.Frozen() {
		return
	}
	stall := cli.FormatDuration(d.o.StallFor)
	if p == d.story.frozen && d.story.held[req.JobID] == req.Attempt {
		d.scr.Event("provider: %s's charge for job %d stalls %s: a late call on the lease %s lost while frozen; the idempotency key keeps it one charge",
			p.Name(), req.JobID, stall, p.Name())
		return
	}
	d.scr.Event("provider: %s's charge for job %d stalls %s; %s keeps heartbeating, so its lease holds", p.Name(), req.JobID, stall, p.Name())
}

// track follows the leases p holds now and returns their job ids.
func (d *demo) track(ctx context.Context, p *fleet.Proc) []int64 {
	jobs, err := d.client.ListJobs(ctx, &leasehold.ListParams{
		Queue: d.queue, Owner: p.Owner(), States: []leasehold.JobState{leasehold.StateProcessing},
	})
	if err != nil {
		d.scr.Event("list the leases of %s: %v", p.Name(), err)
		return nil
	}
	if d.story.tracked == nil {
		d.story.tracked = map[int64]trackedLease{}
	}
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
		d.story.tracked[j.ID] = trackedLease{p: p, attempt: j.Attempt}
	}
	return ids
}

// followLeases tells the tracked leases that moved on.
func (d *demo) followLeases(ctx context.Context) {
	ids := make([]int64, 0, len(d.story.tracked))
	for id := range d.story.tracked {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		t := d.story.tracked[id]
		info, err := d.client.GetJob(ctx, id)
		if err != nil {
			continue
		}
		if info.State == leasehold.StateProcessing && info.LeaseOwner == t.p.Owner() && info.Attempt == t.attempt {
			continue
		}
		delete(d.story.tracked, id)
		d.scr.Event("%s", d.describeMove(info, t.p.Name(), t.attempt))
	}
}

// describeMove says what became of job info's lease, attempt of the
// worker called name: the job is back in the queue or with another owner,
// or that worker finished it on that very lease. A frozen worker whose
// leases nobody took over still holds their fence when it wakes, so its
// completion commits: the job never came back.
func (d *demo) describeMove(info *leasehold.JobInfo, name string, attempt int) string {
	ended, resolution := leasehold.OutcomeRunning, ""
	for _, a := range info.Attempts {
		if a.Attempt == attempt && a.Outcome != leasehold.OutcomeRunning {
			ended, resolution = a.Outcome, a.Resolution
		}
	}
	if ended == leasehold.OutcomeCompleted {
		return fmt.Sprintf("job %d was not taken over: %s finished it on its own lease (attempt %d completed)", info.ID, name, attempt)
	}
	how := "ended " + string(ended)
	if ended == leasehold.OutcomeRunning {
		how = "has no outcome recorded yet"
	}
	s := fmt.Sprintf("job %d is back: %s's attempt %d %s", info.ID, name, attempt, how)
	if resolution != "" {
		return s + "; the watcher sent it to reconciling, and it was " + resolution
	}
	switch info.State {
	case leasehold.StateProcessing:
		return s + fmt.Sprintf("; attempt %d is leased by %s", info.Attempt, d.nameOf(info.LeaseOwner))
	case leasehold.StatePending:
		return s + "; the stuck watcher put it back in the queue"
	default:
		return s + fmt.Sprintf("; now %s (attempt %d)", info.State, info.Attempt)
	}
}

// nameOf returns the short name of a worker owner.
func (d *demo) nameOf(owner string) string {
	if p := d.fleet.ByOwner(owner); p != nil {
		return p.Name()
	}
	return owner
}
