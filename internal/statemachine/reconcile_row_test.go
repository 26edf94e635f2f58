package statemachine

import (
	"encoding/json"
	"testing"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
)

// spawnedRow is the row of the reconcile job that a watcher whose policy
// sends queue "payments" to target, of kind kind, inserts for attempt 2
// of a job: what a driver reads back of spawn.
func spawnedRow(t *testing.T, kind string) *leasetype.JobRow {
	t.Helper()
	orig := &leasetype.JobRow{ID: 7, Kind: "charge", Queue: "payments", State: leasetype.StateProcessing, Attempt: 2,
		MaxAttempts: 3, LeaseOwner: "host-1", UUID: "9b2f5f8e-0000-4000-8000-000000000001"}
	tg := target
	tg.Kind = kind
	return rowOf(Reconcile(orig, tg).Spawn)
}

// rowOf is the processing row of a job inserted with p, its budget spent.
func rowOf(p *driver.InsertParams) *leasetype.JobRow {
	return &leasetype.JobRow{ID: 40, Kind: p.Kind, Queue: p.Queue, State: leasetype.StateProcessing, Attempt: 1,
		MaxAttempts: 1, Args: p.Args, UniqueKey: p.UniqueKey, LeaseOwner: "host-2"}
}

// TestReconcilerKnowsRowsItHasNoPolicyFor: a watcher or client holding
// no policy (only the reconcile queue's, say) knows a reconcile job of a
// custom kind by its row's spawned shape, and so never fails it; a row of
// an ordinary kind that lacks that exact shape is no reconcile job.
func TestReconcilerKnowsRowsItHasNoPolicyFor(t *testing.T) {
	isRec := Reconciler(nil)
	custom := spawnedRow(t, "pay.reconcile")
	withArgs := func(mod func(*leasetype.ReconcileArgs)) *leasetype.JobRow {
		j := *custom
		var a leasetype.ReconcileArgs
		if err := json.Unmarshal(j.Args, &a); err != nil {
			t.Fatal(err)
		}
		mod(&a)
		j.Args, _ = json.Marshal(a)
		return &j
	}
	withKey := func(key string) *leasetype.JobRow { j := *custom; j.UniqueKey = key; return &j }
	for _, c := range []struct {
		name string
		job  *leasetype.JobRow
		want bool
	}{
		{"spawned, custom kind", custom, true},
		{"default kind, no key", &leasetype.JobRow{Kind: leasetype.ReconcileKind, Queue: "rec", Args: []byte(`{}`)}, true},
		{"ordinary kind and key", &leasetype.JobRow{Kind: "charge", Queue: "payments", Args: []byte(`{"n":1}`), UniqueKey: "order-12"}, false},
		{"ordinary kind, no key", &leasetype.JobRow{Kind: "pay.reconcile", Queue: "rec", Args: custom.Args}, false},
		{"key prefix, other args", withKey("reconcile:leasehold-x:1"), false},
		{"key of another attempt", withKey(custom.UniqueKey[:len(custom.UniqueKey)-1] + "3"), false},
		{"key of another job", withKey("reconcile:leasehold-job-7:2"), false},
		{"no job id", withArgs(func(a *leasetype.ReconcileArgs) { a.JobID = 0 }), false},
		{"no job queue", withArgs(func(a *leasetype.ReconcileArgs) { a.JobQueue = "" }), false},
		{"args not an object", func() *leasetype.JobRow { j := *custom; j.Args = []byte(`[1]`); return &j }(), false},
	} {
		if got := isRec(c.job); got != c.want {
			t.Errorf("%s: Reconciler(nil)(%s %q %s) = %v, want %v", c.name, c.job.Kind, c.job.UniqueKey, c.job.Args, got, c.want)
		}
	}
}

// TestPolicyRescuerWithoutThePolicy: the watcher of a process that works
// only the reconcile queue flags a spawned reconcile job of a custom kind
// stuck when its lease expires with its budget spent, as one with the
// policy does; an ordinary job of an ordinary key fails.
func TestPolicyRescuerWithoutThePolicy(t *testing.T) {
	custom := spawnedRow(t, "pay.reconcile")
	ordinary := &leasetype.JobRow{ID: 41, Kind: "charge", Queue: "rec", State: leasetype.StateProcessing, Attempt: 1,
		MaxAttempts: 1, Args: []byte(`{"n":1}`), UniqueKey: "order-12", LeaseOwner: "host-2"}
	for _, c := range []struct {
		name   string
		policy Policy
		job    *leasetype.JobRow
		want   leasetype.JobState
	}{
		{"no policy", Policy{}, custom, leasetype.StateStuck},
		{"the policy", Policy{Reconcile: map[string]ReconcileTarget{"payments": {Kind: "pay.reconcile", Queue: "rec"}}}, custom, leasetype.StateStuck},
		{"ordinary job", Policy{}, ordinary, leasetype.StateFailed},
	} {
		tr := PolicyRescuer(c.policy)(c.job)
		if tr.State != c.want || tr.Spawn != nil {
			t.Errorf("%s: %s -> %s (spawn %v), want %s", c.name, c.job.Kind, tr.State, tr.Spawn != nil, c.want)
		}
	}
}
