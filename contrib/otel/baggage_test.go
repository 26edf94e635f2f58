package leaseholdotel_test

import (
	"context"
	"testing"

	"github.com/leasehold/leasehold"
	leaseholdotel "github.com/leasehold/leasehold/contrib/otel"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestBaggageSampledOrNot: with the common composite propagator (trace
// context and baggage), a handler sees the inserting request's baggage
// whether the request was sampled or not; a sampled-out request's job
// still starts no span and its handler's spans are dropped by a
// parent-based sampler; without baggage, a sampled-out insert writes the
// mark alone.
func TestBaggageSampledOrNot(t *testing.T) {
	member, err := baggage.NewMember("tenant", "acme")
	must(t, err)
	bag, err := baggage.New(member)
	must(t, err)
	for _, tc := range []struct{ sampled, withBaggage bool }{{true, true}, {false, true}, {false, false}} {
		spans := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans), sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))
		tr := leaseholdotel.New(leaseholdotel.Options{TracerProvider: tp,
			Propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})})
		request := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, Remote: true})
		if tc.sampled {
			request = request.WithTraceFlags(trace.FlagsSampled)
		}
		ctx := trace.ContextWithRemoteSpanContext(t.Context(), request)
		if tc.withBaggage {
			ctx = baggage.ContextWithBaggage(ctx, bag)
		}
		md := insertedMetadata(t, tr, ctx)
		job := &leasehold.JobRow{ID: 9, Kind: "task", Queue: "default", Attempt: 1, LeaseOwner: owner, Metadata: md}
		var got string
		must(t, tr.WorkMiddleware().Work(t.Context(), job, func(ctx context.Context) error {
			got = baggage.FromContext(ctx).Member("tenant").Value()
			_, s := tp.Tracer("app").Start(ctx, "handler.http-call")
			s.End()
			return nil
		}))
		if want := map[bool]string{true: "acme"}[tc.withBaggage]; got != want {
			t.Errorf("%+v: handler saw tenant=%q, want %q (metadata %s)", tc, got, want, md)
		}
		if !tc.withBaggage && string(md) != `{"otel":{}}` {
			t.Errorf("%+v: metadata %s, want the mark alone", tc, md)
		}
		if n, want := len(spans.GetSpans()), map[bool]int{true: 3}[tc.sampled]; n != want {
			t.Errorf("%+v: %d spans exported, want %d (metadata %s)", tc, n, want, md)
		}
	}
}
