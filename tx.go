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

// txIdentity returns a comparable identity for a caller's transaction, so
// that two calls can tell whether they were given the same one; ok is
// false when tx's type is not a pointer (then calls cannot be matched).
func txIdentity(tx any) (id any, ok bool) {
	if reflect.ValueOf(tx).Kind() != reflect.Pointer {
		return nil, false
	}
	return tx, true
}

// callerTx is the identity of a caller's transaction (see txIdentity).
type callerTx struct{ id any }

// completedIn reports whether a CompleteTx of rj already succeeded in tx.
func (rj *runningJob) completedIn(tx any) bool {
	id, ok := txIdentity(tx)
	last := rj.completedTx.Load()
	return ok && last != nil && last.id == id
}

// markCompletedIn records that a CompleteTx of rj succeeded in tx. The
// reference keeps tx alive, so a later transaction cannot share its
// identity.
func (rj *runningJob) markCompletedIn(tx any) {
	rj.completedInTx.Store(true)
	if id, ok := txIdentity(tx); ok {
		rj.completedTx.Store(&callerTx{id: id})
	}
}
