package leaseholdprom

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/leasehold/leasehold"
)

// TestObserveEveryKind feeds one event of each kind, as the client would
// emit them, and checks the exposition, including the kinds a test
// cannot provoke through a healthy database.
func TestObserveEveryKind(t *testing.T) {
	e := newEventMetrics("leasehold", DefaultHandlerBuckets)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e.collectors()...)
	job := &leasehold.JobRow{ID: 7, Queue: "q", Kind: "k"}
	boom := errors.New("boom")
	for _, ev := range []leasehold.Event{
		{Kind: leasehold.EventClaimed, Job: job},
		{Kind: leasehold.EventStarted, Job: job, Duration: 3 * time.Millisecond},
		{Kind: leasehold.EventNotStarted, Job: job, Err: boom},
		{Kind: leasehold.EventClaimedAgain, Job: job},
		{Kind: leasehold.EventFinished, Job: job, Outcome: leasehold.OutcomeRetried, Duration: 2 * time.Second},
		{Kind: leasehold.EventFinished, Job: job, Outcome: leasehold.OutcomeReleased}, // released unrun: no duration
		{Kind: leasehold.EventFenceRefused, Job: job, Outcome: leasehold.OutcomeCompleted, Duration: 20 * time.Second},
		{Kind: leasehold.EventOutcomeDropped, Job: job, Outcome: leasehold.OutcomeCompleted, Duration: 20 * time.Millisecond},
		{Kind: leasehold.EventLeaseLost, Job: job, Err: leasehold.ErrLeaseLost},
		{Kind: leasehold.EventHeartbeat, Leases: 3, Duration: 4 * time.Millisecond},
		{Kind: leasehold.EventHeartbeatFailed, Leases: 3, Err: boom},
		{Kind: leasehold.EventFinishFailed, Leases: 2, Err: boom},
		{Kind: leasehold.EventClaimFailed, Err: boom},
		{Kind: leasehold.EventRescued, Rescued: &leasehold.RescuedJob{ID: 8, Queue: "q", Kind: "k2", NewState: leasehold.StateStuck}},
		{Kind: leasehold.EventFinished, Job: job, Outcome: "some_future_outcome", Duration: time.Millisecond},
		{Kind: "some_future_kind", Job: job},
	} {
		e.observe(&ev)
	}
	const want = `
# HELP leasehold_claim_failures_total Claim statements, and probes for queues with work, that failed.
# TYPE leasehold_claim_failures_total counter
leasehold_claim_failures_total 1
# HELP leasehold_claim_to_start_seconds Time from sending a claim to starting the job's handler.
# TYPE leasehold_claim_to_start_seconds histogram
leasehold_claim_to_start_seconds_bucket{queue="q",le="0.0005"} 0
leasehold_claim_to_start_seconds_bucket{queue="q",le="0.001"} 0
leasehold_claim_to_start_seconds_bucket{queue="q",le="0.0025"} 0
leasehold_claim_to_start_seconds_bucket{queue="q",le="0.005"} 1
leasehold_claim_to_start_seconds_bucket{queue="q",le="0.01"} 1
leasehold_claim_to_start_seconds_bucket{queue="q",le="0.025"} 1
leasehold_claim_to_start_seconds_bucket{queue="q",le="0.05"} 1
leasehold_claim_to_start_seconds_bucket{queue="q",le="0.1"} 1
leasehold_claim_to_start_seconds_bucket{queue="q",le="0.25"} 1
leasehold_claim_to_start_seconds_bucket{queue="q",le="0.5"} 1
leasehold_claim_to_start_seconds_bucket{queue="q",le="1"} 1
leasehold_claim_to_start_seconds_bucket{queue="q",le="2.5"} 1
leasehold_claim_to_start_seconds_bucket{queue="q",le="5"} 1
leasehold_claim_to_start_seconds_bucket{queue="q",le="10"} 1
leasehold_claim_to_start_seconds_bucket{queue="q",le="+Inf"} 1
leasehold_claim_to_start_seconds_sum{queue="q"} 0.003
leasehold_claim_to_start_seconds_count{queue="q"} 1
# HELP leasehold_fenced_writes_refused_total Outcomes the database refused because the lease was no longer the client's.
# TYPE leasehold_fenced_writes_refused_total counter
leasehold_fenced_writes_refused_total{kind="k",queue="q"} 1
# HELP leasehold_finish_failures_total Outcome statements that failed and were retried.
# TYPE leasehold_finish_failures_total counter
leasehold_finish_failures_total 1
# HELP leasehold_heartbeat_failures_total Heartbeat statements that failed.
# TYPE leasehold_heartbeat_failures_total counter
leasehold_heartbeat_failures_total 1
# HELP leasehold_jobs_claimed_again_total Claims that returned a lease the client held already (the database had lost the claim that gave it); the running handler kept the job.
# TYPE leasehold_jobs_claimed_again_total counter
leasehold_jobs_claimed_again_total{kind="k",queue="q"} 1
# HELP leasehold_jobs_claimed_total Leases taken by the client's fetchers.
# TYPE leasehold_jobs_claimed_total counter
leasehold_jobs_claimed_total{kind="k",queue="q"} 1
# HELP leasehold_jobs_not_started_total Claimed jobs whose handler was not started: the lease was past its safe window or already lost.
# TYPE leasehold_jobs_not_started_total counter
leasehold_jobs_not_started_total{kind="k",queue="q"} 1
# HELP leasehold_jobs_rescued_total Expired leases the stuck watcher moved, by the job's new state.
# TYPE leasehold_jobs_rescued_total counter
leasehold_jobs_rescued_total{kind="k2",queue="q",state="stuck"} 1
# HELP leasehold_leases_lost_total Handlers cancelled because their lease was taken over or could not be renewed in time.
# TYPE leasehold_leases_lost_total counter
leasehold_leases_lost_total{kind="k",queue="q"} 1
# HELP leasehold_outcomes_dropped_total Outcomes given up unwritten; their leases expire and the jobs come back.
# TYPE leasehold_outcomes_dropped_total counter
leasehold_outcomes_dropped_total{kind="k",queue="q"} 1
`
	names := []string{"leasehold_claim_failures_total", "leasehold_claim_to_start_seconds", "leasehold_fenced_writes_refused_total",
		"leasehold_finish_failures_total", "leasehold_heartbeat_failures_total", "leasehold_jobs_claimed_again_total", "leasehold_jobs_claimed_total",
		"leasehold_jobs_not_started_total", "leasehold_jobs_rescued_total", "leasehold_leases_lost_total",
		"leasehold_outcomes_dropped_total"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	finished := map[string]float64{"completed": 0, "retried": 1, "failed": 0, "snoozed": 0, "cancelled": 0,
		"released": 1, "lease_lost": 0, "some_future_outcome": 1}
	for outcome, n := range finished {
		if got := testutil.ToFloat64(e.finished.WithLabelValues("q", "k", outcome)); got != n {
			t.Errorf("finished{outcome=%q} = %v, want %v", outcome, got, n)
		}
	}
	if n := testutil.CollectAndCount(e.finished); n != len(finished) {
		t.Errorf("%d finished series, want %d", n, len(finished))
	}
	// The handler ran for the retried, refused, dropped and future
	// outcomes: 2 s + 20 s + 20 ms + 1 ms; the unrun release is not a run.
	checkHistogram(t, reg, "leasehold_handler_duration_seconds", 4, 22.021)
	checkHistogram(t, reg, "leasehold_heartbeat_duration_seconds", 1, 0.004)
}

