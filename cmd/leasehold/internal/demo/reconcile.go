package demo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/fleet"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/payments"
)

// The reconciliation story (`leasehold demo reconcile`): the payment queue
// is under the reconcile policy; the story SIGKILLs workers right after
// the provider recorded their charge, and the provider "loses the
// webhook" of every lostWebhookEvery-th payment (it records the charge and
// answers 202, the result never comes). Both leave payments charged at
// the provider while the system shows them pending. The watcher sends the
// killed workers' jobs to reconciling, and their reconcile jobs heal them;
// a scan in the demo finds the payments pending too long and inserts one
// heal job per payment. Every heal asks the provider by idempotency key
// and records the charge in one transaction with its fenced completion.

// lostWebhookEvery: the payments numbered k*lostWebhookEvery lose their
// webhook.
const lostWebhookEvery = 6

// scanEvery is the period of the demo's scan for payments pending too
// long. It is a plain ticker of the demo; the scan's heal jobs carry a
// unique key per payment, so a scan that runs twice inserts each once.
const scanEvery = time.Second

// reconcileStory is what the reconciliation story follows.
type reconcileStory struct {
	queue        string // the reconcile jobs' queue
	pendingAfter time.Duration
	lastScan     time.Time
	killed       []*fleet.Proc
	healJobs     int // heal jobs the scan inserted
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
	return d.summarizeReconcile(context.WithoutCancel(ctx))
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
	d.scr.Line("  queues    %s: %d payment jobs (Reconcile into %s); a scan every %s heals payments pending longer than %s",
		d.queue, o.Payments, d.rec.queue, cli.FormatDuration(scanEvery), cli.FormatDuration(d.rec.pendingAfter))
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
	return d.startFleet(ctx, " --reconcile-into "+d.rec.queue)
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

// reconcileTick redraws the progress, tells the leases that moved on,
// scans for payments pending too long, and notes whether the story is
// over.
func (d *demo) reconcileTick(ctx context.Context) error {
	counts, err := d.queueCounts(ctx)
	if err != nil {
		return err
	}
	recorded, err := d.ledger.Recorded(ctx, d.paymentPrefix())
	if err != nil {
		d.scr.EndStatus()
		return err
	}
	pay, rec := counts[d.queue], counts[d.rec.queue]
	d.scr.Status("pending %d, processing %d, reconciling %d, completed %d/%d; recorded %d/%d; reconcile jobs %d open",
		pay[leasehold.StatePending], pay[leasehold.StateProcessing], pay[leasehold.StateReconciling],
		pay[leasehold.StateCompleted], d.o.Payments, len(recorded), d.o.Payments, open(rec))
	d.followLeases(ctx)
	if time.Since(d.rec.lastScan) >= scanEvery {
		d.rec.lastScan = time.Now()
		if err := d.scan(ctx, recorded); err != nil {
			d.scr.EndStatus()
			return err
		}
	}
	d.rec.done = len(recorded) >= d.o.Payments && open(pay) == 0 && open(rec) == 0
	return nil
}

// open counts the unfinished jobs of n.
func open(n map[leasehold.JobState]int64) int64 {
	return n[leasehold.StatePending] + n[leasehold.StateProcessing] + n[leasehold.StateReconciling] + n[leasehold.StateStuck]
}

// queueCounts returns the job counts of every queue.
func (d *demo) queueCounts(ctx context.Context) (map[string]map[leasehold.JobState]int64, error) {
	qs, err := d.client.QueueStats(ctx)
	if err != nil {
		d.scr.EndStatus()
		return nil, fmt.Errorf("queue stats: %w", err)
	}
	out := map[string]map[leasehold.JobState]int64{}
	for _, q := range qs {
		out[q.Queue] = q.Counts
	}
	return out, nil
}

// scan inserts a heal job for each payment whose charge job completed
// longer than pendingAfter ago without recording it (its webhook lost):
// the system shows it pending. The unique key makes a payment's heal job
// one, however many scans find it.
func (d *demo) scan(ctx context.Context, recorded map[string]bool) error {
	jobs, err := d.client.ListJobs(ctx, &leasehold.ListParams{
		Queue: d.queue, Kind: payments.Kind, States: []leasehold.JobState{leasehold.StateCompleted}, Limit: 10000,
	})
	if err != nil {
		return fmt.Errorf("scan: %w", err)
	}
	now, err := d.db.Driver.Now(ctx)
	if err != nil {
		return fmt.Errorf("scan: %w", err)
	}
	var heals []leasehold.InsertManyParams
	var names []string
	for _, j := range jobs {
		args, ok := chargeArgs(j)
		if !ok || recorded[args.PaymentID] || now.Sub(j.FinishedAt) < d.rec.pendingAfter {
			continue
		}
		heals = append(heals, leasehold.InsertManyParams{
			Args: payments.HealArgs{PaymentID: args.PaymentID, IdempotencyKey: j.IdempotencyKey(), JobID: j.ID,
				AmountCents: args.AmountCents, Currency: args.Currency},
			Opts: &leasehold.InsertOpts{Queue: d.rec.queue, UniqueKey: payments.HealUniqueKey(args.PaymentID), MaxAttempts: 20},
		})
		names = append(names, args.PaymentID)
	}
	if len(heals) == 0 {
		return nil
	}
	res, err := d.client.InsertMany(ctx, nil, heals)
	if err != nil {
		return fmt.Errorf("scan: insert heal jobs: %w", err)
	}
	var fresh []string
	for i, r := range res {
		if !r.Duplicate {
			fresh = append(fresh, names[i])
		}
	}
	if len(fresh) > 0 {
		d.rec.healJobs += len(fresh)
		d.scr.Event("scan: %s pending for more than %s (no ledger row, no webhook): one heal job each (%s)",
			plural(len(fresh), "payment"), cli.FormatDuration(d.rec.pendingAfter), strings.Join(fresh, ", "))
	}
	return nil
}
