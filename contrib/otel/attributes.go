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

// queueAttrs are the attributes naming a job's kind and queue.
func queueAttrs(kind, queue string) [3]attribute.KeyValue {
	return [3]attribute.KeyValue{
		semconv.MessagingDestinationName(queue),
		JobKindKey.String(kind),
		JobQueueKey.String(queue),
	}
}
