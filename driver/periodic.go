package driver

import (
	"time"

	"github.com/leasehold/leasehold/leasetype"
)

// PeriodicRegisterParams describe a schedule a process runs.
type PeriodicRegisterParams struct {
	Name  string
	Spec  string
	Kind  string
	Queue string
	// Next is the schedule's next slot; zero when it never fires again.
	Next time.Time
	// Grace is how late a slot may still be enqueued (PeriodicJob.Grace),
	// recorded with the schedule; zero records none.
	Grace time.Duration
}

// PeriodicInsertParams claim one slot of a schedule with its job.
type PeriodicInsertParams struct {
	Name string
	Spec string
	// Slot is the slot claimed: recorded as the schedule's last slot when
	// the claim wins.
	Slot time.Time
	// Next is the slot after Slot, recorded as the next slot; zero when
	// the schedule never fires again.
	Next time.Time
	// Grace is recorded as PeriodicRegisterParams.Grace is.
	Grace time.Duration
	// Job is the slot's job, inserted only when the claim wins. Its Kind
	// and Queue are recorded with the schedule.
	Job *InsertParams
}

// PeriodicInsertResult says whether a slot claim won.
type PeriodicInsertResult struct {
	// Claimed is true when this call recorded the slot (and inserted the
	// job); false when the schedule's last slot was already this slot or
	// a later one.
	Claimed bool
	// Job is the inserted job when Claimed (Duplicate when its unique key
	// existed, as for Insert). When not Claimed it is the slot's job as
	// found by its kind and unique key, as an insert finds a key's holder
	// (a scoped key within its scope and window); nil when there is none,
	// or when a scoped key's job has left its scope (it finished, or its
	// window passed).
	Job *leasetype.InsertResult
}
