package leaseholdotel_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/leasehold/leasehold"
	leaseholdotel "github.com/leasehold/leasehold/contrib/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// carried returns the trace context fields stored in metadata md.
func carried(t *testing.T, md json.RawMessage) map[string]string {
	t.Helper()
	var obj map[string]json.RawMessage
	must(t, json.Unmarshal(md, &obj))
	var fields map[string]string
	if raw, ok := obj[leaseholdotel.MetadataKey]; ok {
		must(t, json.Unmarshal(raw, &fields))
	}
	return fields
}

// TestMetadataKeepsUserKeys checks that the trace context joins the
// caller's metadata without clobbering its keys, replaces a stale trace
// context, and reaches the database as a JSON object.
func TestMetadataKeepsUserKeys(t *testing.T) {
	for _, tc := range []struct {
		md     string
		others []string // the caller's keys, kept
	}{
		{``, nil},
		{`{}`, nil},
		{`{"tenant":"acme"}`, []string{"tenant"}},
		{`{ "tenant" : "acme", "tags": ["a", "otel"]  }`, []string{"tags", "tenant"}},
		{`{"tenant":"acme","otel":{"traceparent":"00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"}}`, []string{"tenant"}},
	} {
		e := setup(t, leaseholdotel.Options{}, true, false)
		res, err := e.client.Insert(t.Context(), taskArgs{}, &leasehold.InsertOpts{Metadata: json.RawMessage(tc.md)})
		must(t, err)
		info, err := e.client.GetJob(t.Context(), res.Job.ID)
		must(t, err)
		var obj map[string]any
		must(t, json.Unmarshal(info.Metadata, &obj))
		var keys []string
		for k := range obj {
			if k != leaseholdotel.MetadataKey {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		if !slices.Equal(keys, tc.others) || (tc.others != nil && obj["tenant"] != "acme") {
			t.Errorf("metadata %s stored as %s: other keys %v, want %v with tenant acme", tc.md, info.Metadata, keys, tc.others)
		}
		in := e.ofKind(trace.SpanKindProducer)[0]
		if got := carried(t, info.Metadata); len(got) != 1 || got["traceparent"] != traceparent(in) {
			t.Errorf("metadata %s: carried %v, want traceparent %s only", tc.md, got, traceparent(in))
		}
	}
}

// TestInsertTxRolledBack checks an insert in a transaction that is rolled
// back: no job is left, and the span ended without error; and an insert
// in a transaction already rolled back: its span records the error.
func TestInsertTxRolledBack(t *testing.T) {
	e := setup(t, leaseholdotel.Options{}, true, false)
	tx, err := e.driver.DB().BeginTx(t.Context(), nil)
	must(t, err)
	_, err = e.client.InsertTx(t.Context(), tx, taskArgs{}, nil)
	must(t, err)
	must(t, tx.Rollback())
	jobs, err := e.client.ListJobs(t.Context(), nil)
	must(t, err)
	if len(jobs) != 0 {
		t.Errorf("%d jobs after rollback, want none", len(jobs))
	}
	ins := e.ofKind(trace.SpanKindProducer)
	if len(ins) != 1 || ins[0].Status.Code != codes.Unset {
		t.Fatalf("insert spans %v, want one ended without error", ins)
	}
	_, err = e.client.InsertTx(t.Context(), tx, taskArgs{}, nil)
	if err == nil {
		t.Fatal("InsertTx on a rolled-back transaction succeeded")
	}
	ins = e.ofKind(trace.SpanKindProducer)
	if len(ins) != 2 {
		t.Fatalf("%d insert spans, want 2", len(ins))
	}
	failed := ins[1]
	if failed.Status.Code != codes.Error || len(failed.Events) != 1 || failed.Events[0].Name != "exception" {
		t.Errorf("span of the failed insert: status %v, events %v; want the error recorded", failed.Status, failed.Events)
	}
	if _, ok := attrs(failed.Attributes)["leasehold.job.id"]; ok {
		t.Error("span of a failed insert names a job id")
	}
}

// TestInsertBulk checks that InsertBulk, which returns no rows, is traced
// like the others, without job ids.
func TestInsertBulk(t *testing.T) {
	e := setup(t, leaseholdotel.Options{}, true, false)
	n, err := e.client.InsertBulk(t.Context(), []leasehold.InsertManyParams{{Args: taskArgs{}}, {Args: taskArgs{}}})
	must(t, err)
	if n != 2 {
		t.Fatalf("inserted %d, want 2", n)
	}
	ins := e.ofKind(trace.SpanKindProducer)
	if len(ins) != 1 || ins[0].Name != "leasehold.insert task" {
		t.Fatalf("insert spans %v", ins)
	}
	wantAttrs(t, ins[0], map[string]any{
		"messaging.system": "leasehold", "messaging.operation.type": "send", "messaging.operation.name": "insert",
		"messaging.destination.name": "default", "leasehold.job.kind": "task", "leasehold.job.queue": "default",
		"messaging.batch.message_count": int64(2),
	})
	jobs, err := e.client.ListJobs(t.Context(), nil)
	must(t, err)
	for _, j := range jobs {
		if carried(t, j.Metadata)["traceparent"] != traceparent(ins[0]) {
			t.Errorf("job %d metadata %s", j.ID, j.Metadata)
		}
	}
}

// TestNoopProviderLeavesMetadata checks that with a no-op tracer provider
// and no span in the caller's context, nothing is written into the job.
func TestNoopProviderLeavesMetadata(t *testing.T) {
	tr := leaseholdotel.New(leaseholdotel.Options{TracerProvider: noop.NewTracerProvider()})
	jobs := []*leasehold.InsertJob{{Kind: "task", Args: json.RawMessage(`{}`), Opts: leasehold.InsertOpts{Metadata: json.RawMessage(`{"a":1}`)}}}
	called := false
	_, err := tr.InsertMiddleware().Insert(t.Context(), nil, jobs, func(context.Context) ([]*leasehold.InsertResult, error) {
		called = true
		return nil, nil
	})
	must(t, err)
	if !called || string(jobs[0].Opts.Metadata) != `{"a":1}` {
		t.Errorf("next called %v, metadata %s; want called and unchanged", called, jobs[0].Opts.Metadata)
	}
}
