package leasehold_test

import (
	"context"
	"errors"
	"testing"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// TestInsertTxRefusesForeignTxFirst: InsertTx and InsertMany refuse a
// transaction the driver cannot use before the insert middleware runs,
// as CompleteTx does: a middleware that writes with the transaction it is
// given must not write into one of another type or database.
func TestInsertTxRefusesForeignTxFirst(t *testing.T) {
	eachDriver(t, func(t *testing.T, d driver.Driver) {
		calls := 0
		c, err := leasehold.NewClient(leasehold.Config{Driver: d, Workers: leasehold.NewWorkers(),
			InsertMiddleware: []leasehold.InsertMiddleware{leasehold.InsertMiddlewareFunc(
				func(ctx context.Context, _ any, _ []*leasehold.InsertJob,
					next func(context.Context) ([]*leasehold.InsertResult, error)) ([]*leasehold.InsertResult, error) {
					calls++
					return next(ctx)
				})}})
		if err != nil {
			t.Fatal(err)
		}
		type notATx struct{ name string }
		foreign := &notATx{"a transaction of another library"}
		if _, err := c.InsertTx(t.Context(), foreign, lifecycleArgs{}, nil); !errors.Is(err, leasehold.ErrUnsupportedTx) {
			t.Errorf("InsertTx with %T: %v, want ErrUnsupportedTx", foreign, err)
		}
		if _, err := c.InsertMany(t.Context(), foreign, []leasehold.InsertManyParams{{Args: lifecycleArgs{}}}); !errors.Is(err, leasehold.ErrUnsupportedTx) {
			t.Errorf("InsertMany with %T: %v, want ErrUnsupportedTx", foreign, err)
		}
		if calls != 0 {
			t.Errorf("the insert middleware ran %d times with a transaction the driver refuses", calls)
		}
	})
}
