package leasetype

import (
	"encoding/json"
	"time"
)

// ReconcileKind is the kind of the reconcile jobs the stuck watcher
// inserts for a queue that reconciles expired leases, unless the queue's
// policy names another.
const ReconcileKind = "leasehold.reconcile"

// ReconcileArgs are the arguments of a reconcile job: which job's lease
// expired, at which attempt, and what that attempt passed to outside
// systems. The stuck watcher inserts the job in the same transaction that
// moves the original to StateReconciling.
type ReconcileArgs struct {
	// JobID is the job whose lease expired, now reconciling.
	JobID int64 `json:"job_id"`
	// Attempt is the attempt whose lease expired: with JobID, it names
	// the reconciling job the resolution applies to.
	Attempt int `json:"attempt"`
	// IdempotencyKey is the original job's JobRow.IdempotencyKey, the key
	// its attempts passed to outside systems: ask them by it.
	IdempotencyKey string `json:"idempotency_key"`
	// JobKind and JobQueue are the reconciling job's kind and queue.
	JobKind  string `json:"job_kind"`
	JobQueue string `json:"job_queue"`
}

// Kind returns ReconcileKind.
func (ReconcileArgs) Kind() string { return ReconcileKind }

// CheckpointRow is one durable checkpoint a handler recorded under its
// lease, such as "about to charge with key K" or "provider answered X".
type CheckpointRow struct {
	JobID int64
	// Attempt is the attempt whose lease wrote it.
	Attempt int
	// Seq orders checkpoints: a later checkpoint has a higher Seq (not
	// consecutive).
	Seq  int64
	Name string
	// Data is the JSON the handler recorded ({} when none).
	Data json.RawMessage
	// WrittenAt is when it was written (database clock).
	WrittenAt time.Time
}
