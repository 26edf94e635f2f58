package leaseholdotel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	leaseholdotel "github.com/leasehold/leasehold/contrib/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// attrs returns kvs as a map, for comparing whole attribute sets.
func attrs(kvs []attribute.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

func wantAttrs(t *testing.T, s tracetest.SpanStub, want map[string]any) {
	t.Helper()
	if got := attrs(s.Attributes); !reflect.DeepEqual(got, want) {
		t.Errorf("span %q attributes:\n got %v\nwant %v", s.Name, got, want)
	}
}

// TestInsertThenWork checks the default design: the insert span is a
// producer child of the caller's span, the work span a consumer child of
// the insert span in the same trace, each with exactly the documented
// attributes, and the handler's context carries the work span.
func TestInsertThenWork(t *testing.T) {
	e := setup(t, leaseholdotel.Options{}, true, true)
	ctx, req := e.tp.Tracer("test").Start(t.Context(), "request")
	res, err := e.client.Insert(ctx, taskArgs{}, nil)
	must(t, err)
	req.End()
	e.start(t)
	seen := e.waitHandled(t)
	work := e.waitSpans(t, trace.SpanKindConsumer, 1)[0]
	ins := e.ofKind(trace.SpanKindProducer)
	if len(ins) != 1 {
		t.Fatalf("%d insert spans, want 1", len(ins))
	}
	in := ins[0]
	if in.Name != "leasehold.insert task" || work.Name != "leasehold.work task" {
		t.Errorf("span names %q, %q", in.Name, work.Name)
	}
	if in.Parent.SpanID() != req.SpanContext().SpanID() {
		t.Errorf("insert span's parent %v, want the request span %v", in.Parent.SpanID(), req.SpanContext().SpanID())
	}
	if work.Parent.SpanID() != in.SpanContext.SpanID() || work.SpanContext.TraceID() != req.SpanContext().TraceID() {
		t.Errorf("work span: parent %v in trace %v, want insert span %v in trace %v",
			work.Parent.SpanID(), work.SpanContext.TraceID(), in.SpanContext.SpanID(), req.SpanContext().TraceID())
	}
	if !work.Parent.IsRemote() || len(work.Links) != 0 {
		t.Errorf("work span's parent remote=%v, links %v: want a remote parent and no link", work.Parent.IsRemote(), work.Links)
	}
	if seen.SpanID() != work.SpanContext.SpanID() {
		t.Errorf("handler's context carries span %v, want the work span %v", seen.SpanID(), work.SpanContext.SpanID())
	}
	id := res.Job.ID
	wantAttrs(t, in, map[string]any{
		"messaging.system": "leasehold", "messaging.operation.type": "send", "messaging.operation.name": "insert",
		"messaging.destination.name": "default", "leasehold.job.kind": "task", "leasehold.job.queue": "default",
		"leasehold.job.id": id,
	})
	wantAttrs(t, work, map[string]any{
		"messaging.system": "leasehold", "messaging.operation.type": "process", "messaging.operation.name": "work",
		"messaging.destination.name": "default", "leasehold.job.kind": "task", "leasehold.job.queue": "default",
		"leasehold.job.id": id, "leasehold.job.attempt": int64(1), "leasehold.lease.owner": owner,
		"leasehold.outcome": "completed",
	})
	for _, s := range []tracetest.SpanStub{in, work} {
		if s.Status.Code != codes.Unset || len(s.Events) != 0 {
			t.Errorf("span %q: status %v, events %v; want neither", s.Name, s.Status, s.Events)
		}
	}
}

// TestNewTraceLinks checks Options.NewTrace: the work span is the root of
// its own trace, linked to the insert span.
func TestNewTraceLinks(t *testing.T) {
	e := setup(t, leaseholdotel.Options{NewTrace: true}, true, true)
	_, err := e.client.Insert(t.Context(), taskArgs{}, nil)
	must(t, err)
	e.start(t)
	work := e.waitSpans(t, trace.SpanKindConsumer, 1)[0]
	in := e.ofKind(trace.SpanKindProducer)[0]
	if work.Parent.IsValid() {
		t.Errorf("work span has parent %v, want a root", work.Parent.SpanID())
	}
	if work.SpanContext.TraceID() == in.SpanContext.TraceID() {
		t.Error("work span is in the insert span's trace, want a trace of its own")
	}
	if len(work.Links) != 1 || !work.Links[0].SpanContext.Equal(in.SpanContext.WithRemote(true)) {
		t.Errorf("work span links %v, want one to the insert span %v", work.Links, in.SpanContext)
	}
}

// TestWorkWithoutCarriedContext checks that a job inserted without the
// insert middleware gets a root work span, even when the client's
// context holds a span.
func TestWorkWithoutCarriedContext(t *testing.T) {
	e := setup(t, leaseholdotel.Options{}, false, true)
	res, err := e.client.Insert(t.Context(), taskArgs{}, nil)
	must(t, err)
	if len(res.Job.Metadata) != 0 && string(res.Job.Metadata) != "{}" {
		t.Errorf("metadata without insert middleware: %s", res.Job.Metadata)
	}
	ctx, boot := e.tp.Tracer("test").Start(t.Context(), "boot")
	defer boot.End()
	must(t, e.client.Start(ctx))
	work := e.waitSpans(t, trace.SpanKindConsumer, 1)[0]
	if work.Parent.IsValid() || len(work.Links) != 0 {
		t.Errorf("work span: parent %v, links %v; want a root without links", work.Parent, work.Links)
	}
}

// TestWorkOutcomes checks the outcome attribute, status and recorded
// error of each way a handler ends.
func TestWorkOutcomes(t *testing.T) {
	cases := []struct {
		do, outcome, errText string
	}{
		{"permanent", "failed", "permanent: card declined"},
		{"error", "error", "provider timeout"},
		{"cancel", "cancelled", "cancelled: order withdrawn"},
		{"panic", "panic", "handler panicked"},
		{"snooze", "snoozed", ""},
	}
	for _, tc := range cases {
		t.Run(tc.do, func(t *testing.T) {
			e := setup(t, leaseholdotel.Options{}, true, true)
			_, err := e.client.Insert(t.Context(), taskArgs{Do: tc.do}, nil)
			must(t, err)
			e.start(t)
			work := e.waitSpans(t, trace.SpanKindConsumer, 1)[0]
			if got := attrs(work.Attributes)["leasehold.outcome"]; got != tc.outcome {
				t.Errorf("outcome %v, want %s", got, tc.outcome)
			}
			if tc.errText == "" {
				if work.Status.Code != codes.Unset || len(work.Events) != 0 {
					t.Errorf("status %v, events %v; want neither", work.Status, work.Events)
				}
				return
			}
			if work.Status.Code != codes.Error || work.Status.Description != tc.errText {
				t.Errorf("status %v, want Error %q", work.Status, tc.errText)
			}
			if len(work.Events) != 1 || work.Events[0].Name != "exception" ||
				attrs(work.Events[0].Attributes)["exception.message"] != tc.errText {
				t.Errorf("events %v, want one exception %q", work.Events, tc.errText)
			}
		})
	}
}

// TestInsertMany checks the span of a batch of mixed kinds: one span,
// named without a kind, with the batch size, and the same trace context
// in every job.
func TestInsertMany(t *testing.T) {
	e := setup(t, leaseholdotel.Options{}, true, false)
	res, err := e.client.InsertMany(t.Context(), nil, []leasehold.InsertManyParams{
		{Args: taskArgs{}}, {Args: otherArgs{}, Opts: &leasehold.InsertOpts{Queue: "mail"}},
	})
	must(t, err)
	ins := e.ofKind(trace.SpanKindProducer)
	if len(ins) != 1 {
		t.Fatalf("%d insert spans, want 1", len(ins))
	}
	if ins[0].Name != "leasehold.insert" {
		t.Errorf("name %q", ins[0].Name)
	}
	wantAttrs(t, ins[0], map[string]any{
		"messaging.system": "leasehold", "messaging.operation.type": "send", "messaging.operation.name": "insert",
		"messaging.batch.message_count": int64(2),
	})
	want := traceparent(ins[0])
	for _, r := range res {
		if got := carried(t, r.Job.Metadata)["traceparent"]; got != want {
			t.Errorf("job %d carries %q, want %q", r.Job.ID, got, want)
		}
	}
}

// traceparent is the W3C traceparent header of span s.
func traceparent(s tracetest.SpanStub) string {
	return fmt.Sprintf("00-%s-%s-%s", s.SpanContext.TraceID(), s.SpanContext.SpanID(), s.SpanContext.TraceFlags())
}

// TestOutcomeFromContextCause checks the outcomes that come from the
// handler context's cause rather than from its error.
func TestOutcomeFromContextCause(t *testing.T) {
	for _, tc := range []struct {
		cause   error
		outcome string
	}{
		{leasehold.ErrLeaseLost, "lease_lost"},
		{leasehold.ErrJobCancelled, "cancelled"},
		{leasehold.ErrShuttingDown, "released"},
		{context.Canceled, "error"},
	} {
		e := setup(t, leaseholdotel.Options{}, false, false)
		ctx, cancel := context.WithCancelCause(t.Context())
		cancel(tc.cause)
		job := &leasehold.JobRow{ID: 7, Kind: "task", Queue: "default", Attempt: 2, LeaseOwner: owner}
		mw := leaseholdotel.New(leaseholdotel.Options{TracerProvider: e.tp}).WorkMiddleware()
		err := mw.Work(ctx, job, func(ctx context.Context) error { return ctx.Err() })
		if err != context.Canceled {
			t.Errorf("middleware returned %v, want the handler's error", err)
		}
		spans := e.ofKind(trace.SpanKindConsumer)
		if len(spans) != 1 {
			t.Fatalf("%d spans, want 1", len(spans))
		}
		if got := attrs(spans[0].Attributes)["leasehold.outcome"]; got != tc.outcome {
			t.Errorf("cause %v: outcome %v, want %s", tc.cause, got, tc.outcome)
		}
	}
}

// TestSampledOutFollowsRequest checks a parent-based sampler through both
// middleware: a request sampled out enqueues a job that carries only the
// mark of it (the whole context with CarrySampledOut, the handler then
// running in the request's trace), whose run starts no span, and nothing
// is exported; a sampled request's job gets a recorded work span with
// its attributes.
func TestSampledOutFollowsRequest(t *testing.T) {
	for _, tc := range []struct{ sampled, carry bool }{{false, false}, {false, true}, {true, false}} {
		spans := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())))
		tr := leaseholdotel.New(leaseholdotel.Options{TracerProvider: tp, CarrySampledOut: tc.carry})
		request := trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, Remote: true,
		})
		if tc.sampled {
			request = request.WithTraceFlags(trace.FlagsSampled)
		}
		ctx := trace.ContextWithRemoteSpanContext(t.Context(), request)
		in := &leasehold.InsertJob{Kind: "task", Args: json.RawMessage(`{}`), Opts: leasehold.InsertOpts{Queue: "default"}}
		_, err := tr.InsertMiddleware().Insert(ctx, nil, []*leasehold.InsertJob{in},
			func(context.Context) ([]*leasehold.InsertResult, error) { return nil, nil })
		must(t, err)
		if mark := !tc.sampled && !tc.carry; mark != (string(in.Opts.Metadata) == `{"otel":{}}`) {
			t.Errorf("%+v: metadata %s", tc, in.Opts.Metadata)
		}
		job := &leasehold.JobRow{ID: 9, Kind: "task", Queue: "default", Attempt: 1, LeaseOwner: owner, Metadata: in.Opts.Metadata}
		var seen trace.SpanContext
		must(t, tr.WorkMiddleware().Work(t.Context(), job, func(ctx context.Context) error {
			seen = trace.SpanContextFromContext(ctx)
			return nil
		}))
		if wantTrace := tc.sampled || tc.carry; wantTrace && (seen.TraceID() != request.TraceID() || seen.IsSampled() != tc.sampled) {
			t.Errorf("%+v: handler saw %v, want the request's trace %v (metadata %s)", tc, seen, request.TraceID(), in.Opts.Metadata)
		} else if !wantTrace && (!seen.IsValid() || seen.IsSampled()) {
			t.Errorf("%+v: handler saw %v, want a trace not sampled (metadata %s)", tc, seen, in.Opts.Metadata)
		}
		got := spans.GetSpans()
		if !tc.sampled {
			if len(got) != 0 {
				t.Errorf("%+v: %d spans exported", tc, len(got))
			}
			continue
		}
		if len(got) != 2 {
			t.Fatalf("sampled: %d spans exported, want the insert and the work span", len(got))
		}
		if a := attrs(got[1].Attributes); a["leasehold.job.id"] != int64(9) || a["leasehold.job.queue"] != "default" || a["leasehold.outcome"] != "completed" {
			t.Errorf("work span attributes %v", a)
		}
	}
}

