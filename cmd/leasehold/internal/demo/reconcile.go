package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/fleet"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/payments"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/work"
)

// The reconciliation story (`leasehold demo reconcile`): the payment queue
// is under the reconcile policy; the story SIGKILLs workers right after
// the provider recorded their charge, and the provider "loses the
// webhook" of every lostWebhookEvery-th payment (it records the charge and
// answers 202, the result never comes). Both leave payments charged at
// the provider while the system shows them pending. The watcher sends the
// killed workers' jobs to reconciling, and their reconcile jobs heal them;
// a scan the workers run as a periodic job (leasehold.demo.scan, every
// scanEvery) finds the payments pending too long and inserts one heal job
// per payment. Every heal asks the provider by idempotency key
// and records the charge in one transaction with its fenced completion.

// lostWebhookEvery: the payments numbered k*lostWebhookEvery lose their
// webhook.
const lostWebhookEvery = 6

// scanEvery is the period of the workers' scan for payments pending too
// long: a periodic job they share, one scan job per slot whichever worker
// inserts it; its heal jobs are unique per payment while unfinished.
const scanEvery = time.Second

// reconcileStory is what the reconciliation story follows.
type reconcileStory struct {
	queue        string // the reconcile jobs' queue
	pendingAfter time.Duration
	lastHeal     int64 // the last heal job told
	killed       []*fleet.Proc
	done         bool
}

// RunReconcile runs the reconciliation story and returns its summary;
// ReconcileSummary.OK says whether every payment ended charged once and
// recorded once, every charge the system could not know of healed.
func RunReconcile(ctx context.Context, o Options) (*ReconcileSummary, error) {
	ctx, cancel := context.WithTimeout(ctx, o.withDefaults().Timeout)
	defer cancel()
	d, err := newDemo(o)
	if err != nil {
		return nil, err
	}
	d.rec = &reconcileStory{queue: d.queue + "-reconcile", pendingAfter: 2 * d.o.TTL}
	defer d.teardown()
	if err := d.setupReconcile(ctx); err != nil {
		return nil, err
	}
	if err := d.play(ctx, d.reconcileScript()); err != nil {
		return nil, err
	}
	d.scr.EndStatus()
	d.scr.Event("every payment is recorded and nothing is left to reconcile; stopping the workers")
	d.stopWorkers()
	d.forgetScan(context.WithoutCancel(ctx))
	return d.summarizeReconcile(context.WithoutCancel(ctx))
}

// forgetScan deletes the record of the workers' periodic scan, which no
// process runs any more (its jobs stay).
func (d *demo) forgetScan(ctx context.Context) {
	if _, err := d.client.ForgetPeriodic(ctx, work.ScanName(d.rec.queue)); err != nil {
		d.scr.Event("could not forget the periodic scan: %v", err)
	}
}

// setupReconcile prepares the database, enqueues the payments and starts
// the provider, which loses some webhooks.
func (d *demo) setupReconcile(ctx context.Context) error {
	o := d.o
	d.scr.Line("leasehold demo reconcile: %d payments, %d worker processes, lease TTL %s; queue under the reconcile policy",
		o.Payments, o.Workers, cli.FormatDuration(o.TTL))
	if err := d.openDB(ctx); err != nil {
		return err
	}
	if err := d.enqueue(ctx); err != nil {
		return err
	}
	p, err := payments.StartProvider(payments.ProviderConfig{
		MinLatency: 200 * time.Millisecond, MaxLatency: 600 * time.Millisecond,
		Stall: d.stallUnlessLost, StallFor: o.StallFor, LoseWebhook: d.losesWebhook, Seed: rand.Uint64(),
	})
	if err != nil {
		return err
	}
	d.provider = p
	d.scr.Line("  provider  %s, an in-process stand-in: one charge per idempotency key; it loses the webhook of every %s payment",
		p.URL(), ordinal(lostWebhookEvery))
	d.scr.Line("  queues    %s: %d payment jobs (Reconcile into %s); the workers' periodic %s, every %s, heals payments pending longer than %s",
		d.queue, o.Payments, d.rec.queue, payments.ScanKind, cli.FormatDuration(scanEvery), cli.FormatDuration(d.rec.pendingAfter))
	d.scr.Line("")
	return nil
}

