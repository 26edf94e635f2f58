package leaseholdotel_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/leasehold/leasehold"
	leaseholdotel "github.com/leasehold/leasehold/contrib/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// benchProvider is a tracer provider the benchmarks compare.
type benchProvider struct {
	name string
	tp   trace.TracerProvider // nil: no middleware, the baseline
	// sampled is the sampled flag of the carried trace context, which a
	// parent-based sampler follows.
	sampled bool
}

// benchProviders are the tracer providers the benchmarks compare: none
// (no middleware: the baseline), a no-op provider, and the SDK with a
// parent-based ratio sampler and a batching exporter that drops the
// spans, on a job whose carried trace context was sampled out ("dropped")
// or sampled ("recorded"). An uncarried job is a root, sampled by the
// ratio: NeverSample for "dropped", AlwaysSample for "recorded".
func benchProviders(b *testing.B) []benchProvider {
	sdk := func(root sdktrace.Sampler) trace.TracerProvider {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()),
			sdktrace.WithSampler(sdktrace.ParentBased(root)))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		return tp
	}
	return []benchProvider{
		{name: "none"},
		{name: "noop", tp: noop.NewTracerProvider(), sampled: true},
		{name: "sdk-dropped", tp: sdk(sdktrace.NeverSample())},
		{name: "sdk-recorded", tp: sdk(sdktrace.AlwaysSample()), sampled: true},
	}
}

// carriedMetadata is a job's metadata as the insert middleware writes it,
// beside a key of the caller's: the trace context, or for a sampled-out
// one the mark of it, unless carry (Options.CarrySampledOut).
func carriedMetadata(sampled, carry bool) json.RawMessage {
	flags := "00"
	if sampled {
		flags = "01"
	} else if !carry {
		return json.RawMessage(`{"otel": {}, "tenant": "acme"}`)
	}
	return json.RawMessage(`{"otel": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-` +
		flags + `"}, "tenant": "acme"}`)
}

// BenchmarkWorkMiddleware measures the cost per handler run of the work
// middleware, on a job whose metadata carries what the insert middleware
// writes beside a key of the caller's ("carried": the trace context, or
// the mark of a sampled-out one; "carried-context": the context of a
// sampled-out one, as with Options.CarrySampledOut), and on one inserted
// without the insert middleware ("uncarried").
func BenchmarkWorkMiddleware(b *testing.B) {
	handler := func(context.Context) error { return nil }
	for _, p := range benchProviders(b) {
		for _, md := range []string{"carried", "carried-context", "uncarried"} {
			if md == "carried-context" && p.sampled {
				continue
			}
			job := &leasehold.JobRow{ID: 42, Kind: "task", Queue: "default", Attempt: 1, LeaseOwner: owner}
			if md != "uncarried" {
				job.Metadata = carriedMetadata(p.sampled, md == "carried-context")
			}
			b.Run(p.name+"/"+md, func(b *testing.B) {
				ctx := context.Background()
				run := handler
				if p.tp != nil {
					mw := leaseholdotel.New(leaseholdotel.Options{TracerProvider: p.tp}).WorkMiddleware()
					run = func(ctx context.Context) error { return mw.Work(ctx, job, handler) }
				}
				b.ReportAllocs()
				for b.Loop() {
					if err := run(ctx); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkInsertMiddleware measures the cost per insert of one job of
// the insert middleware, called under a span of the request, sampled or
// not as the provider's name says.
func BenchmarkInsertMiddleware(b *testing.B) {
	res := []*leasehold.InsertResult{{Job: &leasehold.JobRow{ID: 42}}}
	next := func(context.Context) ([]*leasehold.InsertResult, error) { return res, nil }
	job := &leasehold.InsertJob{Kind: "task", Args: json.RawMessage(`{}`), Opts: leasehold.InsertOpts{Queue: "default"}}
	jobs := []*leasehold.InsertJob{job}
	for _, p := range benchProviders(b) {
		b.Run(p.name, func(b *testing.B) {
			ctx := context.Background()
			insert := func(ctx context.Context) error { _, err := next(ctx); return err }
			if p.tp != nil {
				mw := leaseholdotel.New(leaseholdotel.Options{TracerProvider: p.tp}).InsertMiddleware()
				var span trace.Span
				ctx, span = p.tp.Tracer("bench").Start(ctx, "request")
				defer span.End()
				insert = func(ctx context.Context) error { _, err := mw.Insert(ctx, nil, jobs, next); return err }
			}
			b.ReportAllocs()
			for b.Loop() {
				job.Opts.Metadata = json.RawMessage(`{"tenant":"acme"}`)
				if err := insert(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
