package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// checkpointColumns selects a leasehold_checkpoints row in
// scanCheckpoint's order.
const checkpointColumns = `job_id, seq, attempt, name, data, written_at`

// insertCheckpointSQL records checkpoint ?4 (name) ?5 (data) of job ?2 at
// attempt ?3, at ?1; leaseHeld has checked the lease in the transaction.
const insertCheckpointSQL = `INSERT INTO leasehold_checkpoints (job_id, attempt, name, data, written_at)
VALUES (?2, ?3, ?4, ?5, ?1)
RETURNING ` + checkpointColumns

// listCheckpointsSQL reads the checkpoints of job ?1 in order.
const listCheckpointsSQL = `SELECT ` + checkpointColumns + ` FROM leasehold_checkpoints
WHERE job_id = ?1 ORDER BY seq`

// Checkpoint records a checkpoint of the lease p names, fenced, in tx
// when it is non-nil; ErrLeaseLost when the lease is not held.
func (d *Driver) Checkpoint(ctx context.Context, tx any, p *driver.CheckpointParams) (*leasehold.CheckpointRow, error) {
	t, err := asTx(tx)
	if err != nil {
		return nil, err
	}
	var row *leasehold.CheckpointRow
	err = d.withTx(ctx, t, func(ctx context.Context, tx *sql.Tx, now int64) error {
		if err := d.leaseHeld(ctx, tx, &p.Lease); err != nil {
			return err
		}
		var err error
		row, err = scanCheckpoint(d.queryRow(ctx, tx, insertCheckpointSQL, now, p.Lease.ID, p.Lease.Attempt,
			p.Name, jsonText(p.Data)))
		if err != nil {
			return fmt.Errorf("sqlitedriver: checkpoint: %w", err)
		}
		return nil
	}, leaseHeldSQL, insertCheckpointSQL)
	if err != nil {
		return nil, err
	}
	return row, nil
}

// Checkpoints returns the checkpoints of job jobID, oldest first.
func (d *Driver) Checkpoints(ctx context.Context, jobID int64) ([]*leasehold.CheckpointRow, error) {
	rows, err := d.dbQuery(ctx, listCheckpointsSQL, jobID)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: checkpoints: %w", d.wrapErr(err))
	}
	out, err := scanAll(rows, scanCheckpoint)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: checkpoints: %w", d.wrapErr(err))
	}
	return out, nil
}

func scanCheckpoint(s scanner) (*leasehold.CheckpointRow, error) {
	var (
		c       leasehold.CheckpointRow
		data    []byte
		written int64
	)
	if err := s.Scan(&c.JobID, &c.Seq, &c.Attempt, &c.Name, &data, &written); err != nil {
		return nil, err
	}
	c.Data, c.WrittenAt = data, fromMicros(written)
	return &c, nil
}
