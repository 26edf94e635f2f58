// Package payments is the payment job of the leasehold demo (and of the
// chaos harness): a worker that charges a payment through a payment
// provider, passing the job's idempotency key, and then records the charge
// in a ledger table and completes the job in one transaction (CompleteTx),
// so a payment is charged once and recorded once whatever happens to the
// workers. It also holds an in-process stand-in for the provider.
package payments

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/leasehold/leasehold"
)

// Kind is the job kind of a payment charge.
const Kind = "leasehold.demo.charge"

// ChargeArgs are the arguments of a payment job.
type ChargeArgs struct {
	PaymentID   string `json:"payment_id"`
	AmountCents int64  `json:"amount_cents"`
	Currency    string `json:"currency,omitempty"`
}

// Kind implements leasehold.Args.
func (ChargeArgs) Kind() string { return Kind }

// DecodeCharge decodes the arguments of a payment job; false when j is
// not one.
func DecodeCharge(j *leasehold.JobRow) (ChargeArgs, bool) {
	var a ChargeArgs
	if j.Kind != Kind || json.Unmarshal(j.Args, &a) != nil || a.validate() != nil {
		return a, false
	}
	return a, true
}

// DefaultCurrency is the currency of a charge that names none.
const DefaultCurrency = "EUR"

// errBadArgs marks arguments no retry can fix.
var errBadArgs = errors.New("invalid payment arguments")

// validate checks the arguments of a payment.
func (a ChargeArgs) validate() error {
	switch {
	case a.PaymentID == "":
		return fmt.Errorf("%w: payment_id is required", errBadArgs)
	case a.AmountCents <= 0:
		return fmt.Errorf("%w: amount_cents must be positive, got %d", errBadArgs, a.AmountCents)
	}
	return nil
}

func (a ChargeArgs) currency() string {
	if a.Currency == "" {
		return DefaultCurrency
	}
	return a.Currency
}