// TestSampledOutHandlerSpans: under a parent-based sampler whose root
// sampler keeps roots (AlwaysSample stands for TraceIDRatioBased(r),
// which keeps r of them), a request sampled out enqueues a job whose
// handler's own spans are sampled out with it, carrying the mark or
// (CarrySampledOut) the whole context: nothing is exported, no orphan
// root trace.
func TestSampledOutHandlerSpans(t *testing.T) {
	for _, carry := range []bool{false, true} {
		spans := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
		tr := leaseholdotel.New(leaseholdotel.Options{TracerProvider: tp, CarrySampledOut: carry})
		request := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, Remote: true})
		md := insertedMetadata(t, tr, trace.ContextWithRemoteSpanContext(t.Context(), request))
		job := &leasehold.JobRow{ID: 9, Kind: "task", Queue: "default", Attempt: 1, LeaseOwner: owner, Metadata: md}
		var recording bool
		must(t, tr.WorkMiddleware().Work(t.Context(), job, func(ctx context.Context) error {
			_, s := tp.Tracer("app").Start(ctx, "handler.http-call")
			recording = s.IsRecording()
			s.End()
			return nil
		}))
		if recording {
			t.Errorf("CarrySampledOut %v (metadata %s): the handler's span records", carry, md)
		}
		for _, s := range spans.GetSpans() {
			t.Errorf("CarrySampledOut %v (metadata %s): span %q exported (parent valid %v), want none",
				carry, md, s.Name, s.Parent.IsValid())
		}
	}
}