// ordinal names the n-th.
func ordinal(n int) string {
	switch n {
	case 1:
		return "1st"
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return strconv.Itoa(n) + "th"
}

// losesWebhook reports whether the provider loses the webhook of req's
// payment: every lostWebhookEvery-th.
func (d *demo) losesWebhook(req payments.ChargeRequest) bool {
	n, err := strconv.Atoi(strings.TrimPrefix(req.PaymentID, d.paymentPrefix()))
	return err == nil && n%lostWebhookEvery == 0
}

// stallUnlessLost is the provider's stall hook: the trap's, except for
// the charges whose webhook is lost (the story kills no worker on them).
func (d *demo) stallUnlessLost(req payments.ChargeRequest) bool {
	return !d.losesWebhook(req) && d.trap.Stall(req)
}

// reconcileScript is the reconciliation story, step by step.
func (d *demo) reconcileScript() []step {
	s := []step{{name: "start the workers", do: d.startReconcileWorkers}}
	for range d.kills() {
		s = append(s,
			step{name: "wait for a charge to stall", until: d.stallCaught},
			step{name: "kill the worker right after its charge", do: d.killAfterCharge},
		)
	}
	return append(s, step{name: "let every payment be recorded", until: func() bool { return d.rec.done }})
}

// kills is how many workers the story kills: two, leaving at least two.
func (d *demo) kills() []int { return make([]int, min(2, d.o.Workers-2)) }

// startReconcileWorkers arms the trap for the kills and starts the
// workers.
func (d *demo) startReconcileWorkers(ctx context.Context) error {
	d.trap.ArmAfter(d.warmUp(), len(d.kills()))
	return d.startFleet(ctx, fmt.Sprintf(" --reconcile-into %s --scan-every %s --scan-pending-after %s",
		d.rec.queue, scanEvery, d.rec.pendingAfter))
}

// killAfterCharge SIGKILLs the worker whose charge the provider recorded
// and stalled: it dies before it can record the charge or complete the
// job.
func (d *demo) killAfterCharge(ctx context.Context) error {
	c := d.takeCaught("kill")
	if c == nil {
		return nil
	}
	p := c.p
	if err := d.fleet.Kill(p); err != nil {
		d.scr.Event("could not kill %s: %v", p.Name(), err)
		return nil
	}
	d.rec.killed = append(d.rec.killed, p)
	d.story.killed = p
	held := d.track(ctx, p)
	d.scr.Event("provider: charged %s for job %d; SIGKILL %s (pid %d) before it records it: the provider says charged, the system says pending (%s held: jobs %s)",
		c.req.PaymentID, c.req.JobID, p.Name(), p.Pid(), p.Name(), idList(held))
	return nil
}

// reconcileTick redraws the progress, tells the leases that moved on and
// the heal jobs the scans inserted, and notes whether the story is over.
func (d *demo) reconcileTick(ctx context.Context) error {
	counts, err := d.paymentCounts(ctx)
	if err != nil {
		d.scr.EndStatus()
		return err
	}
	recorded, err := d.ledger.Recorded(ctx, d.paymentPrefix())
	if err != nil {
		d.scr.EndStatus()
		return err
	}
	rec, err := d.openReconcileJobs(ctx)
	if err != nil {
		d.scr.EndStatus()
		return err
	}
	pay := counts.states
	d.scr.Status("pending %d, processing %d, reconciling %d, completed %d/%d; recorded %d/%d; reconcile jobs %d open",
		pay[leasehold.StatePending], pay[leasehold.StateProcessing], pay[leasehold.StateReconciling],
		pay[leasehold.StateCompleted], d.o.Payments, len(recorded), d.o.Payments, rec)
	d.followLeases(ctx)
	if err := d.tellHeals(ctx); err != nil {
		d.scr.EndStatus()
		return err
	}
	d.rec.done = len(recorded) >= d.o.Payments && open(pay) == 0 && rec == 0
	return nil
}

// open counts the unfinished jobs of n.
func open(n map[leasehold.JobState]int64) int64 {
	return n[leasehold.StatePending] + n[leasehold.StateProcessing] + n[leasehold.StateReconciling] + n[leasehold.StateStuck]
}

// tellHeals tells the heal jobs the workers' scans inserted since the
// last tick.
func (d *demo) tellHeals(ctx context.Context) error {
	jobs, err := d.client.ListJobs(ctx, &leasehold.ListParams{
		Queue: d.rec.queue, Kind: payments.HealKind, AfterID: d.rec.lastHeal, Limit: 10000,
	})
	if err != nil {
		return fmt.Errorf("list heal jobs: %w", err)
	}
	var told []string
	for _, j := range jobs {
		d.rec.lastHeal = j.ID
		var a payments.HealArgs
		if json.Unmarshal(j.Args, &a) == nil {
			told = append(told, fmt.Sprintf("%s: job %d", a.PaymentID, j.ID))
		}
	}
	if len(told) > 0 {
		d.scr.Event("scan: %s pending for more than %s (no ledger row, no webhook): one heal job each (%s)",
			plural(len(told), "payment"), cli.FormatDuration(d.rec.pendingAfter), strings.Join(told, ", "))
	}
	return nil
}

// openReconcileJobs counts the unfinished jobs of the reconcile queue but
// the scans: the reconcile and heal jobs left.
func (d *demo) openReconcileJobs(ctx context.Context) (int64, error) {
	jobs, err := d.client.ListJobs(ctx, &leasehold.ListParams{Queue: d.rec.queue, States: []leasehold.JobState{
		leasehold.StatePending, leasehold.StateProcessing, leasehold.StateReconciling, leasehold.StateStuck,
	}, Limit: 10000})
	if err != nil {
		return 0, fmt.Errorf("list reconcile jobs: %w", err)
	}
	var n int64
	for _, j := range jobs {
		if j.Kind != payments.ScanKind {
			n++
		}
	}
	return n, nil
}
