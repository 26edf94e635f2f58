package leasetype

import "time"

// PeriodicRow is one schedule as the database records it (the
// leasehold_periodic table): every process running a schedule of that
// name writes it, so any machine can read when the schedule last
// enqueued a job and when it runs next.
type PeriodicRow struct {
	// Name names the schedule; processes that share a name share its
	// slots.
	Name string
	// Spec is the schedule as its processes describe it (a cron
	// expression with its time zone, or an interval).
	Spec string
	// Kind and Queue are those of the schedule's jobs.
	Kind  string
	Queue string
	// LastSlot is the latest slot claimed, zero when none was yet;
	// LastJobID is the job inserted for it (0 when none was inserted,
	// for example when the job's unique key existed).
	LastSlot  time.Time
	LastJobID int64
	// NextSlot is the slot after LastSlot (or after the registration, if
	// no slot was claimed since), zero when the schedule never fires
	// again. It is what the processes computed: a NextSlot long past
	// means no process runs the schedule.
	NextSlot time.Time
	// Grace is how late the processes running the schedule still enqueue
	// a slot (PeriodicJob.Grace): a NextSlot older than that was missed.
	// Zero when no process of schema version 15 or later has recorded
	// the schedule.
	Grace time.Duration
	// CreatedAt is when a process first registered the schedule;
	// UpdatedAt when a process last registered it or claimed a slot
	// (database clock).
	CreatedAt time.Time
	UpdatedAt time.Time
}
