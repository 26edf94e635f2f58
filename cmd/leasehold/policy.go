package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

// policyFlags are the queue policies a command that runs the stuck
// watcher must share with the workers (`watch`, and `serve` for the
// dashboard's "run the stuck watcher now"): which queues flag their
// expired leases stuck, and which send them to reconciliation.
type policyFlags struct {
	flagStuck []string
	reconcile []string // QUEUE=RECONCILE_QUEUE
	fl        *pflag.FlagSet
}

// add registers the flags on fl.
func (p *policyFlags) add(fl *pflag.FlagSet) {
	p.fl = fl
	fl.StringSliceVar(&p.flagStuck, "flag-stuck", nil, "queues whose expired jobs are flagged stuck instead of requeued")
	fl.StringSliceVar(&p.reconcile, "reconcile", nil,
		"QUEUE=RECONCILE_QUEUE: expired jobs of QUEUE go to reconciling, with a reconcile job in RECONCILE_QUEUE (as the workers' policy)")
}

// queues returns the Config.Queues the flags describe, or a usage error.
// A flag given empty is one: taken as no queue, it would requeue the
// expired leases of the queues meant to be flagged or reconciled.
func (p *policyFlags) queues() (map[string]leasehold.QueueConfig, error) {
	if err := cli.RefuseEmpty(p.fl, "flag-stuck", "reconcile"); err != nil {
		return nil, err
	}
	queues := map[string]leasehold.QueueConfig{}
	for _, q := range p.flagStuck {
		if err := leasehold.ValidateQueue(q); err != nil {
			return nil, cli.FlagError("--flag-stuck", err)
		}
		queues[q] = leasehold.QueueConfig{FlagStuck: true}
	}
	for _, r := range p.reconcile {
		q, into, ok := strings.Cut(r, "=")
		if !ok || into == "" {
			return nil, cli.Usagef("--reconcile %q: want QUEUE=RECONCILE_QUEUE", r)
		}
		for _, name := range []string{q, into} {
			if err := leasehold.ValidateQueue(name); err != nil {
				return nil, cli.FlagError("--reconcile", err)
			}
		}
		if queues[q].Reconcile != nil {
			return nil, cli.Usagef("--reconcile names queue %s twice", q)
		}
		queues[q] = leasehold.QueueConfig{FlagStuck: queues[q].FlagStuck, Reconcile: &leasehold.ReconcilePolicy{Queue: into}}
	}
	return queues, nil
}
