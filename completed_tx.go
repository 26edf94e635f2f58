package leasehold

import (
	"context"

	"github.com/leasehold/leasehold/internal/engine"
)

// TxCompletion is what the CompleteTx calls of one handler run came to
// (see CompletedInTx).
type TxCompletion int

const (
	// TxCompletionNone: no CompleteTx of the run succeeded; the run's
	// outcome is what its handler returns.
	TxCompletionNone TxCompletion = iota
	// TxCompletionCommitted: a CompleteTx of the run succeeded in a
	// transaction that committed. The job is completed whatever the
	// handler then returns (an error, a panic) and even if Stop cut it off:
	// the client's own write for the run is refused by the fence, and the
	// client reports the attempt completed (EventFinished, Stats.Completed).
	TxCompletionCommitted
	// TxCompletionRolledBack: a CompleteTx of the run succeeded, but its
	// transaction did not commit. The run ends as if it had not been
	// called: the client writes, fenced, what the handler returned, except
	// that a nil is not a completion but a failure,
	// ErrCompleteTxRolledBack, charged to the retry budget.
	TxCompletionRolledBack
)

// String returns the value's name without its prefix: "none",
// "committed" or "rolled_back".
func (c TxCompletion) String() string {
	switch c {
	case TxCompletionCommitted:
		return "committed"
	case TxCompletionRolledBack:
		return "rolled_back"
	}
	return "none"
}

// CompletedInTx reports what the CompleteTx calls of the handler run
// whose context is ctx came to. Call it once the handler has returned,
// from a work middleware (ctx is the context the middleware received, or
// one derived from it): a middleware that reports a run's outcome from
// the handler's return alone misreports a run that completed its job in
// a transaction (contrib/otel uses it for its work spans). Outside a
// handler's context it returns TxCompletionNone.
//
// It tells a committed transaction from one rolled back as the client
// itself does once the handler has returned: by the attempt's history
// row, which a committed CompleteTx wrote, ending the attempt completed
// by this client. So a run with a successful CompleteTx costs one read
// of the database, bounded to a second and made even when ctx is done
// (a handler cut off by Stop); a run without one costs nothing. When the
// history cannot be read (the driver has no driver.EndedReader, or the
// read fails), it answers TxCompletionCommitted, as the client then
// reports the attempt completed.
func CompletedInTx(ctx context.Context) TxCompletion {
	c := ClientFromContext(ctx)
	l := engine.FromContext(ctx)
	if c == nil || l == nil || !l.CompletedInTx() {
		return TxCompletionNone
	}
	if done, _ := c.completedEarlier(context.WithoutCancel(ctx), l); done {
		return TxCompletionCommitted
	}
	return TxCompletionRolledBack
}
