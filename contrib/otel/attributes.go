package leaseholdotel

import (
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// The attribute keys of leasehold's own span attributes.
const (
	JobIDKey        = attribute.Key("leasehold.job.id")
	JobKindKey      = attribute.Key("leasehold.job.kind")
	JobQueueKey     = attribute.Key("leasehold.job.queue")
	JobAttemptKey   = attribute.Key("leasehold.job.attempt")
	JobDuplicateKey = attribute.Key("leasehold.job.duplicate")
	LeaseOwnerKey   = attribute.Key("leasehold.lease.owner")
	OutcomeKey      = attribute.Key("leasehold.outcome")
)

// The values of OutcomeKey that are not leasehold.Outcome names: the
// outcome a work span cannot know, which the client decides, and a
// handler's panic.
const (
	OutcomeError = "error"
	OutcomePanic = "panic"
)

// The span options and attributes every span of a kind shares, made once.
var (
	consumerOpt = trace.WithSpanKind(trace.SpanKindConsumer)
	producerOpt = trace.WithSpanKind(trace.SpanKindProducer)
	newRootOpt  = trace.WithNewRoot()
	systemAttr  = semconv.MessagingSystemKey.String("leasehold")
	sendAttr    = semconv.MessagingOperationTypeSend
	processAttr = semconv.MessagingOperationTypeProcess
	insertAttr  = semconv.MessagingOperationName("insert")
	workAttr    = semconv.MessagingOperationName("work")
)

// The start options of the spans, shared by every span of a kind so that
// starting one allocates nothing for them.
var (
	workChildOpts = []trace.SpanStartOption{consumerOpt}
	workRootOpts  = []trace.SpanStartOption{consumerOpt, newRootOpt}
	insertOpts    = []trace.SpanStartOption{producerOpt}
)

// kindQueue names the jobs of one kind in one queue.
type kindQueue struct{ kind, queue string }

// spanSpec holds what the spans of the jobs of one kind in one queue
// share, built once: their names, and the attributes that do not change
// from one job to the next. They are set on a span only when it records,
// so that a span sampled out costs no attribute.
type spanSpec struct {
	insertName, workName string
	insertAttrs          []attribute.KeyValue
	workAttrs            []attribute.KeyValue
}

func newSpanSpec(kind, queue string) *spanSpec {
	return &spanSpec{
		insertName:  "leasehold.insert " + kind,
		workName:    "leasehold.work " + kind,
		insertAttrs: []attribute.KeyValue{systemAttr, sendAttr, insertAttr, JobKindKey.String(kind), semconv.MessagingDestinationName(queue), JobQueueKey.String(queue)},
		workAttrs:   []attribute.KeyValue{systemAttr, processAttr, workAttr, semconv.MessagingDestinationName(queue), JobKindKey.String(kind), JobQueueKey.String(queue)},
	}
}
