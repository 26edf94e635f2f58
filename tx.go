package leasehold

import (
	"fmt"
	"reflect"
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
