package chaos

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

// verdict returns the invariant named name among invs.
func verdict(t *testing.T, invs []Invariant, name string) Invariant {
	t.Helper()
	for _, inv := range invs {
		if inv.Name == name {
			return inv
		}
	}
	t.Fatalf("no invariant %s", name)
	return Invariant{}
}

// TestDrainedNeedsEveryPaymentCompleted: a payment that ended failed or
// cancelled was never charged, so the ledger and charge checks, which look
// at completed payments, pass; drained must fail, naming it. Nothing in a
// run may end a payment so.
func TestDrainedNeedsEveryPaymentCompleted(t *testing.T) {
	for _, status := range []string{"failed", "cancelled"} {
		t.Run(status, func(t *testing.T) {
			h := &harness{o: Options{Jobs: 2}}
			f := &dbFacts{
				jobs: map[int64]jobRow{1: {status: "completed", attempt: 1}, 2: {status: status, attempt: 1}},
				attempts: map[int64][]attemptRow{
					1: {{job: 1, attempt: 1, owner: "w1.1", claimed: 1, ended: 2, outcome: "completed"}},
					2: {{job: 2, attempt: 1, owner: "w1.1", claimed: 1, ended: 2, outcome: status}},
				},
				ledger:     []ledgerRow{{job: 1, attempt: 1, owner: "w1.1"}},
				reconciles: map[int64]*reconcileRow{},
				queues:     map[int64]string{1: Queue, 2: Queue},
			}
			r := &Report{}
			h.countJobs(r, f)
			countReconciles(r, f)
			h.countEffects(r, f, nil)
			r.Provider.Charges = 1
			d := verdict(t, h.verdicts(r), "drained")
			if d.OK {
				t.Errorf("drained holds with a payment %s: %s", status, d.Detail)
			}
			if want := "job 2 " + status + " at attempt 1"; !strings.Contains(d.Detail, want) {
				t.Errorf("drained detail %q does not name %q", d.Detail, want)
			}
		})
	}
	t.Run("every payment completed", func(t *testing.T) {
		h := &harness{o: Options{Jobs: 1}}
		r := &Report{}
		h.countJobs(r, &dbFacts{jobs: map[int64]jobRow{1: {status: "completed", attempt: 1}}})
		if d := verdict(t, h.verdicts(r), "drained"); !d.OK {
			t.Errorf("drained fails with every payment completed: %s", d.Detail)
		}
	})
}

// TestExpiryWithoutReconcileJob: every expired lease of the reconciling
// queue goes to reconciling with one reconcile job; one with none is the
// policy not applied, and fails one-reconciler-per-expiry. An expired
// lease of the other payment queue needs none.
func TestExpiryWithoutReconcileJob(t *testing.T) {
	history := func(job int64) []attemptRow {
		return []attemptRow{
			{job: job, attempt: 1, owner: "w1.1", claimed: 1, ended: 5_000_000, outcome: "lease_expired"},
			{job: job, attempt: 2, owner: "w2.1", claimed: 5_000_000, ended: 5_100_000, outcome: "completed"},
		}
	}
	for _, tc := range []struct {
		name       string
		queue      string
		reconciles map[int64]*reconcileRow
		missing    int
	}{
		{"reconciling queue, no reconcile job", ReconcileQueue, map[int64]*reconcileRow{}, 1},
		{"reconciling queue, its reconcile job", ReconcileQueue,
			map[int64]*reconcileRow{9: {id: 9, status: "completed", job: 7, attempt: 1}}, 0},
		{"reconciling queue, a reconcile job of another attempt", ReconcileQueue,
			map[int64]*reconcileRow{9: {id: 9, status: "completed", job: 7, attempt: 2}}, 1},
		{"plain queue", Queue, map[int64]*reconcileRow{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &dbFacts{
				jobs:       map[int64]jobRow{7: {status: "completed", attempt: 2}},
				attempts:   map[int64][]attemptRow{7: history(7)},
				reconciles: tc.reconciles,
				queues:     map[int64]string{7: tc.queue},
			}
			r := &Report{}
			countReconciles(r, f)
			if r.Reconcile.Missing != tc.missing {
				t.Errorf("Missing = %d, want %d (%+v)", r.Reconcile.Missing, tc.missing, r.Reconcile)
			}
			h := &harness{}
			v := verdict(t, h.verdicts(r), "one-reconciler-per-expiry")
			if v.OK != (tc.missing == 0) {
				t.Errorf("one-reconciler-per-expiry OK = %v with %d expiries without a reconcile job: %s", v.OK, tc.missing, v.Detail)
			}
		})
	}
}

