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

// benchProviders are the tracer providers the benchmarks compare: none
// (no middleware: the baseline), a no-op provider, and the SDK sampling
// every span into a batching exporter that drops them.
func benchProviders(b *testing.B) map[string]trace.TracerProvider {
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
	return map[string]trace.TracerProvider{"none": nil, "noop": noop.NewTracerProvider(), "sdk": sdk}
}

// BenchmarkWorkMiddleware measures the cost per handler run of the work
// middleware, on a job whose metadata carries a trace context beside a
// key of the caller's ("carried"), and on one inserted without the insert
// middleware ("uncarried").
func BenchmarkWorkMiddleware(b *testing.B) {
	carried := json.RawMessage(`{"otel": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}, "tenant": "acme"}`)
	handler := func(context.Context) error { return nil }
	providers := benchProviders(b)
	for _, name := range []string{"none", "noop", "sdk"} {
		for _, md := range []string{"carried", "uncarried"} {
			tp := providers[name]
			job := &leasehold.JobRow{ID: 42, Kind: "task", Queue: "default", Attempt: 1, LeaseOwner: owner}
			if md == "carried" {
				job.Metadata = carried
			}
			b.Run(name+"/"+md, func(b *testing.B) {
				ctx := context.Background()
				run := handler
				if tp != nil {
					mw := leaseholdotel.New(leaseholdotel.Options{TracerProvider: tp}).WorkMiddleware()
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
// the insert middleware, called under a sampled span.
func BenchmarkInsertMiddleware(b *testing.B) {
	res := []*leasehold.InsertResult{{Job: &leasehold.JobRow{ID: 42}}}
	next := func(context.Context) ([]*leasehold.InsertResult, error) { return res, nil }
	job := &leasehold.InsertJob{Kind: "task", Args: json.RawMessage(`{}`), Opts: leasehold.InsertOpts{Queue: "default"}}
	jobs := []*leasehold.InsertJob{job}
	providers := benchProviders(b)
	for _, name := range []string{"none", "noop", "sdk"} {
		tp := providers[name]
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			insert := func(ctx context.Context) error { _, err := next(ctx); return err }
			if tp != nil {
				mw := leaseholdotel.New(leaseholdotel.Options{TracerProvider: tp}).InsertMiddleware()
				var span trace.Span
				ctx, span = tp.Tracer("bench").Start(ctx, "request")
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