// insertedMetadata returns the metadata tr's insert middleware writes
// for a job inserted under ctx.
func insertedMetadata(t *testing.T, tr *leaseholdotel.Tracer, ctx context.Context) json.RawMessage {
	t.Helper()
	in := &leasehold.InsertJob{Kind: "task", Args: json.RawMessage(`{}`), Opts: leasehold.InsertOpts{Queue: "default"}}
	_, err := tr.InsertMiddleware().Insert(ctx, nil, []*leasehold.InsertJob{in},
		func(context.Context) ([]*leasehold.InsertResult, error) { return nil, nil })
	must(t, err)
	return in.Opts.Metadata
}

// TestSampledOutMark: a job that carries the mark of a sampled-out
// insert runs without a span, whatever the sampler would say (here one
// that samples everything); with TraceSampledOut or NewTrace the sampler
// is asked, for a root span.
func TestSampledOutMark(t *testing.T) {
	for _, o := range []leaseholdotel.Options{{}, {TraceSampledOut: true}, {NewTrace: true}} {
		spans := tracetest.NewInMemoryExporter()
		o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSampler(sdktrace.AlwaysSample()))
		tr := leaseholdotel.New(o)
		job := &leasehold.JobRow{ID: 3, Kind: "task", Queue: "default", Attempt: 1, LeaseOwner: owner,
			Metadata: []byte(`{"tenant": "acme", "otel": { }}`)}
		must(t, tr.WorkMiddleware().Work(t.Context(), job, func(context.Context) error { return nil }))
		got := spans.GetSpans()
		if want := o.TraceSampledOut || o.NewTrace; (len(got) == 1) != want || len(got) > 1 {
			t.Errorf("%+v: %d spans exported, want one %v", o, len(got), want)
		} else if want && got[0].Parent.IsValid() {
			t.Errorf("%+v: span has parent %v, want a root", o, got[0].Parent)
		}
	}
}

