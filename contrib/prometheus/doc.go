// Package leaseholdprom exports the metrics of a leasehold client to
// Prometheus, with the standard client library (client_golang). It is a
// module of its own, so a program that uses leasehold without it does not
// download Prometheus.
//
// It plugs into the client only through the client's hooks: an insert
// middleware counts inserted jobs, a subscription to the event stream
// feeds the counters and histograms, and a collector reads the client's
// running handlers and, at a bounded rate, its queues' depth from the
// database:
//
//	m, err := leaseholdprom.New(leaseholdprom.Options{Registerer: reg})
//	client, err := leasehold.NewClient(leasehold.Config{
//		Driver: drv, Workers: workers,
//		InsertMiddleware: []leasehold.InsertMiddleware{m.InsertMiddleware()},
//	})
//	err = m.Attach(client) // before client.Start, to miss no event
//	defer m.Close()
//	http.Handle("/metrics", leaseholdprom.Handler(reg))
//
// # Metrics
//
// With the default namespace "leasehold":
//
//	leasehold_jobs_inserted_total{queue,kind}           jobs written by Insert, InsertTx, InsertMany, InsertBulk (an InsertTx whose transaction rolls back still counts)
//	leasehold_jobs_claimed_total{queue,kind}            leases taken by the client's fetchers
//	leasehold_jobs_not_started_total{queue,kind}        claimed, but past the lease's safe window: released unrun
//	leasehold_jobs_claimed_again_total{queue,kind}      claims of a lease held already (a database lost the claim): the running handler kept it
//	leasehold_jobs_finished_total{queue,kind,outcome}   outcomes written, fence matched, and reconcilers' resolutions committed (of the reconciled job's queue and kind)
//	leasehold_jobs_rescued_total{queue,kind,state}      expired leases the stuck watcher moved, by new state
//	leasehold_leases_taken_over_total{queue,kind}       expired leases the client's claims took over, ending the attempt lease_expired
//	leasehold_leases_lost_total{queue,kind}             handlers cancelled: lease taken over or not renewed
//	leasehold_fenced_writes_refused_total{queue,kind}   late outcomes the database refused (the lease was another's)
//	leasehold_outcomes_dropped_total{queue,kind}        outcomes given up unwritten
//	leasehold_heartbeat_failures_total                  heartbeat statements that failed
//	leasehold_finish_failures_total                     outcome statements that failed and were retried
//	leasehold_claim_failures_total                      claims, and probes for queues with work, that failed
//	leasehold_events_dropped_total                      events the client's subscribers missed (full channels)
//	leasehold_handler_duration_seconds{queue,kind}      histogram: how long handlers ran (runs whose outcome was written, refused or dropped)
//	leasehold_claim_to_start_seconds{queue}             histogram: from sending the claim to starting the handler
//	leasehold_heartbeat_duration_seconds                histogram: round trip of a heartbeat statement
//	leasehold_jobs_running                              gauge: handlers running now, or claimed and about to run
//	leasehold_queue_jobs{queue,state}                   gauge: unfinished jobs by state, read from the database
//	leasehold_queue_oldest_due_seconds{queue}           gauge: how long the oldest due pending job has waited
//	leasehold_queue_stats_failures_total                readings of the queue gauges that failed
//
// The outcomes (completed, retried, failed, snoozed, cancelled, released,
// lease_lost, and flagged) are one counter with an outcome label rather
// than a counter each: the label partitions what the counter counts, so a
// sum over it is meaningful, as Prometheus's naming conventions ask. What
// it counts is every outcome the client wrote (an attempt's, or a lease
// released unrun) and every resolution of a reconcile job that committed
// (ResolveReconcile; Event.ResolvedBy set), counted under the outcome it
// gave the reconciled job, with that job's queue and kind, though no
// attempt of it ended so (its expired attempt is counted by
// leasehold_jobs_rescued_total; a claim never takes over such a lease): where reconcilers resolve jobs, the sum
// is more than the attempts that finished. flagged is a reconcile job
// that gave up (its budget spent, a permanent error, a cancel its handler
// returned) and was flagged stuck for an operator: counted, as in
// Client.Stats (Flagged), apart from failed and cancelled; its series
// appears the first time a job of its queue and kind is flagged. The
// other counters count events of different kinds, which no sum of them
// would mean, so each has its name.
//
// Labels are queue, kind, outcome and state only: never a job id or an
// owner. The series of a counter or a histogram, once a (queue, kind) is
// seen, last as long as the process (a counter must not vanish), so their
// number is bounded by the application's queues and kinds: by its code,
// unless it names queues or kinds from its input (one queue per tenant,
// say), when it grows with the names seen. The queue gauges forget such a
// queue (see below).
//
// The queue gauges come from Client.ActiveQueueStats, which reads only
// indexes and counts each state exactly up to 100,000 jobs (beyond, on
// PostgreSQL, it takes the planner's estimate, as fresh as the table's
// last ANALYZE): a scrape reuses the last reading until it is
// Options.QueueStatsInterval old, so however often Prometheus scrapes,
// the database answers that query at most once per interval per process.
// A queue the client works (Client.Queues of a client with workers,
// Client.Works) has its series at 0 while it has no unfinished job,
// rather than none; so does one an
// earlier reading reported, in up to 10 readings in a row that find it
// empty: the next forgets its series, until a reading reports it again
// (with the default interval, after two and a half minutes empty or more,
// as readings happen only at scrapes).
// In a fleet of workers, one process reading them is enough: set a
// negative interval in the others.
//
// The event consumer runs on its own goroutine, takes events in batches a
// few milliseconds apart (so that a busy client does not wake it once per
// event), and resolves the labelled series of a (queue, kind) once, so
// counting an event costs a map look-up and an atomic add, with no
// allocation. Its subscription has room for Options.EventBuffer events;
// if it ever falls that far behind, the events it misses are counted in
// leasehold_events_dropped_total, and the client itself is never slowed
// down.
package leaseholdprom
