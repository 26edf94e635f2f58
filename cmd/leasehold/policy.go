package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

// policyFlags are the queue policies a command that runs the stuck
// watcher must share with the workers (`watch`, and `serve` for the
// dashboard's "run the stuck watcher now"): which queues flag their
// expired leases stuck, and which send them to reconciliation, with
// reconcile jobs of which kind, retry budget and priority. The watcher
// writes the reconcile jobs: one that differs from the workers' policy
// inserts jobs no worker handles, and their unique key then blocks the
// right one.
type policyFlags struct {
	flagStuck            []string
	reconcile            []string // QUEUE=RECONCILE_QUEUE
	reconcileKind        []string // QUEUE=KIND
	reconcileMaxAttempts []string // QUEUE=N
	reconcilePriority    []string // QUEUE=P
	fl                   *pflag.FlagSet
}

// add registers the flags on fl.
func (p *policyFlags) add(fl *pflag.FlagSet) {
	p.fl = fl
	fl.StringSliceVar(&p.flagStuck, "flag-stuck", nil, "queues whose expired jobs are flagged stuck instead of requeued")
	fl.StringSliceVar(&p.reconcile, "reconcile", nil,
		"QUEUE=RECONCILE_QUEUE: expired jobs of QUEUE go to reconciling, with a reconcile job in RECONCILE_QUEUE (as the workers' policy)")
	fl.StringSliceVar(&p.reconcileKind, "reconcile-kind", nil,
		fmt.Sprintf("QUEUE=KIND: kind of QUEUE's reconcile jobs (default %s); must match the workers' ReconcilePolicy", leasehold.ReconcileKind))
	fl.StringSliceVar(&p.reconcileMaxAttempts, "reconcile-max-attempts", nil,
		fmt.Sprintf("QUEUE=N: retry budget of QUEUE's reconcile jobs, 1 to %d (default %d); must match the workers' ReconcilePolicy",
			leasehold.MaxMaxAttempts, leasehold.DefaultMaxAttempts))
	fl.StringSliceVar(&p.reconcilePriority, "reconcile-priority", nil,
		fmt.Sprintf("QUEUE=P: priority of QUEUE's reconcile jobs, 0 (first) to %d (default 0); must match the workers' ReconcilePolicy",
			leasehold.MaxPriority))
}

// queues returns the Config.Queues the flags describe, or a usage error.
// A flag given empty is one: taken as no queue, it would requeue the
// expired leases of the queues meant to be flagged or reconciled.
func (p *policyFlags) queues() (map[string]leasehold.QueueConfig, error) {
	if err := cli.RefuseEmpty(p.fl, "flag-stuck", "reconcile", "reconcile-kind", "reconcile-max-attempts", "reconcile-priority"); err != nil {
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
	for _, f := range p.reconcileFields() {
		if err := f.apply(queues); err != nil {
			return nil, err
		}
	}
	return queues, nil
}

// reconcileField is a flag that sets one field of the ReconcilePolicy of
// each queue it names, as QUEUE=VALUE.
type reconcileField struct {
	flag   string   // "--reconcile-kind"
	want   string   // what VALUE is, for the usage error: "KIND"
	values []string // QUEUE=VALUE, as given
	// set checks v and stores it in r, or says why v is refused.
	set func(r *leasehold.ReconcilePolicy, v string) error
}

// reconcileFields returns the flags that complete a --reconcile policy.
func (p *policyFlags) reconcileFields() []reconcileField {
	return []reconcileField{
		{flag: "--reconcile-kind", want: "KIND", values: p.reconcileKind, set: setReconcileKind},
		{flag: "--reconcile-max-attempts", want: "N", values: p.reconcileMaxAttempts, set: setReconcileMaxAttempts},
		{flag: "--reconcile-priority", want: "P", values: p.reconcilePriority, set: setReconcilePriority},
	}
}

// apply sets f's field in the reconcile policies of queues. A queue
// without --reconcile is refused rather than ignored: the operator meant
// it to reconcile, and the watcher would requeue its expired leases.
func (f reconcileField) apply(queues map[string]leasehold.QueueConfig) error {
	seen := map[string]bool{}
	for _, kv := range f.values {
		q, v, ok := strings.Cut(kv, "=")
		if !ok || q == "" || v == "" {
			return cli.Usagef("%s %q: want QUEUE=%s", f.flag, kv, f.want)
		}
		r := queues[q].Reconcile
		if r == nil {
			return cli.Usagef("%s %s: queue %s has no --reconcile", f.flag, kv, q)
		}
		if seen[q] {
			return cli.Usagef("%s names queue %s twice", f.flag, q)
		}
		seen[q] = true
		if err := f.set(r, v); err != nil {
			return cli.FlagError(f.flag+" "+kv, err)
		}
	}
	return nil
}

// setReconcileKind sets r.Kind to a kind the library accepts.
func setReconcileKind(r *leasehold.ReconcilePolicy, v string) error {
	if err := leasehold.ValidateKind(v); err != nil {
		return err
	}
	r.Kind = v
	return nil
}

// setReconcileMaxAttempts sets r.MaxAttempts to a budget in the range
// Config accepts. 0, Config's "default", is refused: the default is the
// workers' Config.DefaultMaxAttempts, which this command cannot know.
func setReconcileMaxAttempts(r *leasehold.ReconcilePolicy, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > leasehold.MaxMaxAttempts {
		return fmt.Errorf("want a whole number from 1 to %d", leasehold.MaxMaxAttempts)
	}
	r.MaxAttempts = n
	return nil
}

// setReconcilePriority sets r.Priority to a priority in the range Config
// accepts.
func setReconcilePriority(r *leasehold.ReconcilePolicy, v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > leasehold.MaxPriority {
		return fmt.Errorf("want a whole number from 0 to %d", leasehold.MaxPriority)
	}
	r.Priority = n
	return nil
}