func checkHistogram(t *testing.T, g prometheus.Gatherer, name string, count uint64, sum float64) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			h := mf.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() != count || h.GetSampleSum() < sum-1e-9 || h.GetSampleSum() > sum+1e-9 {
				t.Errorf("%s: count %d sum %v, want %d and %v", name, h.GetSampleCount(), h.GetSampleSum(), count, sum)
			}
			return
		}
	}
	t.Errorf("%s not gathered", name)
}

// TestObserveAllocates nothing once a (queue, kind) is known: the
// consumer keeps pace with the engine without feeding the collector.
func TestObserveAllocatesNothing(t *testing.T) {
	e := newEventMetrics("leasehold", DefaultHandlerBuckets)
	job := &leasehold.JobRow{ID: 1, Queue: "default", Kind: "k"}
	events := []leasehold.Event{
		{Kind: leasehold.EventClaimed, Job: job},
		{Kind: leasehold.EventStarted, Job: job, Duration: time.Millisecond},
		{Kind: leasehold.EventFinished, Job: job, Outcome: leasehold.OutcomeCompleted, Duration: time.Millisecond},
		{Kind: leasehold.EventHeartbeat, Leases: 1, Duration: time.Millisecond},
	}
	for i := range events {
		e.observe(&events[i])
	}
	if n := testing.AllocsPerRun(100, func() {
		for i := range events {
			e.observe(&events[i])
		}
	}); n != 0 {
		t.Errorf("observe allocates %v times per job, want 0", n)
	}
}

// BenchmarkObserve measures the consumer's cost of one job's events.
func BenchmarkObserve(b *testing.B) {
	e := newEventMetrics("leasehold", DefaultHandlerBuckets)
	job := &leasehold.JobRow{ID: 1, Queue: "default", Kind: "k"}
	events := []leasehold.Event{
		{Kind: leasehold.EventClaimed, Job: job},
		{Kind: leasehold.EventStarted, Job: job, Duration: time.Millisecond},
		{Kind: leasehold.EventFinished, Job: job, Outcome: leasehold.OutcomeCompleted, Duration: time.Millisecond},
	}
	b.ReportAllocs()
	for b.Loop() {
		for i := range events {
			e.observe(&events[i])
		}
	}
}

// TestResolutionCountedFinished: a reconciler's resolution, an
// EventFinished with ResolvedBy set, counts in jobs_finished_total under
// the reconciled job's queue and kind, and observes no handler duration
// (no handler of that job ran).
func TestResolutionCountedFinished(t *testing.T) {
	e := newEventMetrics("leasehold", DefaultHandlerBuckets)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e.collectors()...)
	reconciler := &leasehold.JobRow{ID: 9, Queue: "rec", Kind: leasehold.ReconcileKind}
	paid := &leasehold.JobRow{ID: 7, Queue: "pay", Kind: "charge", Attempt: 1, State: leasehold.StateCompleted}
	e.observe(&leasehold.Event{Kind: leasehold.EventFinished, Job: paid, Outcome: leasehold.OutcomeCompleted, ResolvedBy: reconciler})
	if got := testutil.ToFloat64(e.finished.WithLabelValues("pay", "charge", "completed")); got != 1 {
		t.Errorf("jobs_finished_total{pay,charge,completed} = %v after a resolution, want 1", got)
	}
	var m dto.Metric
	if err := e.handler.WithLabelValues("pay", "charge").(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetHistogram().GetSampleCount(); got != 0 {
		t.Errorf("handler_duration_seconds{pay,charge} observed %d durations for a resolution, want 0", got)
	}
}
