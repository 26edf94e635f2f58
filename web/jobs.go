package web

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/view"
)

// filter is the jobs list's query: the filters and the page's keyset.
type filter struct {
	States []string
	Queue  string
	Kind   string
	Owner  string
	// Search is a substring of a string value in the jobs' args or
	// metadata (ListParams.Search).
	Search string
	// Expired selects the processing jobs whose lease has expired
	// (ListParams.Expired): the attention page's expired leases, all of
	// them.
	Expired bool
	// Oldest orders by ascending id; the default is newest first.
	Oldest bool
	// Before and After are the keyset: the last id of the previous page.
	Before, After int64
	// Finished is the finish-time part of the keyset (Unix microseconds)
	// when the list is ordered by finish time (byFinish).
	Finished int64
}

// ByFinish reports, for the page, whether the list is ordered by finish
// time.
func (f filter) ByFinish() bool { return f.byFinish() }

// byFinish reports whether the list is ordered by finish time: when every
// selected state is a finished one, and there is no search (a search
// reads id windows). An index serves that order for completed jobs,
// which the id order cannot at any table size.
func (f filter) byFinish() bool {
	if len(f.States) == 0 || f.Search != "" || f.Expired {
		return false
	}
	for _, s := range f.States {
		if !leasehold.JobState(s).Finished() {
			return false
		}
	}
	return true
}

// errBadQuery reports a query parameter that cannot be parsed.
var errBadQuery = errors.New("bad query")

// parseFilter reads f from the query q. The id parameter is not a filter:
// the caller jumps to the job.
func parseFilter(q url.Values) (filter, error) {
	f := filter{Queue: strings.TrimSpace(q.Get("queue")), Kind: strings.TrimSpace(q.Get("kind")),
		Owner: ownerFilter(q.Get("owner")), Search: q.Get("search")}
	var err error
	if f.Oldest, err = parseOrder(q.Get("order")); err != nil {
		return f, err
	}
	if f.States, err = parseStates(q); err != nil {
		return f, err
	}
	if f.Expired, err = parseExpired(q.Get("expired")); err != nil {
		return f, err
	}
	if f.Before, err = optionalID(q, "before"); err != nil {
		return f, err
	}
	if f.After, err = optionalID(q, "after"); err != nil {
		return f, err
	}
	if f.Finished, err = optionalPositive(q, "finished", "a finish time in Unix microseconds"); err != nil {
		return f, err
	}
	if f.Finished > 0 && !f.byFinish() {
		// The pages link to a finish time only on a list ordered by it;
		// elsewhere it would be dropped, and the page shown would not be
		// the one the link meant.
		return f, fmt.Errorf("%w: finished is a cursor of a list ordered by finish time: "+
			"only finished states selected, and no search", errBadQuery)
	}
	return f, nil
}

// parseOrder reads the order parameter: whether the list is oldest first.
// An unknown order is refused, as an unknown state is, so that a typo
// ("asc") is not taken for the default.
func parseOrder(s string) (oldest bool, err error) {
	switch strings.TrimSpace(s) {
	case "", "newest":
		return false, nil
	case "oldest":
		return true, nil
	}
	return false, fmt.Errorf("%w: unknown order %q: want newest or oldest", errBadQuery, s)
}

// parseExpired reads the expired parameter: whether only processing jobs
// whose lease has expired are listed. "1" (the form's checkbox) selects
// them; anything but that or nothing is refused, so that a link with
// expired=yes does not quietly list every job.
func parseExpired(s string) (bool, error) {
	switch strings.TrimSpace(s) {
	case "", "0":
		return false, nil
	case "1":
		return true, nil
	}
	return false, fmt.Errorf("%w: expired must be 1 (only processing jobs whose lease expired), got %q", errBadQuery, s)
}

// ownerFilter is the lease owner filter of the value s: s as it is, for
// owners are stored as their workers give them, spaces included (the
// workers page links to "  spaced owner  "); but none when s is only
// white space, as for the queue and kind filters.
func ownerFilter(s string) string {
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return s
}

// parseStates reads the state filter: the state parameters and, as the
// job's JSON calls it, status ones (a hand-written /jobs?status=failed
// filters as state=failed would, rather than being ignored). An unknown
// state is refused, so that a typo is not taken for no filter.
func parseStates(q url.Values) ([]string, error) {
	var states []string
	for _, s := range append(q["state"], q["status"]...) {
		s = strings.TrimSpace(s)
		switch {
		case s == "":
			continue
		case !slices.Contains(leasehold.AllStates, leasehold.JobState(s)):
			return nil, fmt.Errorf("%w: unknown state %q: want one of %s", errBadQuery, s, strings.Join(stateNames(), ", "))
		case !slices.Contains(states, s):
			states = append(states, s)
		}
	}
	return states, nil
}