// TestSampledOutJobStartsNoSpan: a job whose carried trace context was
// sampled out runs under that context without a span, whatever the
// sampler would say (here one that samples everything); with
// TraceSampledOut the sampler is asked and its span recorded.
func TestSampledOutJobStartsNoSpan(t *testing.T) {
	for _, ask := range []bool{false, true} {
		spans := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSampler(sdktrace.AlwaysSample()))
		tr := leaseholdotel.New(leaseholdotel.Options{TracerProvider: tp, TraceSampledOut: ask})
		out := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{7}, SpanID: trace.SpanID{8}, Remote: true})
		md := fmt.Sprintf(`{"otel":{"traceparent":"00-%s-%s-00"}}`, out.TraceID(), out.SpanID())
		job := &leasehold.JobRow{ID: 3, Kind: "task", Queue: "default", Attempt: 1, LeaseOwner: owner, Metadata: []byte(md)}
		var seen trace.SpanContext
		must(t, tr.WorkMiddleware().Work(t.Context(), job, func(ctx context.Context) error {
			seen = trace.SpanContextFromContext(ctx)
			return nil
		}))
		if seen.TraceID() != out.TraceID() {
			t.Errorf("TraceSampledOut %v: handler saw trace %v, want the carried %v", ask, seen.TraceID(), out.TraceID())
		}
		if n, want := len(spans.GetSpans()), map[bool]int{false: 0, true: 1}[ask]; n != want {
			t.Errorf("TraceSampledOut %v: %d spans exported, want %d", ask, n, want)
		}
	}
}

