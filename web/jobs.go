package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

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
	// Oldest orders by ascending id; the default is newest first.
	Oldest bool
	// Before and After are the keyset: the last id of the previous page.
	Before, After int64
}

// errBadQuery reports a query parameter that cannot be parsed.
var errBadQuery = errors.New("bad query")

// parseFilter reads f from the query q. The id parameter is not a filter:
// the caller jumps to the job.
func parseFilter(q url.Values) (filter, error) {
	f := filter{Queue: strings.TrimSpace(q.Get("queue")), Kind: strings.TrimSpace(q.Get("kind")),
		Owner: strings.TrimSpace(q.Get("owner")), Search: q.Get("search"), Oldest: q.Get("order") == "oldest"}
	for _, s := range q["state"] {
		if s = strings.TrimSpace(s); s != "" {
			f.States = append(f.States, s)
		}
	}
	var err error
	if f.Before, err = optionalID(q, "before"); err != nil {
		return f, err
	}
	if f.After, err = optionalID(q, "after"); err != nil {
		return f, err
	}
	return f, nil
}

// optionalID parses the job id parameter name, 0 when absent.
func optionalID(q url.Values, name string) (int64, error) {
	s := strings.TrimSpace(q.Get(name))
	if s == "" {
		return 0, nil
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("%w: %s must be a job id, got %q", errBadQuery, name, s)
	}
	return id, nil
}

// params returns the ListParams of f, for at most limit jobs.
func (f filter) params(limit int) *leasehold.ListParams {
	p := &leasehold.ListParams{Queue: f.Queue, Kind: f.Kind, Owner: f.Owner, Search: f.Search, Desc: !f.Oldest,
		BeforeID: f.Before, AfterID: f.After, Limit: limit}
	for _, s := range f.States {
		p.States = append(p.States, leasehold.JobState(s))
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
	rows, err := h.client.ListJobs(r.Context(), f.params(h.opts.PageSize+1))
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
	}
	d := jobsData{Filter: f, States: stateNames(), Jobs: jobViews(rows, now), Paged: f.Before > 0 || f.After > 0}
	d.Deleted, _ = optionalID(q, "deleted")
	d.First = h.link("/jobs", f.query())
	if more {
		next := f.query()
		key := "before"
		if f.Oldest {
			key = "after"
		}
		next.Set(key, strconv.FormatInt(rows[len(rows)-1].ID, 10))
		d.Next = h.link("/jobs", next)
	}
	for action, dst := range map[string]*string{"retry": &d.BulkRetry, "cancel": &d.BulkCancel} {
		bq := f.query()
		bq.Set("action", action)
		*dst = h.link("/bulk", bq)
	}
	h.render(w, r, "jobs", "Jobs", d)
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
