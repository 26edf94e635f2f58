package work

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/payments"
)

// TestScanPeriodic: --scan-every adds a periodic leasehold.demo.scan job in the
// reconcile queue, named after it, whose args carry the queues, the
// threshold and the heal queue; it needs the reconcilers.
func TestScanPeriodic(t *testing.T) {
	o := Options{Queues: []string{"pay", "pay2"}, ReconcileInto: "rec", ScanEvery: time.Second, ScanPendingAfter: 4 * time.Second}
	jobs := periodic(o)
	if len(jobs) != 1 || jobs[0].Name != "leasehold.demo.scan:rec" || jobs[0].Schedule.String() != "@every 1s" {
		t.Fatalf("periodic jobs = %+v, want leasehold.demo.scan:rec every 1s", jobs)
	}
	slot := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	args, opts := jobs[0].Args(slot)
	a, ok := args.(payments.ScanArgs)
	if !ok || len(a.Queues) != 2 || a.Queues[1] != "pay2" || a.PendingAfter != "4s" || a.HealQueue != "rec" || opts.Queue != "rec" {
		t.Fatalf("scan job %#v in queue %s, want queues pay, pay2, pending_after 4s, heal queue rec, in rec", args, opts.Queue)
	}
	var md PeriodicMetadata
	if err := json.Unmarshal(opts.Metadata, &md); err != nil || md.Periodic != "leasehold.demo.scan:rec" || !md.Slot.Equal(slot) {
		t.Errorf("metadata %s (%v), want the name and the slot", opts.Metadata, err)
	}
	if err := checkScan(o); err != nil {
		t.Errorf("checkScan(%+v) = %v", o, err)
	}
	for _, bad := range []Options{{ScanEvery: time.Second}, {ScanEvery: time.Second, ReconcileInto: "rec", Kinds: []string{"leasehold.sleep"}}} {
		if err := checkScan(bad); !errors.Is(err, errScanNeedsReconcile) {
			t.Errorf("checkScan(%+v) = %v, want errScanNeedsReconcile", bad, err)
		}
	}
	if err := checkReconcile(Options{ReconcileInto: "rec", Kinds: []string{"leasehold.sleep"}}); !errors.Is(err, errReconcileNeedsPayments) {
		t.Errorf("checkReconcile without the payment kind = %v, want errReconcileNeedsPayments", err)
	}
	for _, good := range []Options{{}, {ReconcileInto: "rec"}, {ReconcileInto: "rec", Kinds: []string{"leasehold.demo.charge"}}} {
		if err := checkReconcile(good); err != nil {
			t.Errorf("checkReconcile(%+v) = %v", good, err)
		}
	}
	if jobs := periodic(Options{}); len(jobs) != 0 {
		t.Errorf("periodic jobs without --scan-every = %+v", jobs)
	}
}
