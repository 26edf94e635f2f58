package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/view"
)

// retry makes one job pending again; a completed one only when the form
// confirms it (completed=1), and only at the attempt the page showed
// (attempt): a job that ran again since the page was loaded is refused.
func (h *handler) retry(w http.ResponseWriter, r *http.Request) {
	if r.PostForm.Get("completed") != "1" {
		h.act(w, r, "retry", h.client.RetryJob)
		return
	}
	attempt, err := formAttempt(r.PostForm.Get("attempt"))
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	h.act(w, r, "retry", func(ctx context.Context, id int64) (*leasehold.JobRow, error) {
		row, err := h.client.RetryCompletedJobAttempt(ctx, id, attempt)
		if errors.Is(err, leasehold.ErrJobChanging) && attempt != 0 {
			err = ranAgainError{id: id, attempt: attempt, err: err}
		}
		return row, err
	}, "completed", true)
}

// formAttempt parses the attempt a form posted: 0 (any) when it posted
// none, as a page loaded before forms carried it does.
func formAttempt(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("attempt %q: want a positive number", s)
	}
	return n, nil
}

// ranAgainError is the refusal of a "Run again" whose job ran again since
// the page that posted it was loaded; it matches ErrJobChanging (409).
type ranAgainError struct {
	id      int64
	attempt int
	err     error
}

func (e ranAgainError) Error() string {
	return fmt.Sprintf("leasehold: retry job %d: it ran again since this page was loaded (at attempt %d): "+
		"nothing was changed; reload the job's page to see its latest run before running it again", e.id, e.attempt)
}

func (e ranAgainError) Unwrap() error { return e.err }

// cancel cancels one job.
func (h *handler) cancel(w http.ResponseWriter, r *http.Request) {
	h.act(w, r, "cancel", h.client.CancelJob)
}

// deleteJob deletes one finished job and its history, then goes to the
// jobs list.
func (h *handler) deleteJob(w http.ResponseWriter, r *http.Request) {
	id, ok := h.jobID(w, r)
	if !ok {
		return
	}
	if _, err := h.client.DeleteJob(r.Context(), id); err != nil {
		h.failAction(w, r, "delete", id, err)
		return
	}
	h.log.InfoContext(r.Context(), "web: job action", "action", "delete", "job", id)
	http.Redirect(w, r, h.path("/jobs?deleted="+strconv.FormatInt(id, 10)), http.StatusSeeOther)
}

// pauseQueue stops every worker from claiming the queue's jobs.
func (h *handler) pauseQueue(w http.ResponseWriter, r *http.Request) {
	h.queueAction(w, r, "pause", h.client.PauseQueue)
}

// resumeQueue lets workers claim the queue's jobs again.
func (h *handler) resumeQueue(w http.ResponseWriter, r *http.Request) {
	h.queueAction(w, r, "resume", h.client.ResumeQueue)
}

// queueAction runs one queue action and goes back to the overview.
func (h *handler) queueAction(w http.ResponseWriter, r *http.Request, name string,
	fn func(context.Context, string) error) {
	queue := r.PathValue("name")
	if err := fn(r.Context(), queue); err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, leasehold.ErrInvalidQueue) {
			status = http.StatusBadRequest
		}
		// Not the name itself: the Client's error quotes it, cut short,
		// when it is invalid (raw, it could carry invalid UTF-8 or
		// terminal and bidi controls), and names it when valid.
		h.failErr(w, r, status, fmt.Errorf("%s queue: %w", name, err))
		return
	}
	h.log.InfoContext(r.Context(), "web: queue action", "action", name, "queue", queue)
	http.Redirect(w, r, h.path("/"), http.StatusSeeOther)
}

// act runs one job action and goes back to the job's page; attrs are
// logged with the action.
func (h *handler) act(w http.ResponseWriter, r *http.Request, name string,
	fn func(context.Context, int64) (*leasehold.JobRow, error), attrs ...any) {
	id, ok := h.jobID(w, r)
	if !ok {
		return
	}
	if _, err := fn(r.Context(), id); err != nil {
		h.failAction(w, r, name, id, err)
		return
	}
	h.log.InfoContext(r.Context(), "web: job action", append([]any{"action", name, "job", id}, attrs...)...)
	http.Redirect(w, r, h.path("/jobs/"+strconv.FormatInt(id, 10)+"?done="+name), http.StatusSeeOther)
}

