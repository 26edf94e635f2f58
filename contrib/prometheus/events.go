package leaseholdprom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasehold/leasehold"
)

// finishOutcomes are the outcomes an EventFinished carries, whose series
// exist, at zero, as soon as a (queue, kind) is seen.
var finishOutcomes = []leasehold.Outcome{
	leasehold.OutcomeCompleted, leasehold.OutcomeRetried, leasehold.OutcomeFailed, leasehold.OutcomeSnoozed,
	leasehold.OutcomeCancelled, leasehold.OutcomeReleased, leasehold.OutcomeLeaseLost,
}

// outcomeFlagged is the outcome label of a reconcile job that gave up and
// was flagged stuck for an operator (an EventFinished with State stuck,
// whatever its Outcome): neither failed nor cancelled, as Client.Stats
// counts it in Flagged. Only reconcile kinds have the series, made the
// first time one is flagged.
const outcomeFlagged leasehold.Outcome = "flagged"

// eventMetrics are the metrics fed by the event stream. Only the
// consumer goroutine calls observe.
type eventMetrics struct {
	claimed, notStarted, finished, rescued *prometheus.CounterVec
	claimedAgain, takenOver                *prometheus.CounterVec
	leaseLost, refused, dropped            *prometheus.CounterVec
	handler, claimToStart                  *prometheus.HistogramVec
	heartbeat                              prometheus.Histogram
	heartbeatFailures, finishFailures      prometheus.Counter
	claimFailures                          prometheus.Counter

	series map[seriesKey]*series
}

// seriesKey names the series of one queue and kind.
type seriesKey struct{ queue, kind string }

// series are the children of one (queue, kind), resolved once.
type series struct {
	claimed, notStarted, leaseLost, refused, dropped prometheus.Counter
	claimedAgain, takenOver                          prometheus.Counter
	finished                                         map[leasehold.Outcome]prometheus.Counter
	handler, claimToStart                            prometheus.Observer
}

func newEventMetrics(ns string, handlerBuckets []float64) *eventMetrics {
	qk := []string{"queue", "kind"}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, labels)
	}
	return &eventMetrics{
		claimed:      counter("jobs_claimed_total", "Leases taken by the client's fetchers.", qk...),
		notStarted:   counter("jobs_not_started_total", "Claimed jobs whose handler was not started: the lease was past its safe window or already lost.", qk...),
		claimedAgain: counter("jobs_claimed_again_total", "Claims that returned a lease the client held already (the database had lost the claim that gave it); the running handler kept the job.", qk...),
		finished: counter("jobs_finished_total", "Attempts whose outcome was written, fence matched, and reconcilers' resolutions that committed, by outcome (flagged: a reconcile job that gave up and was flagged stuck).",
			"queue", "kind", "outcome"),
		rescued: counter("jobs_rescued_total", "Expired leases the stuck watcher moved, by the job's new state.",
			"queue", "kind", "state"),
		takenOver: counter("leases_taken_over_total", "Expired leases the client's claims took over, each ending the expired attempt as lease_expired.", qk...),
		leaseLost: counter("leases_lost_total", "Handlers cancelled because their lease was taken over or could not be renewed in time.", qk...),
		refused:   counter("fenced_writes_refused_total", "Outcomes the database refused because the lease was no longer the client's.", qk...),
		dropped:   counter("outcomes_dropped_total", "Outcomes given up unwritten; their leases expire and the jobs come back.", qk...),
		handler: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "handler_duration_seconds",
			Help: "How long handlers ran.", Buckets: handlerBuckets}, qk),
		claimToStart: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "claim_to_start_seconds",
			Help: "Time from sending a claim to starting the job's handler.", Buckets: latencyBuckets}, []string{"queue"}),
		heartbeat: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "heartbeat_duration_seconds",
			Help: "Round trip of a heartbeat statement that renewed leases.", Buckets: latencyBuckets}),
		heartbeatFailures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "heartbeat_failures_total",
			Help: "Heartbeat statements that failed."}),
		claimFailures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "claim_failures_total",
			Help: "Claim statements, and probes for queues with work, that failed."}),
		finishFailures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "finish_failures_total",
			Help: "Outcome statements that failed and were retried."}),
		series: map[seriesKey]*series{},
	}
}

