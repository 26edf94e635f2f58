package web

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/view"
)

// jobData is the job page's.
type jobData struct {
	Job      view.JobInfoView
	Timeline *timeline
	// CanRetry, CanCancel and CanDelete say which actions the job's state
	// allows.
	CanRetry, CanCancel, CanDelete bool
	// Completed asks the retry form for a confirmation: the job's handler
	// ran to success and would run again.
	Completed bool
	// Notice is the outcome of the action that led here, if any.
	Notice string
	// Resolved is set when an attempt has a reconciler's resolution: the
	// history then has a column for it.
	Resolved bool
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
	d := jobData{
		Job: v, Timeline: newTimeline(v, now), Notice: noticeText(r.URL.Query().Get("done"), info.JobRow),
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
// cancelled (or its cancellation requested) after a cancel. A link to the
// page with ?done=cancel cannot make it say that a job was cancelled that
// was not.
func noticeText(done string, j *leasehold.JobRow) string {
	switch {
	case done == "retry" && j.State == leasehold.StatePending:
		return "The job is pending again, with a fresh retry budget."
	case done == "cancel" && (j.State == leasehold.StateCancelled || j.CancelRequested && !j.State.Finished()):
		return "The job was cancelled (a processing job is cancelled at its next heartbeat)."
	}
	return ""
}
