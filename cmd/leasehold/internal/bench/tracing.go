package bench

import (
	"context"
	"fmt"
	"sync/atomic"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/leasehold/leasehold"
	leaseholdotel "github.com/leasehold/leasehold/contrib/otel"
)

// drainTracing traces a drain as a program would: contrib/otel's
// middleware on an OpenTelemetry SDK provider that samples every span and
// exports them in batches, to an exporter that counts and discards them
// (the cost of a real exporter's network is the collector's, not the
// client's).
type drainTracing struct {
	tp       *sdktrace.TracerProvider
	exporter *countingExporter
	t        *leaseholdotel.Tracer
}

func newDrainTracing() *drainTracing {
	e := &countingExporter{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(e), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	return &drainTracing{tp: tp, exporter: e, t: leaseholdotel.New(leaseholdotel.Options{TracerProvider: tp})}
}

// configure adds the tracing middleware to cfg; d may be nil.
func (d *drainTracing) configure(cfg *leasehold.Config) {
	if d != nil {
		cfg.InsertMiddleware = append(cfg.InsertMiddleware, d.t.InsertMiddleware())
		cfg.WorkMiddleware = append(cfg.WorkMiddleware, d.t.WorkMiddleware())
	}
}

// close flushes the spans and checks that every job's handler run made
// one; d may be nil.
func (d *drainTracing) close(jobs int) error {
	if d == nil {
		return nil
	}
	if err := d.tp.Shutdown(context.Background()); err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	if n := d.exporter.spans.Load(); n < int64(jobs) {
		return fmt.Errorf("tracing exported %d spans for %d jobs", n, jobs)
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