func (e *eventMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{e.claimed, e.notStarted, e.claimedAgain, e.finished, e.rescued, e.takenOver,
		e.leaseLost, e.refused, e.dropped, e.handler, e.claimToStart, e.heartbeat, e.heartbeatFailures,
		e.finishFailures, e.claimFailures}
}

// observe counts one event.
func (e *eventMetrics) observe(ev *leasehold.Event) {
	switch ev.Kind {
	case leasehold.EventHeartbeat:
		e.heartbeat.Observe(ev.Duration.Seconds())
		return
	case leasehold.EventHeartbeatFailed:
		e.heartbeatFailures.Inc()
		return
	case leasehold.EventFinishFailed:
		e.finishFailures.Inc()
		return
	case leasehold.EventClaimFailed:
		e.claimFailures.Inc()
		return
	case leasehold.EventRescued:
		if r := ev.Rescued; r != nil {
			e.rescued.WithLabelValues(r.Queue, r.Kind, string(r.NewState)).Inc()
		}
		return
	}
	if ev.Job == nil {
		return
	}
	s := e.of(ev.Job.Queue, ev.Job.Kind)
	switch ev.Kind {
	case leasehold.EventClaimed:
		s.claimed.Inc()
	case leasehold.EventStarted:
		s.claimToStart.Observe(ev.Duration.Seconds())
	case leasehold.EventNotStarted:
		s.notStarted.Inc()
	case leasehold.EventClaimedAgain:
		s.claimedAgain.Inc()
	case leasehold.EventTakenOver:
		s.takenOver.Inc()
	case leasehold.EventFinished:
		e.finish(s, ev)
	case leasehold.EventFenceRefused:
		s.refused.Inc()
		s.ran(ev)
	case leasehold.EventOutcomeDropped:
		s.dropped.Inc()
		s.ran(ev)
	case leasehold.EventLeaseLost:
		s.leaseLost.Inc()
	}
}

// finish counts a written outcome.
func (e *eventMetrics) finish(s *series, ev *leasehold.Event) {
	o := finishLabel(ev)
	c, ok := s.finished[o]
	if !ok { // flagged, or an outcome this package does not know yet
		c = e.finished.WithLabelValues(ev.Job.Queue, ev.Job.Kind, string(o))
		s.finished[o] = c
	}
	c.Inc()
	s.ran(ev)
}

// finishLabel returns the outcome label of an EventFinished: its outcome,
// or outcomeFlagged for a job it leaves stuck.
func finishLabel(ev *leasehold.Event) leasehold.Outcome {
	if ev.State == leasehold.StateStuck {
		return outcomeFlagged
	}
	return ev.Outcome
}

// ran records the handler's run time of an outcome event; a lease
// released unrun has none.
func (s *series) ran(ev *leasehold.Event) {
	if ev.Duration > 0 {
		s.handler.Observe(ev.Duration.Seconds())
	}
}

// of returns the series of queue and kind, resolving them the first time.
func (e *eventMetrics) of(queue, kind string) *series {
	k := seriesKey{queue, kind}
	if s, ok := e.series[k]; ok {
		return s
	}
	s := &series{
		claimed:      e.claimed.WithLabelValues(queue, kind),
		notStarted:   e.notStarted.WithLabelValues(queue, kind),
		claimedAgain: e.claimedAgain.WithLabelValues(queue, kind),
		takenOver:    e.takenOver.WithLabelValues(queue, kind),
		leaseLost:    e.leaseLost.WithLabelValues(queue, kind),
		refused:      e.refused.WithLabelValues(queue, kind),
		dropped:      e.dropped.WithLabelValues(queue, kind),
		handler:      e.handler.WithLabelValues(queue, kind),
		claimToStart: e.claimToStart.WithLabelValues(queue),
		finished:     make(map[leasehold.Outcome]prometheus.Counter, len(finishOutcomes)),
	}
	for _, o := range finishOutcomes {
		s.finished[o] = e.finished.WithLabelValues(queue, kind, string(o))
	}
	e.series[k] = s
	return s
}
