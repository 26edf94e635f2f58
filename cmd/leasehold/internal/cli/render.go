package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/jsonshow"
	"github.com/leasehold/leasehold/view"
)

// RenderJobs prints jobs as a table; now is the database clock. CLAIMS
// counts every lease the job was given; CHARGED/MAX the attempts charged to
// its retry budget (a release or a snooze is not charged) out of the
// budget.
func RenderJobs(w io.Writer, jobs []*leasehold.JobRow, now time.Time) error {
	t := NewTable(w, "ID", "KIND", "QUEUE", "STATUS", "CLAIMS", "CHARGED/MAX", "WHEN", "LEASE", "LAST ERROR")
	for _, j := range jobs {
		t.Row(strconv.FormatInt(j.ID, 10), j.Kind, j.Queue, string(j.State), strconv.Itoa(j.Attempt),
			fmt.Sprintf("%d/%d", j.ChargedAttempts(), j.MaxAttempts), When(j, now),
			LeaseSummary(j, now), Truncate(j.LastError, 50))
	}
	return t.Flush()
}

// When says when a job runs or ran: "runs in 5m" or "due 3s ago" for a
// job waiting to run, "finished 2m ago" for a finished one, "-" for a
// processing one (its LEASE says more), and what a stuck or reconciling
// job waits for (see Waits).
func When(j *leasehold.JobRow, now time.Time) string {
	switch {
	case j.State.Finished():
		if j.FinishedAt.IsZero() {
			return "finished"
		}
		return "finished " + Relative(j.FinishedAt, now)
	case j.State == leasehold.StateProcessing:
		return "-"
	case Waits(j) != "":
		return Waits(j)
	case j.RunAt.After(now):
		return "runs " + Relative(j.RunAt, now)
	}
	if r := Relative(j.RunAt, now); r != "now" {
		return "due " + r
	}
	return "due now"
}

// Waits says what a stuck or reconciling job waits for, "" for a job in
// another state (see view.Waits).
func Waits(j *leasehold.JobRow) string { return view.Waits(j.State) }

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
	// <, > and & as characters on both drivers (SQLite keeps the \u003c
	// escapes json.Marshal wrote; PostgreSQL's jsonb does not).
	kv.Row("  args", string(jsonshow.UnescapeHTML(j.Args)))
	if len(j.Metadata) > 0 && string(j.Metadata) != "{}" {
		kv.Row("  metadata", string(jsonshow.UnescapeHTML(j.Metadata)))
	}
	if j.UniqueKey != "" {
		kv.Row("  unique key", j.UniqueKey)
	}
	kv.Row("  created", At(j.CreatedAt, now))
	switch {
	case Waits(j) != "":
		kv.Row("  run at", "- ("+Waits(j)+")")
	case !j.State.Finished():
		kv.Row("  run at", At(j.RunAt, now))
	}
	if !j.FinishedAt.IsZero() {
		kv.Row("  finished", At(j.FinishedAt, now))
	}
	if j.State == leasehold.StateProcessing {
		kv.Row("  lease", leaseDetail(j, now))
	}
	if c := cancelNote(j, now); c != "" {
		kv.Row("  cancel", c)
	}
	if j.LastError != "" {
		label, text := lastError(j, info.Attempts)
		kv.Row(label, Truncate(text, 200))
	}
	if err := kv.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return renderAttempts(w, j, info.Attempts)
}

// lastError labels the job's last error. A completed job's last error is
// an earlier attempt's, which was retried: it is shown as that, with the
// attempt it came from, so that it does not read as the job's problem.
func lastError(j *leasehold.JobRow, attempts []*leasehold.Attempt) (label, text string) {
	if j.State != leasehold.StateCompleted {
		return "  last error", j.LastError
	}
	from := "an earlier attempt"
	for i := len(attempts) - 1; i >= 0; i-- {
		if a := attempts[i]; a.Error != "" && a.Attempt != j.Attempt {
			from = "attempt " + strconv.Itoa(a.Attempt)
			break
		}
	}
	return "  earlier error", fmt.Sprintf("%s (%s; attempt %d completed)", j.LastError, from, j.Attempt)
}

// leaseDetail describes the lease of a processing job: its owner, the
// time left or since it expired, and its last heartbeat. No claim takes
// over an expired lease whose job has a cancel requested: the watcher
// alone ends it.
func leaseDetail(j *leasehold.JobRow, now time.Time) string {
	s := "held by " + j.LeaseOwner
	switch left := j.LeaseUntil.Sub(now); {
	case left >= 0:
		s += ", " + FormatDuration(left) + " left"
	case j.CancelRequested:
		s += ", expired " + FormatDuration(-left) + " ago (the watcher takes it back)"
	default:
		s += ", expired " + FormatDuration(-left) + " ago (the watcher or a new claim takes it back)"
	}
	if j.HeartbeatAt.IsZero() {
		return s + ", no heartbeat yet"
	}
	return s + ", last heartbeat " + At(j.HeartbeatAt, now)
}

// cancelNote says what an operator's cancel request means for the job
// at now (database clock): pending while the handler runs, or until the
// watcher ends a job whose lease expired (no heartbeat comes to see the
// request), waiting for the reconciler's decision, fulfilled once the
// job ended cancelled, moot when the job finished otherwise.
func cancelNote(j *leasehold.JobRow, now time.Time) string {
	switch {
	case !j.CancelRequested:
		return ""
	case j.State == leasehold.StateProcessing && j.LeaseUntil.Before(now):
		return "requested, but the lease expired: the stuck watcher ends the job at its next pass " +
			"(in a queue that reconciles, its reconciler decides first)"
	case j.State == leasehold.StateProcessing:
		return "requested: the handler is cancelled at its next heartbeat"
	case j.State == leasehold.StateReconciling:
		return "requested while it ran; its reconciler decides first, and a retry cancels it"
	case j.State == leasehold.StateStuck:
		return "requested while it ran; left for an operator to retry or cancel"
	case j.State == leasehold.StateCancelled:
		return "requested while it ran; the job ended cancelled"
	case j.State.Finished():
		return "requested while it ran; the job ended " + string(j.State) + " first"
	}
	return ""
}

