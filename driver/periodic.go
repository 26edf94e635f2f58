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
	// Deadline, when not zero, is the latest time, by the database clock,
	// at which the slot may still be claimed (a slot enqueued after its
	// grace ran out would be missed, not late): a claim whose transaction
	// finds the clock past it, after any wait for a concurrent claim of
	// the schedule, is refused with Late set and nothing is written. The
	// enqueuer gives Slot + Grace for an on-time slot and no deadline for
	// the catch-up slot (PeriodicJob.CatchUp), which is past its grace
	// by definition.
	Deadline time.Time
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
	// Late is true when the claim was refused because the database clock
	// was past PeriodicInsertParams.Deadline while the schedule's last
	// slot was still before Slot: the slot was not enqueued in time, and
	// nothing was written or looked up (Job is nil). A slot already
	// taken (the last slot is Slot or later) is reported as taken, not
	// late, whatever the clock.
	Late bool
	// Job is the inserted job when Claimed (Duplicate when its unique key
	// existed, as for Insert). When not Claimed it is the slot's job as
	// found by its kind and unique key, as an insert finds a key's holder
	// (a scoped key within its scope and window); nil when there is none,
	// or when a scoped key's job has left its scope (it finished, or its
	// window passed).
	Job *leasetype.InsertResult
}
