package leaseholdotel

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"

	"github.com/leasehold/leasehold"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// errPanicked is recorded on the span of a handler that panicked; the
// client recovers the panic, with its value and stack, after the span
// has ended.
var errPanicked = errors.New("handler panicked")

// work is the work middleware: one consumer span around a handler run,
// child of (or linked to) the insert span carried in the job's metadata.
func (t *Tracer) work(ctx context.Context, job *leasehold.JobRow, next func(context.Context) error) error {
	parent, carries := t.extract(ctx, job.Metadata)
	if t.sampledOut(parent, carries) {
		if carries == carriesMark {
			parent = withUnsampledTrace(parent)
		}
		return next(parent) // sampled out where the job was inserted
	}
	spanCtx, span := t.startWork(parent, carries == carriesContext, job)
	returned := false
	defer func() {
		if returned {
			return
		}
		// The handler panicked, or ended its goroutine with runtime.Goexit,
		// which the client counts not as a panic but as a handler that
		// returned leasehold.ErrHandlerExited; only recover tells the two
		// apart, and only when this deferred function calls it itself.
		if v := recover(); v != nil {
			endPanicked(ctx, span)
			// The panic goes on, its value unchanged, for the client to
			// recover: the stack it then takes still holds the panic's
			// frames.
			panic(v)
		}
		endReturned(ctx, span, leasehold.ErrHandlerExited)
	}()
	err := next(spanCtx)
	returned = true
	endReturned(ctx, span, err)
	return err
}

// endReturned ends the span of a handler, run under ctx, that returned
// err, with the outcome the client gives the run.
func endReturned(ctx context.Context, span trace.Span, err error) {
	if !span.IsRecording() {
		span.End() // nothing to record: not even CompletedInTx's read
		return
	}
	o, rec := outcomeOf(ctx, span, err)
	if errors.Is(context.Cause(ctx), leasehold.ErrLeaseNotRenewed) {
		span.SetAttributes(LeaseGivenUpKey.Bool(true))
	}
	endWork(span, o, rec)
}

// endPanicked ends the span of a handler, run under ctx, that panicked:
// panic, unless it completed its job with CompleteTx in a transaction
// that committed, which the panic does not undo.
func endPanicked(ctx context.Context, span trace.Span) {
	if span.IsRecording() && leasehold.CompletedInTx(ctx) == leasehold.TxCompletionCommitted {
		span.SetAttributes(CompletedInTxKey.Bool(true))
		endWork(span, string(leasehold.OutcomeCompleted), errPanicked)
		return
	}
	endWork(span, OutcomePanic, errPanicked)
}

// CompletedInTxKey is set, true, on the work span of a run that completed
// its job with CompleteTx in a transaction that committed
// (leasehold.CompletedInTx): its outcome is completed whatever the
// handler then returned, and an error it returned (or its panic) is
// recorded as an event, the span's status left Unset.
const CompletedInTxKey = attribute.Key("leasehold.completed_in_tx")

// outcomeOf returns the outcome of the run of a handler, under ctx, that
// returned err, as the client writes it, and the error its span
// records; it marks span when the job was completed in a transaction.
//
// A run whose handler completed the job with CompleteTx is told apart
// first, as the client does (leasehold.CompletedInTx, whose answer is the
// attempt's history): when that transaction committed, the job is
// completed whatever the handler returned, even once Stop has cut it off
// (the client's write is refused, and it reports the completion). When it
// rolled back, a nil is a failure, leasehold.ErrCompleteTxRolledBack,
// charged as any error is, unless the client no longer writes what the
// handler returns (Stop cut it off, or the lease is known to be lost); any
// other return ends the run as it would without CompleteTx.
func outcomeOf(ctx context.Context, span trace.Span, err error) (string, error) {
	switch leasehold.CompletedInTx(ctx) {
	case leasehold.TxCompletionCommitted:
		span.SetAttributes(CompletedInTxKey.Bool(true))
		return string(leasehold.OutcomeCompleted), err
	case leasehold.TxCompletionRolledBack:
		if err == nil && !resultIgnored(ctx) {
			return OutcomeError, leasehold.ErrCompleteTxRolledBack
		}
	}
	o := outcome(ctx, err)
	return o, recorded(ctx, o, err)
}

// resultIgnored reports whether the client writes nothing of what a
// handler run under ctx returns: Stop cut it off (and released its lease,
// or left it to the watcher), or its lease is known to be another
// worker's (a write would be refused). A lease the worker gave up
// (ErrLeaseNotRenewed) may still be held: what the handler returns is
// written.
func resultIgnored(ctx context.Context) bool {
	cause := context.Cause(ctx)
	return errors.Is(cause, leasehold.ErrShuttingDown) ||
		errors.Is(cause, leasehold.ErrLeaseLost) && !errors.Is(cause, leasehold.ErrLeaseNotRenewed)
}

// LeaseGivenUpKey is set, true, on the work span of a run whose lease the
// worker gave up because it could not renew it in time (its context's
// cause is leasehold.ErrLeaseNotRenewed): the outcome the span reports is
// the one the client writes, fenced, which applies unless another worker
// took the lease over meanwhile; the job's history tells which.
const LeaseGivenUpKey = attribute.Key("leasehold.lease.given_up")

// recorded returns the error the span of a run that ended with outcome o
// records: the handler's, err, or when it returned nil without completing
// the job (its lease was lost), the cause of its context.
func recorded(ctx context.Context, o string, err error) error {
	if err == nil && o != string(leasehold.OutcomeCompleted) {
		return context.Cause(ctx)
	}
	return err
}

