package leasehold

import "errors"

// Sentinel errors. Callers branch on them with errors.Is; the library wraps
// them with context using %w.
var (
	// ErrLeaseLost reports that a write made on behalf of a lease found no
	// row matching (id, status = 'processing', lease_owner, attempt): the
	// lease expired and was taken over, the job was cancelled, or it was
	// already finished. The write was refused and changed nothing. It is also
	// the cause of a handler context cancelled because its lease is gone.
	ErrLeaseLost = errors.New("leasehold: lease lost")

	// ErrJobCancelled is the cause of a handler context cancelled because an
	// operator cancelled the job while it ran.
	ErrJobCancelled = errors.New("leasehold: job cancelled")

	// ErrJobNotFound reports that no job has the given id.
	ErrJobNotFound = errors.New("leasehold: job not found")

	// ErrJobRunning reports an operator action that is not allowed while the
	// job is processing under a lease (for example retrying it).
	ErrJobRunning = errors.New("leasehold: job is processing")

	// ErrJobFinished reports an operator action on a job that is already in
	// a terminal state (completed, failed or cancelled) where that is not
	// allowed.
	ErrJobFinished = errors.New("leasehold: job already finished")

	// ErrInvalidKind reports an empty or malformed job kind.
	ErrInvalidKind = errors.New("leasehold: invalid job kind")

	// ErrInvalidQueue reports an empty or malformed queue name.
	ErrInvalidQueue = errors.New("leasehold: invalid queue name")

	// ErrInvalidArgs reports job arguments or metadata that are not valid
	// JSON, or insert options out of range.
	ErrInvalidArgs = errors.New("leasehold: invalid job arguments")

	// ErrPayloadTooLarge reports encoded job arguments larger than
	// Config.MaxPayloadBytes.
	ErrPayloadTooLarge = errors.New("leasehold: job payload too large")

	// ErrUnknownKind reports a job kind for which no worker is registered
	// where one is required.
	ErrUnknownKind = errors.New("leasehold: no worker registered for kind")

	// ErrInvalidConfig reports a Config that cannot work, such as a
	// heartbeat interval not well below the lease TTL.
	ErrInvalidConfig = errors.New("leasehold: invalid config")

	// ErrUnsupportedTx reports a transaction value of a type the driver
	// cannot use (see the driver's documentation for the accepted types).
	ErrUnsupportedTx = errors.New("leasehold: unsupported transaction type")

	// ErrClientStopped is returned by Start on a stopped client and by
	// operations that need a running client after Stop.
	ErrClientStopped = errors.New("leasehold: client stopped")

	// ErrNotInHandler reports CompleteTx called with a job that is not
	// currently running under this client's lease.
	ErrNotInHandler = errors.New("leasehold: job is not running in this client")
)
