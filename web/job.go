package web

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/view"
)

// maxShownAttempts is how many attempts the job page shows: the latest
// ones, in its history table and its lease timeline alike. A job that
// snoozes every 30 s for a week, or that operators retried again and
// again, has tens of thousands of attempts, each with up to
// leasehold.MaxErrorText of error text; shown whole, its page would run
// to hundreds of MB. 100 is five times the default retry budget
// (leasehold.DefaultMaxAttempts), so a job that fails through its budget
// still shows its whole history, while the page stays under about 2 MB
// even when every attempt has a full error, and the timeline under 4000
// units high. `leasehold jobs show ID` lists every attempt.
const maxShownAttempts = 100

// jobData is the job page's.
type jobData struct {
	// Job is the job with the attempts the page shows (the latest
	// maxShownAttempts), oldest first.
	Job      view.JobInfoView
	Timeline *timeline
	// Earlier describes the attempts before those shown; its Count is 0
	// when the page shows them all.
	Earlier earlier
	// CanRetry, CanCancel and CanDelete say which actions the job's state
	// allows.
	CanRetry, CanCancel, CanDelete bool
	// Completed asks the retry form for a confirmation: the job's handler
	// ran to success and would run again.
	Completed bool
	// Notice is the outcome of the action that led here, if any.
	Notice string
	// Resolved is set when a shown attempt has a reconciler's resolution:
	// the history then has a column for it.
	Resolved bool
}

// earlier is the part of a job's attempt history that its page leaves
// out: the attempts before the latest maxShownAttempts.
type earlier struct {
	// Count is how many attempts are not shown, of Total; First and Last
	// are the first and the last of their attempt numbers.
	Count, Total, First, Last int
	// Resolved counts those with a reconciler's resolution.
	Resolved int
}

// latest splits the attempt history as (oldest first) into the latest n
// attempts, which the page shows, and a summary of the earlier ones.
func latest(as []view.AttemptView, n int) ([]view.AttemptView, earlier) {
	e := earlier{Total: len(as), Count: max(len(as)-n, 0)}
	if e.Count == 0 {
		return as, e
	}
	hidden := as[:e.Count]
	e.First, e.Last = hidden[0].Attempt, hidden[len(hidden)-1].Attempt
	for _, a := range hidden {
		if a.Resolution != "" {
			e.Resolved++
		}
	}
	return as[e.Count:], e
}

// job shows one job: arguments, metadata, errors and its lease timeline.
func (h *handler) job(w http.ResponseWriter, r *http.Request) {
	id, ok := h.jobID(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	info, err := h.client.GetJob(ctx, id)
	if errors.Is(err, leasehold.ErrJobNotFound) {
		h.fail(w, r, http.StatusNotFound, "job "+strconv.FormatInt(id, 10)+" not found")
		return
	}
	if err != nil {
		h.failErr(w, r, http.StatusInternalServerError, err)
		return
	}
	now, err := h.now(ctx)
	if err != nil {
		h.failErr(w, r, http.StatusInternalServerError, err)
		return
	}
	v := view.NewJobInfoView(info, now)
	var e earlier
	v.Attempts, e = latest(v.Attempts, maxShownAttempts)
	d := jobData{
		Job: v, Timeline: newTimeline(v, now), Earlier: e, Notice: noticeText(r.URL.Query().Get("done"), info.JobRow),
		CanRetry: info.State != leasehold.StateProcessing, CanCancel: !info.State.Finished(),
		CanDelete: info.State.Finished(), Completed: info.State == leasehold.StateCompleted,
		Resolved: resolved(v.Attempts),
	}
	h.render(w, r, "job", "Job "+strconv.FormatInt(id, 10), d)
}

// resolved reports whether an attempt of as records a reconciler's
// resolution.
func resolved(as []view.AttemptView) bool {
	for _, a := range as {
		if a.Resolution != "" {
			return true
		}
	}
	return false
}

// jobID parses the {id} of the path, answering 400 when it is not one.
func (h *handler) jobID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		h.fail(w, r, http.StatusBadRequest, "not a job id")
		return 0, false
	}
	return id, true
}

// noticeText is the message of the finished action done, by its name,
// when the job j is as that action leaves it: pending after a retry,
// cancelled after a cancel, or still running with its cancellation
// requested (its handler may yet complete it). A link to the
// page with ?done=cancel cannot make it say that a job was cancelled that
// was not.
func noticeText(done string, j *leasehold.JobRow) string {
	switch {
	case done == "retry" && j.State == leasehold.StatePending:
		return "The job is pending again, with a fresh retry budget."
	case done == "cancel" && j.State == leasehold.StateCancelled:
		return "The job was cancelled."
	case done == "cancel" && j.CancelRequested && !j.State.Finished():
		return "Cancellation requested: the job is still " + string(j.State) + ". Its handler is cancelled at its next " +
			"heartbeat, and the job ends cancelled unless the attempt completes or fails first; a job whose lease " +
			"expired is ended by the watcher at its next pass (in a queue that reconciles, its reconciler decides first)."
	}
	return ""
}
