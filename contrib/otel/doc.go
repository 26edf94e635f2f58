// Package leaseholdotel traces leasehold jobs with OpenTelemetry: a
// producer span for each insert, a consumer span for each handler run,
// and the insert span's trace context carried from one to the other in
// the job's metadata.
//
// It plugs into a client through its hooks only, and is a module of its
// own (github.com/leasehold/leasehold/contrib/otel), so a program that
// uses leasehold without it does not download OpenTelemetry:
//
//	t := leaseholdotel.New(leaseholdotel.Options{TracerProvider: tp})
//	cfg.InsertMiddleware = append(cfg.InsertMiddleware, t.InsertMiddleware())
//	cfg.WorkMiddleware = append(cfg.WorkMiddleware, t.WorkMiddleware())
//
// # Insert spans
//
// Every Insert, InsertTx, InsertMany and InsertBulk call starts one span
// of kind producer, named "leasehold.insert <kind>" ("leasehold.insert"
// when a batch mixes kinds), a child of the caller's span in ctx. Its
// trace context is written into the metadata of every job of the call,
// under the key MetadataKey, as the propagator encodes it:
//
//	{"otel": {"traceparent": "00-…-…-01"}}
//
// A sampled-out insert span writes only the mark that it was, an empty
// object ({"otel": {}}), unless Options.CarrySampledOut: its work spans
// need the decision, not the 80 bytes of context, which every update of
// the job's row would write again. When the propagator has more than the
// trace context to carry for the call (baggage, with propagation.Baggage
// in a composite propagator), a sampled-out insert writes the whole
// context as a sampled one does, so that its handlers get the baggage
// whether the trace was sampled or not. The caller's own metadata keys are
// kept. The span ends when the insert
// returns; it records the error of a refused or failed insert. A job
// inserted in a transaction that is then rolled back leaves a span that
// ended without error: the span reports the insert, not the commit.
//
// # Work spans
//
// Every handler run (one attempt) starts one span of kind consumer,
// named "leasehold.work <kind>". By default it is a child of the insert
// span, read back from the job's metadata, so a request, the jobs it
// enqueued and each of their attempts form one trace, and a parent-based
// sampler keeps or drops them together. With Options.NewTrace each
// attempt is instead the root of a trace of its own with a link to the
// insert span, the OpenTelemetry messaging practice for consumers, which
// suits jobs retried over hours. A job with no carried context (inserted
// without this middleware) gets a root span. The handler's context
// carries the work span, so the spans a handler starts are its children.
// A job inserted under a sampled-out span starts no work span (see Cost);
// its handler runs under a span context that is not sampled (the carried
// one with Options.CarrySampledOut, else one of a new trace id), so that
// a parent-based sampler drops the spans the handler starts too, rather
// than sample them afresh as the roots of traces of their own.
//
// # Attributes
//
// Both spans carry messaging.system "leasehold", messaging.operation.type
// ("send" or "process"), messaging.operation.name ("insert" or "work"),
// messaging.destination.name (the queue), leasehold.job.kind and
// leasehold.job.queue. An insert of one job adds leasehold.job.id (and
// leasehold.job.duplicate when a unique key matched an existing job); an
// insert of several adds messaging.batch.message_count. A work span adds
// leasehold.job.id, leasehold.job.attempt, leasehold.lease.owner and,
// when the handler returns, leasehold.outcome:
//
//   - completed: the handler returned nil (but see lease_lost and
//     released, and a CompleteTx rolled back, below); or it completed
//     the job with CompleteTx in a transaction that committed, whatever
//     it then returned or did (an error, a panic, being cut off by Stop):
//     the job is completed, as the client reports it. Such a span has
//     leasehold.completed_in_tx set to true (CompletedInTxKey), and an
//     error the handler returned is recorded as an event, the status left
//     Unset. A handler whose CompleteTx succeeded but whose transaction
//     rolled back, and that returns nil, has not completed the job: the
//     client charges the attempt, and the span says error, recording
//     leasehold.ErrCompleteTxRolledBack. The middleware tells the two
//     apart as the client does, by the attempt's history
//     (leasehold.CompletedInTx): one read of the database when the
//     handler returns, for a recorded span of a run that called
//     CompleteTx successfully, and for no other
//   - snoozed: Snooze
//   - failed: Permanent
//   - cancelled: Cancel, or the job was cancelled by an operator
//   - lease_lost: the lease was found lost while the handler ran (its
//     context's cause is leasehold.ErrLeaseLost, or the handler returned
//     an error wrapping it, unless the client had cut it off: see
//     released), whatever the handler returned: a nil it returns then is
//     a late completion, which the client's fenced write does not apply
//     once another worker holds the job. A lease the
//     worker gave up because it could not renew it in time (the cause is
//     leasehold.ErrLeaseNotRenewed) may still be held in the database:
//     the span reports what the client writes, fenced, which applies
//     unless another worker took the lease over meanwhile: completed for
//     a nil, lease_lost for any error (the job is retried, or failed
//     once its budget is spent; in a queue with FlagStuck or Reconcile
//     the client writes nothing and the watcher decides). Such a span has
//     leasehold.lease.given_up set to true (LeaseGivenUpKey), and the
//     job's history tells whether the write applied
//   - released: the client stopped and cut the handler off (its
//     context's cause is leasehold.ErrShuttingDown), whatever the handler
//     then returned, nil included, or the error wrapping
//     leasehold.ErrLeaseLost that CheckLease then returns: the client has
//     given up on the run and ignores its result (unless the handler had
//     completed the job with a CompleteTx that committed: completed). The
//     job goes back to pending, its attempt not charged, except in a queue with FlagStuck or Reconcile, where the
//     client writes nothing (the handler may have been cut off mid-effect)
//     and leaves the lease to expire: the watcher then flags the job
//     stuck, or moves it to reconciling with a reconcile job. The
//     middleware cannot see a queue's policy: released means "cut off at
//     shutdown", and the job's history tells which of the two followed
//   - error: any other error; the client retries the job, or fails it
//     when its budget is spent. A handler that ends its goroutine with
//     runtime.Goexit (as t.FailNow does) has not panicked: the client
//     ends its attempt as an error saying so, which the span records
//   - panic: the handler panicked (the client recovers it, once the span
//     has ended)
//
// Every outcome but completed, snoozed and released records the error on
// the span (for lease_lost with a nil error, the context's cause) and sets
// its status to Error; completed records the error of a handler that
// failed after its CompleteTx committed, without that status.
//
// The attributes are set just after the span starts, and only on a span
// that records: a sampler sees a span's name (which holds the job kind)
// and its span kind, and the parent's sampling decision, but not its
// attributes, nor does a span processor's OnStart.
//
// # Cost
//
// In production a tracer provider samples a small share of the traces,
// typically with sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r)): a
// request's root span is sampled or not, and the jobs it enqueues and
// each of their attempts follow it, since the insert span's decision
// travels in the job's metadata: the trace context of a sampled one, the
// mark of a sampled-out one.
//
// A job whose trace is sampled out costs the reading of that mark and
// little more: it is found in the metadata without decoding it as JSON
// (one allocation), and the handler runs with no span started (what a
// parent-based sampler decides; Options.TraceSampledOut asks the sampler
// anyway), under a span context that is not sampled, of random ids (two
// allocations). On the OpenTelemetry SDK that is a few tenths of a
// microsecond and three allocations (256 bytes) per handler run
// (BenchmarkWorkMiddleware, sdk-dropped/carried, on a shared 2-vCPU
// machine); 0.7 µs and 4 allocations with CarrySampledOut, whose context
// the propagator parses (sdk-dropped/carried-context). On PostgreSQL the mark adds about 50
// bytes of WAL per drained job, the whole context about 200. In drains of
// no-op jobs with metrics, tracing at 1 % came to 93 to 100 % of the
// plain drain's rate, and 0.5 to 1 µs of CPU per job over metrics alone
// (docs/benchmarks.md).
//
// A recorded job costs in addition what the SDK does for a span: the span
// object, its ten attributes, its end and its export through the span
// processor: about 4.5 µs and 14 allocations (3.2 KB) per handler run in
// the same benchmark (sdk-recorded/carried), and about 10 µs of CPU per
// job in a drain of no-op jobs, where the garbage those spans make and the
// batch span processor's goroutine share the cores with the workers.
//
// The insert middleware pays for its span and for writing the decision
// into the metadata of every job it inserts, sampled or not; with a
// propagator beyond the trace context (baggage), a sampled-out insert
// also asks it whether it has fields to carry.
//
// leasehold bench --metrics --tracing measures a drain with metrics and
// tracing against a plain drain of the same run, at a sampling ratio
// (--trace-sample, default 0.01) and with every span sampled; the
// figures are in the repository's docs/benchmarks.md.
package leaseholdotel
