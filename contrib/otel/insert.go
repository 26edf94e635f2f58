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
	kind, queue := shared(jobs)
	ctx, span := t.tracer.Start(ctx, t.insertName(kind, queue), insertOpts...)
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(t.insertAttrs(kind, queue, len(jobs))...)
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

// shared returns the kind and the queue all jobs share, each empty when
// they differ.
func shared(jobs []*leasehold.InsertJob) (kind, queue string) {
	kind, queue = jobs[0].Kind, jobs[0].Opts.Queue
	for _, j := range jobs[1:] {
		if j.Kind != kind {
			kind = ""
		}
		if j.Opts.Queue != queue {
			queue = ""
		}
	}
	return kind, queue
}

// insertName returns the name of the span of an insert of jobs of kind
// (empty: mixed kinds) into queue.
func (t *Tracer) insertName(kind, queue string) string {
	if kind == "" {
		return "leasehold.insert"
	}
	return t.specOf(kind, queue).insertName
}

// insertAttrs returns the attributes of the span of an insert of n jobs
// of kind into queue: kind and queue when all jobs share them (empty
// otherwise), the batch size when there are several.
func (t *Tracer) insertAttrs(kind, queue string, n int) []attribute.KeyValue {
	if kind != "" && queue != "" && n == 1 {
		return t.specOf(kind, queue).insertAttrs
	}
	attrs := make([]attribute.KeyValue, 0, 7)
	attrs = append(attrs, systemAttr, sendAttr, insertAttr)
	if n > 1 {
		attrs = append(attrs, semconv.MessagingBatchMessageCount(n))
	}
	if kind != "" {
		attrs = append(attrs, JobKindKey.String(kind))
	}
	if queue != "" {
		attrs = append(attrs, semconv.MessagingDestinationName(queue), JobQueueKey.String(queue))
	}
	return attrs
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
