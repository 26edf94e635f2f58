package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/leasehold/leasehold"
	leaseholdotel "github.com/leasehold/leasehold/contrib/otel"
)

// drainTracing traces a drain as a program in production would:
// contrib/otel's middleware on an OpenTelemetry SDK provider with a
// parent-based ratio sampler, its spans exported in batches by a
// BatchSpanProcessor to an exporter that counts and discards them (the
// cost of a real exporter's network is the collector's, not the
// client's). The drained jobs carry the trace context the insert
// middleware writes for a job enqueued under a request span of its own,
// sampled by the same ratio, so the work spans follow the request's
// decision as they would in production.
type drainTracing struct {
	sample   float64
	tp       *sdktrace.TracerProvider
	exporter *countingExporter
	t        *leaseholdotel.Tracer
	sampled  int64 // jobs inserted under a sampled request span
}

func newDrainTracing(sample float64) *drainTracing {
	e := &countingExporter{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(e), sdktrace.WithSampler(sampler(sample)))
	return &drainTracing{sample: sample, tp: tp, exporter: e,
		t: leaseholdotel.New(leaseholdotel.Options{TracerProvider: tp})}
}

// sampler is the production sampler at ratio sample: a trace's root
// decides, by its trace id, and its spans follow.
func sampler(sample float64) sdktrace.Sampler {
	return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(sample))
}

// configure adds the work middleware to cfg; d may be nil. The insert
// middleware is not added: the drained jobs are inserted before the
// drain is timed, by jobMetadata.
func (d *drainTracing) configure(cfg *leasehold.Config) {
	if d != nil {
		cfg.WorkMiddleware = append(cfg.WorkMiddleware, d.t.WorkMiddleware())
	}
}

// jobMetadata returns the metadata of n jobs, each as the insert
// middleware writes it for a job inserted alone under a request span of
// its own, on a provider with d's sampler that exports nothing (the
// insert is not what the drain measures); nil when d is nil.
func (d *drainTracing) jobMetadata(ctx context.Context, n int) ([]json.RawMessage, error) {
	if d == nil {
		return nil, nil
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler(d.sample)))
	defer func() { _ = tp.Shutdown(context.WithoutCancel(ctx)) }()
	mw := leaseholdotel.New(leaseholdotel.Options{TracerProvider: tp}).InsertMiddleware()
	requests := tp.Tracer("bench")
	next := func(context.Context) ([]*leasehold.InsertResult, error) { return nil, nil }
	out := make([]json.RawMessage, n)
	for i := range out {
		rctx, span := requests.Start(ctx, "request")
		job := &leasehold.InsertJob{Kind: noopArgs{}.Kind(), Args: json.RawMessage(`{}`),
			Opts: leasehold.InsertOpts{Queue: leasehold.DefaultQueue}}
		_, err := mw.Insert(rctx, nil, []*leasehold.InsertJob{job}, next)
		span.End()
		if err != nil {
			return nil, fmt.Errorf("tracing: metadata: %w", err)
		}
		if span.SpanContext().IsSampled() {
			d.sampled++
		}
		out[i] = job.Opts.Metadata
	}
	return out, nil
}

// close flushes the spans and checks that every sampled job's handler
// run exported one; d may be nil.
func (d *drainTracing) close() error {
	if d == nil {
		return nil
	}
	if err := d.tp.Shutdown(context.Background()); err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	if n := d.exporter.spans.Load(); n != d.sampled {
		return fmt.Errorf("tracing exported %d spans for %d sampled jobs", n, d.sampled)
	}
	return nil
}

// countingExporter is an sdktrace.SpanExporter that counts and discards.
type countingExporter struct{ spans atomic.Int64 }

// ExportSpans counts spans.
func (e *countingExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.spans.Add(int64(len(spans)))
	return nil
}

// Shutdown does nothing.
func (e *countingExporter) Shutdown(context.Context) error { return nil }
