package payments

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
)

// TestScan: a payment whose charge job completed without a ledger row
// (its webhook lost) gets one heal job from a scan once it has been
// pending longer than the threshold, none from the scans that follow
// while that heal job is unfinished (three of them at once included), and
// a new one once it has finished and the payment is still pending. A
// recorded payment gets none; a heal job whose payment was recorded
// meanwhile cancels itself. On both databases.
func TestScan(t *testing.T) {
	for name, open := range openTestDB {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := open(t)
			ctx := context.Background()
			if err := db.ledger.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			_, pc := newTestProvider(t, ProviderConfig{LoseWebhook: func(r ChargeRequest) bool { return r.PaymentID == "lost" }})
			scans := newScanClient(t, db, pc)
			lost := insertJob(t, scans, ChargeArgs{PaymentID: "lost", AmountCents: 100}, "pay")
			insertJob(t, scans, ChargeArgs{PaymentID: "recorded", AmountCents: 200}, "pay")
			waitState(t, scans, leasehold.StateCompleted, lost)

			scan(t, scans, "1h")
			if h := healJobs(t, scans); len(h) != 0 {
				t.Fatalf("a scan with a 1h threshold inserted %d heal jobs, want none", len(h))
			}
			scan(t, scans, "1ms")
			h := healJobs(t, scans)
			if len(h) != 1 {
				t.Fatalf("the scan inserted %d heal jobs, want 1 (for payment lost)", len(h))
			}
			args := decodeHeal(t, h[0])
			if args.PaymentID != "lost" || args.JobID != lost || args.IdempotencyKey == "" || args.AmountCents != 100 {
				t.Errorf("heal job args = %+v, want payment lost of job %d with its idempotency key", args, lost)
			}
			scan(t, scans, "1ms", "1ms", "1ms")
			if h := healJobs(t, scans); len(h) != 1 {
				t.Fatalf("scans while the heal job is pending: %d heal jobs, want still 1", len(h))
			}

			runHeals(t, db, leasehold.WorkFunc[HealArgs](func(context.Context, *leasehold.Job[HealArgs]) error { return nil }),
				leasehold.StateCompleted, h[0].ID)
			scan(t, scans, "1ms")
			h = healJobs(t, scans)
			if len(h) != 2 || h[1].State != leasehold.StatePending || decodeHeal(t, h[1]).PaymentID != "lost" {
				t.Fatalf("a scan after the heal job completed: heal jobs in states %v, want a second, pending one for payment lost", states(h))
			}

			record(t, db.ledger, "lost", true)
			runHeals(t, db, &healer{&reconciler{ledger: db.ledger, provider: pc}}, leasehold.StateCancelled, h[1].ID)
		})
	}
}

// TestScanArgs: a scan without queues, with a bad threshold or a bad
// queue name is refused; HealQueue may be left empty.
func TestScanArgs(t *testing.T) {
	if d, err := (ScanArgs{Queues: []string{"pay"}, PendingAfter: "2m"}).pendingAfter(); err != nil || d != 2*time.Minute {
		t.Errorf("pendingAfter = %v, %v; want 2m", d, err)
	}
	for _, bad := range []ScanArgs{
		{PendingAfter: "2m"},
		{Queues: []string{"pay"}},
		{Queues: []string{"pay"}, PendingAfter: "-1s"},
		{Queues: []string{"pay"}, PendingAfter: "2m", HealQueue: "bad queue"},
		{Queues: []string{""}, PendingAfter: "2m"},
	} {
		if _, err := bad.pendingAfter(); !errors.Is(err, errBadArgs) {
			t.Errorf("%+v: %v, want errBadArgs", bad, err)
		}
	}
}

// newScanClient starts a client that charges payments in queue pay and
// runs scans in queue scan, but runs no heal job (their queue heal is not
// worked).
func newScanClient(t *testing.T, db testDB, pc *ProviderClient) *leasehold.Client {
	t.Helper()
	ws := leasehold.NewWorkers()
	if err := leasehold.AddWorker[ChargeArgs](ws, &handler{ledger: db.ledger, provider: pc}); err != nil {
		t.Fatal(err)
	}
	if err := leasehold.AddWorker[ScanArgs](ws, &scanner{ledger: db.ledger}); err != nil {
		t.Fatal(err)
	}
	return startClient(t, db, ws, "pay", "scan")
}

// startClient starts a client of db working queues with ws, stopped when
// the test ends.
func startClient(t *testing.T, db testDB, ws *leasehold.Workers, queues ...string) *leasehold.Client {
	t.Helper()
	cfg := db.cfg
	cfg.Workers, cfg.PollInterval, cfg.Queues = ws, 20*time.Millisecond, map[string]leasehold.QueueConfig{}
	for _, q := range queues {
		cfg.Queues[q] = leasehold.QueueConfig{MaxWorkers: 3}
	}
	c, err := leasehold.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopClient(t, c) })
	return c
}

func stopClient(t *testing.T, c *leasehold.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
}

// runHeals runs the heal jobs of queue heal with w until job id is in
// state want.
func runHeals(t *testing.T, db testDB, w leasehold.Worker[HealArgs], want leasehold.JobState, id int64) {
	t.Helper()
	ws := leasehold.NewWorkers()
	if err := leasehold.AddWorker[HealArgs](ws, w); err != nil {
		t.Fatal(err)
	}
	c := startClient(t, db, ws, "heal")
	waitState(t, c, want, id)
	stopClient(t, c)
}

// scan runs one scan job per threshold, at once, in queue scan, and
// waits until all have completed.
func scan(t *testing.T, c *leasehold.Client, pendingAfter ...string) {
	t.Helper()
	var ids []int64
	for _, p := range pendingAfter {
		ids = append(ids, insertJob(t, c, ScanArgs{Queues: []string{"pay"}, PendingAfter: p, HealQueue: "heal"}, "scan"))
	}
	waitState(t, c, leasehold.StateCompleted, ids...)
}

func insertJob(t *testing.T, c *leasehold.Client, args leasehold.Args, queue string) int64 {
	t.Helper()
	r, err := c.Insert(context.Background(), args, &leasehold.InsertOpts{Queue: queue})
	if err != nil {
		t.Fatal(err)
	}
	return r.Job.ID
}

// waitState waits until every job of ids is in state want.
func waitState(t *testing.T, c *leasehold.Client, want leasehold.JobState, ids ...int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		for {
			j, err := c.GetJob(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if j.State == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %d (%s) is %s, want %s", id, j.Kind, j.State, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// healJobs returns the heal jobs, oldest first.
func healJobs(t *testing.T, c *leasehold.Client) []*leasehold.JobRow {
	t.Helper()
	jobs, err := c.ListJobs(context.Background(), &leasehold.ListParams{Queue: "heal", Kind: HealKind})
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

func decodeHeal(t *testing.T, j *leasehold.JobRow) HealArgs {
	t.Helper()
	var a HealArgs
	if err := json.Unmarshal(j.Args, &a); err != nil {
		t.Fatalf("heal job %d args %s: %v", j.ID, j.Args, err)
	}
	return a
}

func states(jobs []*leasehold.JobRow) []leasehold.JobState {
	out := make([]leasehold.JobState, len(jobs))
	for i, j := range jobs {
		out[i] = j.State
	}
	return out
}
