package demo

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/payments"
)

// story is what the demo did to its workers, and the leases it follows.
type story struct {
	killed   *proc
	frozen   *proc
	frozenAt time.Time
	tracked  map[int64]trackedLease
}

// trackedLease is a lease of a killed or frozen worker, followed until the
// job moves on.
type trackedLease struct {
	p       *proc
	attempt int
}

// onStall reacts to a charge the provider stalls: the first stalled worker
// is killed, the second frozen; the others ride it out on heartbeats.
func (d *demo) onStall(ctx context.Context, req payments.ChargeRequest) {
	p := d.procByOwner(req.Owner)
	if p == nil || !p.Alive() || p.frozen {
		return
	}
	stall := cli.FormatDuration(d.o.StallFor)
	warm := d.provider.Stats().Requests > d.warmUp()
	switch {
	case d.story.killed == nil && warm:
		d.scr.Event("provider: %s's charge for job %d stalls %s, longer than its %s lease", p.name, req.JobID, stall, cli.FormatDuration(d.o.TTL))
		d.kill(ctx, p, req)
	case d.story.frozen == nil && canFreeze && warm:
		d.scr.Event("provider: %s's charge for job %d stalls %s", p.name, req.JobID, stall)
		d.freeze(ctx, p, req)
	default:
		d.scr.Event("provider: %s's charge for job %d stalls %s; %s keeps heartbeating, so its lease holds", p.name, req.JobID, stall, p.name)
	}
}

func (d *demo) kill(ctx context.Context, p *proc, req payments.ChargeRequest) {
	if err := p.Cmd.Process.Kill(); err != nil {
		d.scr.Event("could not kill %s: %v", p.name, err)
		return
	}
	p.Killed = true
	d.story.killed = p
	held := d.track(ctx, p)
	d.scr.Event("SIGKILL %s (pid %d) in the middle of job %d; it held %s (jobs %s) that come back once they expire",
		p.name, p.Pid(), req.JobID, plural(len(held), "lease"), idList(held))
}

func (d *demo) freeze(ctx context.Context, p *proc, req payments.ChargeRequest) {
	if err := freeze(p.Cmd.Process); err != nil {
		d.scr.Event("could not freeze %s: %v", p.name, err)
		return
	}
	p.frozen = true
	d.story.frozen, d.story.frozenAt = p, time.Now()
	held := d.track(ctx, p)
	d.scr.Event("SIGSTOP %s (pid %d) in the middle of job %d: frozen, it stops heartbeating its %s (jobs %s)",
		p.name, p.Pid(), req.JobID, plural(len(held), "lease"), idList(held))
}

// track follows the leases p holds now and returns their job ids.
func (d *demo) track(ctx context.Context, p *proc) []int64 {
	jobs, err := d.client.ListJobs(ctx, &leasehold.ListParams{
		Queue: d.queue, Owner: p.owner, States: []leasehold.JobState{leasehold.StateProcessing},
	})
	if err != nil {
		d.scr.Event("list the leases of %s: %v", p.name, err)
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

// followLeases reports the tracked leases that moved on.
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
		if info.State == leasehold.StateProcessing && info.LeaseOwner == t.p.owner && info.Attempt == t.attempt {
			continue
		}
		delete(d.story.tracked, id)
		d.scr.Event("job %d is back: %s", id, d.describeMove(info, t))
	}
}

// describeMove says what became of a tracked lease.
func (d *demo) describeMove(info *leasehold.JobInfo, t trackedLease) string {
	ended := "ended"
	for _, a := range info.Attempts {
		if a.Attempt == t.attempt && a.Outcome != leasehold.OutcomeRunning {
			ended = string(a.Outcome)
		}
	}
	s := fmt.Sprintf("%s's attempt %d ended %s", t.p.name, t.attempt, ended)
	switch info.State {
	case leasehold.StateProcessing:
		return s + fmt.Sprintf("; attempt %d is leased by %s", info.Attempt, d.nameOf(info.LeaseOwner))
	case leasehold.StatePending:
		return s + "; the stuck watcher put it back in the queue"
	default:
		return s + fmt.Sprintf("; now %s (attempt %d)", info.State, info.Attempt)
	}
}

// maxFreeze bounds a freeze, in case its leases cannot move (another
// process of an SQLite database may be frozen holding the write lock).
func (d *demo) maxFreeze() time.Duration { return 5 * d.o.TTL }

// maybeThaw resumes the frozen worker once its leases have moved on.
func (d *demo) maybeThaw() {
	p := d.story.frozen
	if p == nil || !p.frozen {
		return
	}
	pending := 0
	for _, t := range d.story.tracked {
		if t.p == p {
			pending++
		}
	}
	frozenFor := time.Since(d.story.frozenAt)
	if pending > 0 && frozenFor < d.maxFreeze() {
		return
	}
	if err := thaw(p.Cmd.Process); err != nil {
		d.scr.Event("could not resume %s: %v", p.name, err)
		return
	}
	p.frozen = false
	if pending > 0 {
		d.scr.Event("SIGCONT %s after %s: its leases did not move; it gives them up itself", p.name, cli.FormatDuration(frozenFor))
		return
	}
	d.scr.Event("SIGCONT %s after %s frozen: its leases were taken over, so the fence refuses what it writes for them now",
		p.name, cli.FormatDuration(frozenFor))
}

func (d *demo) procByOwner(owner string) *proc {
	for _, p := range d.procs {
		if p.owner == owner {
			return p
		}
	}
	return nil
}

// nameOf returns the short name of a worker owner.
func (d *demo) nameOf(owner string) string {
	if p := d.procByOwner(owner); p != nil {
		return p.name
	}
	return owner
}

// tick redraws the progress line and moves the story on; it reports
// whether every payment is finished.
func (d *demo) tick(ctx context.Context) (bool, error) {
	qs, err := d.client.QueueStats(ctx)
	if err != nil {
		return false, fmt.Errorf("queue stats: %w", err)
	}
	var s leasehold.QueueStats
	for _, q := range qs {
		if q.Queue == d.queue {
			s = *q
		}
	}
	ps := d.provider.Stats()
	finished := s.Counts[leasehold.StateCompleted] + s.Counts[leasehold.StateFailed] + s.Counts[leasehold.StateCancelled]
	d.scr.Status("pending %d, processing %d (%d expired), completed %d/%d, charges %d",
		s.Counts[leasehold.StatePending], s.Counts[leasehold.StateProcessing], s.ExpiredLeases,
		s.Counts[leasehold.StateCompleted], d.o.Payments, ps.Charges)
	d.followLeases(ctx)
	d.maybeThaw()
	return finished >= int64(d.o.Payments) && d.story.frozen.thawedOrNil(), nil
}

// thawedOrNil reports whether p is not frozen (a nil p is not).
func (p *proc) thawedOrNil() bool { return p == nil || !p.frozen }
