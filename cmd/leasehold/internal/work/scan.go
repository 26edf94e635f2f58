package work

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/jobkinds"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/payments"
)

// ScanName is the name of the periodic scan whose heal jobs go to
// reconcileQueue: the workers given the same --reconcile-into share its
// slots.
func ScanName(reconcileQueue string) string { return payments.ScanKind + ":" + reconcileQueue }

// errScanNeedsReconcile reports a scan asked of a worker that does not
// run the payment reconcilers.
var errScanNeedsReconcile = errors.New("--scan-every needs --reconcile-into and the " + payments.Kind + " kind")

// errReconcileNeedsPayments reports a reconcile queue asked of a worker
// that does not run the payment kind, whose reconcilers alone run the
// reconcile jobs: they would wait in that queue with nobody to run them.
var errReconcileNeedsPayments = errors.New("--reconcile-into needs the " + payments.Kind +
	" kind (see --kind): only its reconcilers run reconcile jobs, which would wait in the reconcile queue with nobody to run them")

// checkReconcile checks that a worker given a reconcile queue runs the
// payment kind, and with it the reconcilers.
func checkReconcile(o Options) error {
	if o.ReconcileInto != "" && !jobkinds.Runs(o.Kinds, payments.Kind) {
		return errReconcileNeedsPayments
	}
	return nil
}

// periodicNameMax is the library's limit on a periodic job's name, in
// bytes (leasehold.ValidatePeriodicName).
const periodicNameMax = 128

// checkScan checks that a worker asked to scan runs the heal jobs' kinds,
// and that the scan's schedule name, which holds the reconcile queue's,
// is one the library takes: a reconcile queue name near the queue name
// limit makes it too long.
func checkScan(o Options) error {
	if o.ScanEvery <= 0 {
		return nil
	}
	if o.ReconcileInto == "" || !jobkinds.Runs(o.Kinds, payments.Kind) {
		return errScanNeedsReconcile
	}
	name := ScanName(o.ReconcileInto)
	err := leasehold.ValidatePeriodicName(name)
	switch {
	case err == nil:
		return nil
	case len(name) > periodicNameMax:
		return cli.Restate(err, "--reconcile-into: with --scan-every, the reconcile queue's name may be at most %d bytes, not %d: "+
			"the scan's schedule, %s, has a %d-byte name limit",
			periodicNameMax-len(ScanName("")), len(o.ReconcileInto), ScanName("QUEUE"), periodicNameMax)
	}
	return fmt.Errorf("--reconcile-into: with --scan-every, the scan's schedule name: %w", err)
}

// periodic returns the worker's periodic jobs: o.Periodic and, when
// o.ScanEvery is set, the scan.
func periodic(o Options) []leasehold.PeriodicJob {
	if o.ScanEvery <= 0 {
		return o.Periodic
	}
	return append(slices.Clone(o.Periodic), scanPeriodic(o))
}

// scanPeriodic is the scan of o: every ScanEvery, a leasehold.demo.scan job in
// the reconcile queue that heals, with heal jobs in that queue, the
// payments of o.Queues pending longer than ScanPendingAfter.
func scanPeriodic(o Options) leasehold.PeriodicJob {
	name := ScanName(o.ReconcileInto)
	args := payments.ScanArgs{Queues: o.Queues, PendingAfter: o.ScanPendingAfter.String(), HealQueue: o.ReconcileInto}
	return leasehold.PeriodicJob{Name: name, Schedule: leasehold.Every(o.ScanEvery),
		Args: func(slot time.Time) (leasehold.Args, *leasehold.InsertOpts) {
			return args, &leasehold.InsertOpts{Queue: o.ReconcileInto, Metadata: periodicMetadata(name, slot)}
		}}
}
