package web

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
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

// activeStateNames lists the unfinished states, the overview's counts.
func activeStateNames() []string {
	var out []string
	for _, s := range leasehold.AllStates {
		if !s.Finished() {
			out = append(out, string(s))
		}
	}
	return out
}

// hourOutcomes returns the overview's last-hour columns.
func hourOutcomes() []string {
	return []string{string(leasehold.OutcomeCompleted), string(leasehold.OutcomeRetried), string(leasehold.OutcomeFailed)}
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
	// States are the unfinished states, counted per queue; Outcomes the
	// attempts' outcomes counted over the last hour.
	States, Outcomes []string
	Queues           []overviewQueue
	// Totals sums Counts over the queues, Hour sums their last hour;
	// Estimated lists the states of which a queue's count is estimated.
	Totals, Hour map[string]int64
	Estimated    map[string]bool
	// Chart is the last hour's throughput and failures.
	Chart *chart
}

// overviewQueue is one queue's row: its unfinished jobs and its last hour.
type overviewQueue struct {
	view.QueueView
	Hour map[string]int64
}

// overview shows each queue's unfinished jobs by state, oldest due age,
// leases and last hour. Every read is bounded: ActiveQueueStats for the
// unfinished jobs, the per-minute totals for the finished ones.
func (h *handler) overview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	qs, err := h.client.ActiveQueueStats(ctx, 0)
	if err != nil {
		h.failErr(w, r, http.StatusInternalServerError, err)
		return
	}
	buckets, now, err := h.lastHour(ctx)
	if err != nil {
		h.failErr(w, r, http.StatusInternalServerError, err)
		return
	}
	d := overviewData{States: activeStateNames(), Outcomes: hourOutcomes(), Chart: newChart(buckets, now),
		Totals: map[string]int64{}, Hour: map[string]int64{}, Estimated: map[string]bool{}}
	d.Queues = h.overviewQueues(qs, buckets)
	for _, q := range d.Queues {
		for s, n := range q.Counts {
			d.Totals[s] += n
		}
		for o, n := range q.Hour {
			d.Hour[o] += n
		}
		for _, s := range q.Estimated {
			d.Estimated[s] = true
		}
	}
	h.render(w, r, "overview", "Overview", d)
}

// overviewQueues joins each queue's stats with its last hour, sorted by
// queue; a queue with only finished jobs in the hour has a row too.
func (h *handler) overviewQueues(qs []*leasehold.QueueStats, buckets []*leasehold.ThroughputBucket) []overviewQueue {
	byName := map[string]*overviewQueue{}
	var names []string
	row := func(name string) *overviewQueue {
		if q := byName[name]; q != nil {
			return q
		}
		q := &overviewQueue{QueueView: view.NewQueueView(&leasehold.QueueStats{Queue: name}, h.opts.UnclaimedAfter), Hour: map[string]int64{}}
		byName[name] = q
		names = append(names, name)
		return q
	}
	for _, s := range qs {
		row(s.Queue).QueueView = view.NewQueueView(s, h.opts.UnclaimedAfter)
	}
	for _, b := range buckets {
		row(b.Queue).Hour[string(b.Outcome)] += b.Jobs
	}
	slices.Sort(names)
	out := make([]overviewQueue, len(names))
	for i, n := range names {
		out[i] = *byName[n]
	}
	return out
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
	Expired     []view.JobView
	Stuck       []view.JobView
	Reconciling []view.JobView
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
	d, err := h.attentionData(r.Context())
	if err != nil {
		h.failErr(w, r, http.StatusInternalServerError, err)
		return
	}
	h.render(w, r, "attention", "Attention", d)
}

// attentionData reads the attention page's lists, each bounded.
func (h *handler) attentionData(ctx context.Context) (*attentionData, error) {
	lists := []*leasehold.ListParams{
		{Expired: true, Limit: attentionLimit},
		{States: []leasehold.JobState{leasehold.StateStuck}, Limit: attentionLimit},
		{States: []leasehold.JobState{leasehold.StateReconciling}, Limit: attentionLimit},
	}
	jobs := make([][]*leasehold.JobRow, len(lists))
	for i, p := range lists {
		var err error
		if jobs[i], err = h.client.ListJobs(ctx, p); err != nil {
			return nil, err
		}
	}
	// Only NeverClaimed is read here: count no more than it samples.
	qs, err := h.client.ActiveQueueStats(ctx, driver.DefaultUnclaimedSample)
	if err != nil {
		return nil, err
	}
	now, err := h.now(ctx)
	if err != nil {
		return nil, err
	}
	d := &attentionData{Expired: jobViews(jobs[0], now), Stuck: jobViews(jobs[1], now),
		Reconciling: jobViews(jobs[2], now), Limit: attentionLimit}
	for _, q := range qs {
		for _, k := range view.NewQueueView(q, h.opts.UnclaimedAfter).NeverClaimed {
			if k.Suspect {
				d.Unclaimed = append(d.Unclaimed, unclaimedKind{Queue: q.Queue, KindBacklogView: k})
			}
		}
	}
	return d, nil
}

// jobViews returns the views of jobs.
func jobViews(jobs []*leasehold.JobRow, now time.Time) []view.JobView {
	out := make([]view.JobView, len(jobs))
	for i, j := range jobs {
		out[i] = view.NewJobView(j, now)
	}
	return out
}
