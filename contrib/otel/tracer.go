package leaseholdotel

import (
	"sync"

	"github.com/leasehold/leasehold"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the spans: the name of the
// tracer this package asks the TracerProvider for.
const ScopeName = "github.com/leasehold/leasehold/contrib/otel"

// MetadataKey is the key of the job's metadata object under which the
// insert span's trace context is carried to the work spans, as an object
// of the propagator's fields ("traceparent", "tracestate", …).
const MetadataKey = "otel"

// Options configures a Tracer. The zero value traces with the global
// tracer provider.
type Options struct {
	// TracerProvider makes the spans. Default: otel.GetTracerProvider(),
	// which follows a provider set globally later.
	TracerProvider trace.TracerProvider
	// Propagator writes the trace context into a job's metadata and reads
	// it back. Default: the global propagator (otel.GetTextMapPropagator)
	// when one with fields was set before New, propagation.TraceContext
	// otherwise (the global default propagates nothing).
	Propagator propagation.TextMapPropagator
	// NewTrace makes each work span the root of a trace of its own,
	// linked to the insert span, instead of its child.
	NewTrace bool
	// TraceSampledOut starts a work span even for a job inserted under a
	// sampled-out span. By default such a run starts no span and runs
	// under the carried context, which stays sampled out (or, for a job
	// that carries only the mark, under a span context of a new trace id,
	// not sampled), so that a parent-based sampler drops the spans the
	// handler starts: what a parent-based sampler (the SDK's default)
	// would decide, without the cost of asking it. Set it for a sampler
	// that may sample the children of a sampled-out parent, with
	// CarrySampledOut where the jobs are inserted, so that the sampler
	// sees that parent (it sees a root otherwise). Without NewTrace only.
	TraceSampledOut bool
	// CarrySampledOut writes the whole trace context of a sampled-out
	// insert span into the job's metadata, as for a sampled one. By
	// default a sampled-out insert writes only the mark that it was
	// ({"otel":{}}), which keeps the decision for the work spans at a
	// fraction of the bytes: on PostgreSQL the context's 80 bytes or so
	// would be written again by every update of the job's row, for no
	// span. Set it to have the handlers of sampled-out jobs run under
	// the request's trace id (for logs that print it). A sampled-out
	// insert writes the whole context anyway when the propagator has
	// more to carry than the trace context (baggage, with
	// propagation.Baggage in a composite propagator), so that the
	// handler gets it, sampled or not.
	CarrySampledOut bool
}

// Tracer makes the insert and work spans of leasehold clients. One
// Tracer may serve any number of clients; it is safe for concurrent use.
type Tracer struct {
	tracer   trace.Tracer
	prop     propagation.TextMapPropagator
	newTrace bool
	// traceOnly says that prop carries the W3C trace context alone, so
	// that a sampled-out insert has nothing more to carry than the mark.
	traceOnly bool
	// traceSampledOut and carrySampledOut are the Options fields.
	traceSampledOut, carrySampledOut bool
	specs                            sync.Map // kindQueue -> *spanSpec
}

// New returns a Tracer configured by o.
func New(o Options) *Tracer {
	tp := o.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	prop := o.Propagator
	if prop == nil {
		prop = otel.GetTextMapPropagator()
		if len(prop.Fields()) == 0 {
			prop = propagation.TraceContext{}
		}
	}
	return &Tracer{
		tracer:   tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL)),
		prop:     prop,
		newTrace: o.NewTrace, traceSampledOut: o.TraceSampledOut, carrySampledOut: o.CarrySampledOut,
		traceOnly: traceOnly(prop),
	}
}

// InsertMiddleware returns the insert middleware that starts the insert
// spans and writes their trace context into the jobs' metadata.
func (t *Tracer) InsertMiddleware() leasehold.InsertMiddleware {
	return leasehold.InsertMiddlewareFunc(t.insert)
}

// WorkMiddleware returns the work middleware that starts a span for each
// handler run.
func (t *Tracer) WorkMiddleware() leasehold.WorkMiddleware {
	return leasehold.WorkMiddlewareFunc(t.work)
}

// specOf returns the span names and attributes of the jobs of kind in
// queue, built on first use.
func (t *Tracer) specOf(kind, queue string) *spanSpec {
	k := kindQueue{kind, queue}
	if s, ok := t.specs.Load(k); ok {
		return s.(*spanSpec)
	}
	s, _ := t.specs.LoadOrStore(k, newSpanSpec(kind, queue))
	return s.(*spanSpec)
}