// TestShutdownSpanSaysReleased: a handler that Stop cuts off and that
// returns Permanent is released by the client (the job pending again, its
// attempt ended released), and its work span says released too, with no
// error status.
func TestShutdownSpanSaysReleased(t *testing.T) {
	e := setup(t, leaseholdotel.Options{}, false, false)
	started := make(chan struct{}, 1)
	ws := leasehold.NewWorkers()
	must(t, leasehold.AddWorker(ws, leasehold.WorkFunc[otherArgs](func(ctx context.Context, _ *leasehold.Job[otherArgs]) error {
		started <- struct{}{}
		<-ctx.Done()
		return leasehold.Permanent(fmt.Errorf("gave up: %w", context.Cause(ctx)))
	})))
	mw := leaseholdotel.New(leaseholdotel.Options{TracerProvider: e.tp}).WorkMiddleware()
	c, err := leasehold.NewClient(leasehold.Config{Driver: e.driver, Workers: ws, PollInterval: 10 * time.Millisecond,
		ShutdownTimeout: 50 * time.Millisecond, WorkMiddleware: []leasehold.WorkMiddleware{mw}})
	must(t, err)
	res, err := c.Insert(t.Context(), otherArgs{}, nil)
	must(t, err)
	must(t, c.Start(t.Context()))
	<-started
	must(t, c.Stop(context.Background()))
	job, err := c.GetJob(context.Background(), res.Job.ID)
	must(t, err)
	if job.State != leasehold.StatePending || job.Attempts[len(job.Attempts)-1].Outcome != leasehold.OutcomeReleased {
		t.Fatalf("job %s, last attempt %s: want pending, released", job.State, job.Attempts[len(job.Attempts)-1].Outcome)
	}
	spans := e.ofKind(trace.SpanKindConsumer)
	if len(spans) != 1 {
		t.Fatalf("%d work spans, want 1", len(spans))
	}
	if got := attrs(spans[0].Attributes)["leasehold.outcome"]; got != string(leasehold.OutcomeReleased) {
		t.Errorf("work span outcome %v, want released", got)
	}
	if spans[0].Status.Code == codes.Error {
		t.Errorf("work span status Error for a released job")
	}
}