// failAction answers the error of action on job id: a refusal (the job's
// state, a unique key another job holds) with its status and one line
// saying why, anything else as a failure of the dashboard, logged.
func (h *handler) failAction(w http.ResponseWriter, r *http.Request, action string, id int64, err error) {
	status := actionStatus(err)
	if status >= http.StatusInternalServerError {
		h.failErr(w, r, status, err)
		return
	}
	h.fail(w, r, status, refusal(action, id, err))
}

// refusal is the message of an action's error: the Client's own, which
// names the action and the job ("leasehold: retry job 7: job running"),
// except for a unique key another job holds, whose error carries the
// database's constraint text: that one says which key and what to do.
func refusal(action string, id int64, err error) string {
	if errors.Is(err, leasehold.ErrUniqueKeyHeld) {
		return fmt.Sprintf("leasehold: %s job %d: %s: let that job finish, or cancel it, first",
			action, id, strings.TrimPrefix(leasehold.ErrUniqueKeyHeld.Error(), "leasehold: "))
	}
	return err.Error()
}

// actionStatus is the status of an action's error: 404 for an unknown
// job, 409 for one whose state refuses it (or whose unique key another job
// holds now, or that kept changing state under the action), 500 otherwise.
func actionStatus(err error) int {
	switch {
	case errors.Is(err, leasehold.ErrJobNotFound):
		return http.StatusNotFound
	case errors.Is(err, leasehold.ErrJobRunning), errors.Is(err, leasehold.ErrJobFinished),
		errors.Is(err, leasehold.ErrJobNotFinished), errors.Is(err, leasehold.ErrJobCompleted),
		errors.Is(err, leasehold.ErrUniqueKeyHeld), errors.Is(err, leasehold.ErrJobChanging):
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

// bulkData is the bulk confirmation page's.
type bulkData struct {
	Action string
	Filter filter
	// States are the states the action applies to among those the filter
	// selects (all of them when it selects none): the only ones read.
	// Empty when the action applies to none of them.
	States []leasehold.JobState
	// IDs are the jobs the action will touch: the filtered jobs in one of
	// States, at most MaxBulk.
	IDs []int64
	// Completed counts the completed jobs among IDs, which a retry runs
	// again only when the form confirms it; CompletedIDs are their ids
	// with the attempt each was at ("ID:ATTEMPT"), posted with the form so
	// that the confirmation covers these jobs alone, at that attempt: not
	// one that completes, or runs again, after the page was shown.
	Completed    int
	CompletedIDs []string
	// More is set when more than MaxBulk jobs matched. Relisted is set
	// when the action leaves the jobs it touches in one of States (a
	// retry makes them pending), so running it again lists them again.
	More, Relisted bool
	Max            int
	Back           string
	// Window is the id range a search read, empty without a search;
	// Next is the confirmation of the same action on the next window,
	// empty on the last.
	Window, Next string
}

// bulkConfirm says how many jobs a bulk action on the filtered set would
// touch, and asks to confirm. It changes nothing.
func (h *handler) bulkConfirm(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	action := q.Get("action")
	if action != "retry" && action != "cancel" {
		h.fail(w, r, http.StatusBadRequest, "action must be retry or cancel")
		return
	}
	f, err := parseFilter(q)
	if err != nil {
		h.failErr(w, r, http.StatusBadRequest, err)
		return
	}
	d, rows, err := h.bulkRows(r.Context(), action, f)
	if err != nil {
		h.failErr(w, r, listStatus(err), err)
		return
	}
	for _, j := range rows {
		d.IDs = append(d.IDs, j.ID)
		if j.State == leasehold.StateCompleted {
			d.Completed++
			d.CompletedIDs = append(d.CompletedIDs, fmt.Sprintf("%d:%d", j.ID, j.Attempt))
		}
	}
	h.render(w, r, "bulk", "Confirm bulk "+action, d)
}

// bulkRows reads the jobs a bulk action on f's filtered set lists, oldest
// first, at most MaxBulk: those in a state the action applies to (see
// bulkStates), so that jobs it leaves alone never take the place of those
// it touches, and running it again reaches the rest. A search has no
// index to serve it, so it reads one window of ids (as a page of the jobs
// list does) from f.After on, names the ids it covers (up to the last job
// listed when more match), and links to the next window's confirmation.
func (h *handler) bulkRows(ctx context.Context, action string, f filter) (bulkData, []*leasehold.JobRow, error) {
	back := h.link("/jobs", f.query()) // the list as it was, in its order
	f.Before, f.Oldest, f.Finished = 0, true, 0
	if f.Search == "" {
		f.After = 0
	}
	d := bulkData{Action: action, Filter: f, States: bulkStates(action, f), Max: MaxBulk, Back: back}
	if len(d.States) == 0 {
		// Nothing to read: ListParams with no States lists every state.
		return d, nil, nil
	}
	d.Relisted = action == "retry" && slices.Contains(d.States, leasehold.StatePending)
	p := f.params(MaxBulk + 1)
	p.States = d.States
	var win *window
	if f.Search != "" {
		var err error
		if win, err = h.searchWindow(ctx, f, p); err != nil {
			return d, nil, err
		}
	}
	rows, err := h.client.ListJobs(ctx, p)
	if err != nil {
		return d, nil, err
	}
	if len(rows) > MaxBulk {
		rows, d.More = rows[:MaxBulk], true
		win.cut(rows[len(rows)-1].ID, true)
	}
	if win != nil {
		d.Window = win.String()
		if next := f.next(rows, d.More, win); next != nil {
			next.Set("action", action)
			d.Next = h.link("/bulk", next)
		}
	}
	return d, rows, nil
}

// bulkStates returns the states action applies to among those f selects,
// or among all states when f selects none, in state-machine order; none
// when it applies to no state f selects.
func bulkStates(action string, f filter) []leasehold.JobState {
	var states []leasehold.JobState
	for _, s := range leasehold.AllStates {
		if allows(action, s) && (len(f.States) == 0 || f.Has(string(s))) {
			states = append(states, s)
		}
	}
	return states
}

// allows reports whether action applies to a job in state s.
func allows(action string, s leasehold.JobState) bool {
	if action == "retry" {
		return s != leasehold.StateProcessing
	}
	return !s.Finished()
}

// doneData is the result page of a bulk action or a watcher pass.
type doneData struct {
	Action string
	Done   int
	// Failed lists the jobs the action was refused for, and why.
	Failed []string
	// Failure, when set, says which job the action failed on with a
	// server error, under the error id the log has it with; the action
	// stopped there, leaving Untried jobs after it untried.
	Failure string
	Untried int
	Moved   []view.RescuedView
	Back    string
}

// bulk applies the confirmed action to the listed job ids, in order. A
// job whose state refuses it is listed with the reason, and the action
// goes on. A server error (the database unreachable, say) stops it: the
// rest would most likely fail the same way, each after its own wait. The
// page then says what was done before, names the failure by an error id
// only (the log has the error; see failErr), and answers with the status
// a single job's action would.
func (h *handler) bulk(w http.ResponseWriter, r *http.Request) {
	action := r.PostForm.Get("action")
	fnFor := h.bulkFunc(r, action)
	if fnFor == nil {
		h.fail(w, r, http.StatusBadRequest, "action must be retry or cancel")
		return
	}
	posted := r.PostForm["id"]
	if len(posted) == 0 || len(posted) > MaxBulk {
		h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("a bulk action takes 1 to %d job ids, got %d", MaxBulk, len(posted)))
		return
	}
	ids, failed := bulkIDs(posted)
	d := doneData{Action: action, Back: h.listBack(r.PostForm.Get("back")), Failed: failed}
	status := http.StatusOK
	for i, id := range ids {
		_, err := fnFor(id)(r.Context(), id)
		if err == nil {
			d.Done++
			continue
		}
		if s := actionStatus(err); s >= http.StatusInternalServerError {
			status, d.Untried = s, len(ids)-i-1
			d.Failure = h.logBulkFailure(r, action, id, err)
			break
		}
		d.Failed = append(d.Failed, refusal(action, id, err))
	}
	h.log.InfoContext(r.Context(), "web: bulk action", "action", action, "done", d.Done, "refused", len(d.Failed),
		"untried", d.Untried)
	h.renderStatus(w, r, status, "done", "Bulk "+action, d)
}

// listBack returns the result page's link back to the jobs list: the
// filtered list the confirmation posted as back when it is the jobs list
// under the dashboard's prefix (a path, no scheme or host: anything else
// would make the page link wherever a forged form says), else the plain
// list. The link is rebuilt from the prefix and the parsed query.
func (h *handler) listBack(back string) string {
	list := h.path("/jobs")
	if !strings.HasPrefix(back, list) {
		return list
	}
	u, err := url.Parse(back)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || u.Path != list {
		return list
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return list
	}
	return h.link("/jobs", q)
}

// logBulkFailure logs the server error err of a bulk action on job id
// under a new error id, and returns the line its page shows: the job and
// the error id, not the error's text (see failErr).
func (h *handler) logBulkFailure(r *http.Request, action string, id int64, err error) string {
	errID := errorID()
	h.log.ErrorContext(r.Context(), "web: request failed", "error_id", errID, "path", r.URL.Path,
		"action", action, "job", id, "err", err)
	return fmt.Sprintf("job %d: failed (error %s; see the server's log)", id, errID)
}

// bulkIDs parses the posted job ids ss: the ids, in the order posted and
// each once (an id posted twice is acted on, and counted, once), and a
// line for each value that is not a job id.
func bulkIDs(ss []string) (ids []int64, failed []string) {
	seen := make(map[int64]bool, len(ss))
	for _, s := range ss {
		id, err := strconv.ParseInt(s, 10, 64)
		switch {
		case err != nil || id <= 0:
			failed = append(failed, fmt.Sprintf("%q: not a job id", s))
		case !seen[id]:
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, failed
}

// bulkFunc returns, for each job id of a confirmed bulk action, the
// Client's function to apply (nil for an unknown action). A retry runs a
// completed job again only when the form confirms it (completed=1) and
// names the job among those that were completed when the confirmation
// was shown (completed_id, "ID:ATTEMPT"; a bare id, from a page shown
// before the attempt was posted, at any attempt): a job that completed
// since is refused with ErrJobCompleted, as a single retry that did not
// ask would be, and one that ran again since with ErrJobChanging.
func (h *handler) bulkFunc(r *http.Request, action string) func(id int64) func(context.Context, int64) (*leasehold.JobRow, error) {
	switch action {
	case "cancel":
		return func(int64) func(context.Context, int64) (*leasehold.JobRow, error) { return h.client.CancelJob }
	case "retry":
		again := map[int64]int{}
		if r.PostForm.Get("completed") == "1" {
			for _, s := range r.PostForm["completed_id"] {
				if id, attempt, ok := completedID(s); ok {
					again[id] = attempt
				}
			}
		}
		return func(id int64) func(context.Context, int64) (*leasehold.JobRow, error) {
			attempt, ok := again[id]
			if !ok {
				return h.client.RetryJob
			}
			return func(ctx context.Context, id int64) (*leasehold.JobRow, error) {
				return h.client.RetryCompletedJobAttempt(ctx, id, attempt)
			}
		}
	}
	return nil
}

// completedID parses a completed_id value: "ID:ATTEMPT", or a bare ID
// (attempt 0: any).
func completedID(s string) (id int64, attempt int, ok bool) {
	idText, attemptText, hasAttempt := strings.Cut(s, ":")
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || id <= 0 {
		return 0, 0, false
	}
	if !hasAttempt {
		return id, 0, true
	}
	attempt, err = strconv.Atoi(attemptText)
	if err != nil || attempt <= 0 {
		return 0, 0, false
	}
	return id, attempt, true
}

// rescue runs one pass of the stuck watcher now.
func (h *handler) rescue(w http.ResponseWriter, r *http.Request) {
	moved, err := h.client.RescueExpired(r.Context())
	if err != nil {
		h.failErr(w, r, http.StatusInternalServerError, err)
		return
	}
	d := doneData{Action: "rescue", Done: len(moved), Back: h.path("/attention")}
	for _, m := range moved {
		d.Moved = append(d.Moved, view.NewRescuedView(m))
	}
	h.log.InfoContext(r.Context(), "web: watcher pass", "moved", len(moved))
	h.render(w, r, "done", "Watcher pass", d)
}
