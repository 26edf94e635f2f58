package leasehold

import (
	"context"
	"fmt"

	"github.com/leasehold/leasehold/internal/engine"
)

// CheckLease reports whether the lease of the job whose handler received
// ctx may still be relied on, measured on the client's own monotonic clock
// from when the last successful claim or renewal of that lease was sent.
// A handler calls it right before an outside-facing step that no fence can
// undo, such as a call to a payment provider: once LeaseTTL -
// LeaseSafetyMargin has passed since that send, another worker may own the
// job before the step is over, so the step must not start.
//
// It returns nil while the lease is inside that safe window: nobody else
// can then take the job over for at least LeaseSafetyMargin, even if no
// renewal succeeds meanwhile, which bounds how long the guarded step may
// take. It returns an error wrapping ErrLeaseLost once the window has
// passed or the lease was found lost, given up or released (at shutdown
// too, once the client has cut the handler off: the lease is being given
// back); ctx's cause when ctx is otherwise done (operator cancel, a
// deadline of the handler's own); and ErrNotInHandler when ctx does not
// come from a running handler.
func CheckLease(ctx context.Context) error {
	l := engine.FromContext(ctx)
	if l == nil {
		return fmt.Errorf("%w: CheckLease needs the context of a running handler", ErrNotInHandler)
	}
	if err := l.Usable(); err != nil {
		return err
	}
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("leasehold: job %d attempt %d: %w", l.Row.ID, l.Row.Attempt, err)
	}
	return nil
}
