package payments

import (
	"context"
	"database/sql"
	"errors"
	"net/http"

	"github.com/leasehold/leasehold"
)

// Options configure the payment worker.
type Options struct {
	// HTTPClient calls the provider. Default: no overall timeout; the
	// job's lease context bounds each call.
	HTTPClient *http.Client
	// Reconcile registers the reconcilers too: of payment jobs whose
	// lease expired in a queue configured with
	// leasehold.QueueConfig.Reconcile (leasehold.ReconcileArgs), of
	// payments a scan found pending too long (HealArgs), and the scan
	// itself (ScanArgs).
	Reconcile bool
}

// handler charges one payment per job.
type handler struct {
	ledger   *Ledger
	provider *ProviderClient
}

// NewClient returns a leasehold client that runs the payment worker:
// cfg.Workers (created when nil; kinds already registered are kept) gets
// the charge handler (kind Kind), which charges through the provider at
// providerURL and records each charge in ledger with CompleteTx, on the
// client it runs in (leasehold.ClientFromContext), and with
// Options.Reconcile the reconciler of payments whose lease expired, the
// scan for payments pending too long and its heal jobs.
func NewClient(cfg leasehold.Config, ledger *Ledger, providerURL string, opts Options) (*leasehold.Client, error) {
	pc, err := NewProviderClient(providerURL, opts.HTTPClient)
	if err != nil {
		return nil, err
	}
	if ledger == nil {
		return nil, errors.New("payments: nil ledger")
	}
	if cfg.Workers == nil {
		cfg.Workers = leasehold.NewWorkers()
	}
	h := &handler{ledger: ledger, provider: pc}
	if err := leasehold.AddWorker[ChargeArgs](cfg.Workers, h); err != nil {
		return nil, err
	}
	if opts.Reconcile {
		r := &reconciler{ledger: ledger, provider: pc}
		if err := leasehold.AddWorker[leasehold.ReconcileArgs](cfg.Workers, r); err != nil {
			return nil, err
		}
		if err := leasehold.AddWorker[HealArgs](cfg.Workers, &healer{r}); err != nil {
			return nil, err
		}
		if err := leasehold.AddWorker[ScanArgs](cfg.Workers, &scanner{ledger: ledger}); err != nil {
			return nil, err
		}
	}
	return leasehold.NewClient(cfg)
}

// Work charges the payment with the job's idempotency key (the same for
// every attempt, so a retried charge is the same charge), then records it
// and completes the job in one transaction. When the lease was lost
// meanwhile, CompleteTx refuses, the ledger write rolls back, and the job's
// new owner records the (replayed) charge instead.
func (h *handler) Work(ctx context.Context, job *leasehold.Job[ChargeArgs]) error {
	if err := job.Args.validate(); err != nil {
		return leasehold.Permanent(err)
	}
	// The charge cannot be fenced: it must not start once another worker
	// may own the job.
	if err := leasehold.CheckLease(ctx); err != nil {
		return err
	}
	charge, err := h.provider.Charge(ctx, ChargeRequest{
		IdempotencyKey: job.IdempotencyKey(), PaymentID: job.Args.PaymentID,
		AmountCents: job.Args.AmountCents, Currency: job.Args.currency(),
		Owner: leasehold.ClientFromContext(ctx).Owner(), JobID: job.ID, Attempt: job.Attempt,
	})
	if errors.Is(err, ErrAwaitingWebhook) {
		return nil // submitted: the payment stays pending until the webhook records it
	}
	if err != nil {
		return err
	}
	return h.record(ctx, job, charge)
}

// record writes the ledger row and the fenced completion atomically
// (Ledger.record).
func (h *handler) record(ctx context.Context, job *leasehold.Job[ChargeArgs], ch *Charge) error {
	client := leasehold.ClientFromContext(ctx)
	return h.ledger.record(ctx, Entry{
		PaymentID: job.Args.PaymentID, ChargeID: ch.ID, JobID: job.ID, Attempt: job.Attempt,
		Owner: client.Owner(), AmountCents: job.Args.AmountCents, Currency: job.Args.currency(),
	}, func(ctx context.Context, tx *sql.Tx) error {
		// The ledger's transaction is a *sql.Tx on either database, so the
		// dynamic form serves both drivers.
		return client.CompleteTx(ctx, tx, job.JobRow)
	})
}
