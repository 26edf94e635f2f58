package payments

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/leasehold/leasehold"
)

// HealKind is the kind of the jobs that heal a payment a scan found
// pending too long (its webhook lost, say): one per payment.
const HealKind = "leasehold.demo.heal"

// HealArgs name a payment to heal: the payment, the idempotency key its
// charge job passed to the provider, and that job.
type HealArgs struct {
	PaymentID      string `json:"payment_id"`
	IdempotencyKey string `json:"idempotency_key"`
	JobID          int64  `json:"job_id"`
	AmountCents    int64  `json:"amount_cents"`
	Currency       string `json:"currency,omitempty"`
}

// Kind implements leasehold.Args.
func (HealArgs) Kind() string { return HealKind }

// HealUniqueKey is the unique key of the heal job of paymentID, held
// while the job is unfinished (leasehold.UniqueWhileUnfinished): a scan
// that runs again while the payment's heal job waits or runs inserts no
// second one.
func HealUniqueKey(paymentID string) string { return "heal:" + paymentID }

// errNotCharged reports a payment the provider has no charge for (yet).
var errNotCharged = errors.New("the provider has no charge for this key")

// errRecorded reports a payment recorded before its heal job ran (by the
// heal job before it, which completed after the scan had read the
// ledger).
var errRecorded = errors.New("the payment is recorded already: nothing to heal")

// healer runs the heal jobs.
type healer struct{ r *reconciler }

// Work asks the provider for the payment's charge by its idempotency key
// and, when it was charged, records it and completes the heal job in one
// transaction (the fenced completion). A payment the provider has not
// charged is retried later; a heal job whose payment is recorded already
// cancels itself, so that the completed heal jobs are those that healed.
func (h *healer) Work(ctx context.Context, job *leasehold.Job[HealArgs]) error {
	a := job.Args
	recorded, err := h.r.ledger.recordedAmong(ctx, []string{a.PaymentID})
	if err != nil {
		return err
	}
	if recorded[a.PaymentID] {
		return leasehold.Cancel(fmt.Errorf("payments: heal %s: %w", a.PaymentID, errRecorded))
	}
	ch, err := h.r.provider.Lookup(ctx, a.IdempotencyKey)
	if err != nil {
		return err
	}
	if ch == nil {
		return fmt.Errorf("payments: heal %s: %w", a.PaymentID, errNotCharged)
	}
	return h.record(ctx, job, ch)
}

// record writes the ledger row and completes the heal job atomically.
func (h *healer) record(ctx context.Context, job *leasehold.Job[HealArgs], ch *Charge) error {
	client := leasehold.ClientFromContext(ctx)
	a := job.Args
	return h.r.ledger.record(ctx, Entry{
		PaymentID: a.PaymentID, ChargeID: ch.ID, JobID: a.JobID, Attempt: job.Attempt,
		Owner: client.Owner(), AmountCents: a.AmountCents, Currency: ChargeArgs{Currency: a.Currency}.currency(),
	}, func(ctx context.Context, tx *sql.Tx) error { return client.CompleteTx(ctx, tx, job.JobRow) })
}
