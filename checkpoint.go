package leasehold

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/leasehold/leasehold/driver"
)

// Checkpoint records a durable checkpoint of the running job under its
// lease, in a transaction of its own: name says what it marks (a kind-like
// name, such as "charge-sent") and data, encoded as JSON, what a later
// attempt or a reconciler needs to know ("about to charge with key K",
// "the provider answered X"). Write one before an outside call that no
// fence can undo and one after it: the next owner of the job reads them
// (Client.Checkpoints) to tell whether the call may have happened.
//
// The write is fenced like every lease write, and by the lease not having
// expired by the database clock: a checkpoint written by a lost lease is
// refused with an error wrapping ErrLeaseLost, and nothing is recorded.
// Once ctx is done, nothing reaches the database and the error wraps
// context.Cause(ctx): ErrLeaseLost (or ErrLeaseNotRenewed, which wraps it)
// for a lease the client found lost or gave up.
// It returns ErrNotInHandler when ctx does not come from a running
// handler, and ErrInvalidArgs for a bad name or data that is not storable
// JSON.
//
// A refused name or data is a *PermanentError wrapping an
// *InvalidInputError (Field "checkpoint name" or "checkpoint data") that
// matches ErrInvalidArgs: nothing reached the database, and another
// attempt would build the same name and data and be refused again after
// repeating the work before it (perhaps the very outside call the
// checkpoint was to guard). A handler that returns it, or an error
// wrapping it with %w, so fails the job at once instead of spending its
// retry budget; one that handles it and returns another error is retried
// as usual. Only these refusals are permanent: ErrNotInHandler,
// ErrUnsupportedTx and ErrLeaseLost are not.
func Checkpoint(ctx context.Context, name string, data any) (*CheckpointRow, error) {
	return checkpoint(ctx, nil, name, data)
}

// CheckpointTx is Checkpoint inside the caller's transaction tx, so the
// checkpoint commits with the business writes or not at all; like
// FenceTx, it locks the job row until tx ends, and refuses a nil or
// foreign tx with ErrUnsupportedTx as FenceTx does (a foreign one before
// a bad name or data, and only in a handler).
func CheckpointTx(ctx context.Context, tx any, name string, data any) (*CheckpointRow, error) {
	if err := checkCallerTx(tx); err != nil {
		return nil, err
	}
	return checkpoint(ctx, tx, name, data)
}

// checkpoint is Checkpoint and CheckpointTx (tx nil: own transaction).
func checkpoint(ctx context.Context, tx any, name string, data any) (*CheckpointRow, error) {
	c, l, err := handlerLease(ctx, "Checkpoint")
	if err != nil {
		return nil, err
	}
	if err := driver.CheckTxOf(c.driver, tx); err != nil {
		return nil, err // before the name and data: see CheckpointTx
	}
	b, err := checkpointData(name, data, c.cfg.MaxPayloadBytes)
	if err != nil {
		return nil, Permanent(err) // the same call is refused again: see Checkpoint
	}
	if err := leaseGone(ctx, l); err != nil {
		return nil, fmt.Errorf("leasehold: checkpoint %s: %w", name, err)
	}
	row, err := c.driver.Checkpoint(ctx, tx, &driver.CheckpointParams{Lease: *c.fenceOf(l), Name: name, Data: b})
	if err != nil {
		return nil, fmt.Errorf("leasehold: checkpoint %s of job %d attempt %d: %w", name, l.Row.ID, l.Row.Attempt, err)
	}
	return row, nil
}

// checkpointData checks a checkpoint's name and returns its data encoded,
// or the *InvalidInputError refusing either: data every driver cannot
// store, or longer than limit (Config.MaxPayloadBytes) with its numbers
// written out as PostgreSQL stores and returns them, which Checkpoints
// could not read back.
func checkpointData(name string, data any, limit int) ([]byte, error) {
	if !validName(name) {
		return nil, invalid(ErrInvalidArgs, "checkpoint name", "%s: %s", nameProblem(name), nameRule)
	}
	b, err := json.Marshal(data)
	if err != nil {
		bad := invalid(ErrInvalidArgs, "checkpoint data", "checkpoint %s: cannot encode", name)
		bad.Cause = err
		return nil, bad
	}
	if string(b) == "null" { // nil, a nil map or pointer: none, stored as {} (CheckpointRow.Data)
		b = []byte("{}")
	}
	stored, p := jsonSize(b)
	if p != "" {
		return nil, invalid(ErrInvalidArgs, "checkpoint data", "checkpoint %s: %s", name, p)
	}
	if stored > int64(limit) {
		return nil, invalid(ErrPayloadTooLarge, "checkpoint data", "checkpoint %s: %d bytes, %d with its numbers written out in full as stored, limit %d",
			name, len(b), stored, limit)
	}
	return b, nil
}

// Checkpoints returns the checkpoints recorded for job jobID, by every
// attempt, in the order they were written: what a later attempt or a
// reconciler reads to learn how far an earlier attempt got. A job without
// checkpoints, or a missing one, has none.
func (c *Client) Checkpoints(ctx context.Context, jobID int64) ([]*CheckpointRow, error) {
	rows, err := c.driver.Checkpoints(ctx, jobID)
	if err != nil {
		return nil, fmt.Errorf("leasehold: checkpoints of job %d: %w", jobID, err)
	}
	return rows, nil
}
