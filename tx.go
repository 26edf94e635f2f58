package leasehold

import (
	"fmt"
	"reflect"

	"github.com/leasehold/leasehold/driver"
)

// checkCallerTx refuses a caller's transaction that is nil, or a typed nil
// (a nil *sql.Tx, a nil pointer implementing pgx.Tx): a driver would
// otherwise either fail on it deep in its SQL or, worse, run the write
// outside any transaction, so that it commits even when the caller's
// business writes roll back.
func checkCallerTx(tx any) error {
	if tx == nil {
		return fmt.Errorf("%w: nil transaction: pass the transaction the business writes run in", ErrUnsupportedTx)
	}
	if isNilTx(tx) {
		return fmt.Errorf("%w: nil %T: begin the transaction before passing it", ErrUnsupportedTx, tx)
	}
	return nil
}

// checkTx is checkCallerTx, then the driver's own check of tx's type
// (driver.TxChecker): a transaction the driver cannot use is refused with
// ErrUnsupportedTx before any other check of the call, such as whether
// the job runs in this client. FenceTx and CheckpointTx find the client,
// and so the driver, in the handler's context: outside a handler they
// can check only for a nil tx before reporting ErrNotInHandler.
func (c *Client) checkTx(tx any) error {
	if err := checkCallerTx(tx); err != nil {
		return err
	}
	return driver.CheckTxOf(c.driver, tx)
}

// isNilTx reports whether tx is nil or holds a nil pointer, map, slice,
// channel or func, such as a *sql.Tx declared but never begun.
func isNilTx(tx any) bool {
	if tx == nil {
		return true
	}
	switch v := reflect.ValueOf(tx); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return v.IsNil()
	}
	return false
}
