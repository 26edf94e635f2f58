package pgdriver

import (
	"context"
	"fmt"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// checkpointSQL records one checkpoint ($4 name, $5 data) of the lease
// $1, $2, $3 when leaseHeldSQL finds it held, in one statement.
const checkpointSQL = `WITH lease AS (` + leaseHeldSQL + `)
INSERT INTO leasehold_checkpoints (job_id, attempt, name, data, written_at)
SELECT l.id, l.attempt, $4, $5::jsonb, clock_timestamp() FROM lease l
RETURNING ` + checkpointColumns

// checkpointColumns selects a leasehold_checkpoints row in
// scanCheckpoint's order.
const checkpointColumns = `job_id, seq, attempt, name, data, written_at`

// listCheckpointsSQL reads the checkpoints of job $1 in order.
const listCheckpointsSQL = `SELECT ` + checkpointColumns + ` FROM leasehold_checkpoints
WHERE job_id = $1 ORDER BY seq`

// Checkpoint records a checkpoint of the lease p names, fenced, in tx
// when it is non-nil; ErrLeaseLost when the lease is not held.
func (d *Driver) Checkpoint(ctx context.Context, tx any, p *driver.CheckpointParams) (*leasehold.CheckpointRow, error) {
	q, err := d.querierFor(tx)
	if err != nil {
		return nil, err
	}
	l := p.Lease
	rows, err := collect(ctx, q, scanCheckpoint, checkpointSQL, l.ID, l.Owner, l.Attempt, p.Name, jsonOrEmpty(p.Data))
	if err != nil {
		return nil, fmt.Errorf("pgdriver: checkpoint: %w", err)
	}
	if len(rows) == 0 {
		return nil, leaseLost(&l)
	}
	return rows[0], nil
}

// Checkpoints returns the checkpoints of job jobID, oldest first.
func (d *Driver) Checkpoints(ctx context.Context, jobID int64) ([]*leasehold.CheckpointRow, error) {
	rows, err := collect(ctx, pgxQuerier{d.pool}, scanCheckpoint, listCheckpointsSQL, jobID)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: checkpoints: %w", err)
	}
	return rows, nil
}

func scanCheckpoint(r scanner) (*leasehold.CheckpointRow, error) {
	var (
		c    leasehold.CheckpointRow
		data []byte
	)
	if err := r.Scan(&c.JobID, &c.Seq, &c.Attempt, &c.Name, &data, &c.WrittenAt); err != nil {
		return nil, err
	}
	c.Data = data
	return &c, nil
}