// optionalID parses the job id parameter name, 0 when absent.
func optionalID(q url.Values, name string) (int64, error) {
	return optionalPositive(q, name, "a job id")
}

// optionalPositive parses the positive integer parameter name, 0 when
// absent; what says what it is, for the error.
func optionalPositive(q url.Values, name, what string) (int64, error) {
	s := strings.TrimSpace(q.Get(name))
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: %s must be %s, got %q", errBadQuery, name, what, s)
	}
	return n, nil
}

// params returns the ListParams of f, for at most limit jobs.
func (f filter) params(limit int) *leasehold.ListParams {
	p := &leasehold.ListParams{Queue: f.Queue, Kind: f.Kind, Owner: f.Owner, Search: f.Search, Desc: !f.Oldest,
		BeforeID: f.Before, AfterID: f.After, Limit: limit, Expired: f.Expired}
	for _, s := range f.States {
		p.States = append(p.States, leasehold.JobState(s))
	}
	if f.byFinish() {
		p.ByFinish = true
		if f.Finished > 0 {
			p.FinishedAt = time.UnixMicro(f.Finished)
		}
	}
	return p
}

// query encodes f's filters (not its keyset) as a query string.
func (f filter) query() url.Values {
	q := url.Values{}
	for _, s := range f.States {
		q.Add("state", s)
	}
	for k, v := range map[string]string{"queue": f.Queue, "kind": f.Kind, "owner": f.Owner, "search": f.Search} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Expired {
		q.Set("expired", "1")
	}
	if f.Oldest {
		q.Set("order", "oldest")
	}
	return q
}

// Has reports whether state s is selected (for the form's checkboxes).
func (f filter) Has(s string) bool {
	for _, v := range f.States {
		if v == s {
			return true
		}
	}
	return false
}

// jobsData is the jobs page's.
type jobsData struct {
	Filter filter
	States []string
	Jobs   []view.JobView
	// First, Next are the links to the first and the next page; Next is
	// empty on the last page.
	First, Next string
	// Paged is set past the first page.
	Paged bool
	// BulkRetry, BulkCancel link to the confirmation of a bulk action on
	// the filtered set.
	BulkRetry, BulkCancel string
	// Deleted is the job the previous request deleted, 0 for none.
	Deleted int64
	// Window is the id range a search read, empty without a search.
	Window string
}

// jobs lists jobs, filtered, one keyset page at a time.
func (h *handler) jobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if id := strings.TrimSpace(q.Get("id")); id != "" {
		h.jumpToJob(w, r, id)
		return
	}
	f, err := parseFilter(q)
	if err != nil {
		h.failErr(w, r, http.StatusBadRequest, err)
		return
	}
	p := f.params(h.opts.PageSize + 1)
	var win *window
	if f.Search != "" {
		if win, err = h.searchWindow(r.Context(), f, p); err != nil {
			h.failErr(w, r, http.StatusInternalServerError, err)
			return
		}
	}
	rows, err := h.client.ListJobs(r.Context(), p)
	if err != nil {
		h.failErr(w, r, listStatus(err), err)
		return
	}
	now, err := h.now(r.Context())
	if err != nil {
		h.failErr(w, r, http.StatusInternalServerError, err)
		return
	}
	more := len(rows) > h.opts.PageSize
	if more {
		rows = rows[:h.opts.PageSize]
		win.cut(rows[len(rows)-1].ID, f.Oldest)
	}
	d := jobsData{Filter: f, States: stateNames(), Jobs: jobViews(rows, now), Paged: f.Before > 0 || f.After > 0}
	if d.Deleted, err = h.deleted(r.Context(), q); err != nil {
		h.failErr(w, r, http.StatusInternalServerError, err)
		return
	}
	d.First = h.link("/jobs", f.query())
	if next := f.next(rows, more, win); next != nil {
		d.Next = h.link("/jobs", next)
	}
	if win != nil {
		d.Window = win.String()
	}
	for action, dst := range map[string]*string{"retry": &d.BulkRetry, "cancel": &d.BulkCancel} {
		bq := f.query()
		bq.Set("action", action)
		*dst = h.link("/bulk", bq)
	}
	h.render(w, r, "jobs", "Jobs", d)
}

// deleted returns the job the deleted parameter of q names, for the
// notice that it was deleted, when no such job exists: a link cannot make
// the page say that a job it shows elsewhere was deleted. It returns 0
// for none.
func (h *handler) deleted(ctx context.Context, q url.Values) (int64, error) {
	id, err := optionalID(q, "deleted")
	if err != nil || id == 0 {
		return 0, nil
	}
	_, err = h.client.GetJob(ctx, id)
	switch {
	case errors.Is(err, leasehold.ErrJobNotFound):
		return id, nil
	case err != nil:
		return 0, fmt.Errorf("job %d: %w", id, err)
	}
	return 0, nil
}

