package web

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/view"
)

// stateNames lists the job states, in state-machine order, for columns.
func stateNames() []string {
	out := make([]string, len(leasehold.AllStates))
	for i, s := range leasehold.AllStates {
		out[i] = string(s)
	}
	return out
}

// now reads the database clock, the only clock leases are measured by.
func (h *handler) now(ctx context.Context) (time.Time, error) {
	t, err := h.client.Driver().Now(ctx)
	if err != nil {
		return time.Time{}, fmt.Errorf("read the database clock: %w", err)
	}
	return t, nil
}

// overviewData is the overview page's.
type overviewData struct {
	States []string
	Queues []view.QueueView
	// Totals sums Counts over the queues.
	Totals map[string]int64
	// Chart is the last hour's throughput and failures.
	Chart *chart
}

// overview shows each queue's jobs by state, oldest due age and leases.
func (h *handler) overview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	qs, err := h.client.QueueStats(ctx)
	if err != nil {
		h.failErr(w, r, http.StatusInternalServerError, err)
		return
	}
	now, err := h.now(ctx)
	if err != nil {
		h.failErr(w, r, http.StatusInternalServerError, err)
		return
	}
	d := overviewData{States: stateNames(), Totals: map[string]int64{}}
	if d.Chart, err = h.lastHour(ctx, now); err != nil {
		h.failErr(w, r, http.StatusInternalServerError, err)
		return
	}
	for _, q := range qs {
		v := view.NewQueueView(q, h.opts.UnclaimedAfter)
		for s, n := range v.Counts {
			d.Totals[s] += n
		}
		d.Queues = append(d.Queues, v)
	}
	h.render(w, r, "overview", "Overview", d)
}

// workersData is the workers page's.
type workersData struct {
	Owners []view.OwnerView
	// Truncated is set when more processing jobs exist than were read.
	Truncated bool
	Limit     int
}

// workers shows each lease owner with the leases it holds.
func (h *handler) workers(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	jobs, err := h.client.ListJobs(ctx, &leasehold.ListParams{
		States: []leasehold.JobState{leasehold.StateProcessing}, Limit: maxWorkerLeases + 1,
	})
	if err != nil {
		h.failErr(w, r, http.StatusInternalServerError, err)
		return
	}
	now, err := h.now(ctx)
	if err != nil {
		h.failErr(w, r, http.StatusInternalServerError, err)
		return
	}
	d := workersData{Limit: maxWorkerLeases}
	if len(jobs) > maxWorkerLeases {
		jobs, d.Truncated = jobs[:maxWorkerLeases], true
	}
	d.Owners = view.NewOwnerViews(jobs, now)
	h.render(w, r, "workers", "Workers", d)
}

// attentionLimit bounds each list of the attention page.
const attentionLimit = 200

// attentionData is the attention page's.
type attentionData struct {
	Expired []view.JobView
	Stuck   []view.JobView
	// Unclaimed lists the kinds whose due jobs no running worker seems to
	// handle, with their queue.
	Unclaimed []unclaimedKind
	Limit     int
}

// unclaimedKind is a suspect kind of one queue.
type unclaimedKind struct {
	Queue string
	view.KindBacklogView
}

// attention shows expired leases, stuck jobs and unclaimed kinds.
func (h *handler) attention(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	expired, err := h.client.ListJobs(ctx, &leasehold.ListParams{Expired: true, Limit: attentionLimit})
	if err != nil {
		h.failErr(w, r, http.StatusInternalServerError, err)
		return
	}
	stuck, err := h.client.ListJobs(ctx, &leasehold.ListParams{States: []leasehold.JobState{leasehold.StateStuck}, Limit: attentionLimit})
	if err != nil {
		h.failErr(w, r, http.StatusInternalServerError, err)
		return
	}
	qs, err := h.client.QueueStats(ctx)
	if err != nil {
		h.failErr(w, r, http.StatusInternalServerError, err)
		return
	}
	now, err := h.now(ctx)
	if err != nil {
		h.failErr(w, r, http.StatusInternalServerError, err)
		return
	}
	d := attentionData{Expired: jobViews(expired, now), Stuck: jobViews(stuck, now), Limit: attentionLimit}
	for _, q := range qs {
		for _, k := range view.NewQueueView(q, h.opts.UnclaimedAfter).NeverClaimed {
			if k.Suspect {
				d.Unclaimed = append(d.Unclaimed, unclaimedKind{Queue: q.Queue, KindBacklogView: k})
			}
		}
	}
	h.render(w, r, "attention", "Attention", d)
}

// jobViews returns the views of jobs.
func jobViews(jobs []*leasehold.JobRow, now time.Time) []view.JobView {
	out := make([]view.JobView, len(jobs))
	for i, j := range jobs {
		out[i] = view.NewJobView(j, now)
	}
	return out
}
