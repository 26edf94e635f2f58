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
// The caller's own metadata keys are kept. The span ends when the insert
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
//   - completed: the handler returned nil
//   - snoozed: Snooze
//   - failed: Permanent
//   - cancelled: Cancel, or the job was cancelled by an operator
//   - lease_lost: the lease was lost while the handler ran
//   - error: any other error; the client retries the job, or fails it
//     when its budget is spent, or releases it at shutdown
//   - panic: the handler panicked (the client recovers it)
//
// Every outcome but completed and snoozed records the error on the span
// and sets its status to Error.
package leaseholdotel
