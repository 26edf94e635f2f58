package leaseholdotel

import (
	"context"
	"fmt"

	"github.com/leasehold/leasehold"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// insert is the insert middleware: one producer span around the insert
// of jobs, whose trace context it writes into each job's metadata.
func (t *Tracer) insert(ctx context.Context, _ any, jobs []*leasehold.InsertJob,
	next func(context.Context) ([]*leasehold.InsertResult, error)) (res []*leasehold.InsertResult, err error) {
	if len(jobs) == 0 {
		return next(ctx)
	}
	name, attrs := t.insertSpan(jobs)
	ctx, span := t.tracer.Start(ctx, name, insertOpts...)
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(attrs()...)
	}
	if err = t.inject(ctx, jobs); err == nil {
		res, err = next(ctx)
	}
	if !span.IsRecording() {
		return res, err
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	} else if len(jobs) == 1 && len(res) == 1 && res[0] != nil && res[0].Job != nil {
		span.SetAttributes(JobIDKey.Int64(res[0].Job.ID))
		if res[0].Duplicate {
			span.SetAttributes(JobDuplicateKey.Bool(true))
		}
	}
	return res, err
}

// insertSpan returns the name of the span of an insert of jobs, and a
// function that returns its attributes, called only for a span that
// records: kind and queue when all jobs share them, the batch size when
// there are several.
func (t *Tracer) insertSpan(jobs []*leasehold.InsertJob) (string, func() []attribute.KeyValue) {
	kind, queue := jobs[0].Kind, jobs[0].Opts.Queue
	for _, j := range jobs[1:] {
		if j.Kind != kind {
			kind = ""
		}
		if j.Opts.Queue != queue {
			queue = ""
		}
	}
	var spec *spanSpec
	if kind != "" {
		spec = t.specOf(kind, queue)
	}
	if spec != nil && queue != "" && len(jobs) == 1 {
		return spec.insertName, func() []attribute.KeyValue { return spec.insertAttrs }
	}
	attrs := func() []attribute.KeyValue {
		attrs := make([]attribute.KeyValue, 0, 7)
		attrs = append(attrs, systemAttr, sendAttr, insertAttr)
		if len(jobs) > 1 {
			attrs = append(attrs, semconv.MessagingBatchMessageCount(len(jobs)))
		}
		if kind != "" {
			attrs = append(attrs, JobKindKey.String(kind))
		}
		if queue != "" {
			attrs = append(attrs, semconv.MessagingDestinationName(queue), JobQueueKey.String(queue))
		}
		return attrs
	}
	if spec == nil {
		return "leasehold.insert", attrs
	}
	return spec.insertName, attrs
}

// inject writes the trace context of ctx into the metadata of each job,
// keeping the job's other metadata keys; it writes nothing when ctx has
// no trace context to propagate.
func (t *Tracer) inject(ctx context.Context, jobs []*leasehold.InsertJob) error {
	enc := t.encodeContext(ctx)
	if enc == nil {
		return nil
	}
	for i, j := range jobs {
		md, err := withCarrier(j.Opts.Metadata, enc)
		if err != nil {
			return fmt.Errorf("leaseholdotel: metadata of job %d: %w", i, err)
		}
		j.Opts.Metadata = md
	}
	return nil
}