// jumpToJob redirects the id filter to the job's page.
func (h *handler) jumpToJob(w http.ResponseWriter, r *http.Request, s string) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("%q is not a job id", s))
		return
	}
	http.Redirect(w, r, h.path("/jobs/"+strconv.FormatInt(id, 10)), http.StatusSeeOther)
}

// listStatus is the status of a ListJobs error: 400 for a filter no job
// can match, 500 otherwise.
func listStatus(err error) int {
	var inv *leasehold.InvalidInputError
	if errors.As(err, &inv) {
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// link returns the dashboard path p with query q.
func (h *handler) link(p string, q url.Values) string {
	if len(q) == 0 {
		return h.path(p)
	}
	return h.path(p) + "?" + q.Encode()
}

// searchWindow bounds how many jobs one page of a search reads: no index
// serves a search in args and metadata, so each page reads at most
// searchWindow ids, and the next page goes on below (or above) them.
const searchWindow = 2000

// window is the id range (Low, High), bounds excluded, that one page of a
// search read.
type window struct {
	Low, High int64
	// Max is the highest id when the page was read, for paging up.
	Max int64
}

// String describes the window for the page.
func (w *window) String() string {
	if w.High-w.Low <= 1 { // no id between; Low+1 may not even be one
		return "no jobs to search in this range"
	}
	lo, hi := w.Low+1, min(w.High-1, w.Max)
	if hi < lo {
		return "no jobs to search in this range"
	}
	return fmt.Sprintf("searched jobs %d to %d", lo, hi)
}

// addSat returns a+b for b >= 0, or math.MaxInt64 when that overflows: a
// window above an id near the largest ends at the largest.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// cut narrows w, when not nil, to the ids a page cut at its size covers:
// up to its last job, last, in the page's order (oldest first or not).
// The next page goes on from last, so its window follows this one.
func (w *window) cut(last int64, oldest bool) {
	switch {
	case w == nil:
	case oldest:
		w.High = last + 1
	default:
		w.Low = last - 1
	}
}

// searchWindow sets p's id bounds to the window f's page reads, below
// f.Before newest first or above f.After oldest first. The window starts
// at the first job that exists past that bound (one read of the primary
// key), so that a page does not search a range that retention or deletes
// emptied: ids are never reused, so no job lies between.
func (h *handler) searchWindow(ctx context.Context, f filter, p *leasehold.ListParams) (*window, error) {
	newest, err := h.nearestID(ctx, &leasehold.ListParams{Desc: true})
	if err != nil {
		return nil, err
	}
	w := &window{Max: newest}
	if f.Oldest {
		first, err := h.nearestID(ctx, &leasehold.ListParams{AfterID: f.After})
		if err != nil {
			return nil, err
		}
		w.Low = f.After
		if first > 0 {
			w.Low = first - 1
		}
		w.High = addSat(w.Low, searchWindow+1)
	} else {
		w.High = w.Max + 1
		if f.Before > 0 {
			below, err := h.nearestID(ctx, &leasehold.ListParams{Desc: true, BeforeID: f.Before})
			if err != nil {
				return nil, err
			}
			w.High = below + 1
		}
		w.Low = max(w.High-searchWindow-1, 0)
		if w.Low > 0 {
			// No page below when no job is left there.
			oldest, err := h.nearestID(ctx, &leasehold.ListParams{})
			if err != nil {
				return nil, err
			}
			if oldest > w.Low {
				w.Low = 0
			}
		}
	}
	p.AfterID, p.BeforeID = w.Low, w.High
	return w, nil
}

// nearestID returns the id of the first job p lists (p unfiltered: a read
// of the primary key), 0 when there is none.
func (h *handler) nearestID(ctx context.Context, p *leasehold.ListParams) (int64, error) {
	p.Limit = 1
	rows, err := h.client.ListJobs(ctx, p)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	return rows[0].ID, nil
}

// next returns the query of the page after rows (more says the page is
// full), nil on the last page. A full page goes on from its last job; a
// search that did not fill its page goes on from the edge of its window.
func (f filter) next(rows []*leasehold.JobRow, more bool, win *window) url.Values {
	q := f.query()
	key := "before"
	if f.Oldest {
		key = "after"
	}
	switch {
	case more:
		last := rows[len(rows)-1]
		q.Set(key, strconv.FormatInt(last.ID, 10))
		if f.byFinish() {
			q.Set("finished", strconv.FormatInt(last.FinishedAt.UnixMicro(), 10))
		}
	case win != nil && !f.Oldest && win.Low > 0:
		q.Set(key, strconv.FormatInt(win.Low+1, 10))
	case win != nil && f.Oldest && win.High <= win.Max:
		q.Set(key, strconv.FormatInt(win.High-1, 10))
	default:
		return nil
	}
	return q
}
