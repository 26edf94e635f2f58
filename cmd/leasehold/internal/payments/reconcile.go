package payments

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/leasehold/leasehold"
)

// reconciler heals payments whose charge job lost its lease in a queue
// that reconciles (leasehold.QueueConfig.Reconcile): it asks the provider
// what happened by the job's idempotency key, and either records the
// charge and completes the payment, in one transaction with its own fenced
// completion, or sends the payment back to be charged.
type reconciler struct {
	ledger   *Ledger
	provider *ProviderClient
}

// Work reconciles one payment job.
func (r *reconciler) Work(ctx context.Context, job *leasehold.Job[leasehold.ReconcileArgs]) error {
	client := leasehold.ClientFromContext(ctx)
	orig, err := client.GetJob(ctx, job.Args.JobID)
	if errors.Is(err, leasehold.ErrJobNotFound) {
		return nil // deleted by an operator: nothing to heal
	}
	if err != nil {
		return err
	}
	var args ChargeArgs
	if err := json.Unmarshal(orig.Args, &args); err != nil || args.validate() != nil {
		return leasehold.Permanent(fmt.Errorf("payments: reconcile job %d: not a payment: %s", orig.ID, orig.Args))
	}
	ch, err := r.provider.Lookup(ctx, job.Args.IdempotencyKey)
	if err != nil {
		return err
	}
	if ch == nil {
		err = client.ResolveReconcile(ctx, job.JobRow, leasehold.Resolution{
			Action: leasehold.ResolveRetry, Note: "the provider has no charge: charge again",
		})
		return resolvedElsewhere(err)
	}
	return r.heal(ctx, client, job, args, ch)
}

// resolvedElsewhere turns ErrNotReconciling (resolved by an earlier run,
// or by an operator) into success.
func resolvedElsewhere(err error) error {
	if errors.Is(err, leasehold.ErrNotReconciling) {
		return nil
	}
	return err
}

// heal records the charge the provider made, resolves the payment job as
// completed and completes the reconcile job, in one transaction.
func (r *reconciler) heal(ctx context.Context, client *leasehold.Client, job *leasehold.Job[leasehold.ReconcileArgs], args ChargeArgs, ch *Charge) error {
	return r.ledger.record(ctx, Entry{
		PaymentID: args.PaymentID, ChargeID: ch.ID, JobID: job.Args.JobID, Attempt: job.Args.Attempt,
		Owner: client.Owner(), AmountCents: args.AmountCents, Currency: args.currency(),
	}, func(ctx context.Context, tx *sql.Tx) error {
		err := client.ResolveReconcileTx(ctx, tx, job.JobRow, leasehold.Resolution{
			Action: leasehold.ResolveComplete, Note: "the provider charged " + ch.ID,
		})
		if errors.Is(err, leasehold.ErrNotReconciling) {
			return errNothingToRecord
		}
		if err != nil {
			return err
		}
		return client.CompleteTx(ctx, tx, job.JobRow)
	})
}
