package cli

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/leasehold/leasehold"
)

// RenderJobs prints jobs as a table; now is the database clock.
func RenderJobs(w io.Writer, jobs []*leasehold.JobRow, now time.Time) error {
	t := NewTable(w, "ID", "KIND", "QUEUE", "STATUS", "ATTEMPT", "RUN AT", "LEASE", "LAST ERROR")
	for _, j := range jobs {
		t.Row(strconv.FormatInt(j.ID, 10), j.Kind, j.Queue, string(j.State),
			fmt.Sprintf("%d/%d", j.ChargedAttempts(), j.MaxAttempts), Relative(j.RunAt, now),
			LeaseSummary(j, now), Truncate(j.LastError, 50))
	}
	return t.Flush()
}

// LeaseSummary describes the lease of a processing job: its owner and the
// time left (or since it expired); "-" for other jobs.
func LeaseSummary(j *leasehold.JobRow, now time.Time) string {
	if j.State != leasehold.StateProcessing || j.LeaseOwner == "" {
		return "-"
	}
	left := j.LeaseUntil.Sub(now)
	if left < 0 {
		return fmt.Sprintf("%s (expired %s ago)", j.LeaseOwner, FormatDuration(-left))
	}
	return fmt.Sprintf("%s (%s left)", j.LeaseOwner, FormatDuration(left))
}

// RenderJob prints one job, its lease and its attempt history.
func RenderJob(w io.Writer, info *leasehold.JobInfo, now time.Time) error {
	j := info.JobRow
	fmt.Fprintf(w, "job %d  %s  queue %s  %s\n", j.ID, j.Kind, j.Queue, j.State)
	kv := NewTable(w)
	kv.Row("  attempt", fmt.Sprintf("%d (%d of %d charged to the retry budget)", j.Attempt, j.ChargedAttempts(), j.MaxAttempts))
	kv.Row("  priority", strconv.Itoa(j.Priority))
	kv.Row("  args", string(j.Args))
	if len(j.Metadata) > 0 && string(j.Metadata) != "{}" {
		kv.Row("  metadata", string(j.Metadata))
	}
	if j.UniqueKey != "" {
		kv.Row("  unique key", j.UniqueKey)
	}
	kv.Row("  created", Timestamp(j.CreatedAt)+" ("+Relative(j.CreatedAt, now)+")")
	kv.Row("  run at", Timestamp(j.RunAt)+" ("+Relative(j.RunAt, now)+")")
	if !j.FinishedAt.IsZero() {
		kv.Row("  finished", Timestamp(j.FinishedAt)+" ("+Relative(j.FinishedAt, now)+")")
	}
	if j.State == leasehold.StateProcessing {
		kv.Row("  lease", leaseDetail(j, now))
	}
	if j.CancelRequested {
		kv.Row("  cancel", "requested: the handler is cancelled at its next heartbeat")
	}
	if j.LastError != "" {
		kv.Row("  last error", Truncate(j.LastError, 200))
	}
	if err := kv.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return renderAttempts(w, info.Attempts)
}

func leaseDetail(j *leasehold.JobRow, now time.Time) string {
	s := "held by " + j.LeaseOwner
	if left := j.LeaseUntil.Sub(now); left >= 0 {
		s += ", " + FormatDuration(left) + " left"
	} else {
		s += ", expired " + FormatDuration(-left) + " ago (the watcher or a new claim takes it back)"
	}
	if !j.HeartbeatAt.IsZero() {
		s += ", last heartbeat " + Relative(j.HeartbeatAt, now)
	}
	return s
}

func renderAttempts(w io.Writer, attempts []*leasehold.Attempt) error {
	if len(attempts) == 0 {
		fmt.Fprintln(w, "no attempts yet")
		return nil
	}
	t := NewTable(w, "ATTEMPT", "OWNER", "CLAIMED", "LAST HEARTBEAT", "ENDED", "OUTCOME", "ERROR")
	for _, a := range attempts {
		outcome := string(a.Outcome)
		if a.Outcome == leasehold.OutcomeRunning {
			outcome = "running"
		}
		t.Row(strconv.Itoa(a.Attempt), a.Owner, Timestamp(a.ClaimedAt), Timestamp(a.HeartbeatAt),
			Timestamp(a.EndedAt), outcome, Truncate(a.Error, 60))
	}
	return t.Flush()
}

// RenderQueues prints per-queue statistics.
func RenderQueues(w io.Writer, qs []*leasehold.QueueStats) error {
	if len(qs) == 0 {
		fmt.Fprintln(w, "no jobs")
		return nil
	}
	t := NewTable(w, "QUEUE", "PENDING", "PROCESSING", "COMPLETED", "FAILED", "CANCELLED", "STUCK",
		"OLDEST PENDING", "LIVE LEASES", "EXPIRED LEASES")
	for _, q := range qs {
		oldest := "-"
		if q.OldestPending > 0 {
			oldest = FormatDuration(q.OldestPending)
		}
		row := []string{q.Queue}
		for _, s := range leasehold.AllStates {
			row = append(row, strconv.FormatInt(q.Counts[s], 10))
		}
		row = append(row, oldest, strconv.FormatInt(q.LiveLeases, 10), strconv.FormatInt(q.ExpiredLeases, 10))
		t.Row(row...)
	}
	return t.Flush()
}

// StuckReason says why a job is listed by `jobs stuck`.
func StuckReason(j *leasehold.JobRow, now time.Time) string {
	if j.State == leasehold.StateStuck {
		return "flagged stuck: waiting for an operator (jobs retry / jobs cancel)"
	}
	return fmt.Sprintf("lease of %s expired %s ago", j.LeaseOwner, FormatDuration(now.Sub(j.LeaseUntil)))
}

// RenderStuck prints the jobs `jobs stuck` found.
func RenderStuck(w io.Writer, jobs []*leasehold.JobRow, now time.Time) error {
	if len(jobs) == 0 {
		fmt.Fprintln(w, "no stuck jobs")
		return nil
	}
	t := NewTable(w, "ID", "KIND", "QUEUE", "STATUS", "ATTEMPT", "REASON")
	for _, j := range jobs {
		t.Row(strconv.FormatInt(j.ID, 10), j.Kind, j.Queue, string(j.State), strconv.Itoa(j.Attempt), StuckReason(j, now))
	}
	return t.Flush()
}