// TestCommitsKept: with a synchronous standby, acknowledged-commits-kept
// rests on the commit log: it fails when the log could not be read back
// (whatever the comparison with the old primary found) or acknowledged
// nothing, since then no commit was compared. With an asynchronous
// standby losses are reported, but a comparison that could not be made
// still fails it.
func TestCommitsKept(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    FailoverFigures
		ok   bool
		want string
	}{
		{"sync, none lost", FailoverFigures{Mode: FailoverSync, Acked: 3000}, true, "0 of 3000"},
		{"sync, one lost", FailoverFigures{Mode: FailoverSync, Acked: 3000, AckedLost: 1}, false, "1 of 3000"},
		{"sync, commit log unread", FailoverFigures{Mode: FailoverSync, CommitLogError: "chaos: read the commit log: EOF"}, false,
			"reading the commit log failed: chaos: read the commit log: EOF"},
		{"sync, nothing acknowledged", FailoverFigures{Mode: FailoverSync}, false, "no acknowledged commit to compare"},
		{"sync, old primary not compared", FailoverFigures{Mode: FailoverSync, Acked: 3000, Lost: LostFigures{Error: "restart the old primary: x"}}, false,
			"comparison failed: restart the old primary: x"},
		{"async, lost", FailoverFigures{Mode: FailoverAsync, Acked: 3000, AckedLost: 30}, true, "reported not judged"},
		{"async, commit log unread", FailoverFigures{Mode: FailoverAsync, CommitLogError: "EOF"}, false, "reading the commit log failed: EOF"},
	} {
		ok, detail := commitsKept(&tc.f)
		if ok != tc.ok || !strings.Contains(detail, tc.want) {
			t.Errorf("%s: commitsKept = %v, %q; want %v, with %q", tc.name, ok, detail, tc.ok, tc.want)
		}
	}
}

// TestNetDelayOutlivesTheLease: the delay fault holds heartbeat answers
// until they come too late, so --net-delay must exceed the TTL, as
// --freeze-for and --net-fault-for must; without the delay fault it is
// not used, and not checked.
func TestNetDelayOutlivesTheLease(t *testing.T) {
	base := Options{NetFaultEvery: 10 * time.Second, TTL: 2 * time.Second, Workers: 4}
	for _, tc := range []struct {
		name   string
		faults string
		delay  time.Duration
		bad    bool
	}{
		{"default delay", "", 0, false},
		{"delay equal to the TTL", "", 2 * time.Second, true},
		{"delay under the TTL", "partition,delay", time.Second, true},
		{"delay over the TTL", "delay", 2100 * time.Millisecond, false},
		{"no delay fault", "partition,stall", time.Second, false},
	} {
		o := base
		o.NetFaults, o.NetDelay = tc.faults, tc.delay
		err := o.withDefaults().validateNet()
		var ue *cli.Error
		switch {
		case tc.bad && (!errors.As(err, &ue) || ue.Code != cli.ExitUsage || !strings.Contains(err.Error(), "--net-delay")):
			t.Errorf("%s: validateNet = %v, want a usage error naming --net-delay", tc.name, err)
		case !tc.bad && err != nil:
			t.Errorf("%s: validateNet = %v, want nil", tc.name, err)
		}
	}
}
