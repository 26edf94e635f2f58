package leasetype

import "time"

// InsertResult is the outcome of inserting one job.
type InsertResult struct {
	Job *JobRow
	// Duplicate is true when another job held the unique key (within its
	// scope and window) and Job is that job: the one that blocked the
	// insert.
	Duplicate bool
}

// ListParams filters ListJobs. Zero values match everything, except
// Limit: a zero Limit returns at most 100 jobs (driver.DefaultListLimit).
// To read every match, page with AfterID (or BeforeID with Desc).
type ListParams struct {
	// States selects jobs in any of these states; empty selects all.
	States []JobState
	// Queue, Kind and Owner, when not empty, select the jobs of that
	// queue, of that kind, and whose lease_owner is that worker instance.
	Queue string
	Kind  string
	Owner string
	// AfterID, when positive, selects jobs with an id above it: the keyset
	// for paging through ascending results (pass the last id seen).
	AfterID int64
	// BeforeID, when positive, selects jobs with an id below it: the
	// keyset for paging through Desc results (pass the last id seen).
	BeforeID int64
	// Limit caps the jobs returned; 0 means 100 (driver.DefaultListLimit).
	Limit int
	// Expired selects processing jobs whose lease has expired.
	Expired bool
	// Desc orders the result by id descending, newest first, so that Limit
	// keeps the newest matches; the default is ascending (oldest first).
	Desc bool
	// Search, when not empty, selects jobs with a JSON string value, at
	// any depth of their args or metadata, that contains it: ASCII letters
	// match whatever their case, every other character exactly, the same
	// on every driver (keys, numbers and booleans are not searched; % and
	// _ are not wildcards). No index serves it: each candidate job's args
	// and metadata are read, in id order, until Limit jobs match, so a
	// search on its own that matches few jobs reads the whole table (on
	// PostgreSQL a few milliseconds per thousand jobs when the text is
	// rare, up to ten times that when it is also a key name, which the
	// cheap first check cannot rule out); narrow it with the other
	// filters, or bound the ids it reads with AfterID and BeforeID, as the
	// dashboard does.
	Search string
	// ByFinish orders the result by finish time, then id (descending with
	// Desc), instead of by id, and selects finished jobs only: the order
	// an index serves for completed jobs whatever the size of the table.
	// To page, pass the last job's FinishedAt in FinishedAt and its ID in
	// BeforeID (with Desc) or AfterID; jobs that finished at the same
	// instant are then ordered by id.
	ByFinish bool
	// FinishedAt is ByFinish's keyset: with it, the result starts after
	// (FinishedAt, BeforeID or AfterID) in ByFinish order.
	FinishedAt time.Time
}

// QueueStats summarises one queue.
type QueueStats struct {
	Queue  string
	Counts map[JobState]int64
	// Paused is set while the queue is paused: no worker claims its jobs
	// (running ones finish normally). A paused queue is reported even
	// when it has no jobs.
	Paused bool
	// PausedAt is when the queue was paused, by the database clock; zero
	// when it is not paused.
	PausedAt time.Time
	// OldestPending is the age, by the database clock, of the oldest
	// pending job whose run_at has passed; zero when none. An age past
	// the largest Duration (about 292 years) reads as that Duration.
	OldestPending time.Duration
	// LiveLeases counts processing jobs whose lease has not expired.
	LiveLeases int64
	// ExpiredLeases counts processing jobs whose lease has expired.
	ExpiredLeases int64
	// NeverClaimed lists, per kind (sorted), the pending jobs of the queue
	// that are due and that no worker ever claimed (attempt 0), with the
	// kind's live leases. Old never-claimed jobs of a kind with no live
	// lease usually mean that no running worker handles that kind: there is
	// no registry of workers, so this is what the jobs themselves show.
	NeverClaimed []*KindBacklog
	// Estimated lists the states whose count is the database's estimate
	// rather than an exact count: ActiveQueueStats counts each state of a
	// queue exactly up to its CountLimit and estimates beyond it. Empty
	// for QueueStats, whose counts are exact.
	Estimated []JobState
}

// KindBacklog is the never-claimed due work of one kind in one queue.
type KindBacklog struct {
	Kind string
	// Due counts pending jobs of the kind whose run_at has passed and
	// whose attempt is 0.
	Due int64
	// OldestDue is how long, by the database clock, the oldest of them
	// has been due, at most the largest Duration (about 292 years).
	OldestDue time.Duration
	// LiveLeases counts the kind's processing jobs whose lease has not
	// expired: a worker for the kind is running when it is positive.
	LiveLeases int64
}

// RescuedJob is one job the watcher moved.
type RescuedJob struct {
	ID       int64
	Queue    string
	Kind     string
	Attempt  int
	Owner    string
	NewState JobState
	// ReconcileJobID is the reconcile job inserted with the move when
	// NewState is reconciling (0 otherwise, or when the reconcile job
	// existed already).
	ReconcileJobID int64
}

// ThroughputCount is a number of jobs of one queue that finished an
// attempt with one outcome.
type ThroughputCount struct {
	Queue   string
	Outcome Outcome
	Jobs    int64
}

// ThroughputBucket is the jobs of one queue that finished an attempt with
// one outcome during one minute (database clock).
type ThroughputBucket struct {
	Minute time.Time
	ThroughputCount
}