// sampledOut reports whether a handler run under parent, the context
// with what the job carries, starts no span: its trace was sampled out
// where it was inserted, and neither NewTrace nor TraceSampledOut asks
// the sampler anyway.
func (t *Tracer) sampledOut(parent context.Context, carries carriage) bool {
	if t.newTrace || t.traceSampledOut {
		return false
	}
	if carries == carriesMark {
		return true
	}
	sc := trace.SpanContextFromContext(parent)
	return carries == carriesContext && sc.IsValid() && !sc.IsSampled()
}

// withUnsampledTrace returns ctx with the span context of a new trace,
// not sampled, for the handler of a job that carries only the mark of a
// sampled-out insert: the spans the handler starts are children of a
// sampled-out parent, which a parent-based sampler drops, rather than
// roots it would sample afresh, orphans of the trace they belong to. The
// ids are random, drawn as the OpenTelemetry SDK's default generator
// draws them; no span has them, none is exported.
func withUnsampledTrace(ctx context.Context) context.Context {
	var tid trace.TraceID
	var sid trace.SpanID
	for !tid.IsValid() {
		binary.NativeEndian.PutUint64(tid[:8], rand.Uint64())
		binary.NativeEndian.PutUint64(tid[8:], rand.Uint64())
	}
	for !sid.IsValid() {
		binary.NativeEndian.PutUint64(sid[:], rand.Uint64())
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}) // TraceFlags 0: not sampled
	return trace.ContextWithSpanContext(ctx, sc)
}

// startWork starts the span of a run of job under parent, the client's
// context with the trace context read from the job's metadata (carried
// says one was): a child of the insert span, or with NewTrace a root
// linked to it, or a root when the job carries none (whatever span the
// client's context holds: it is not the job's). The attributes are set only on a span that
// records: a span sampled out costs the reading of the carried context
// and what the tracer itself does to start a span, nothing more.
func (t *Tracer) startWork(parent context.Context, carried bool, job *leasehold.JobRow) (context.Context, trace.Span) {
	carried = carried && trace.SpanContextFromContext(parent).IsValid()
	spec := t.specOf(job.Kind, job.Queue)
	opts := workChildOpts
	switch {
	case !carried:
		opts = workRootOpts
	case t.newTrace:
		opts = []trace.SpanStartOption{consumerOpt, newRootOpt, trace.WithLinks(trace.LinkFromContext(parent))}
	}
	spanCtx, span := t.tracer.Start(parent, spec.workName, opts...)
	if span.IsRecording() {
		span.SetAttributes(spec.workAttrs...)
		span.SetAttributes(JobIDKey.Int64(job.ID), JobAttemptKey.Int(job.Attempt), LeaseOwnerKey.String(job.LeaseOwner))
	}
	return spanCtx, span
}

// endWork records outcome and, for a failure, err on span, and ends it.
// A completed outcome with an error is a job completed with CompleteTx
// whose handler then failed: the error is recorded as an event, the
// status left Unset.
func endWork(span trace.Span, outcome string, err error) {
	if span.IsRecording() {
		span.SetAttributes(OutcomeKey.String(outcome))
		switch {
		case err == nil, outcome == string(leasehold.OutcomeSnoozed), outcome == string(leasehold.OutcomeReleased):
		case outcome == string(leasehold.OutcomeCompleted):
			span.RecordError(err)
		default:
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}

// outcome names how a handler run that returned err ended, as far as the
// work middleware can tell, in the order the client decides it; ctx is
// the handler's context as the client gave it, whose cause tells a lost
// lease, an operator's cancel or a shutdown.
//
// A lease the worker gave up because it could not renew it in time
// (cause leasehold.ErrLeaseNotRenewed) may still be held in the database:
// the client writes what the handler returned, fenced, as completed for
// a nil, which applies unless another worker took the lease over; for an
// error, whatever it is, the ending of a lease given up (lease_lost, the
// attempt retried, or failed once its budget is spent). Otherwise a
// shutdown comes first, whatever the handler returned: Stop gave up on
// the handler and released its lease before cancelling its context, so
// the client ignores what it returns, a nil included, and the job runs
// again. That holds too for the error wrapping leasehold.ErrLeaseLost
// that CheckLease returns once Stop has cut the handler off: the lease
// was given up, not lost. A lease known to be lost (cause
// leasehold.ErrLeaseLost, or an error wrapping it) comes next, whatever
// the handler returned too: a handler that sees its context end and
// returns nil has not completed the job, whose lease is another worker's
// (the client's write of that completion is refused).
func outcome(ctx context.Context, err error) string {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, leasehold.ErrLeaseNotRenewed):
		if err == nil {
			return string(leasehold.OutcomeCompleted)
		}
		return string(leasehold.OutcomeLeaseLost)
	case errors.Is(cause, leasehold.ErrShuttingDown):
		return string(leasehold.OutcomeReleased)
	case errors.Is(err, leasehold.ErrLeaseLost), errors.Is(cause, leasehold.ErrLeaseLost):
		return string(leasehold.OutcomeLeaseLost)
	case err == nil:
		return string(leasehold.OutcomeCompleted)
	case errors.Is(cause, leasehold.ErrJobCancelled):
		return string(leasehold.OutcomeCancelled)
	case is[*leasehold.SnoozeError](err):
		return string(leasehold.OutcomeSnoozed)
	case is[*leasehold.CancelError](err):
		return string(leasehold.OutcomeCancelled)
	case is[*leasehold.PermanentError](err):
		return string(leasehold.OutcomeFailed)
	}
	return OutcomeError
}

// is reports whether err's tree holds an error of type E.
func is[E error](err error) bool {
	_, ok := errors.AsType[E](err)
	return ok
}
