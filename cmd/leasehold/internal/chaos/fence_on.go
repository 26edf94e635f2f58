//go:build !chaos_unfenced

package chaos

import (
	"context"
	"database/sql"

	"github.com/leasehold/leasehold/driver"
)

// Unfenced reports whether this build completes jobs without the fence
// (the chaos_unfenced build tag): never in a normal build.
const Unfenced = false

// refusedInTx handles a CompleteTx the fence refused: it reports the
// refusal and leaves it refused, so the handler rolls its ledger row back.
func (r *recorder) refusedInTx(_ context.Context, _ *sql.Tx, p *driver.FinishParams) ([]driver.FinishResult, error) {
	r.reportRefusal(p)
	return nil, nil
}
