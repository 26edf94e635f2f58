package work

import (
	"net"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/jobkinds"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/payments"
)

// Prepare checks what of o needs no database, so that a bad flag is refused
// (a usage error naming it) before the database is opened, let alone
// created: the kinds, which it returns selected, the reconcile queue
// (which needs the payment kind), the scan, the periodic schedules'
// names, the provider's
// URL, the owner and the metrics address (a host that does not resolve).
func Prepare(o Options) (Options, error) {
	kinds, err := jobkinds.Select(o.Kinds)
	if err != nil {
		return o, cli.FlagError("--kind", err)
	}
	o.Kinds = kinds
	if err := checkReconcile(o); err != nil {
		return o, cli.UsageError(err)
	}
	if err := checkScan(o); err != nil {
		return o, cli.UsageError(err)
	}
	if err := checkPeriodicNames(o); err != nil {
		return o, err
	}
	if o.ProviderURL != "" {
		if _, err := payments.NewProviderClient(o.ProviderURL, nil); err != nil {
			return o, cli.FlagError("--provider", err)
		}
	}
	if err := leasehold.ValidateOwner(o.Owner); err != nil {
		return o, cli.FlagError("--owner", err)
	}
	if o.MetricsAddr != "" {
		if _, err := net.ResolveTCPAddr("tcp", o.MetricsAddr); err != nil {
			return o, cli.FlagError("--metrics-addr", err)
		}
	}
	return o, nil
}

// checkPeriodicNames refuses two schedules of one name among --periodic
// and the scan of --scan-every, which the client would refuse only once
// the database is opened.
func checkPeriodicNames(o Options) error {
	seen := make(map[string]bool)
	for _, p := range periodic(o) {
		if seen[p.Name] {
			if o.ScanEvery > 0 && p.Name == ScanName(o.ReconcileInto) {
				return cli.Usagef("--periodic: schedule %s is the name of the --scan-every schedule", p.Name)
			}
			return cli.Usagef("--periodic: schedule %s given twice", p.Name)
		}
		seen[p.Name] = true
	}
	return nil
}