// At renders t as a timestamp with the time relative to now in
// parentheses, or "-" when t is zero.
func At(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return Timestamp(t) + " (" + Relative(t, now) + ")"
}

func renderAttempts(w io.Writer, j *leasehold.JobRow, attempts []*leasehold.Attempt) error {
	if len(attempts) == 0 {
		fmt.Fprintln(w, "no attempts yet")
		return nil
	}
	t := NewTable(w, "ATTEMPT", "OWNER", "CLAIMED", "LAST HEARTBEAT", "ENDED", "OUTCOME", "ERROR")
	for _, a := range attempts {
		t.Row(strconv.Itoa(a.Attempt), a.Owner, Timestamp(a.ClaimedAt), Timestamp(view.AttemptHeartbeat(j, a)),
			Timestamp(a.EndedAt), view.OutcomeName(a.Outcome), Truncate(a.Error, 60))
	}
	return t.Flush()
}

// RenderQueues prints per-queue statistics, then a warning for each kind
// whose due jobs wait unclaimed (see view.Suspect).
func RenderQueues(w io.Writer, qs []*leasehold.QueueStats, unclaimedAfter time.Duration) error {
	if err := renderQueueTable(w, qs); err != nil {
		return err
	}
	return RenderUnclaimed(w, qs, unclaimedAfter)
}

// RenderUnclaimed prints one line for each kind whose never-claimed due
// jobs have waited longer than after with none of the kind running:
// probably no running worker handles it, unless its queue is paused,
// which the line then says instead.
func RenderUnclaimed(w io.Writer, qs []*leasehold.QueueStats, after time.Duration) error {
	for _, q := range qs {
		for _, b := range q.NeverClaimed {
			if !view.Suspect(b, after) {
				continue
			}
			jobs := "jobs"
			if b.Due == 1 {
				jobs = "job"
			}
			why := "none of this kind running: is a worker for it running?"
			if q.Paused {
				why = "the queue is paused (leasehold queues resume " + Truncate(q.Queue, 80) + ")"
			}
			_, err := fmt.Fprintf(w, "kind %s in queue %s: %d due %s never claimed, the oldest due for %s, %s\n",
				Truncate(b.Kind, 80), Truncate(q.Queue, 80), b.Due, jobs, FormatDuration(b.OldestDue), why)
			if err != nil {
				return fmt.Errorf("write: %w", err)
			}
		}
	}
	return nil
}

func renderQueueTable(w io.Writer, qs []*leasehold.QueueStats) error {
	if len(qs) == 0 {
		fmt.Fprintln(w, "no jobs")
		return nil
	}
	head := []string{"QUEUE"}
	for _, s := range leasehold.AllStates { // one column per state, as each row has
		head = append(head, strings.ToUpper(string(s)))
	}
	t := NewTable(w, append(head, "OLDEST PENDING", "LIVE LEASES", "EXPIRED LEASES", "PAUSED")...)
	for _, q := range qs {
		oldest := "-"
		if q.OldestPending > 0 {
			oldest = FormatDuration(q.OldestPending)
		}
		row := []string{q.Queue}
		for _, s := range leasehold.AllStates {
			row = append(row, strconv.FormatInt(q.Counts[s], 10))
		}
		paused := "no"
		if q.Paused {
			paused = "yes"
		}
		row = append(row, oldest, strconv.FormatInt(q.LiveLeases, 10), strconv.FormatInt(q.ExpiredLeases, 10), paused)
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

// StatsSummary is the line `leasehold work` prints when it stops: every
// counter, then, when some outcomes could not be written (the database
// unreachable at shutdown, or its file gone), how many leases were left behind and when
// their jobs come back. ttl is the worker's lease TTL.
func StatsSummary(s view.StatsView, ttl time.Duration) string {
	line := fmt.Sprintf("worker %s stopped: claimed %d, completed %d, retried %d, failed %d, snoozed %d, cancelled %d, flagged stuck %d, panicked %d, released %d, skipped late %d, leases lost %d, late writes refused %d, outcomes dropped %d, rescued %d, taken over %d, claimed again %d, heartbeat errors %d, finish errors %d, claim errors %d, events dropped %d",
		s.Owner, s.Claimed, s.Completed, s.Retried, s.Failed, s.Snoozed, s.Cancelled, s.Flagged, s.Panics, s.Released,
		s.SkippedLate, s.LeaseLost, s.FinishRefused, s.OutcomesDropped, s.Rescued, s.TakenOver, s.ClaimedAgain,
		s.HeartbeatErrors, s.FinishErrors, s.ClaimErrors, s.EventsDropped)
	switch n := s.OutcomesDropped; {
	case n == 1:
		line += fmt.Sprintf("\ncould not release 1 lease or record its outcome (the database did not take the write): its job comes back when the lease expires, within the lease TTL (%s)",
			FormatDuration(ttl))
	case n > 1:
		line += fmt.Sprintf("\ncould not release %d leases or record their outcomes (the database did not take the writes): their jobs come back when the leases expire, within the lease TTL (%s)",
			n, FormatDuration(ttl))
	}
	return line
}
