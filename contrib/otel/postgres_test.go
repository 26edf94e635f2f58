package leaseholdotel_test

import (
	"encoding/json"
	"testing"

	"github.com/leasehold/leasehold"
	leaseholdotel "github.com/leasehold/leasehold/contrib/otel"
	"github.com/leasehold/leasehold/pgdriver/pgtest"
	"go.opentelemetry.io/otel/trace"
)

// TestPostgresCarriesContext checks the insert-to-work link through
// PostgreSQL, whose jsonb column stores the metadata with its keys
// reordered and spaced.
func TestPostgresCarriesContext(t *testing.T) {
	e := setupOn(t, pgtest.Open(t), leaseholdotel.Options{}, true, true)
	res, err := e.client.Insert(t.Context(), taskArgs{}, &leasehold.InsertOpts{Metadata: json.RawMessage(`{"zone":"eu","a":1}`)})
	must(t, err)
	info, err := e.client.GetJob(t.Context(), res.Job.ID)
	must(t, err)
	var obj map[string]any
	must(t, json.Unmarshal(info.Metadata, &obj))
	if obj["zone"] != "eu" || obj["a"] != 1.0 || len(obj) != 3 {
		t.Errorf("stored metadata %s", info.Metadata)
	}
	t.Logf("stored metadata: %s", info.Metadata)
	e.start(t)
	work := e.waitSpans(t, trace.SpanKindConsumer, 1)[0]
	in := e.ofKind(trace.SpanKindProducer)[0]
	if work.Parent.SpanID() != in.SpanContext.SpanID() {
		t.Errorf("work span's parent %v, want the insert span %v (metadata %s)", work.Parent.SpanID(), in.SpanContext.SpanID(), info.Metadata)
	}
}
